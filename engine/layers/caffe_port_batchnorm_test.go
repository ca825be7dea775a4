package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortBatchNorm ports Caffe's test_batch_norm_layer.cpp: in the
// TRAIN phase (use_global_stats unset) each channel of the top has mean 0
// and variance 1 over the batch.
func TestCaffePortBatchNorm(t *testing.T) {
	bn := func() *BatchNormConfig { return &BatchNormConfig{MovingAverageFraction: 0.999, Eps: 1e-5} }
	normalised := func(t *testing.T, top *tensor.Blob) {
		n, c, hw := top.Shape[0], top.Shape[1], top.Shape[2]*top.Shape[3]
		for j := range c {
			var sum, sq float64
			for i := range n {
				for k := range hw {
					v := float64(top.Data[(i*c+j)*hw+k])
					sum += v
					sq += v * v
				}
			}
			m := float64(n * hw)
			if mean, v := sum/m, sq/m; math.Abs(mean) > 1e-3 || math.Abs(v-1) > 1e-3 {
				t.Errorf("channel %d: mean %g, variance %g; want 0, 1 ± 0.001", j, mean, v)
			}
		}
	}
	t.Run("BatchNormLayerTest.TestForward", func(t *testing.T) {
		b, top := []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 5, 2, 3, 4)}, cpTops(1)
		l := caffeLayer(t, bn(), Train, b, top)
		l.Forward(b, top)
		normalised(t, top[0])
	})
	t.Run("BatchNormLayerTest.TestForwardInplace", func(t *testing.T) {
		b := []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 5, 2, 3, 4)}
		l := caffeLayer(t, bn(), Train, b, b)
		l.Forward(b, b)
		normalised(t, b[0])
	})
	t.Run("BatchNormLayerTest.TestGradient", func(t *testing.T) {
		b, top := []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 5, 2, 3, 4)}, cpTops(1)
		l := caffeLayer(t, bn(), Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-4})
	})
}
