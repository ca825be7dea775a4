package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortInnerProduct ports Caffe's test_inner_product_layer.cpp.
func TestCaffePortInnerProduct(t *testing.T) {
	// Caffe's fixture: a 2×3×4×5 bottom and a 1×2×3×4 one, uniform [0, 1].
	bottom := func() []*tensor.Blob { return []*tensor.Blob{caffeUniform(caffeRand(), 0, 1, 2, 3, 4, 5)} }
	uni := Filler{Type: FillUniform, Min: 0, Max: 1}
	uni12 := Filler{Type: FillUniform, Min: 1, Max: 2}
	gauss := Filler{Type: FillGaussian, Std: 1}
	setup := func(t *testing.T, transpose bool, wshape ...int) {
		b, top := bottom(), cpTops(1)
		l := caffeLayer(t, &InnerProductConfig{NumOutput: 10, BiasTerm: true, Axis: 1, Transpose: transpose}, Train, b, top)
		cpWantShape(t, "top", top[0], 2, 10)
		if wshape != nil {
			cpWantShape(t, "weight", l.Params()[0].Blob, wshape...)
		}
	}
	t.Run("InnerProductLayerTest.TestSetUp", func(t *testing.T) { setup(t, false) })
	t.Run("InnerProductLayerTest.TestSetUpTransposeFalse", func(t *testing.T) { setup(t, false, 10, 60) })
	t.Run("InnerProductLayerTest.TestSetUpTransposeTrue", func(t *testing.T) { setup(t, true, 60, 10) })

	atLeastOne := func(t *testing.T, b []*tensor.Blob) {
		top := cpTops(1)
		l := caffeLayer(t, &InnerProductConfig{NumOutput: 10, BiasTerm: true, Axis: 1, WeightFiller: uni, BiasFiller: uni12}, Train, b, top)
		l.Forward(b, top)
		for i, v := range top[0].Data {
			if !(v >= 1) {
				t.Errorf("top[%d] = %g, want >= 1", i, v)
			}
		}
	}
	t.Run("InnerProductLayerTest.TestForward", func(t *testing.T) { atLeastOne(t, bottom()) })
	t.Run("InnerProductLayerTest.TestForwardNoBatch", func(t *testing.T) {
		atLeastOne(t, []*tensor.Blob{caffeUniform(caffeRand(), 0, 1, 1, 2, 3, 4)})
	})

	// transposed builds the transpose=true twin of an IP layer, with the
	// weights copied while transposing and the bias copied.
	transposed := func(t *testing.T, l Layer, b, top []*tensor.Blob) Layer {
		lt := caffeLayer(t, &InnerProductConfig{NumOutput: 10, BiasTerm: true, Axis: 1, Transpose: true, WeightFiller: uni, BiasFiller: uni12}, Train, b, top)
		w, wt := l.Params()[0].Blob, lt.Params()[0].Blob
		if w.Count() != wt.Count() {
			t.Fatalf("weight counts %d and %d", w.Count(), wt.Count())
		}
		width, widthT := w.Shape[1], wt.Shape[1]
		for i := range w.Data {
			r, c := i/width, i%width
			wt.Data[c*widthT+r] = w.Data[r*width+c]
		}
		copy(lt.Params()[1].Blob.Data, l.Params()[1].Blob.Data)
		return lt
	}
	cfg := &InnerProductConfig{NumOutput: 10, BiasTerm: true, Axis: 1, WeightFiller: uni, BiasFiller: uni12}

	t.Run("InnerProductLayerTest.TestForwardTranspose", func(t *testing.T) {
		b, top := bottom(), cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		l.Forward(b, top)
		want := append([]float32(nil), top[0].Data...)
		topT := cpTops(1)
		lt := transposed(t, l, b, topT)
		lt.Forward(b, topT)
		cpFloatEq(t, "top", topT[0].Data, want)
	})

	for _, tc := range []struct {
		name      string
		n         int
		transpose bool
	}{{"InnerProductLayerTest.TestGradient", 10, false}, {"InnerProductLayerTest.TestGradientTranspose", 11, true}} {
		t.Run(tc.name, func(t *testing.T) {
			b, top := bottom(), cpTops(1)
			l := caffeLayer(t, &InnerProductConfig{NumOutput: tc.n, BiasTerm: true, Axis: 1, Transpose: tc.transpose,
				WeightFiller: gauss, BiasFiller: gauss}, Train, b, top)
			caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
		})
	}

	t.Run("InnerProductLayerTest.TestBackwardTranspose", func(t *testing.T) {
		b, top := bottom(), cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		l.Forward(b, top)
		diff := caffeUniform(caffeRand(), 0, 1, top[0].Shape...)
		copy(top[0].Diff, diff.Data)
		l.Params()[0].Blob.ZeroDiff()
		l.Params()[1].Blob.ZeroDiff()
		l.Backward(top, []bool{true}, b)
		w := l.Params()[0].Blob
		bottomDiff := append([]float32(nil), b[0].Diff...)

		topT := cpTops(1)
		lt := transposed(t, l, b, topT)
		lt.Forward(b, topT)
		copy(topT[0].Diff, diff.Data)
		lt.Params()[0].Blob.ZeroDiff()
		lt.Params()[1].Blob.ZeroDiff()
		lt.Backward(topT, []bool{true}, b)
		wt := lt.Params()[0].Blob
		width, widthT := w.Shape[1], wt.Shape[1]
		got, want := make([]float32, w.Count()), make([]float32, w.Count())
		for i := range w.Diff {
			r, c := i/width, i%width
			if w.Diff[r*width+c] == 0 {
				t.Errorf("weight diff[%d] is 0", i)
			}
			want[i], got[i] = w.Diff[r*width+c], wt.Diff[c*widthT+r]
		}
		cpFloatEq(t, "weight diff", got, want)
		for i, v := range bottomDiff {
			if v == 0 {
				t.Errorf("bottom diff[%d] is 0", i)
			}
		}
		cpFloatEq(t, "bottom diff", b[0].Diff, bottomDiff)
	})
}
