package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// The loss_weight of Caffe's loss tests is applied by dsgd's model, not
// the layer (a loss layer's top is the unweighted loss and its Backward
// takes the weight as the top diff); Caffe's GradientChecker overwrites
// the top diff, so its gradient checks are those of weight 1. The
// weighting itself is ported with test_net.cpp's TestLossWeight and
// EuclideanLossLayerTest.TestForward in package caffedef.

// TestCaffePortEuclideanLoss ports EuclideanLossLayerTest.TestGradient
// (TestForward, which is about the loss weight, is in package caffedef).
func TestCaffePortEuclideanLoss(t *testing.T) {
	t.Run("EuclideanLossLayerTest.TestGradient", func(t *testing.T) {
		r := caffeRand()
		b, top := []*tensor.Blob{caffeGaussian(r, 0, 1, 10, 5, 1, 1), caffeGaussian(r, 0, 1, 10, 5, 1, 1)}, cpTops(1)
		l := caffeLayer(t, &EuclideanLossConfig{}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	})
}

// TestCaffePortSigmoidCrossEntropyLoss ports Caffe's
// test_sigmoid_cross_entropy_loss_layer.cpp.
func TestCaffePortSigmoidCrossEntropyLoss(t *testing.T) {
	cfg := func() *SigmoidCrossEntropyLossConfig {
		return &SigmoidCrossEntropyLossConfig{Normalization: NormBatchSize}
	}
	fixture := func(r interface {
		NormFloat64() float64
		Float64() float64
	}) []*tensor.Blob {
		data, targets := tensor.NewBlob("data", 10, 5, 1, 1), tensor.NewBlob("targets", 10, 5, 1, 1)
		for i := range data.Data {
			data.Data[i] = float32(r.NormFloat64())
		}
		for i := range targets.Data {
			targets.Data[i] = float32(r.Float64())
		}
		return []*tensor.Blob{data, targets}
	}
	t.Run("SigmoidCrossEntropyLossLayerTest.TestSigmoidCrossEntropyLoss", func(t *testing.T) {
		const weight, eps = 3.7, 2e-2
		r := caffeRand()
		for trial := range 100 {
			b, top := fixture(r), cpTops(1)
			l := caffeLayer(t, cfg(), Train, b, top)
			l.Forward(b, top)
			var ref float64
			for i, x := range b[0].Data {
				p, y := 1/(1+math.Exp(-float64(x))), float64(b[1].Data[i])
				ref -= y * math.Log(p+cpB2F(y == 0))
				ref -= (1 - y) * math.Log(1-p+cpB2F(y == 1))
			}
			ref /= 10
			// Caffe compares the weighted losses within eps.
			if got := weight * float64(top[0].Data[0]); math.Abs(weight*ref-got) > eps {
				t.Errorf("trial %d: weighted loss %g, want %g", trial, got, weight*ref)
			}
		}
	})
	t.Run("SigmoidCrossEntropyLossLayerTest.TestGradient", func(t *testing.T) {
		b, top := fixture(caffeRand()), cpTops(1)
		l := caffeLayer(t, cfg(), Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: map[int]bool{1: true}})
	})
	t.Run("SigmoidCrossEntropyLossLayerTest.TestIgnoreGradient", func(t *testing.T) {
		b, top := fixture(caffeRand()), cpTops(1)
		n := b[1].Count()
		for i := range n / 2 {
			b[1].Data[i] = -1
		}
		c := cfg()
		c.IgnoreLabel = ip(-1)
		l := caffeLayer(t, c, Train, b, top)
		l.Forward(b, top)
		top[0].Diff[0] = 1
		l.Backward(top, []bool{true, false}, b)
		for i := range n / 2 {
			if b[0].Diff[i] != 0 {
				t.Errorf("diff[%d] = %g for an ignored target, want 0", i, b[0].Diff[i])
			}
			if b[0].Diff[i+n/2] == 0 {
				t.Errorf("diff[%d] = 0 for a kept target", i+n/2)
			}
		}
	})
}

func cpB2F(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestCaffePortContrastiveLoss ports Caffe's test_contrastive_loss_layer.cpp.
func TestCaffePortContrastiveLoss(t *testing.T) {
	fixture := func() []*tensor.Blob {
		r := caffeRand()
		a, b := caffeUniform(r, -1, 1, 512, 2, 1, 1), caffeUniform(r, -1, 1, 512, 2, 1, 1)
		y := tensor.NewBlob("y", 512, 1, 1, 1)
		for i := range y.Data {
			y.Data[i] = float32(r.Uint32() % 2)
		}
		return []*tensor.Blob{a, b, y}
	}
	forward := func(t *testing.T, legacy bool) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &ContrastiveLossConfig{Margin: 1, LegacyVersion: legacy}, Train, b, top)
		l.Forward(b, top)
		const margin = 1.0
		var loss float64
		for i := range 512 {
			var d2 float64
			for j := range 2 {
				d := float64(b[0].Data[i*2+j] - b[1].Data[i*2+j])
				d2 += d * d
			}
			switch {
			case b[2].Data[i] != 0:
				loss += d2
			case legacy:
				loss += math.Max(margin-d2, 0)
			default:
				d := math.Max(margin-math.Sqrt(d2), 0)
				loss += d * d
			}
		}
		loss /= 512 * 2
		if got := float64(top[0].Data[0]); math.Abs(got-loss) > 1e-6 {
			t.Errorf("loss %.9g, want %.9g", got, loss)
		}
	}
	grad := func(t *testing.T, legacy bool) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &ContrastiveLossConfig{Margin: 1, LegacyVersion: legacy}, Train, b, top)
		// Caffe checks bottom 0, then bottom 1.
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: map[int]bool{2: true}})
	}
	t.Run("ContrastiveLossLayerTest.TestForward", func(t *testing.T) { forward(t, false) })
	t.Run("ContrastiveLossLayerTest.TestGradient", func(t *testing.T) { grad(t, false) })
	t.Run("ContrastiveLossLayerTest.TestForwardLegacy", func(t *testing.T) { forward(t, true) })
	t.Run("ContrastiveLossLayerTest.TestGradientLegacy", func(t *testing.T) { grad(t, true) })
}

// TestCaffePortHingeLoss ports Caffe's test_hinge_loss_layer.cpp.
func TestCaffePortHingeLoss(t *testing.T) {
	fixture := func() []*tensor.Blob {
		r := caffeRand()
		data := caffeGaussian(r, 0, 10, 10, 5, 1, 1)
		label := tensor.NewBlob("label", 10, 1, 1, 1)
		for i := range label.Data {
			label.Data[i] = float32(r.Uint32() % 5)
		}
		return []*tensor.Blob{data, label}
	}
	t.Run("HingeLossLayerTest.TestGradientL1", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &HingeLossConfig{Norm: HingeL1}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 2e-3, Kink: 1, KinkRange: 0.01, Skip: map[int]bool{1: true}})
	})
	t.Run("HingeLossLayerTest.TestGradientL2", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &HingeLossConfig{Norm: HingeL2}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: map[int]bool{1: true}})
	})
}

// TestCaffePortMultinomialLogisticLoss ports Caffe's
// test_multinomial_logistic_loss_layer.cpp. Its bottom comes from Caffe's
// PositiveUnitballFiller (uniform [0, 1], each row scaled to sum 1), made
// here by hand.
func TestCaffePortMultinomialLogisticLoss(t *testing.T) {
	t.Run("MultinomialLogisticLossLayerTest.TestGradientCPU", func(t *testing.T) {
		r := caffeRand()
		data := caffeUniform(r, 0, 1, 10, 5, 1, 1)
		for i := range 10 {
			row := data.Data[i*5 : (i+1)*5]
			var s float32
			for _, v := range row {
				s += v
			}
			for j := range row {
				row[j] /= s
			}
		}
		label := tensor.NewBlob("label", 10, 1, 1, 1)
		for i := range label.Data {
			label.Data[i] = float32(r.Uint32() % 5)
		}
		b, top := []*tensor.Blob{data, label}, cpTops(1)
		l := caffeLayer(t, &MultinomialLogisticLossConfig{}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 2e-2, Kink: 0, KinkRange: 0.05, Skip: map[int]bool{1: true}})
	})
}
