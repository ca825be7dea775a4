package layers

import (
	"slices"
	"testing"

	"dsgd/engine/tensor"
)

// Ports of BVLC Caffe's Im2colLayerTest; the ForceND variants run the
// same 2-D windows on the im2col_nd path.

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
	force := func(c *Im2colConfig) *Im2colConfig {
		f := *c
		f.ND = &ConvND{Axis: 1, Kernel: []int{c.KernelH}, Stride: []int{c.StrideH}, Dilation: []int{max(c.DilationH, 1)}, ForceND: true}
		return &f
	}
	t.Run("Im2colLayerTest.TestGradientForceND", func(t *testing.T) { grad(t, force(k3s2), 2, 3, 6, 5) })
	t.Run("Im2colLayerTest.TestDilatedGradientForceND", func(t *testing.T) { grad(t, force(k3s2d3), 2, 3, 10, 9) })
	t.Run("padded", func(t *testing.T) {
		grad(t, &Im2colConfig{KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1}, 2, 2, 4, 5)
	})
}

// TestIm2colND: the im2col_nd path gives the 2-D path's top and bottom
// diff bit for bit on a 2-D window (force_nd_im2col), and on three
// spatial axes, with the channel on axis 2 and a batch-like axis before
// it, each column entry is its pixel (or a zero of the padding) and the
// gradients match finite differences.
func TestIm2colND(t *testing.T) {
	run := func(t *testing.T, cfg *Im2colConfig, x *tensor.Blob) (*tensor.Blob, *tensor.Blob) {
		y := tensor.NewBlob("top")
		l := newTestLayer(t, cfg, Context{Threads: 2}, blobs(x), blobs(y))
		l.Forward(blobs(x), blobs(y))
		for i := range y.Diff {
			y.Diff[i] = float32(i%7) - 3
		}
		l.Backward(blobs(y), []bool{true}, blobs(x))
		return y, x
	}
	twoD := &Im2colConfig{KernelH: 3, KernelW: 2, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 2}
	forced := *twoD
	forced.ND = &ConvND{Axis: 1, Kernel: []int{3, 2}, Stride: []int{2, 1}, Pad: []int{1, 1}, Dilation: []int{1, 2}, ForceND: true}
	y2, x2 := run(t, twoD, gaussBlob(5, 2, 3, 7, 6))
	yn, xn := run(t, &forced, gaussBlob(5, 2, 3, 7, 6))
	if !yn.Shape.Equal(y2.Shape) || !slices.Equal(yn.Data, y2.Data) || !slices.Equal(xn.Diff, x2.Diff) {
		t.Fatalf("force_nd_im2col: top %v / bottom diff differ from the 2-D path's (top %v)", yn.Shape, y2.Shape)
	}

	// (2, 3, C=2, 4, 5, 3): channel axis 2, three spatial axes.
	nd := &Im2colConfig{ND: &ConvND{Axis: 2, Kernel: []int{2, 3, 1}, Stride: []int{1, 2, 1}, Pad: []int{0, 1, 0}, Dilation: []int{2, 1, 1}}}
	x := gaussBlob(9, 2, 3, 2, 4, 5, 3)
	y := tensor.NewBlob("top")
	l := newTestLayer(t, nd, Context{Threads: 2}, blobs(x), blobs(y))
	l.Forward(blobs(x), blobs(y))
	// Output spatial: (4-3)/1+1 = 2, (5+2-3)/2+1 = 3, 3.
	if want := (tensor.Shape{2, 3, 2 * 6, 2, 3, 3}); !y.Shape.Equal(want) {
		t.Fatalf("top shape %v, want %v", y.Shape, want)
	}
	for b := range 6 {
		for c := range 2 {
			for k := range 6 { // kernel (k0, k1, k2=0)
				k0, k1 := k/3, k%3
				for o0 := range 2 {
					for o1 := range 3 {
						for o2 := range 3 {
							i0, i1, i2 := o0+2*k0, o1*2-1+k1, o2
							var want float32
							if i1 >= 0 && i1 < 5 {
								want = x.Data[(((b*2+c)*4+i0)*5+i1)*3+i2]
							}
							got := y.Data[(((b*12+c*6+k)*2+o0)*3+o1)*3+o2]
							if got != want {
								t.Fatalf("item %d row (%d,%d) column (%d,%d,%d) = %v, want %v", b, c, k, o0, o1, o2, got, want)
							}
						}
					}
				}
			}
		}
	}
	checkGradients(t, l, blobs(x), blobs(y), gradCheck{Step: 1e-2, Threshold: 1e-2})
}
