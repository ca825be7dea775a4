package layers

import (
	"math"
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's BatchReindexLayerTest.

func TestBatchReindexCaffe(t *testing.T) {
	perm := []float32{4, 0, 4, 0, 1, 2}
	t.Run("BatchReindexLayerTest.TestForward", func(t *testing.T) {
		x := tensor.NewBlob("x", 5, 4, 3, 2)
		for i := range x.Data {
			x.Data[i] = float32(i)
		}
		idx, y := tensor.NewBlob("perm", 6), tensor.NewBlob("top")
		copy(idx.Data, perm)
		l := newTestLayer(t, &BatchReindexConfig{}, Context{}, blobs(x, idx), blobs(y))
		if !y.Shape.Equal(tensor.Shape{6, 4, 3, 2}) {
			t.Fatalf("top shape %v, want [6 4 3 2]", y.Shape)
		}
		l.Forward(blobs(x, idx), blobs(y))
		for i, v := range y.Data {
			n, inner := i/24, i%24
			if want := x.Data[int(perm[n])*24+inner]; v != want {
				t.Fatalf("top[%d] = %v, want %v", i, v, want)
			}
		}
	})
	t.Run("BatchReindexLayerTest.TestGradient", func(t *testing.T) {
		x, idx, y := gaussBlob(1701, 5, 4, 3, 2), tensor.NewBlob("perm", 6), tensor.NewBlob("top")
		copy(idx.Data, perm)
		l := newTestLayer(t, &BatchReindexConfig{}, Context{}, blobs(x, idx), blobs(y))
		checkGradients(t, l, blobs(x, idx), blobs(y), gradCheck{Step: 1e-4, Threshold: 1e-2, Skip: map[int]bool{1: true}})
		// Items 0 and 4 are taken twice: their gradient is the sum.
		for i := range y.Diff {
			y.Diff[i] = 1
		}
		l.Backward(blobs(y), []bool{true, false}, blobs(x, idx))
		for i, v := range x.Diff {
			want := float32([]int{2, 1, 1, 0, 2}[i/24])
			if v != want {
				t.Fatalf("dx[%d] = %v, want %v (the number of times item %d is taken)", i, v, want, i/24)
			}
		}
	})
	t.Run("bad index", func(t *testing.T) {
		x, idx, y := gaussBlob(1, 5, 2), tensor.NewBlob("perm", 1), tensor.NewBlob("top")
		l := newTestLayer(t, &BatchReindexConfig{}, Context{}, blobs(x, idx), blobs(y))
		for _, v := range []float32{5, -1, float32(math.NaN())} {
			idx.Data[0] = v
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("index %v of 5 items: no panic", v)
					}
				}()
				l.Forward(blobs(x, idx), blobs(y))
			}()
		}
		if err := l.Setup(blobs(x, tensor.NewBlob("p", 2, 3)), blobs(y)); err == nil {
			t.Error("a 2-D index blob: no error")
		}
	})
}
