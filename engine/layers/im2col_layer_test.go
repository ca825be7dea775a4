package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's Im2colLayerTest (the ForceND variants are the
// same 2-D cases: dsgd's Im2col is 2-D only).

func TestIm2colCaffe(t *testing.T) {
	k3s2 := &Im2colConfig{KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}
	k3s2d3 := &Im2colConfig{KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, DilationH: 3, DilationW: 3}
	rect := &Im2colConfig{KernelH: 5, KernelW: 3, StrideH: 2, StrideW: 2}
	at := func(b *tensor.Blob, n, c, h, w int) float32 {
		return b.Data[((n*b.Shape[1]+c)*b.Shape[2]+h)*b.Shape[3]+w]
	}
	t.Run("Im2colLayerTest.TestSetup", func(t *testing.T) {
		x, y := gaussBlob(1701, 2, 3, 10, 11), tensor.NewBlob("top")
		newTestLayer(t, k3s2d3, Context{}, blobs(x), blobs(y))
		if !y.Shape.Equal(tensor.Shape{2, 27, 2, 3}) {
			t.Fatalf("top shape %v, want [2 27 2 3]", y.Shape)
		}
	})
	t.Run("Im2colLayerTest.TestForward", func(t *testing.T) {
		x, y := gaussBlob(1701, 2, 3, 6, 5), tensor.NewBlob("top")
		l := newTestLayer(t, k3s2, Context{}, blobs(x), blobs(y))
		l.Forward(blobs(x), blobs(y))
		for c := range 27 {
			if got, want := at(y, 0, c, 0, 0), at(x, 0, c/9, (c/3)%3, c%3); got != want {
				t.Fatalf("channel %d = %v, want %v", c, got, want)
			}
		}
	})
	t.Run("Im2colLayerTest.TestRect", func(t *testing.T) {
		x, y := gaussBlob(1701, 2, 3, 6, 5), tensor.NewBlob("top")
		l := newTestLayer(t, rect, Context{}, blobs(x), blobs(y))
		l.Forward(blobs(x), blobs(y))
		for c := range 45 {
			if got, want := at(y, 0, c, 0, 0), at(x, 0, c/15, (c/3)%5, c%3); got != want {
				t.Fatalf("channel %d = %v, want %v", c, got, want)
			}
		}
	})
	grad := func(t *testing.T, cfg *Im2colConfig, shape ...int) {
		x, y := gaussBlob(1701, shape...), tensor.NewBlob("top")
		l := newTestLayer(t, cfg, Context{Threads: 2}, blobs(x), blobs(y))
		checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: 1e-2, Threshold: 1e-2})
	}
	t.Run("Im2colLayerTest.TestGradient", func(t *testing.T) { grad(t, k3s2, 2, 3, 6, 5) })
	t.Run("Im2colLayerTest.TestDilatedGradient", func(t *testing.T) { grad(t, k3s2d3, 2, 3, 10, 9) })
	t.Run("Im2colLayerTest.TestRectGradient", func(t *testing.T) { grad(t, rect, 2, 3, 6, 5) })
	t.Run("padded", func(t *testing.T) {
		grad(t, &Im2colConfig{KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1}, 2, 2, 4, 5)
	})
}
