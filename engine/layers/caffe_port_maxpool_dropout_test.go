package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortMaxPoolingDropout ports Caffe's
// test_maxpool_dropout_layers.cpp: MAX pooling (kernel 3, stride 2) of a
// 2×3×6×5 bottom of ones, then Dropout (0.5) in place on its top.
func TestCaffePortMaxPoolingDropout(t *testing.T) {
	ones := func() []*tensor.Blob { return []*tensor.Blob{caffeBlob(cpRepeat([]float32{1}, 180), 2, 3, 6, 5)} }
	pool := &PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}
	drop := &DropoutConfig{Ratio: 0.5}
	sum := func(v []float32) (s float32) {
		for _, x := range v {
			s += x
		}
		return s
	}
	t.Run("MaxPoolingDropoutTest.TestSetup", func(t *testing.T) {
		b, top := ones(), cpTops(1)
		caffeLayer(t, pool, Train, b, top)
		caffeLayer(t, drop, Train, top, top)
		cpWantShape(t, "top", top[0], 2, 3, 3, 2)
	})
	t.Run("MaxPoolingDropoutTest.TestForward", func(t *testing.T) {
		b, top := ones(), cpTops(1)
		p := caffeLayer(t, pool, Train, b, top)
		p.Forward(b, top)
		if s := sum(top[0].Data); s != float32(top[0].Count()) {
			t.Errorf("pooled sum %g, want %d", s, top[0].Count())
		}
		d := caffeLayer(t, drop, Train, top, top)
		d.Forward(top, top)
		if s := sum(top[0].Data); s < 0 || s > float32(top[0].Count())*2 {
			t.Errorf("dropped-out sum %g, want it in [0, %d]", s, 2*top[0].Count())
		}
	})
	t.Run("MaxPoolingDropoutTest.TestBackward", func(t *testing.T) {
		b, top := ones(), cpTops(1)
		p := caffeLayer(t, pool, Train, b, top)
		p.Forward(b, top)
		for i := range top[0].Diff {
			top[0].Diff[i] = 1
		}
		p.Backward(top, []bool{true}, b)
		plain := sum(b[0].Diff)
		if plain != float32(top[0].Count()) {
			t.Errorf("bottom diff sums to %g, want %d", plain, top[0].Count())
		}
		d := caffeLayer(t, drop, Train, top, top)
		d.Forward(top, top)
		d.Backward(top, []bool{true}, top)
		p.Backward(top, []bool{true}, b)
		// Caffe's check holds for its seed: the kept half, doubled, sums
		// at least to the whole.
		if with := sum(b[0].Diff); with < plain {
			t.Errorf("bottom diff with dropout sums to %g, below %g", with, plain)
		}
	})
}
