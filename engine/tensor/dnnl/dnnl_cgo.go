//go:build !purego

package dnnl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "dnnl_impl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"dsgd/internal/dlopen"
)

var (
	loadOnce sync.Once
	loadErr  error
	info     string
)

// libNames are the sonames tried: Debian bookworm's libdnnl2, then a
// source build's.
var libNames = []string{"libdnnl.so.2", "libdnnl.so"}

// Load opens oneDNN once; later calls return the first call's result. The
// error says what is missing and how to install it.
func Load() error {
	loadOnce.Do(func() {
		h, errs := dlopen.First(libNames, dlopen.Local, func(h unsafe.Pointer) string { return C.GoString(C.dsgd_dnnl_bind(h)) })
		if h == nil {
			loadErr = fmt.Errorf("oneDNN could not be loaded (%v); install it with apt-get install libdnnl2", errs)
			return
		}
		var v [3]C.int
		C.dsgd_dnnl_version(&v[0])
		isa := isaName(int(C.dsgd_dnnl_isa()))
		info = fmt.Sprintf("oneDNN %d.%d.%d, ISA %s", v[0], v[1], v[2], isa)
		block = 8
		if strings.HasPrefix(isa, "avx512") {
			block = 16
		}
	})
	return loadErr
}

// Block is the channel block of oneDNN's convolution kernels on this CPU:
// 16 floats on AVX-512, 8 below. A channel count that is not a multiple of
// it is padded to one, and the padding is computed like real channels.
// 0 before a successful Load.
func Block() int { return block }

var block int

// Info describes the loaded library: version and the instruction set its
// kernels were generated for. Empty before a successful Load.
func Info() string { return info }

func isaName(isa int) string {
	switch isa {
	case C.dnnl_cpu_isa_avx512_core_amx:
		return "avx512_core_amx"
	case C.dnnl_cpu_isa_avx512_core_bf16:
		return "avx512_core_bf16"
	case C.dnnl_cpu_isa_avx512_core_vnni:
		return "avx512_core_vnni"
	case C.dnnl_cpu_isa_avx512_core:
		return "avx512_core"
	case C.dnnl_cpu_isa_avx2_vnni:
		return "avx2_vnni"
	case C.dnnl_cpu_isa_avx2:
		return "avx2"
	case C.dnnl_cpu_isa_avx:
		return "avx"
	case C.dnnl_cpu_isa_sse41:
		return "sse41"
	}
	return fmt.Sprintf("0x%x", isa)
}

// Conv is one convolution, forward and backward, for one ConvSpec. It is
// not safe for concurrent use: give each goroutine its own.
type Conv struct {
	spec ConvSpec
	impl Impl
	c    *C.conv_t
}

// NewConv builds the oneDNN primitives for s. It fails when oneDNN is not
// loaded or has no implementation for s.
func NewConv(s ConvSpec) (*Conv, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if !s.Valid() {
		return nil, fmt.Errorf("dnnl: invalid convolution %+v", s)
	}
	v := [17]C.int64_t{C.int64_t(s.N), C.int64_t(s.C), C.int64_t(s.H), C.int64_t(s.W),
		C.int64_t(s.OC), C.int64_t(s.OH), C.int64_t(s.OW), C.int64_t(s.KH), C.int64_t(s.KW),
		C.int64_t(s.SH), C.int64_t(s.SW), C.int64_t(s.PT), C.int64_t(s.PL), C.int64_t(s.PB), C.int64_t(s.PR),
		C.int64_t(s.DH), C.int64_t(s.DW)}
	g, bias, wino := 0, 0, 0
	if s.Winograd {
		wino = 1
	}
	if s.Plain {
		wino |= 2
	}
	if s.Groups > 1 {
		g = s.Groups
	}
	if s.Bias {
		bias = 1
	}
	var why *C.char
	c := C.dsgd_conv_create(&v[0], C.int(g), C.int(bias), C.int(wino), &why)
	if why != nil {
		msg := C.GoString(why)
		C.dsgd_conv_free(c)
		return nil, fmt.Errorf("dnnl: no convolution for %+v: %s failed", s, msg)
	}
	layout := Blocked
	if s.Plain {
		layout = Plain
	}
	conv := &Conv{spec: s, c: c, impl: Impl{Forward: C.GoString(&c.impl_f[0]),
		Backward: C.GoString(&c.impl_d[0]) + " / " + C.GoString(&c.impl_w[0]), Layout: layout}}
	runtime.SetFinalizer(conv, (*Conv).Close)
	return conv, nil
}

// Impl says which oneDNN implementations the Conv runs: forward, and
// backward as "data / weights". Its Layout is Blocked, where oneDNN picks
// the activations' layout for the kernel (nChw16c on AVX-512, nChw8c
// below), or Plain for a ConvSpec with Plain.
func (c *Conv) Impl() Impl { return c.impl }

// Spec is the geometry the Conv was built for.
func (c *Conv) Spec() ConvSpec { return c.spec }

// Close frees the primitives. A closed Conv must not be used.
func (c *Conv) Close() {
	if c.c != nil {
		C.dsgd_conv_free(c.c)
		c.c = nil
	}
}

var errLen = errors.New("dnnl: buffer shorter than the convolution's geometry")

func (c *Conv) check(name string, x []float32, n int) { checkLen(name, x, n) }

func checkLen(name string, x []float32, n int) {
	if len(x) < n {
		panic(fmt.Sprintf("%v: %s has %d elements, needs %d", errLen, name, len(x), n))
	}
}

func ptr(x []float32) *C.float {
	if len(x) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&x[0]))
}

// Forward writes dst = conv(src, wei) + bias (bias ignored without Bias).
func (c *Conv) Forward(src, wei, bias, dst []float32) {
	ns, nw, nd := c.spec.Sizes()
	c.check("src", src, ns)
	c.check("weights", wei, nw)
	c.check("dst", dst, nd)
	if c.spec.Bias {
		c.check("bias", bias, c.spec.OC)
	}
	C.dsgd_conv_forward(c.c, ptr(src), ptr(wei), ptr(bias), ptr(dst))
	runtime.KeepAlive(c)
}

// Backward overwrites dwei (and dbias, with Bias) with this batch's
// weight gradients and, when dsrc is not nil, dsrc with the input
// gradient. fresh promises that src is what the last Forward of this Conv
// read, unchanged since (Caffe's contract between a layer's Forward and
// Backward), which saves reordering it again.
func (c *Conv) Backward(src, ddst, wei, dsrc, dwei, dbias []float32, fresh bool) {
	ns, nw, nd := c.spec.Sizes()
	c.check("src", src, ns)
	c.check("diff dst", ddst, nd)
	c.check("weights", wei, nw)
	if dwei != nil {
		c.check("diff weights", dwei, nw)
		if c.spec.Bias {
			c.check("diff bias", dbias, c.spec.OC)
		}
	}
	if dsrc != nil {
		c.check("diff src", dsrc, ns)
	}
	f := C.int(0)
	if fresh {
		f = 1
	}
	C.dsgd_conv_backward(c.c, ptr(src), ptr(ddst), ptr(wei), ptr(dsrc), ptr(dwei), ptr(dbias), f)
	runtime.KeepAlive(c)
}

// Pool is one pooling layer geometry, forward and backward. It is not safe
// for concurrent use: give each goroutine its own.
type Pool struct {
	spec PoolSpec
	impl Impl
	p    *C.pool_t
}

// NewPool builds oneDNN's pooling for s on the first layout of
// poolLayouts that oneDNN runs on JIT kernels, forward and backward. It
// fails, wrapping ErrNoJIT and naming each layout's implementation, when
// none would: oneDNN's reference code is slower than dsgd's own loops (on
// AVX2, oneDNN 2.6 pools plain NCHW only that way), and so, for MAX, is
// its blocked JIT kernel with the reorders around it.
func NewPool(s PoolSpec) (*Pool, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if !s.Valid() {
		return nil, fmt.Errorf("dnnl: invalid pooling %+v", s)
	}
	return firstJIT(fmt.Sprintf("pooling %+v", s), poolLayouts(s.Max), func(l Layout) (*Pool, Impl, error) {
		p, err := newPool(s, l)
		if err != nil {
			return nil, Impl{}, err
		}
		return p, p.impl, nil
	}, (*Pool).Close)
}

// newPool builds the pooling on layout l, whatever implementation oneDNN
// picks for it.
func newPool(s PoolSpec, l Layout) (*Pool, error) {
	v := [14]C.int64_t{C.int64_t(s.N), C.int64_t(s.C), C.int64_t(s.H), C.int64_t(s.W),
		C.int64_t(s.OH), C.int64_t(s.OW), C.int64_t(s.KH), C.int64_t(s.KW),
		C.int64_t(s.SH), C.int64_t(s.SW), C.int64_t(s.PT), C.int64_t(s.PL), C.int64_t(s.PB), C.int64_t(s.PR)}
	m := C.int(0)
	if s.Max {
		m = 1
	}
	var why *C.char
	p := C.dsgd_pool_create(&v[0], m, C.int(l), &why)
	if why != nil {
		msg := C.GoString(why)
		C.dsgd_pool_free(p)
		return nil, fmt.Errorf("dnnl: no pooling for %+v on %v: %s failed", s, l, msg)
	}
	pool := &Pool{spec: s, p: p, impl: Impl{Forward: C.GoString(&p.impl_f[0]), Backward: C.GoString(&p.impl_b[0]), Layout: l}}
	runtime.SetFinalizer(pool, (*Pool).Close)
	return pool, nil
}

// Impl says which oneDNN implementations the Pool runs, on which layout.
func (p *Pool) Impl() Impl { return p.impl }

// Spec is the geometry the Pool was built for.
func (p *Pool) Spec() PoolSpec { return p.spec }

// Close frees the primitives. A closed Pool must not be used.
func (p *Pool) Close() {
	if p.p != nil {
		C.dsgd_pool_free(p.p)
		p.p = nil
	}
}

// Forward pools src into dst and, for MAX, records each window's argmax
// for Backward.
func (p *Pool) Forward(src, dst []float32) {
	ns, nd := p.spec.Sizes()
	checkLen("src", src, ns)
	checkLen("dst", dst, nd)
	C.dsgd_pool_forward(p.p, ptr(src), ptr(dst))
	runtime.KeepAlive(p)
}

// Backward overwrites dsrc with the input gradient of ddst, using the
// argmaxes of the last Forward for MAX.
func (p *Pool) Backward(ddst, dsrc []float32) {
	ns, nd := p.spec.Sizes()
	checkLen("diff dst", ddst, nd)
	checkLen("diff src", dsrc, ns)
	C.dsgd_pool_backward(p.p, nil, ptr(ddst), ptr(dsrc))
	runtime.KeepAlive(p)
}

// LRN is Caffe's LRN across channels on oneDNN, forward and backward, for
// one shape. It is not safe for concurrent use.
type LRN struct {
	n, c, h, w int
	impl       Impl
	p          *C.pool_t
}

// NewLRN builds LRN across channels for an N×C×H×W input: Caffe's
// x·(k + alpha/size·Σx²)^−beta over the size channels centred on each (size
// odd), on the first layout of lrnLayouts(c) that oneDNN runs on JIT kernels,
// forward and backward. It fails, wrapping ErrNoJIT, when every layout
// would run oneDNN's reference code (30-60x slower than its JIT kernels,
// and slower than dsgd's own loops).
func NewLRN(n, c, h, w, size int, alpha, beta, k float32) (*LRN, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if n <= 0 || c <= 0 || h <= 0 || w <= 0 || size <= 0 || size%2 == 0 {
		return nil, fmt.Errorf("dnnl: invalid LRN %dx%dx%dx%d size %d", n, c, h, w, size)
	}
	what := fmt.Sprintf("LRN %dx%dx%dx%d size %d", n, c, h, w, size)
	return firstJIT(what, lrnLayouts(c), func(l Layout) (*LRN, Impl, error) {
		x, err := newLRN(l, n, c, h, w, size, alpha, beta, k)
		if err != nil {
			return nil, Impl{}, err
		}
		return x, x.impl, nil
	}, (*LRN).Close)
}

// newLRN builds the LRN on layout l, whatever implementation oneDNN picks
// for it.
func newLRN(l Layout, n, c, h, w, size int, alpha, beta, k float32) (*LRN, error) {
	v := [4]C.int64_t{C.int64_t(n), C.int64_t(c), C.int64_t(h), C.int64_t(w)}
	var why *C.char
	p := C.dsgd_lrn_create(&v[0], C.int(size), C.float(alpha), C.float(beta), C.float(k), C.int(l), &why)
	if why != nil {
		msg := C.GoString(why)
		C.dsgd_pool_free(p)
		return nil, fmt.Errorf("dnnl: no LRN %dx%dx%dx%d size %d on %v: %s failed", n, c, h, w, size, l, msg)
	}
	x := &LRN{n: n, c: c, h: h, w: w, p: p, impl: Impl{Forward: C.GoString(&p.impl_f[0]), Backward: C.GoString(&p.impl_b[0]), Layout: l}}
	runtime.SetFinalizer(x, (*LRN).Close)
	return x, nil
}

// Impl says which oneDNN implementations the LRN runs, on which layout.
func (l *LRN) Impl() Impl { return l.impl }

// Num is the batch size the LRN was built for.
func (l *LRN) Num() int { return l.n }

// Close frees the primitives. A closed LRN must not be used.
func (l *LRN) Close() {
	if l.p != nil {
		C.dsgd_pool_free(l.p)
		l.p = nil
	}
}

// Forward normalises src into dst.
func (l *LRN) Forward(src, dst []float32) {
	n := l.n * l.c * l.h * l.w
	checkLen("src", src, n)
	checkLen("dst", dst, n)
	C.dsgd_pool_forward(l.p, ptr(src), ptr(dst))
	runtime.KeepAlive(l)
}

// Backward overwrites dsrc with the input gradient of ddst; src is the
// input of the last Forward.
func (l *LRN) Backward(src, ddst, dsrc []float32) {
	n := l.n * l.c * l.h * l.w
	checkLen("src", src, n)
	checkLen("diff dst", ddst, n)
	checkLen("diff src", dsrc, n)
	C.dsgd_pool_backward(l.p, ptr(src), ptr(ddst), ptr(dsrc))
	runtime.KeepAlive(l)
}

// Softmax is a softmax along the channel axis of an outer×channels×inner
// tensor in plain (Caffe) layout, forward and backward, on oneDNN's JIT
// kernels, run on the calling thread. It is not safe for concurrent use.
type Softmax struct {
	outer, channels, inner int
	p                      *C.softmax_t
}

// NewSoftmax builds the softmax for one shape. It fails when oneDNN is not
// loaded or would run it on its reference (not JIT) code, which is slower
// than dsgd's own loops.
func NewSoftmax(outer, channels, inner int) (*Softmax, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if outer <= 0 || channels <= 0 || inner <= 0 {
		return nil, fmt.Errorf("dnnl: invalid softmax %dx%dx%d", outer, channels, inner)
	}
	var why, impl *C.char
	p := C.dsgd_softmax_create(C.int64_t(outer), C.int64_t(channels), C.int64_t(inner), &why, &impl)
	if why != nil {
		msg := C.GoString(why)
		C.dsgd_softmax_free(p)
		return nil, fmt.Errorf("dnnl: no softmax for %dx%dx%d: %s failed", outer, channels, inner, msg)
	}
	if name := C.GoString(impl); !strings.HasPrefix(name, "jit") {
		C.dsgd_softmax_free(p)
		return nil, fmt.Errorf("dnnl: softmax %dx%dx%d has no JIT kernel (implementation %q)", outer, channels, inner, name)
	}
	s := &Softmax{outer: outer, channels: channels, inner: inner, p: p}
	runtime.SetFinalizer(s, (*Softmax).Close)
	return s, nil
}

// Close frees the primitives. A closed Softmax must not be used.
func (s *Softmax) Close() {
	if s.p != nil {
		C.dsgd_softmax_free(s.p)
		s.p = nil
	}
}

// Forward writes dst = softmax(src) along the channels; dst may be src.
func (s *Softmax) Forward(src, dst []float32) {
	n := s.outer * s.channels * s.inner
	checkLen("src", src, n)
	checkLen("dst", dst, n)
	C.dsgd_softmax_forward(s.p, ptr(src), ptr(dst))
	runtime.KeepAlive(s)
}

// Backward writes dsrc = dst·(ddst − Σ_c ddst·dst), given the forward
// output dst and its gradient ddst; dsrc may be ddst.
func (s *Softmax) Backward(dst, ddst, dsrc []float32) {
	n := s.outer * s.channels * s.inner
	checkLen("dst", dst, n)
	checkLen("diff dst", ddst, n)
	checkLen("diff src", dsrc, n)
	C.dsgd_softmax_backward(s.p, ptr(dst), ptr(ddst), ptr(dsrc))
	runtime.KeepAlive(s)
}

// ReorderTime is the time spent so far reordering activations and their
// gradients between Caffe's NCHW and the blocked layouts oneDNN's kernels
// want (convolution, LRN), summed over every thread: what keeping them
// blocked between layers would save. WeightReorderTime is the same for
// convolution weights and their gradients. Both are 0 before a successful
// Load.
func ReorderTime() time.Duration {
	if Load() != nil {
		return 0
	}
	return time.Duration(C.dsgd_reorder_ns(0))
}

// WeightReorderTime: see ReorderTime.
func WeightReorderTime() time.Duration {
	if Load() != nil {
		return 0
	}
	return time.Duration(C.dsgd_reorder_ns(1))
}

// firstJIT builds a primitive on each layout in turn and returns the first
// that runs on JIT kernels, closing the others; it fails with a *NoJITError
// (wrapping ErrNoJIT) naming every layout's implementation when none does.
func firstJIT[T any](what string, layouts []Layout, build func(Layout) (T, Impl, error), closeFn func(T)) (T, error) {
	var zero T
	var tried []string
	var lastErr error
	for _, l := range layouts {
		p, impl, err := build(l)
		if err != nil {
			lastErr = err
			tried = append(tried, fmt.Sprintf("%v: %v", l, err))
			continue
		}
		if impl.JIT() {
			return p, nil
		}
		closeFn(p)
		tried = append(tried, impl.String())
	}
	if lastErr != nil && len(tried) == 1 {
		return zero, lastErr
	}
	return zero, &NoJITError{What: what, Tried: tried}
}

// poolLayouts are the layouts NewPool tries, in order. Plain NCHW first
// (no reorders): on AVX-512 oneDNN 2.6 pools it on JIT kernels, within 20%
// of the blocked layout either way (BenchmarkPoolLayouts). On AVX2 and
// below it has no JIT pooling on plain NCHW; there AVE pooling goes to
// the channel-blocked layout, whose JIT kernel with both reorders beats
// the Go loops (cifar10_quick's pool2 at 100 images: 3.8 against 5.8 ms
// forward+backward, BenchmarkPool in engine/layers under
// ONEDNN_MAX_CPU_ISA=AVX2), while MAX pooling is left to the Go loops,
// 1.6-2.6x faster than the blocked JIT kernel with its reorders
// (2026-11-26, BenchmarkPoolLayouts and BenchmarkPool back to back,
// forward+backward: cifar10_quick's pool1 13.7 against 36.1 ms, CaffeNet's
// pool1 at 8 images 12.3 against 21.6, GoogLeNet's pool1 26.7 against
// 48.7), mostly because their backward pass is a scatter that oneDNN's
// takes 5-10x longer over. With the forward rows on dsgd's simd kernels
// the blocked kernel is 3.7-5.2x slower (2026-11-27, docs/benchmarks.md).
func poolLayouts(max bool) []Layout {
	if b := Block(); b > 0 && !max {
		return []Layout{Plain, Layout(b)}
	}
	return []Layout{Plain}
}

// lrnLayouts are the layouts NewLRN tries for c channels, in order:
// channels blocked by this CPU's Block when c fills at least three quarters
// of the blocks, then plain NCHW (then blocked, when it was not first).
// oneDNN 2.6's LRN backward on plain NCHW is its reference code on every
// ISA: 7-12x slower than its JIT kernel on nChw8c or nChw16c with both
// reorders (BenchmarkLRNLayouts: CaffeNet's norm1 at 16 images, 4.1 ms
// against 68 ms on AVX-512, 9.3 ms against 81 ms on AVX2).
func lrnLayouts(c int) []Layout {
	b := Block()
	if b == 0 {
		return []Layout{Plain}
	}
	blocks := (c + b - 1) / b
	if 4*c >= 3*blocks*b {
		return []Layout{Layout(b), Plain}
	}
	return []Layout{Plain, Layout(b)}
}
