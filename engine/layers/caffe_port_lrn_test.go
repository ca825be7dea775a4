package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// caffeLRNRef is ReferenceLRNForward of Caffe's test_lrn_layer.cpp (k = 1).
func caffeLRNRef(x *tensor.Blob, c *LRNConfig) []float32 {
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	at := func(i, j, k, l int) float64 { return float64(x.Data[((i*ch+j)*h+k)*w+l]) }
	out := make([]float32, x.Count())
	size, alpha, beta := c.LocalSize, float64(c.Alpha), float64(c.Beta)
	for i := range n {
		for j := range ch {
			for k := range h {
				for l := range w {
					scale := 1.0
					if c.NormRegion == AcrossChannels {
						lo := j - (size-1)/2
						hi := min(lo+size, ch)
						for q := max(lo, 0); q < hi; q++ {
							v := at(i, q, k, l)
							scale += v * v * alpha / float64(size)
						}
					} else {
						hlo, wlo := k-(size-1)/2, l-(size-1)/2
						hhi, whi := min(hlo+size, h), min(wlo+size, w)
						for p := max(hlo, 0); p < hhi; p++ {
							for q := max(wlo, 0); q < whi; q++ {
								v := at(i, j, p, q)
								scale += v * v * alpha / float64(size*size)
							}
						}
					}
					out[((i*ch+j)*h+k)*w+l] = float32(at(i, j, k, l) / math.Pow(scale, beta))
				}
			}
		}
	}
	return out
}

// TestCaffePortLRN ports Caffe's test_lrn_layer.cpp.
func TestCaffePortLRN(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 7, 3, 3)} }
	lrn := func(size int, region LRNRegion) *LRNConfig {
		return &LRNConfig{LocalSize: size, Alpha: 1, Beta: 0.75, K: 1, NormRegion: region}
	}
	setup := func(t *testing.T, cfg *LRNConfig) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, cfg, Train, b, top)
		cpWantShape(t, "top", top[0], 2, 7, 3, 3)
	}
	forward := func(t *testing.T, cfg *LRNConfig) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		l.Forward(b, top)
		cpNear(t, "top", top[0].Data, caffeLRNRef(b[0], cfg), 1e-5)
	}
	gradient := func(t *testing.T, cfg *LRNConfig) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		// Caffe runs one Forward/Backward with a top diff of ones first.
		l.Forward(b, top)
		for i := range top[0].Diff {
			top[0].Diff[i] = 1
		}
		l.Backward(top, []bool{true}, b)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	}
	t.Run("LRNLayerTest.TestSetupAcrossChannels", func(t *testing.T) { setup(t, lrn(5, AcrossChannels)) })
	t.Run("LRNLayerTest.TestForwardAcrossChannels", func(t *testing.T) { forward(t, lrn(5, AcrossChannels)) })
	t.Run("LRNLayerTest.TestForwardAcrossChannelsLargeRegion", func(t *testing.T) { forward(t, lrn(15, AcrossChannels)) })
	t.Run("LRNLayerTest.TestGradientAcrossChannels", func(t *testing.T) { gradient(t, lrn(5, AcrossChannels)) })
	t.Run("LRNLayerTest.TestGradientAcrossChannelsLargeRegion", func(t *testing.T) { gradient(t, lrn(15, AcrossChannels)) })
	t.Run("LRNLayerTest.TestSetupWithinChannel", func(t *testing.T) { setup(t, lrn(3, WithinChannel)) })
	t.Run("LRNLayerTest.TestForwardWithinChannel", func(t *testing.T) { forward(t, lrn(3, WithinChannel)) })
	t.Run("LRNLayerTest.TestGradientWithinChannel", func(t *testing.T) { gradient(t, lrn(3, WithinChannel)) })
}
