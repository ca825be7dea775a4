package layers

import (
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// portScaleBias ports test_scale_layer.cpp (scale true) or
// test_bias_layer.cpp (scale false): the two files test the same cases,
// with top = x·s or x + s.
func portScaleBias(t *testing.T, scale bool) {
	suite := "BiasLayerTest."
	if scale {
		suite = "ScaleLayerTest."
	}
	gauss := Filler{Type: FillGaussian, Std: 1}
	cfg := func(axis, numAxes int, param, biasTerm bool) Config {
		var f Filler
		if param {
			f = gauss
		}
		if scale {
			c := &ScaleConfig{Axis: axis, NumAxes: numAxes, Filler: f, BiasTerm: biasTerm}
			if biasTerm {
				c.BiasFiller = gauss
			}
			return c
		}
		return &BiasConfig{Axis: axis, NumAxes: numAxes, Filler: f}
	}
	op := func(x, s float32) float32 {
		if scale {
			return x * s
		}
		return x + s
	}
	// Caffe's fixture, uniform in [1, 10]: the 2×3×4×5 bottom, an eltwise
	// operand of its shape, broadcast operands of 2×3, 3×4 and 4×5, and a
	// scalar (a blob of no axes).
	type fix struct{ bottom, eltwise, b0, b1, b2, scalar *tensor.Blob }
	fixture := func() fix {
		r := caffeRand()
		u := func(shape ...int) *tensor.Blob { return caffeUniform(r, 1, 10, shape...) }
		return fix{u(2, 3, 4, 5), u(2, 3, 4, 5), u(2, 3), u(3, 4), u(4, 5), u()}
	}
	// ref computes op(x, s) with s broadcast from axis on.
	ref := func(x *tensor.Blob, s []float32, axis int, sAxes int) []float32 {
		inner := x.Shape.CountFrom(axis + sAxes)
		out := make([]float32, x.Count())
		for i, v := range x.Data {
			out[i] = op(v, s[(i/inner)%len(s)])
		}
		return out
	}
	forward := func(t *testing.T, c Config, b []*tensor.Blob, axis int) {
		top := cpTops(1)
		l := caffeLayer(t, c, Train, b, top)
		cpWantShape(t, "top", top[0], b[0].Shape...)
		orig := append([]float32(nil), b[0].Data...)
		l.Forward(b, top)
		x := caffeBlob(orig, b[0].Shape...)
		var s *tensor.Blob
		if len(b) > 1 {
			s = b[1]
		} else {
			s = l.Params()[0].Blob
		}
		want := ref(x, s.Data, axis, len(s.Shape))
		if scale && len(l.Params()) > 1 { // with bias_term
			bias := l.Params()[1].Blob
			for i := range want {
				want[i] += bias.Data[(i/x.Shape.CountFrom(axis+len(bias.Shape)))%bias.Count()]
			}
		}
		cpNear(t, "top", top[0].Data, want, 1e-5)
	}
	inPlace := func(t *testing.T, c Config, b []*tensor.Blob, axis int) {
		orig := caffeBlob(append([]float32(nil), b[0].Data...), b[0].Shape...)
		l := caffeLayer(t, c, Train, b, b[:1])
		l.Forward(b, b[:1])
		cpNear(t, "bottom", b[0].Data, ref(orig, b[1].Data, axis, len(b[1].Shape)), 1e-5)
	}
	backwardInPlace := func(t *testing.T, c Config, b []*tensor.Blob) {
		topDiff := caffeGaussian(rand.New(rand.NewPCG(9, 9)), 0, 1, b[0].Shape...)
		orig := append([]float32(nil), b[0].Data...)
		top := cpTops(1)
		l := caffeLayer(t, c, Train, b, top)
		l.Forward(b, top)
		copy(top[0].Diff, topDiff.Data)
		l.Backward(top, []bool{true, true}, b)
		bottomDiff := append([]float32(nil), b[0].Diff...)
		sDiff := append([]float32(nil), b[1].Diff...)
		// Now in place.
		copy(b[0].Data, orig)
		if err := l.Reshape(b, b[:1]); err != nil {
			t.Fatal(err)
		}
		l.Forward(b, b[:1])
		copy(b[0].Diff, topDiff.Data)
		l.Backward(b[:1], []bool{true, true}, b)
		cpNear(t, "bottom diff", b[0].Diff, bottomDiff, 1e-5)
		cpNear(t, "operand diff", b[1].Diff, sDiff, 1e-5)
	}
	grad := func(t *testing.T, c Config, b []*tensor.Blob) {
		top := cpTops(1)
		l := caffeLayer(t, c, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
	}
	two := func(f fix, s *tensor.Blob) []*tensor.Blob { return []*tensor.Blob{f.bottom, s} }
	one := func(f fix) []*tensor.Blob { return []*tensor.Blob{f.bottom} }
	name := "Bias"
	if scale {
		name = "Scale"
	}

	t.Run(suite+"TestForwardEltwise", func(t *testing.T) { f := fixture(); forward(t, cfg(0, 1, false, false), two(f, f.eltwise), 0) })
	t.Run(suite+"TestForwardEltwiseInPlace", func(t *testing.T) {
		f := fixture()
		inPlace(t, cfg(0, 1, false, false), two(f, f.eltwise), 0)
	})
	t.Run(suite+"TestBackwardEltwiseInPlace", func(t *testing.T) {
		f := fixture()
		backwardInPlace(t, cfg(0, 1, false, false), two(f, f.eltwise))
	})
	t.Run(suite+"TestForwardEltwiseWithParam", func(t *testing.T) { forward(t, cfg(0, -1, true, false), one(fixture()), 0) })
	t.Run(suite+"TestForwardBroadcastBegin", func(t *testing.T) { f := fixture(); forward(t, cfg(0, 1, false, false), two(f, f.b0), 0) })
	t.Run(suite+"TestForwardBroadcastMiddle", func(t *testing.T) { f := fixture(); forward(t, cfg(1, 1, false, false), two(f, f.b1), 1) })
	t.Run(suite+"TestForwardBroadcastMiddleInPlace", func(t *testing.T) {
		f := fixture()
		inPlace(t, cfg(1, 1, false, false), two(f, f.b1), 1)
	})
	t.Run(suite+"TestBackwardBroadcastMiddleInPlace", func(t *testing.T) {
		f := fixture()
		backwardInPlace(t, cfg(1, 1, false, false), two(f, f.b1))
	})
	t.Run(suite+"TestForwardBroadcastMiddleWithParam", func(t *testing.T) { forward(t, cfg(1, 2, true, false), one(fixture()), 1) })
	if scale {
		t.Run(suite+"TestForwardBroadcastMiddleWithParamAndBias", func(t *testing.T) {
			forward(t, cfg(1, 2, true, true), one(fixture()), 1)
		})
	}
	t.Run(suite+"TestForwardBroadcastEnd", func(t *testing.T) { f := fixture(); forward(t, cfg(2, 1, false, false), two(f, f.b2), 2) })
	t.Run(suite+"TestForward"+name, func(t *testing.T) { f := fixture(); forward(t, cfg(1, 1, false, false), two(f, f.scalar), 1) })
	t.Run(suite+"TestForward"+name+"Axis2", func(t *testing.T) {
		f := fixture()
		forward(t, cfg(2, 1, false, false), two(f, f.scalar), 2)
	})
	t.Run(suite+"TestGradientEltwise", func(t *testing.T) { f := fixture(); grad(t, cfg(0, 1, false, false), two(f, f.eltwise)) })
	t.Run(suite+"TestGradientEltwiseWithParam", func(t *testing.T) { grad(t, cfg(0, -1, true, false), one(fixture())) })
	t.Run(suite+"TestGradientBroadcastBegin", func(t *testing.T) { f := fixture(); grad(t, cfg(0, 1, false, false), two(f, f.b0)) })
	t.Run(suite+"TestGradientBroadcastMiddle", func(t *testing.T) { f := fixture(); grad(t, cfg(1, 1, false, false), two(f, f.b1)) })
	t.Run(suite+"TestGradientBroadcastMiddleWithParam", func(t *testing.T) {
		f := fixture()
		grad(t, cfg(1, 2, true, false), two(f, f.b1))
	})
	t.Run(suite+"TestGradientBroadcastEnd", func(t *testing.T) { f := fixture(); grad(t, cfg(2, 1, false, false), two(f, f.b2)) })
	t.Run(suite+"TestGradient"+name, func(t *testing.T) { f := fixture(); grad(t, cfg(1, 1, false, false), two(f, f.scalar)) })
	if scale {
		t.Run(suite+"TestGradientScaleAndBias", func(t *testing.T) { f := fixture(); grad(t, cfg(1, 1, false, true), two(f, f.scalar)) })
	}
	t.Run(suite+"TestGradient"+name+"Axis2", func(t *testing.T) { f := fixture(); grad(t, cfg(2, 1, false, false), two(f, f.scalar)) })
}

// TestCaffePortScale ports Caffe's test_scale_layer.cpp.
func TestCaffePortScale(t *testing.T) { portScaleBias(t, true) }

// TestCaffePortBias ports Caffe's test_bias_layer.cpp.
func TestCaffePortBias(t *testing.T) { portScaleBias(t, false) }
