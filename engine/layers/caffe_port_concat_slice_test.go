package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// concatRef joins blobs along axis, the blobs agreeing on the other axes.
func concatRef(bs []*tensor.Blob, axis int) []float32 {
	outer := bs[0].Shape.CountRange(0, axis)
	var out []float32
	for o := range outer {
		for _, b := range bs {
			n := b.Shape.CountFrom(axis)
			out = append(out, b.Data[o*n:(o+1)*n]...)
		}
	}
	return out
}

// TestCaffePortConcat ports Caffe's test_concat_layer.cpp.
func TestCaffePortConcat(t *testing.T) {
	fill := func(v float32, shape ...int) *tensor.Blob {
		b := tensor.NewBlob("b", shape...)
		for i := range b.Data {
			b.Data[i] = v
		}
		return b
	}
	// Caffe's fixture: constant 1, 2, 3 bottoms; vec0 = {b0, b1} (joined
	// on channels), vec1 = {b0, b2} (joined on num).
	fixture := func() (vec0, vec1 []*tensor.Blob) {
		b0, b1, b2 := fill(1, 2, 3, 6, 5), fill(2, 2, 5, 6, 5), fill(3, 5, 3, 6, 5)
		return []*tensor.Blob{b0, b1}, []*tensor.Blob{b0, b2}
	}
	t.Run("ConcatLayerTest.TestSetupNum", func(t *testing.T) {
		_, v1 := fixture()
		top := cpTops(1)
		caffeLayer(t, &ConcatConfig{Axis: 0}, Train, v1, top)
		cpWantShape(t, "top", top[0], 7, 3, 6, 5)
	})
	t.Run("ConcatLayerTest.TestSetupChannels", func(t *testing.T) {
		v0, _ := fixture()
		top := cpTops(1)
		caffeLayer(t, &ConcatConfig{Axis: 1}, Train, v0, top)
		cpWantShape(t, "top", top[0], 2, 8, 6, 5)
	})
	t.Run("ConcatLayerTest.TestSetupChannelsNegativeIndexing", func(t *testing.T) {
		v0, _ := fixture()
		top := cpTops(1)
		caffeLayer(t, &ConcatConfig{Axis: -3}, Train, v0, top)
		cpWantShape(t, "top", top[0], 2, 8, 6, 5)
	})
	t.Run("ConcatLayerTest.TestForwardTrivial", func(t *testing.T) {
		v0, _ := fixture()
		v0 = v0[:1]
		top := cpTops(1)
		l := caffeLayer(t, &ConcatConfig{Axis: 1}, Train, v0, top)
		l.Forward(v0, top)
		cpNear(t, "top", top[0].Data, v0[0].Data, 0)
	})
	t.Run("ConcatLayerTest.TestForwardNum", func(t *testing.T) {
		_, v1 := fixture()
		top := cpTops(1)
		l := caffeLayer(t, &ConcatConfig{Axis: 0}, Train, v1, top)
		l.Forward(v1, top)
		cpNear(t, "top", top[0].Data, concatRef(v1, 0), 0)
	})
	t.Run("ConcatLayerTest.TestForwardChannels", func(t *testing.T) {
		v0, _ := fixture()
		top := cpTops(1)
		l := caffeLayer(t, &ConcatConfig{Axis: 1}, Train, v0, top)
		l.Forward(v0, top)
		cpNear(t, "top", top[0].Data, concatRef(v0, 1), 0)
	})
	grad := func(t *testing.T, axis int, bs []*tensor.Blob, skip map[int]bool) {
		top := cpTops(1)
		l := caffeLayer(t, &ConcatConfig{Axis: axis}, Train, bs, top)
		caffeGrad(t, l, bs, top, gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: skip})
	}
	t.Run("ConcatLayerTest.TestGradientTrivial", func(t *testing.T) { v0, _ := fixture(); grad(t, 1, v0[:1], nil) })
	t.Run("ConcatLayerTest.TestGradientNum", func(t *testing.T) { _, v1 := fixture(); grad(t, 0, v1, nil) })
	t.Run("ConcatLayerTest.TestGradientChannels", func(t *testing.T) { v0, _ := fixture(); grad(t, 1, v0, nil) })
	t.Run("ConcatLayerTest.TestGradientChannelsBottomOneOnly", func(t *testing.T) {
		v0, _ := fixture()
		grad(t, 1, v0, map[int]bool{0: true})
	})
}

// TestCaffePortSlice ports Caffe's test_slice_layer.cpp.
func TestCaffePortSlice(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 6, 12, 2, 3)} }
	small := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 4, 5, 2, 2)} }
	t.Run("SliceLayerTest.TestSetupNum", func(t *testing.T) {
		b, top := fixture(), cpTops(3)
		caffeLayer(t, &SliceConfig{Axis: 0}, Train, b, top)
		for _, tb := range top {
			cpWantShape(t, "top", tb, 2, 12, 2, 3)
		}
	})
	t.Run("SliceLayerTest.TestSetupChannels", func(t *testing.T) {
		b, top := fixture(), cpTops(2)
		caffeLayer(t, &SliceConfig{Axis: 1, SlicePoints: []int{3}}, Train, b, top)
		cpWantShape(t, "top0", top[0], 6, 3, 2, 3)
		cpWantShape(t, "top1", top[1], 6, 9, 2, 3)
	})
	t.Run("SliceLayerTest.TestTrivialSlice", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &SliceConfig{Axis: 1}, Train, b, top)
		cpWantShape(t, "top", top[0], b[0].Shape...)
		l.Forward(b, top)
		cpNear(t, "top", top[0].Data, b[0].Data, 0)
	})
	t.Run("SliceLayerTest.TestSliceAcrossNum", func(t *testing.T) {
		b, top := fixture(), cpTops(2)
		l := caffeLayer(t, &SliceConfig{Axis: 0}, Train, b, top)
		cpWantShape(t, "top0", top[0], 3, 12, 2, 3)
		cpWantShape(t, "top1", top[1], 3, 12, 2, 3)
		l.Forward(b, top)
		cpNear(t, "tops", concatRef(top, 0), b[0].Data, 0)
	})
	t.Run("SliceLayerTest.TestSliceAcrossChannels", func(t *testing.T) {
		b, top := fixture(), cpTops(3)
		l := caffeLayer(t, &SliceConfig{Axis: 1, SlicePoints: []int{2, 8}}, Train, b, top)
		cpWantShape(t, "top0", top[0], 6, 2, 2, 3)
		cpWantShape(t, "top1", top[1], 6, 6, 2, 3)
		cpWantShape(t, "top2", top[2], 6, 4, 2, 3)
		l.Forward(b, top)
		cpNear(t, "tops", concatRef(top, 1), b[0].Data, 0)
	})
	grad := func(t *testing.T, cfg *SliceConfig, b []*tensor.Blob, tops int) {
		top := cpTops(tops)
		l := caffeLayer(t, cfg, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
	}
	t.Run("SliceLayerTest.TestGradientTrivial", func(t *testing.T) { grad(t, &SliceConfig{Axis: 1}, fixture(), 1) })
	t.Run("SliceLayerTest.TestGradientAcrossNum", func(t *testing.T) { grad(t, &SliceConfig{Axis: 0}, small(), 2) })
	t.Run("SliceLayerTest.TestGradientAcrossChannels", func(t *testing.T) {
		grad(t, &SliceConfig{Axis: 1, SlicePoints: []int{4}}, small(), 2)
	})
}
