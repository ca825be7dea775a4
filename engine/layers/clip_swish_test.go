package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's NeuronLayerTest cases for Clip and Swish, with
// Caffe's inputs (a 2×3×4×5 gaussian blob) and gradient-checker settings.
// The helpers here serve the other ports of issue 22's layers too.

// gaussBlob is Caffe's GaussianFiller with its defaults (mean 0, std 1)
// on a blob of the given shape.
func gaussBlob(seed uint64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("bottom", shape...)
	fillGaussian(b, 1, rand.New(rand.NewPCG(seed, 1701)))
	return b
}

func blobs(b ...*tensor.Blob) []*tensor.Blob { return b }

// floatEq is gtest's EXPECT_FLOAT_EQ, loosened from 4 ULPs to a relative
// 1e-6: dsgd computes in float64 where Caffe computes in float32.
func floatEq(got, want float64) bool {
	return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want))
}

func TestClipCaffe(t *testing.T) {
	cfg := &ClipConfig{Min: -1, Max: 2}
	t.Run("NeuronLayerTest.TestClip", func(t *testing.T) {
		x, y := gaussBlob(1, 2, 3, 4, 5), tensor.NewBlob("top")
		l := newTestLayer(t, cfg, Context{}, blobs(x), blobs(y))
		l.Forward(blobs(x), blobs(y))
		for i, b := range x.Data {
			v := y.Data[i]
			if v < -1 || v > 2 || !(b > -1 || v == -1) || !(b < 2 || v == 2) || ((b >= -1 && b <= 2) && v != b) {
				t.Fatalf("clip(%v) = %v", b, v)
			}
		}
	})
	t.Run("NeuronLayerTest.TestClipGradient", func(t *testing.T) {
		// Caffe moves inputs within eps of a kink out of it first.
		const eps = 1e-2
		x, y := gaussBlob(1, 2, 3, 4, 5), tensor.NewBlob("top")
		x.Data[0], x.Data[1] = 2.5, -1.7 // make sure both ends clip
		for i, v := range x.Data {
			switch {
			case v >= -1-eps && v <= -1+eps:
				x.Data[i] = v - eps
			case v >= 2-eps && v <= 2+eps:
				x.Data[i] = v + eps
			}
		}
		l := newTestLayer(t, cfg, Context{}, blobs(x), blobs(y))
		checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: eps, Threshold: 1e-3})
		// In place the gradient is the same: the layer keeps x.
		xi := tensor.NewBlob("x", 2, 3, 4, 5)
		copy(xi.Data, x.Data)
		li := newTestLayer(t, cfg, Context{}, blobs(xi), blobs(xi))
		li.Forward(blobs(xi), blobs(xi))
		copy(xi.Diff, x.Diff) // any top diff
		for i := range xi.Diff {
			xi.Diff[i] = 1
		}
		li.Backward(blobs(xi), []bool{true}, blobs(xi))
		for i, v := range x.Data {
			want := float32(0)
			if v >= -1 && v <= 2 {
				want = 1
			}
			if xi.Diff[i] != want {
				t.Fatalf("in place: dx[%d] = %v at x = %v, want %v", i, xi.Diff[i], v, want)
			}
		}
	})
	if _, err := (&ClipConfig{Min: 1, Max: 0}).Build(Context{}); err == nil {
		t.Error("Clip with min > max: no error")
	}
}

func TestSwishCaffe(t *testing.T) {
	for _, tc := range []struct {
		name string
		beta float32
	}{{"TestSwish", 1}, {"TestSwishWithBeta", 1.5}, {"TestSwishAsLinear", 0}} {
		t.Run("NeuronLayerTest."+tc.name, func(t *testing.T) {
			x, y := gaussBlob(2, 2, 3, 4, 5), tensor.NewBlob("top")
			l := newTestLayer(t, &SwishConfig{Beta: tc.beta}, Context{}, blobs(x), blobs(y))
			l.Forward(blobs(x), blobs(y))
			for i, b := range x.Data {
				want := float64(b) / (1 + math.Exp(-float64(tc.beta)*float64(b)))
				if tc.beta == 0 {
					want = float64(b) / 2
				}
				if !floatEq(float64(y.Data[i]), want) {
					t.Fatalf("swish(%v) = %v, want %v", b, y.Data[i], want)
				}
			}
		})
		grad := map[string]string{"TestSwish": "TestSwishGradient", "TestSwishWithBeta": "TestSwishWithBetaGradient", "TestSwishAsLinear": "TestSwishAsLinearGradient"}[tc.name]
		t.Run("NeuronLayerTest."+grad, func(t *testing.T) {
			x, y := gaussBlob(2, 2, 3, 4, 5), tensor.NewBlob("top")
			l := newTestLayer(t, &SwishConfig{Beta: tc.beta}, Context{}, blobs(x), blobs(y))
			checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: 1e-2, Threshold: 1e-3, Kink: 0, KinkRange: 0.01, Seed: 1701})
		})
	}
}
