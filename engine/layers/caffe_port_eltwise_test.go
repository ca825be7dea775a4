package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortEltwise ports Caffe's test_eltwise_layer.cpp but for
// TestStableProdGradient and TestUnstableProdGradient, which are ported
// with Eltwise's stable_prod_grad.
func TestCaffePortEltwise(t *testing.T) {
	fixture := func() []*tensor.Blob {
		r := caffeRand()
		return []*tensor.Blob{caffeUniform(r, 0, 1, 2, 3, 4, 5), caffeUniform(r, 0, 1, 2, 3, 4, 5), caffeUniform(r, 0, 1, 2, 3, 4, 5)}
	}
	forward := func(t *testing.T, cfg *EltwiseConfig, f func(a, b, c float32) float32, eps float64) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		l.Forward(b, top)
		want := make([]float32, top[0].Count())
		for i := range want {
			want[i] = f(b[0].Data[i], b[1].Data[i], b[2].Data[i])
		}
		cpNear(t, "top", top[0].Data, want, eps)
	}
	grad := func(t *testing.T, cfg *EltwiseConfig, step float64) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: step, Threshold: 1e-3})
	}
	coeff := []float32{1, -0.5, 2}
	t.Run("EltwiseLayerTest.TestSetUp", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, &EltwiseConfig{Operation: EltwiseProd}, Train, b, top)
		cpWantShape(t, "top", top[0], 2, 3, 4, 5)
	})
	t.Run("EltwiseLayerTest.TestProd", func(t *testing.T) {
		forward(t, &EltwiseConfig{Operation: EltwiseProd}, func(a, b, c float32) float32 { return a * b * c }, 1e-4)
	})
	t.Run("EltwiseLayerTest.TestSum", func(t *testing.T) {
		forward(t, &EltwiseConfig{Operation: EltwiseSum}, func(a, b, c float32) float32 { return a + b + c }, 1e-4)
	})
	t.Run("EltwiseLayerTest.TestSumCoeff", func(t *testing.T) {
		forward(t, &EltwiseConfig{Operation: EltwiseSum, Coeff: coeff}, func(a, b, c float32) float32 { return a - 0.5*b + 2*c }, 1e-4)
	})
	t.Run("EltwiseLayerTest.TestSumGradient", func(t *testing.T) { grad(t, &EltwiseConfig{Operation: EltwiseSum}, 1e-2) })
	t.Run("EltwiseLayerTest.TestSumCoeffGradient", func(t *testing.T) {
		grad(t, &EltwiseConfig{Operation: EltwiseSum, Coeff: coeff}, 1e-2)
	})
	t.Run("EltwiseLayerTest.TestMax", func(t *testing.T) {
		forward(t, &EltwiseConfig{Operation: EltwiseMax}, func(a, b, c float32) float32 { return max(a, max(b, c)) }, 0)
	})
	t.Run("EltwiseLayerTest.TestMaxGradient", func(t *testing.T) { grad(t, &EltwiseConfig{Operation: EltwiseMax}, 1e-4) })
}
