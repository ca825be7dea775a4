package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's MVNLayerTest.

// mvnStats returns, for each group of dim consecutive values, their mean
// and mean square.
func mvnStats(v []float32, dim int) (mean, sq []float64) {
	for g := 0; g < len(v)/dim; g++ {
		var s, q float64
		for _, x := range v[g*dim : (g+1)*dim] {
			s += float64(x)
			q += float64(x) * float64(x)
		}
		mean, sq = append(mean, s/float64(dim)), append(sq, q/float64(dim))
	}
	return mean, sq
}

func TestMVNCaffe(t *testing.T) {
	def := MVNConfig{NormalizeVariance: true, Eps: 1e-9}
	meanOnly := MVNConfig{Eps: 1e-9}
	across := MVNConfig{NormalizeVariance: true, AcrossChannels: true, Eps: 1e-9}
	const bound = 0.001
	forward := func(t *testing.T, cfg MVNConfig, dim int, checkVar bool) {
		x, y := gaussBlob(3, 2, 3, 4, 5), tensor.NewBlob("top")
		l := newTestLayer(t, &cfg, Context{}, blobs(x), blobs(y))
		l.Forward(blobs(x), blobs(y))
		mean, sq := mvnStats(y.Data, dim)
		for g := range mean {
			if math.Abs(mean[g]) > bound || (checkVar && math.Abs(sq[g]-1) > bound) {
				t.Fatalf("group %d: mean %g, variance %g", g, mean[g], sq[g])
			}
		}
		// The mean-only output is x minus its mean, exactly.
		if !cfg.NormalizeVariance {
			xm, _ := mvnStats(x.Data, dim)
			for i, v := range x.Data {
				if d := float64(y.Data[i]) - (float64(v) - xm[i/dim]); math.Abs(d) > 1e-6 {
					t.Fatalf("y[%d] = %v, want x − mean = %v", i, y.Data[i], float64(v)-xm[i/dim])
				}
			}
		}
	}
	t.Run("MVNLayerTest.TestForward", func(t *testing.T) { forward(t, def, 20, true) })
	t.Run("MVNLayerTest.TestForwardMeanOnly", func(t *testing.T) { forward(t, meanOnly, 20, false) })
	t.Run("MVNLayerTest.TestForwardAcrossChannels", func(t *testing.T) { forward(t, across, 60, true) })
	gradient := func(t *testing.T, cfg MVNConfig) {
		x, y := gaussBlob(3, 2, 3, 4, 5), tensor.NewBlob("top")
		l := newTestLayer(t, &cfg, Context{}, blobs(x), blobs(y))
		checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: 1e-2, Threshold: 1e-3})
	}
	t.Run("MVNLayerTest.TestGradient", func(t *testing.T) { gradient(t, def) })
	t.Run("MVNLayerTest.TestGradientMeanOnly", func(t *testing.T) { gradient(t, meanOnly) })
	t.Run("MVNLayerTest.TestGradientAcrossChannels", func(t *testing.T) { gradient(t, across) })
	t.Run("in place and legacy 4-D top", func(t *testing.T) {
		x, y := gaussBlob(4, 3, 5), tensor.NewBlob("top")
		l := newTestLayer(t, &def, Context{}, blobs(x), blobs(y))
		if !y.Shape.Equal(tensor.Shape{3, 5, 1, 1}) {
			t.Fatalf("top shape %v, want Caffe's legacy [3 5 1 1]", y.Shape)
		}
		l.Forward(blobs(x), blobs(y))
		xi := gaussBlob(4, 3, 5)
		li := newTestLayer(t, &def, Context{}, blobs(xi), blobs(xi))
		li.Forward(blobs(xi), blobs(xi))
		assertClose(t, "in-place top", xi.Data, y.Data, 0)
		r := rand.New(rand.NewPCG(5, 6))
		for i := range y.Diff {
			y.Diff[i] = float32(r.NormFloat64())
		}
		copy(xi.Diff, y.Diff)
		l.Backward(blobs(y), []bool{true}, blobs(x))
		li.Backward(blobs(xi), []bool{true}, blobs(xi))
		assertClose(t, "in-place bottom diff", xi.Diff, x.Diff, 0)
	})
	if _, err := (&MVNConfig{Eps: -1}).Build(Context{}); err == nil {
		t.Error("MVN with a negative eps: no error")
	}
}
