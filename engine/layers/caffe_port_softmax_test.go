package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortSoftmax ports Caffe's test_softmax_layer.cpp.
func TestCaffePortSoftmax(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 10, 2, 3)} }
	t.Run("SoftmaxLayerTest.TestForward", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SoftmaxConfig{Axis: 1}, Train, b, top)
		l.Forward(b, top)
		at := func(d []float32, i, j, k, m int) float64 { return float64(d[((i*10+j)*2+k)*3+m]) }
		for i := range 2 {
			for k := range 2 {
				for m := range 3 {
					var sum, scale float64
					for j := range 10 {
						sum += at(top[0].Data, i, j, k, m)
						scale += math.Exp(at(b[0].Data, i, j, k, m))
					}
					if sum < 0.999 || sum > 1.001 {
						t.Errorf("(%d,·,%d,%d): sum %g", i, k, m, sum)
					}
					for j := range 10 {
						want := math.Exp(at(b[0].Data, i, j, k, m)) / scale
						if got := at(top[0].Data, i, j, k, m); !(got+1e-4 >= want && got-1e-4 <= want) {
							t.Errorf("(%d,%d,%d,%d) = %g, want %g", i, j, k, m, got, want)
						}
					}
				}
			}
		}
	})
	t.Run("SoftmaxLayerTest.TestGradient", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SoftmaxConfig{Axis: 1}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
	})
}

// TestCaffePortSoftmaxWithLoss ports Caffe's
// test_softmax_with_loss_layer.cpp. Caffe's normalize: false is
// normalization BATCH_SIZE (the caffedef package maps it so).
func TestCaffePortSoftmaxWithLoss(t *testing.T) {
	fixture := func() []*tensor.Blob {
		r := caffeRand()
		data := caffeGaussian(r, 0, 10, 10, 5, 2, 3)
		label := tensor.NewBlob("label", 10, 1, 2, 3)
		for i := range label.Data {
			label.Data[i] = float32(r.Uint32() % 5)
		}
		return []*tensor.Blob{data, label}
	}
	labelsOnly := gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: map[int]bool{1: true}}
	// Caffe's TestGradient sets loss_weight 3; its GradientChecker
	// overwrites the top diff, so the check is that of weight 1.
	t.Run("SoftmaxWithLossLayerTest.TestGradient", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SoftmaxWithLossConfig{Axis: 1}, Train, b, top)
		caffeGrad(t, l, b, top, labelsOnly)
	})
	t.Run("SoftmaxWithLossLayerTest.TestForwardIgnoreLabel", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SoftmaxWithLossConfig{Axis: 1, Normalization: NormBatchSize}, Train, b, top)
		l.Forward(b, top)
		full := float64(top[0].Data[0])
		var accum float64
		for label := range 5 {
			l := caffeLayer(t, &SoftmaxWithLossConfig{Axis: 1, Normalization: NormBatchSize, IgnoreLabel: ip(label)}, Train, b, top)
			l.Forward(b, top)
			accum += float64(top[0].Data[0])
		}
		if math.Abs(4*full-accum) > 1e-4 {
			t.Errorf("Σ losses ignoring each label = %g, want 4 × %g", accum, full)
		}
	})
	t.Run("SoftmaxWithLossLayerTest.TestGradientIgnoreLabel", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SoftmaxWithLossConfig{Axis: 1, IgnoreLabel: ip(0)}, Train, b, top)
		caffeGrad(t, l, b, top, labelsOnly)
	})
	t.Run("SoftmaxWithLossLayerTest.TestGradientUnnormalized", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SoftmaxWithLossConfig{Axis: 1, Normalization: NormBatchSize}, Train, b, top)
		caffeGrad(t, l, b, top, labelsOnly)
	})
}
