//go:build !purego

package dnnl

import (
	"fmt"
	"testing"
)

// BenchmarkPoolLayouts times pooling forward+backward on each layout for
// the pooling geometries of the benchmark nets (the same as engine/layers'
// BenchmarkPool, whose Go loops they are weighed against), with the
// reorders to and from NCHW: the measurement behind poolLayouts. Run it
// under ONEDNN_MAX_CPU_ISA=AVX2 too.
func BenchmarkPoolLayouts(b *testing.B) {
	if err := Load(); err != nil {
		b.Skip(err)
	}
	specs := []struct {
		name string
		s    PoolSpec
	}{
		{"cifar_pool1_max3s2", PoolSpec{N: 100, C: 32, H: 32, W: 32, OH: 16, OW: 16, KH: 3, KW: 3, SH: 2, SW: 2, PB: 1, PR: 1, Max: true}},
		{"cifar_pool2_ave3s2", PoolSpec{N: 100, C: 32, H: 16, W: 16, OH: 8, OW: 8, KH: 3, KW: 3, SH: 2, SW: 2, PB: 1, PR: 1}},
		{"caffenet_pool1_max3s2", PoolSpec{N: 8, C: 96, H: 55, W: 55, OH: 27, OW: 27, KH: 3, KW: 3, SH: 2, SW: 2, Max: true}},
		{"googlenet_pool1_max3s2", PoolSpec{N: 8, C: 64, H: 112, W: 112, OH: 56, OW: 56, KH: 3, KW: 3, SH: 2, SW: 2, PB: 1, PR: 1, Max: true}},
		{"googlenet_3a_max3s1p1", PoolSpec{N: 8, C: 192, H: 28, W: 28, OH: 28, OW: 28, KH: 3, KW: 3, SH: 1, SW: 1, PT: 1, PL: 1, PB: 1, PR: 1, Max: true}},
	}
	for _, sp := range specs {
		for _, l := range []Layout{Plain, Layout(Block())} {
			b.Run(fmt.Sprintf("%s/%v", sp.name, l), func(b *testing.B) {
				p, err := newPool(sp.s, l)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				ns, nd := sp.s.Sizes()
				src, dst := make([]float32, ns), make([]float32, nd)
				for i := range src {
					src[i] = float32((i*7919)%1000) / 1000
				}
				b.Logf("%v", p.Impl())
				for b.Loop() {
					p.Forward(src, dst)
					p.Backward(dst, src)
				}
			})
		}
	}
}

// BenchmarkLRNLayouts is BenchmarkPoolLayouts for LRN (CaffeNet's norm1,
// GoogLeNet's norm2).
func BenchmarkLRNLayouts(b *testing.B) {
	if err := Load(); err != nil {
		b.Skip(err)
	}
	for _, sh := range [][4]int{{16, 96, 27, 27}, {8, 192, 56, 56}} {
		for _, l := range []Layout{Plain, Layout(Block())} {
			b.Run(fmt.Sprintf("%dx%dx%dx%d/%v", sh[0], sh[1], sh[2], sh[3], l), func(b *testing.B) {
				x, err := newLRN(l, sh[0], sh[1], sh[2], sh[3], 5, 1e-4, 0.75, 1)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%v", x.Impl())
				defer x.Close()
				n := sh[0] * sh[1] * sh[2] * sh[3]
				src, dst := make([]float32, n), make([]float32, n)
				for i := range src {
					src[i] = float32((i*7919)%1000) / 1000
				}
				for b.Loop() {
					x.Forward(src, dst)
					x.Backward(src, dst, dst)
				}
			})
		}
	}
}
