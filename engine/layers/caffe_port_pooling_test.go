package layers

import (
	"fmt"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortPooling ports Caffe's test_pooling_layer.cpp (MAX and AVE;
// the top-mask tests are ported with Pooling's mask top).
func TestCaffePortPooling(t *testing.T) {
	// Caffe's fixture: a 2×3×6×5 gaussian bottom.
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 6, 5)} }
	pool := func(m PoolMethod, kh, kw, s, pad int) *PoolingConfig {
		return &PoolingConfig{Method: m, KernelH: kh, KernelW: kw, StrideH: s, StrideW: s, PadH: pad, PadW: pad}
	}
	setup := func(t *testing.T, cfg *PoolingConfig, h, w int) {
		bottom, top := fixture(), cpTops(1)
		caffeLayer(t, cfg, Train, bottom, top)
		cpWantShape(t, "top", top[0], 2, 3, h, w)
	}
	t.Run("PoolingLayerTest.TestSetup", func(t *testing.T) { setup(t, pool(PoolMax, 3, 3, 2, 0), 3, 2) })
	t.Run("PoolingLayerTest.TestSetupPadded", func(t *testing.T) { setup(t, pool(PoolAve, 3, 3, 2, 1), 4, 3) })
	t.Run("PoolingLayerTest.TestSetupGlobalPooling", func(t *testing.T) {
		setup(t, &PoolingConfig{Method: PoolAve, GlobalPooling: true, StrideH: 1, StrideW: 1}, 1, 1)
	})

	t.Run("PoolingLayerTest.TestForwardMax", func(t *testing.T) {
		run := func(name string, cfg *PoolingConfig, h, w int, in []float32, oh, ow int, want []float32) {
			t.Run(name, func(t *testing.T) {
				bottom, top := []*tensor.Blob{caffeBlob(cpRepeat(in, 4), 2, 2, h, w)}, cpTops(1)
				l := caffeLayer(t, cfg, Train, bottom, top)
				cpWantShape(t, "top", top[0], 2, 2, oh, ow)
				l.Forward(bottom, top)
				cpNear(t, "top", top[0].Data, cpRepeat(want, 4), 0)
			})
		}
		run("Square", pool(PoolMax, 2, 2, 1, 0), 3, 5,
			[]float32{1, 2, 5, 2, 3, 9, 4, 1, 4, 8, 1, 2, 5, 2, 3}, 2, 4,
			[]float32{9, 5, 5, 8, 9, 5, 5, 8})
		rect := []float32{
			35, 1, 6, 26, 19, 24,
			3, 32, 7, 21, 23, 25,
			31, 9, 2, 22, 27, 20,
			8, 28, 33, 17, 10, 15,
			30, 5, 34, 12, 14, 16,
			4, 36, 29, 13, 18, 11}
		run("RectHigh", pool(PoolMax, 3, 2, 1, 0), 6, 6, rect, 4, 5, []float32{
			35, 32, 26, 27, 27,
			32, 33, 33, 27, 27,
			31, 34, 34, 27, 27,
			36, 36, 34, 18, 18})
		run("RectWide", pool(PoolMax, 2, 3, 1, 0), 6, 6, rect, 5, 4, []float32{
			35, 32, 26, 26,
			32, 32, 27, 27,
			33, 33, 33, 27,
			34, 34, 34, 17,
			36, 36, 34, 18})
	})

	t.Run("PoolingLayerTest.TestGradientMax", func(t *testing.T) {
		for kh := 3; kh <= 4; kh++ {
			for kw := 3; kw <= 4; kw++ {
				t.Run(fmt.Sprintf("%dx%d", kh, kw), func(t *testing.T) {
					bottom, top := fixture(), cpTops(1)
					l := caffeLayer(t, pool(PoolMax, kh, kw, 2, 1), Train, bottom, top)
					caffeGrad(t, l, bottom, top, gradCheck{Step: 1e-4, Threshold: 1e-2})
				})
			}
		}
	})

	t.Run("PoolingLayerTest.TestForwardMaxPadded", func(t *testing.T) {
		bottom, top := []*tensor.Blob{caffeBlob([]float32{1, 2, 4, 2, 3, 2, 4, 2, 1}, 1, 1, 3, 3)}, cpTops(1)
		l := caffeLayer(t, pool(PoolMax, 3, 3, 2, 2), Train, bottom, top)
		cpWantShape(t, "top", top[0], 1, 1, 3, 3)
		l.Forward(bottom, top)
		cpNear(t, "top", top[0].Data, []float32{1, 4, 4, 4, 4, 4, 4, 4, 1}, 1e-8)
	})

	t.Run("PoolingLayerTest.TestForwardAve", func(t *testing.T) {
		bottom, top := []*tensor.Blob{caffeBlob(cpRepeat([]float32{2}, 9), 1, 1, 3, 3)}, cpTops(1)
		l := caffeLayer(t, pool(PoolAve, 3, 3, 1, 1), Train, bottom, top)
		cpWantShape(t, "top", top[0], 1, 1, 3, 3)
		l.Forward(bottom, top)
		e, f := float32(8.0/9), float32(4.0/3)
		cpNear(t, "top", top[0].Data, []float32{e, f, e, f, 2, f, e, f, e}, 1e-5)
	})

	for _, tc := range []struct {
		name string
		pad  int
	}{{"PoolingLayerTest.TestGradientAve", 0}, {"PoolingLayerTest.TestGradientAvePadded", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			for kh := 3; kh <= 4; kh++ {
				for kw := 3; kw <= 4; kw++ {
					t.Run(fmt.Sprintf("%dx%d", kh, kw), func(t *testing.T) {
						bottom, top := fixture(), cpTops(1)
						l := caffeLayer(t, pool(PoolAve, kh, kw, 2, tc.pad), Train, bottom, top)
						caffeGrad(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
					})
				}
			}
		})
	}
}
