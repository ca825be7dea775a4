package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortPower ports Caffe's test_power_layer.cpp.
func TestCaffePortPower(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 4, 5)} }
	forward := func(t *testing.T, power, scale, shift float32) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &PowerConfig{Power: power, Scale: scale, Shift: shift}, Train, b, top)
		l.Forward(b, top)
		for i, x := range b[0].Data {
			want := float32(math.Pow(float64(shift+scale*x), float64(power)))
			y := top[0].Data[i]
			if (power == 0 || power == 1 || power == 2) && math.IsNaN(float64(y)) {
				t.Errorf("top[%d] is NaN", i)
			}
			if math.IsNaN(float64(want)) {
				if !math.IsNaN(float64(y)) {
					t.Errorf("top[%d] = %g, want NaN", i, y)
				}
				continue
			}
			cpNear(t, "top", []float32{y}, []float32{want}, math.Max(math.Abs(float64(want)*1e-4), 1e-5))
		}
	}
	backward := func(t *testing.T, power, scale, shift float32) {
		b, top := fixture(), cpTops(1)
		if power != 0 && power != 1 && power != 2 {
			// Reflect values below -shift/scale so the base is positive.
			m := -shift / scale
			for i, x := range b[0].Data {
				if x < m {
					b[0].Data[i] = m + (m - x)
				}
			}
		}
		l := caffeLayer(t, &PowerConfig{Power: power, Scale: scale, Shift: shift}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-3, Threshold: 1e-2, KinkRange: 0.01})
	}
	t.Run("PowerLayerTest.TestPower", func(t *testing.T) { forward(t, 0.37, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerGradient", func(t *testing.T) { backward(t, 0.37, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerGradientShiftZero", func(t *testing.T) { backward(t, 0.37, 0.83, 0) })
	t.Run("PowerLayerTest.TestPowerZero", func(t *testing.T) { forward(t, 0, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerZeroGradient", func(t *testing.T) { backward(t, 0, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerOne", func(t *testing.T) { forward(t, 1, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerOneGradient", func(t *testing.T) { backward(t, 1, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerTwo", func(t *testing.T) { forward(t, 2, 0.34, -2.4) })
	t.Run("PowerLayerTest.TestPowerTwoGradient", func(t *testing.T) { backward(t, 2, 0.83, -2.4) })
	t.Run("PowerLayerTest.TestPowerTwoScaleHalfGradient", func(t *testing.T) { backward(t, 2, 0.5, -2.4) })
}

// TestCaffePortTanH ports Caffe's test_tanh_layer.cpp.
func TestCaffePortTanH(t *testing.T) {
	naive := func(x float64) float64 {
		switch {
		case x < -40:
			return -1
		case x > 40:
			return 1
		}
		e := math.Exp(2 * x)
		return (e - 1) / (e + 1)
	}
	forward := func(t *testing.T, std float64) {
		b, top := []*tensor.Blob{caffeGaussian(caffeRand(), 0, std, 2, 3, 4, 5)}, cpTops(1)
		l := caffeLayer(t, &TanHConfig{}, Train, b, top)
		l.Forward(b, top)
		for i, x := range b[0].Data {
			want := float32(naive(float64(x)))
			cpNear(t, "top", top[0].Data[i:i+1], []float32{want}, math.Max(math.Abs(float64(want)*1e-4), 1e-5))
		}
	}
	t.Run("TanHLayerTest.TestTanH", func(t *testing.T) { forward(t, 1) })
	t.Run("TanHLayerTest.TestTanHOverflow", func(t *testing.T) { forward(t, 10000) })
	t.Run("TanHLayerTest.TestTanHGradient", func(t *testing.T) {
		b, top := []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 4, 5)}, cpTops(1)
		l := caffeLayer(t, &TanHConfig{}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	})
}

// TestCaffePortThreshold ports Caffe's test_threshold_layer.cpp.
func TestCaffePortThreshold(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 6, 5)} }
	t.Run("ThresholdLayerTest.TestSetup", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, &ThresholdConfig{}, Train, b, top)
		cpWantShape(t, "top", top[0], 2, 3, 6, 5)
	})
	run := func(t *testing.T, th float32) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &ThresholdConfig{Threshold: th}, Train, b, top)
		l.Forward(b, top)
		for i, y := range top[0].Data {
			x := b[0].Data[i]
			if !(y >= 0 && y <= 1) || (y == 0 && !(x <= th)) || (y == 1 && !(x > th)) {
				t.Errorf("top[%d] = %g for bottom %g, threshold %g", i, y, x, th)
			}
		}
	}
	t.Run("ThresholdLayerTest.Test", func(t *testing.T) { run(t, 0) })
	t.Run("ThresholdLayerTest.Test2", func(t *testing.T) { run(t, 0.5) })
}
