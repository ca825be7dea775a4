package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortEmbed ports Caffe's test_embed_layer.cpp.
func TestCaffePortEmbed(t *testing.T) {
	r := caffeRand()
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeUniform(r, 0, 1, 4, 1, 1, 1)} }
	u10 := Filler{Type: FillUniform, Min: -10, Max: 10}
	t.Run("EmbedLayerTest.TestSetUp", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, &EmbedConfig{NumOutput: 10, InputDim: 5, BiasTerm: true}, Train, b, top)
		cpWantShape(t, "top", top[0], 4, 1, 1, 1, 10)
	})
	forward := func(t *testing.T, bias bool) {
		b, top := fixture(), cpTops(1)
		cfg := &EmbedConfig{NumOutput: 10, InputDim: 5, BiasTerm: bias, WeightFiller: u10}
		if bias {
			cfg.BiasFiller = u10
		}
		l := caffeLayer(t, cfg, Train, b, top)
		ps := l.Params()
		if want := map[bool]int{false: 1, true: 2}[bias]; len(ps) != want {
			t.Fatalf("%d params, want %d", len(ps), want)
		}
		cpWantShape(t, "weight", ps[0].Blob, 5, 10)
		for i := range b[0].Data {
			b[0].Data[i] = float32(r.Uint32() % 5)
		}
		l.Forward(b, top)
		want := make([]float32, 0, 40)
		for _, x := range b[0].Data {
			for j := range 10 {
				w := ps[0].Blob.Data[int(x)*10+j]
				if bias {
					w += ps[1].Blob.Data[j]
				}
				want = append(want, w)
			}
		}
		if bias {
			cpFloatEq(t, "top", top[0].Data, want)
		} else {
			cpNear(t, "top", top[0].Data, want, 0)
		}
	}
	t.Run("EmbedLayerTest.TestForward", func(t *testing.T) { forward(t, false) })
	t.Run("EmbedLayerTest.TestForwardWithBias", func(t *testing.T) { forward(t, true) })
	grad := func(t *testing.T, bias bool) {
		b, top := []*tensor.Blob{caffeBlob([]float32{4, 2, 2, 3}, 4, 1, 1, 1)}, cpTops(1)
		cfg := &EmbedConfig{NumOutput: 10, InputDim: 5, BiasTerm: bias, WeightFiller: u10}
		if bias {
			cfg.BiasFiller = u10
		}
		l := caffeLayer(t, cfg, Train, b, top)
		// Caffe's check_bottom -2: the params only.
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3, Skip: map[int]bool{0: true}})
	}
	t.Run("EmbedLayerTest.TestGradient", func(t *testing.T) { grad(t, false) })
	t.Run("EmbedLayerTest.TestGradientWithBias", func(t *testing.T) { grad(t, true) })
}
