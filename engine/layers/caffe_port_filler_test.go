package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortFiller ports Caffe's test_filler.cpp for the constant,
// uniform, gaussian, xavier and msra fillers (the positive_unitball and
// bilinear fillers are ported with those fillers).
func TestCaffePortFiller(t *testing.T) {
	shapes := map[string][]int{"TestFill": {2, 3, 4, 5}, "TestFill1D": {15}, "TestFill2D": {8, 3}, "TestFill5D": {2, 3, 4, 5, 2}}
	for name, shape := range shapes {
		t.Run("ConstantFillerTest."+name, func(t *testing.T) {
			b := tensor.NewBlob("b", shape...)
			Filler{Type: FillConstant, Value: 10}.Fill(b, caffeRand())
			for i, v := range b.Data {
				if v != 10 {
					t.Errorf("data[%d] = %g, want 10", i, v)
				}
			}
		})
		t.Run("UniformFillerTest."+name, func(t *testing.T) {
			b := tensor.NewBlob("b", shape...)
			Filler{Type: FillUniform, Min: 1, Max: 2}.Fill(b, caffeRand())
			for i, v := range b.Data {
				if !(v >= 1 && v <= 2) {
					t.Errorf("data[%d] = %g, want it in [1, 2]", i, v)
				}
			}
		})
	}

	// Gaussian: mean 10, std 0.1; over 100 fills the sample mean lies
	// within tolerance·std of 10 and the variance within a factor
	// tolerance of 0.01.
	for _, c := range []struct {
		name  string
		shape []int
		tol   float64
	}{{"TestFill", []int{2, 3, 4, 5}, 3}, {"TestFill1D", []int{125}, 3}, {"TestFill2D", []int{8, 15}, 3}, {"TestFill5D", []int{2, 3, 4, 5, 2}, 2}} {
		t.Run("GaussianFillerTest."+c.name, func(t *testing.T) {
			b, r := tensor.NewBlob("b", c.shape...), caffeRand()
			for rep := range 100 {
				Filler{Type: FillGaussian, Mean: 10, Std: 0.1}.Fill(b, r)
				var mean, v float64
				for _, x := range b.Data {
					mean += float64(x)
					v += float64(x) * float64(x)
				}
				mean /= float64(len(b.Data))
				v = v/float64(len(b.Data)) - mean*mean
				if mean < 10-0.1*c.tol || mean > 10+0.1*c.tol || v < 0.01/c.tol || v > 0.01*c.tol {
					t.Errorf("fill %d: mean %g, variance %g", rep, mean, v)
				}
			}
		})
	}

	// Xavier and MSRA on 1000×2×4×5: over 100 fills the mean is within 0.1
	// of 0 and the std within 0.1 of sqrt(2/n) (Caffe's test uses MSRA's
	// target for both; xavier's std is sqrt(1/n), within the tolerance).
	for _, ft := range []struct {
		suite string
		typ   FillerType
	}{{"XavierFillerTest.", FillXavier}, {"MSRAFillerTest.", FillMSRA}} {
		for _, c := range []struct {
			name string
			norm VarianceNorm
			n    float64
		}{{"TestFillFanIn", FanIn, 2 * 4 * 5}, {"TestFillFanOut", FanOut, 1000 * 4 * 5}, {"TestFillAverage", Average, (2*4*5 + 1000*4*5) / 2.0}} {
			t.Run(ft.suite+c.name, func(t *testing.T) {
				b, r := tensor.NewBlob("b", 1000, 2, 4, 5), caffeRand()
				for rep := range 100 {
					Filler{Type: ft.typ, VarianceNorm: c.norm}.Fill(b, r)
					var mean, ex2 float64
					for _, x := range b.Data {
						mean += float64(x)
						ex2 += float64(x) * float64(x)
					}
					mean /= float64(len(b.Data))
					ex2 /= float64(len(b.Data))
					std := math.Sqrt(ex2 - mean*mean)
					if math.Abs(mean) > 0.1 || math.Abs(std-math.Sqrt(2/c.n)) > 0.1 {
						t.Errorf("fill %d: mean %g, std %g; want 0, %g", rep, mean, std, math.Sqrt(2/c.n))
					}
				}
			})
		}
		// Caffe's 1-D, 2-D and 5-D cases only fill (AVERAGE), which must
		// not fail on a blob of one axis.
		for _, c := range []struct {
			name  string
			shape []int
		}{{"TestFill1D", []int{25}}, {"TestFill2D", []int{8, 3}}, {"TestFill5D", []int{2, 3, 4, 5, 2}}} {
			t.Run(ft.suite+c.name, func(t *testing.T) {
				b := tensor.NewBlob("b", c.shape...)
				Filler{Type: ft.typ, VarianceNorm: Average}.Fill(b, caffeRand())
				for i, v := range b.Data {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Errorf("data[%d] = %g", i, v)
					}
				}
			})
		}
	}
}
