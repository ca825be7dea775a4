package layers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestFillerStatistics(t *testing.T) {
	// A 64×32×7×7 blob: fan_in 1568, fan_out 3136.
	shape := []int{64, 32, 7, 7}
	fanIn, fanOut := 32.0*49, 64.0*49
	avg := (fanIn + fanOut) / 2
	tests := []struct {
		name      string
		f         Filler
		mean, std float64
		lo, hi    float64 // bounds every value must respect
	}{
		{"constant", Filler{Type: FillConstant, Value: 0.25}, 0.25, 0, 0.25, 0.25},
		{"empty type is constant", Filler{Value: -3}, -3, 0, -3, -3},
		{"uniform", Filler{Type: FillUniform, Min: -1, Max: 3}, 1, 4 / math.Sqrt(12), -1, 3},
		{"gaussian", Filler{Type: FillGaussian, Mean: 2, Std: 0.5}, 2, 0.5, math.Inf(-1), math.Inf(1)},
		{"xavier fan_in", Filler{Type: FillXavier}, 0, math.Sqrt(1 / fanIn), -math.Sqrt(3 / fanIn), math.Sqrt(3 / fanIn)},
		{"xavier fan_out", Filler{Type: FillXavier, VarianceNorm: FanOut}, 0, math.Sqrt(1 / fanOut), -math.Sqrt(3 / fanOut), math.Sqrt(3 / fanOut)},
		{"xavier average", Filler{Type: FillXavier, VarianceNorm: Average}, 0, math.Sqrt(1 / avg), -math.Sqrt(3 / avg), math.Sqrt(3 / avg)},
		{"msra fan_in", Filler{Type: FillMSRA}, 0, math.Sqrt(2 / fanIn), math.Inf(-1), math.Inf(1)},
		{"msra fan_out", Filler{Type: FillMSRA, VarianceNorm: FanOut}, 0, math.Sqrt(2 / fanOut), math.Inf(-1), math.Inf(1)},
		{"msra average", Filler{Type: FillMSRA, VarianceNorm: Average}, 0, math.Sqrt(2 / avg), math.Inf(-1), math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tensor.NewBlob("w", shape...)
			tc.f.Fill(b, rand.New(rand.NewPCG(5, 6)))
			n := float64(len(b.Data))
			var sum, sq float64
			for i, v := range b.Data {
				x := float64(v)
				if x < tc.lo || x > tc.hi {
					t.Fatalf("value[%d] = %v outside [%v, %v]", i, x, tc.lo, tc.hi)
				}
				sum += x
				sq += x * x
			}
			mean := sum / n
			std := math.Sqrt(sq/n - mean*mean)
			// Five standard errors of the mean; 2% on the std.
			if tol := 5*tc.std/math.Sqrt(n) + 1e-6; math.Abs(mean-tc.mean) > tol {
				t.Errorf("mean %v, want %v ± %v", mean, tc.mean, tol)
			}
			if tol := 0.02*tc.std + 1e-6; math.Abs(std-tc.std) > tol {
				t.Errorf("std %v, want %v ± %v", std, tc.std, tol)
			}
		})
	}
}

func TestFillerOneAxisFanOut(t *testing.T) {
	// A blob with one axis has fan_out = count, as in Caffe.
	b := tensor.NewBlob("b", 20000)
	(Filler{Type: FillXavier, VarianceNorm: FanOut}).Fill(b, rand.New(rand.NewPCG(1, 1)))
	bound := float32(math.Sqrt(3.0 / 20000))
	maxAbs := float32(0)
	for _, v := range b.Data {
		maxAbs = max(maxAbs, float32(math.Abs(float64(v))))
	}
	if maxAbs > bound || maxAbs < 0.9*bound {
		t.Errorf("max |value| %v, want just under %v", maxAbs, bound)
	}
}

func TestFillerUsesSource(t *testing.T) {
	f := Filler{Type: FillGaussian, Std: 1}
	a, b, c := tensor.NewBlob("a", 10), tensor.NewBlob("b", 10), tensor.NewBlob("c", 10)
	f.Fill(a, rand.New(rand.NewPCG(9, 9)))
	f.Fill(b, rand.New(rand.NewPCG(9, 9)))
	f.Fill(c, rand.New(rand.NewPCG(9, 10)))
	assertClose(t, "same seed", a.Data, b.Data, 0)
	same := true
	for i := range a.Data {
		same = same && a.Data[i] == c.Data[i]
	}
	if same {
		t.Error("different seeds gave the same values")
	}
}

func TestFillerValidate(t *testing.T) {
	tests := []struct {
		f       Filler
		wantErr string
	}{
		{Filler{}, ""},
		{Filler{Type: FillUniform, Min: 1, Max: 1}, ""},
		{Filler{Type: FillUniform, Min: 2, Max: 1}, "min 2 greater than max 1"},
		{Filler{Type: FillGaussian, Std: -1}, "negative std"},
		{Filler{Type: "unitball"}, `unknown filler type "unitball"`},
		{Filler{Type: FillXavier, VarianceNorm: 7}, "variance_norm"},
	}
	for _, tc := range tests {
		err := tc.f.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tc.f, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: error %v, want one containing %q", tc.f, err, tc.wantErr)
		}
	}
}

func TestFillerInvalidPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "layers: ") {
			t.Errorf("recovered %v, want a layers: panic", r)
		}
	}()
	(Filler{Type: "nope"}).Fill(tensor.NewBlob("b", 3), nil)
}
