package layers

import (
	"fmt"
	"testing"

	"dsgd/engine/tensor"
)

// cropRef cuts x to shape starting at off (one offset per axis).
func cropRef(x *tensor.Blob, shape []int, off []int) []float32 {
	out := make([]float32, tensor.Shape(shape).Count())
	idx := make([]int, len(shape))
	for i := range out {
		r := i
		for a := len(shape) - 1; a >= 0; a-- {
			idx[a] = r % shape[a]
			r /= shape[a]
		}
		src := 0
		for a := range shape {
			src = src*x.Shape[a] + idx[a] + off[a]
		}
		out[i] = x.Data[src]
	}
	return out
}

// TestCaffePortCrop ports Caffe's test_crop_layer.cpp.
func TestCaffePortCrop(t *testing.T) {
	fixture := func(extra bool) []*tensor.Blob {
		r := caffeRand()
		if extra { // TestCrop5D: a fifth axis of 2 and 1
			return []*tensor.Blob{caffeGaussian(r, 0, 1, 2, 4, 5, 4, 2), caffeGaussian(r, 0, 1, 2, 3, 4, 2, 1)}
		}
		return []*tensor.Blob{caffeGaussian(r, 0, 1, 2, 4, 5, 4), caffeGaussian(r, 0, 1, 2, 3, 4, 2)}
	}
	setup := func(t *testing.T, b []*tensor.Blob, axis int, shape ...int) {
		top := cpTops(1)
		caffeLayer(t, &CropConfig{Axis: axis}, Train, b, top)
		cpWantShape(t, "top", top[0], shape...)
	}
	t.Run("CropLayerTest.TestSetupShapeAll", func(t *testing.T) { setup(t, fixture(false), 0, 2, 3, 4, 2) })
	t.Run("CropLayerTest.TestSetupShapeDefault", func(t *testing.T) { setup(t, fixture(false), 2, 2, 4, 4, 2) })
	t.Run("CropLayerTest.TestSetupShapeNegativeIndexing", func(t *testing.T) { setup(t, fixture(false), -1, 2, 4, 5, 2) })
	t.Run("CropLayerTest.TestDimensionsCheck", func(t *testing.T) {
		b := fixture(false)
		b[1] = caffeGaussian(caffeRand(), 0, 1, 2, 5, 4, 2)
		setup(t, b, 2, 2, 4, 4, 2)
	})
	forward := func(t *testing.T, b []*tensor.Blob, cfg *CropConfig, off []int) {
		top := cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		l.Forward(b, top)
		cpNear(t, "top", top[0].Data, cropRef(b[0], top[0].Shape, off), 0)
	}
	t.Run("CropLayerTest.TestCropAll", func(t *testing.T) {
		forward(t, fixture(false), &CropConfig{Axis: 0}, []int{0, 0, 0, 0})
	})
	t.Run("CropLayerTest.TestCropAllOffset", func(t *testing.T) {
		forward(t, fixture(false), &CropConfig{Axis: 0, Offset: []int{0, 1, 1, 2}}, []int{0, 1, 1, 2})
	})
	t.Run("CropLayerTest.TestCropHW", func(t *testing.T) {
		forward(t, fixture(false), &CropConfig{Axis: 2, Offset: []int{1, 2}}, []int{0, 0, 1, 2})
	})
	t.Run("CropLayerTest.TestCrop5D", func(t *testing.T) {
		forward(t, fixture(true), &CropConfig{Axis: 2, Offset: []int{1, 2, 0}}, []int{0, 0, 1, 2, 0})
	})
	grad := func(t *testing.T, b []*tensor.Blob, cfg *CropConfig) {
		top := cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
	}
	t.Run("CropLayerTest.TestCropAllGradient", func(t *testing.T) { grad(t, fixture(false), &CropConfig{Axis: 0}) })
	t.Run("CropLayerTest.TestCropHWGradient", func(t *testing.T) {
		grad(t, fixture(false), &CropConfig{Axis: 2, Offset: []int{1, 2}})
	})
	t.Run("CropLayerTest.TestCrop5DGradient", func(t *testing.T) {
		grad(t, fixture(true), &CropConfig{Axis: 2, Offset: []int{1, 2, 0}})
	})
}

// TestCaffePortTile ports Caffe's test_tile_layer.cpp.
func TestCaffePortTile(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 4, 5)} }
	setup := func(t *testing.T, tiles int) {
		for axis := range 4 {
			t.Run(fmt.Sprint("axis", axis), func(t *testing.T) {
				b, top := fixture(), cpTops(1)
				caffeLayer(t, &TileConfig{Axis: axis, Tiles: tiles}, Train, b, top)
				want := b[0].Shape.Clone()
				want[axis] *= tiles
				cpWantShape(t, "top", top[0], want...)
			})
		}
	}
	t.Run("TileLayerTest.TestTrivialSetup", func(t *testing.T) { setup(t, 1) })
	t.Run("TileLayerTest.TestSetup", func(t *testing.T) { setup(t, 3) })
	forward := func(t *testing.T, axis int) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &TileConfig{Axis: axis, Tiles: 3}, Train, b, top)
		l.Forward(b, top)
		s := top[0].Shape
		for n := range s[0] {
			for c := range s[1] {
				for h := range s[2] {
					for w := range s[3] {
						bn, bc := n, c
						if axis == 0 {
							bn = n % 2
						} else {
							bc = c % 3
						}
						got, want := top[0].Data[((n*s[1]+c)*4+h)*5+w], b[0].Data[((bn*3+bc)*4+h)*5+w]
						if got != want {
							t.Fatalf("top(%d,%d,%d,%d) = %g, want %g", n, c, h, w, got, want)
						}
					}
				}
			}
		}
	}
	t.Run("TileLayerTest.TestForwardNum", func(t *testing.T) { forward(t, 0) })
	t.Run("TileLayerTest.TestForwardChannels", func(t *testing.T) { forward(t, 1) })
	grad := func(t *testing.T, axis, tiles int) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &TileConfig{Axis: axis, Tiles: tiles}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	}
	t.Run("TileLayerTest.TestTrivialGradient", func(t *testing.T) { grad(t, 1, 1) })
	t.Run("TileLayerTest.TestGradientNum", func(t *testing.T) { grad(t, 0, 3) })
	t.Run("TileLayerTest.TestGradientChannels", func(t *testing.T) { grad(t, 1, 3) })
}
