package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortSplit ports SplitLayerTest of Caffe's test_split_layer.cpp.
// (SplitLayerInsertionTest tests Caffe's InsertSplits, which rewrites a
// NetParameter; dsgd's model accumulates the gradient of a blob read by
// several layers without rewriting the net, so it has no counterpart.)
func TestCaffePortSplit(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 6, 5)} }
	t.Run("SplitLayerTest.TestSetup", func(t *testing.T) {
		b, top := fixture(), cpTops(2)
		caffeLayer(t, &SplitConfig{}, Train, b, top)
		cpWantShape(t, "top a", top[0], 2, 3, 6, 5)
		cpWantShape(t, "top b", top[1], 2, 3, 6, 5)
	})
	t.Run("SplitLayerTest.Test", func(t *testing.T) {
		b, top := fixture(), cpTops(2)
		l := caffeLayer(t, &SplitConfig{}, Train, b, top)
		l.Forward(b, top)
		cpNear(t, "top a", top[0].Data, b[0].Data, 0)
		cpNear(t, "top b", top[1].Data, b[0].Data, 0)
	})
	t.Run("SplitLayerTest.TestGradient", func(t *testing.T) {
		b, top := fixture(), cpTops(2)
		l := caffeLayer(t, &SplitConfig{}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	})
}

// TestCaffePortFlatten ports Caffe's test_flatten_layer.cpp.
func TestCaffePortFlatten(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 6, 5)} }
	setup := func(t *testing.T, axis, end int, shape ...int) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, &FlattenConfig{Axis: axis, EndAxis: end}, Train, b, top)
		cpWantShape(t, "top", top[0], shape...)
	}
	t.Run("FlattenLayerTest.TestSetup", func(t *testing.T) { setup(t, 1, -1, 2, 90) })
	t.Run("FlattenLayerTest.TestSetupWithAxis", func(t *testing.T) { setup(t, 2, -1, 2, 3, 30) })
	t.Run("FlattenLayerTest.TestSetupWithEndAxis", func(t *testing.T) { setup(t, 1, -2, 2, 18, 5) })
	t.Run("FlattenLayerTest.TestSetupWithStartAndEndAxis", func(t *testing.T) { setup(t, 0, -2, 36, 5) })
	t.Run("FlattenLayerTest.TestForward", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &FlattenConfig{Axis: 1, EndAxis: -1}, Train, b, top)
		l.Forward(b, top)
		for n := range 2 {
			for c := range 90 {
				if got, want := top[0].Data[n*90+c], b[0].Data[((n*3+c/30)*6+(c/5)%6)*5+c%5]; got != want {
					t.Errorf("top(%d,%d) = %g, want %g", n, c, got, want)
				}
			}
		}
	})
	t.Run("FlattenLayerTest.TestGradient", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &FlattenConfig{Axis: 1, EndAxis: -1}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	})
}

// TestCaffePortReshape ports Caffe's test_reshape_layer.cpp.
func TestCaffePortReshape(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 6, 5)} }
	setup := func(t *testing.T, cfg *ReshapeConfig, shape ...int) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, cfg, Train, b, top)
		cpWantShape(t, "top", top[0], shape...)
	}
	all := func(axis int, dims ...int) *ReshapeConfig {
		return &ReshapeConfig{Shape: dims, Axis: axis, NumAxes: -1}
	}
	t.Run("ReshapeLayerTest.TestFlattenOutputSizes", func(t *testing.T) { setup(t, all(0, 0, -1, 1, 1), 2, 90, 1, 1) })
	t.Run("ReshapeLayerTest.TestFlattenValues", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, all(0, 0, -1, 1, 1), Train, b, top)
		l.Forward(b, top)
		for n := range 2 {
			for c := range 90 {
				if got, want := top[0].Data[n*90+c], b[0].Data[((n*3+c/30)*6+(c/5)%6)*5+c%5]; got != want {
					t.Errorf("top(%d,%d) = %g, want %g", n, c, got, want)
				}
			}
		}
	})
	t.Run("ReshapeLayerTest.TestCopyDimensions", func(t *testing.T) { setup(t, all(0, 0, 0, 0, 0), 2, 3, 6, 5) })
	t.Run("ReshapeLayerTest.TestInferenceOfUnspecified", func(t *testing.T) { setup(t, all(0, 0, 3, 10, -1), 2, 3, 10, 3) })
	t.Run("ReshapeLayerTest.TestInferenceOfUnspecifiedWithStartAxis", func(t *testing.T) {
		setup(t, all(1, 3, 10, -1), 2, 3, 10, 3)
	})
	insert := func(axis int) *ReshapeConfig { return &ReshapeConfig{Shape: []int{1, 1, 1}, Axis: axis, NumAxes: 0} }
	t.Run("ReshapeLayerTest.TestInsertSingletonAxesStart", func(t *testing.T) { setup(t, insert(0), 1, 1, 1, 2, 3, 6, 5) })
	t.Run("ReshapeLayerTest.TestInsertSingletonAxesMiddle", func(t *testing.T) { setup(t, insert(2), 2, 3, 1, 1, 1, 6, 5) })
	t.Run("ReshapeLayerTest.TestInsertSingletonAxesEnd", func(t *testing.T) { setup(t, insert(-1), 2, 3, 6, 5, 1, 1, 1) })
	t.Run("ReshapeLayerTest.TestFlattenMiddle", func(t *testing.T) {
		setup(t, &ReshapeConfig{Shape: []int{-1}, Axis: 1, NumAxes: 2}, 2, 18, 5)
	})
	t.Run("ReshapeLayerTest.TestForward", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, all(0, 6, 2, 3, 5), Train, b, top)
		l.Forward(b, top)
		cpNear(t, "top", top[0].Data, b[0].Data, 0)
	})
	t.Run("ReshapeLayerTest.TestForwardAfterReshape", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, all(0, 6, 2, 3, 5), Train, b, top)
		l.Forward(b, top)
		b[0].Reshape(2 * 3 * 6 * 5)
		if err := l.Reshape(b, top); err != nil {
			t.Fatal(err)
		}
		copy(b[0].Data, caffeGaussian(caffeRand(), 0, 1, 180).Data[:])
		for i := range b[0].Data {
			b[0].Data[i] += 1 // new values, unlike the first Forward's
		}
		l.Forward(b, top)
		cpWantShape(t, "top", top[0], 6, 2, 3, 5)
		cpNear(t, "top", top[0].Data, b[0].Data, 0)
	})
	t.Run("ReshapeLayerTest.TestGradient", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, all(0, 6, 2, 3, 5), Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 1e-2})
	})
}
