package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's SPPLayerTest.

func TestSPPCaffe(t *testing.T) {
	shape := func(t *testing.T, height int, bottom *tensor.Blob, want ...int) {
		top := tensor.NewBlob("top")
		newTestLayer(t, &SPPConfig{PyramidHeight: height}, Context{}, blobs(bottom), blobs(top))
		// Caffe's legacy accessors read missing axes as 1.
		for i, w := range want {
			if top.Dim(i) != w {
				t.Fatalf("top shape %v, want %v", top.Shape, want)
			}
		}
		if len(top.Shape) != 2 {
			t.Fatalf("top shape %v, want 2 axes (Caffe's concat of flattened levels)", top.Shape)
		}
	}
	t.Run("SPPLayerTest.TestSetup", func(t *testing.T) { shape(t, 3, gaussBlob(7, 2, 3, 9, 8), 2, 63, 1, 1) })
	t.Run("SPPLayerTest.TestEqualOutputDims", func(t *testing.T) { shape(t, 5, tensor.NewBlob("b", 4, 3, 1024, 765), 4, 1023, 1, 1) })
	t.Run("SPPLayerTest.TestEqualOutputDims2", func(t *testing.T) { shape(t, 3, tensor.NewBlob("b", 10, 3, 7, 7), 10, 63, 1, 1) })
	t.Run("SPPLayerTest.TestForwardBackward", func(t *testing.T) {
		x, y := gaussBlob(7, 2, 3, 9, 8), tensor.NewBlob("top")
		l := newTestLayer(t, &SPPConfig{PyramidHeight: 3}, Context{}, blobs(x), blobs(y))
		l.Forward(blobs(x), blobs(y))
		for i := range y.Diff {
			y.Diff[i] = 1
		}
		l.Backward(blobs(y), []bool{true}, blobs(x))
		// Each level is a MAX pooling that covers the whole image with
		// its bins: each level routes one unit of gradient per bin, so
		// the bottom's gradient sums to the top's size.
		var s float64
		for _, v := range x.Diff {
			s += float64(v)
		}
		if s != float64(y.Count()) {
			t.Fatalf("bottom gradient sums to %v, want %d (one per top element)", s, y.Count())
		}
		// Level 0 is the global maximum of each plane.
		for p := range 2 * 3 {
			m := float32(math.Inf(-1))
			for _, v := range x.Data[p*72 : (p+1)*72] {
				m = max(m, v)
			}
			n, c := p/3, p%3
			if got := y.Data[n*63+c]; got != m {
				t.Fatalf("plane %d: level 0 = %v, want the plane's max %v", p, got, m)
			}
		}
	})
	t.Run("SPPLayerTest.TestGradient", func(t *testing.T) {
		x, y := gaussBlob(7, 2, 3, 9, 8), tensor.NewBlob("top")
		l := newTestLayer(t, &SPPConfig{PyramidHeight: 3}, Context{}, blobs(x), blobs(y))
		checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: 1e-4, Threshold: 1e-2})
	})
	t.Run("AVE and pyramid_height 1", func(t *testing.T) {
		x, y := gaussBlob(7, 2, 3, 9, 8), tensor.NewBlob("top")
		l := newTestLayer(t, &SPPConfig{PyramidHeight: 3, Method: PoolAve}, Context{}, blobs(x), blobs(y))
		checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: 1e-2, Threshold: 1e-2})
		y1 := tensor.NewBlob("top")
		l1 := newTestLayer(t, &SPPConfig{PyramidHeight: 1}, Context{}, blobs(x), blobs(y1))
		if !y1.Shape.Equal(tensor.Shape{2, 3, 1, 1}) {
			t.Fatalf("pyramid_height 1: top shape %v, want the pooling's [2 3 1 1]", y1.Shape)
		}
		checkGradients(t, l1, blobs(x), blobs(y1), gradCheck{Step: 1e-4, Threshold: 1e-2})
	})
	t.Run("a level whose pad reaches its kernel", func(t *testing.T) {
		// 13 rows in 8 bins: kernel 2, pad (16 − 13 + 1)/2 = 2; Caffe's
		// pooling CHECKs pad < kernel, and so does dsgd's.
		l, _ := (&SPPConfig{PyramidHeight: 4}).Build(Context{})
		if err := l.Setup(blobs(tensor.NewBlob("b", 1, 2, 13, 11)), blobs(tensor.NewBlob("t"))); err == nil {
			t.Fatal("no error")
		}
	})
	if _, err := (&SPPConfig{}).Build(Context{}); err == nil {
		t.Error("SPP without pyramid_height: no error")
	}
}
