package layers

import (
	"errors"

	"dsgd/engine/tensor/dnnl"
	"dsgd/engine/tensor/simd"
)

// Pooling runs on oneDNN for MAX (but the 2x2 tiles of maxForward2x2),
// and for AVE without padding (where
// oneDNN's average over the window's part inside the image is Caffe's
// divisor exactly); otherwise, or without the library, on the Go loops in
// pooling.go. A batch is split by images, one dnnl.Pool per worker, as
// convolutions are (conv_dnnl.go); pooling sums nothing across images, so
// results do not depend on the thread count.
type poolDnnl struct {
	on    bool
	why   string    // when not on: why (for Kernel)
	impl  dnnl.Impl // when on: what oneDNN runs
	spec  dnnl.PoolSpec
	pools perWorker[*dnnl.Pool]
}

func (l *poolLayer) dnnlSetup() {
	d := &l.dn
	d.on, d.why = false, ownWhy()
	d.pools.reset(l.threads)
	g := &l.geom
	if !dnnlReady() || l.num == 0 {
		return
	}
	if l.maskTop {
		d.why = "MAX with a mask top: oneDNN does not give the argmax"
		return
	}
	if l.cfg.Method != PoolMax && (g.ph != 0 || g.pw != 0) {
		d.why = "padded AVE: oneDNN's divisor is not Caffe's"
		return
	}
	if l.cfg.Method != PoolMax && l.cfg.Method != PoolAve {
		d.why = "STOCHASTIC: oneDNN has no such pooling"
		return
	}
	// 2x2/2 MAX windows that tile the plane (LeNet's) have a tuned Go
	// kernel: forward+backward 1.04 ms against oneDNN's 1.36 ms on LeNet's
	// pool1 at one thread here.
	if l.cfg.Method == PoolMax && l.tiled2x2() {
		d.why = "2x2/2 tiles: dsgd's kernel is faster"
		return
	}
	s := dnnl.PoolSpec{N: l.num, C: g.c, H: g.h, W: g.w, OH: g.oh, OW: g.ow, KH: g.kh, KW: g.kw,
		SH: g.sh, SW: g.sw, PT: g.ph, PL: g.pw,
		PB: dnnl.PadAfter(g.h, g.ph, g.kh, g.sh, 1, g.oh), PR: dnnl.PadAfter(g.w, g.pw, g.kw, g.sw, 1, g.ow),
		Max: l.cfg.Method == PoolMax}
	// A window must start inside the image or its near padding and end
	// past its start (Caffe's pooled-size rule guarantees both).
	if !s.Valid() {
		d.why = "geometry oneDNN does not take"
		return
	}
	d.spec = s
	if err := d.pools.first(l.num, l.threads, l.newDnnlPool); err != nil {
		d.why = buildWhy(err)
		if s.Max && errors.Is(err, dnnl.ErrNoJIT) {
			d.why += "; its blocked-layout kernel is slower than these loops with the reorders"
		}
		return
	}
	d.on, d.why = true, ""
	d.impl = d.pools.items[0].Impl()
}

// Kernel says which kernels the pooling runs on: oneDNN's (naming its
// implementation and layout) or dsgd's Go loops, with the forward pass's
// simd row kernels where they run, and why.
func (l *poolLayer) Kernel() string {
	own := "Go loops"
	if l.rows {
		own = "Go loops, forward rows on " + simd.PoolImpl()
	}
	return kernelName(l.dn.on, l.dn.impl, own, l.dn.why)
}

func (l *poolLayer) newDnnlPool(n int) (*dnnl.Pool, error) {
	s := l.dn.spec
	s.N = n
	return dnnl.NewPool(s)
}

func (l *poolLayer) dnnlPool(w, n int) *dnnl.Pool {
	p, _ := l.dn.pools.get(w, n, "Pooling", l.newDnnlPool)
	return p
}

func (l *poolLayer) dnnlForward(lo, hi, w int) {
	if lo >= hi {
		return
	}
	g := &l.geom
	in, out := g.c*g.h*g.w, g.c*g.oh*g.ow
	l.dnnlPool(w, hi-lo).Forward(l.in.Data[lo*in:hi*in], l.out.Data[lo*out:hi*out])
}

func (l *poolLayer) dnnlBackward(lo, hi, w int) {
	if lo >= hi {
		return
	}
	g := &l.geom
	in, out := g.c*g.h*g.w, g.c*g.oh*g.ow
	l.dnnlPool(w, hi-lo).Backward(l.out.Diff[lo*out:hi*out], l.in.Diff[lo*in:hi*in])
}

// dnnlThreads is the worker count of both passes: Backward must cut the
// batch as Forward did, since each worker's Pool keeps its chunk's argmaxes.
func (l *poolLayer) dnnlThreads() int {
	g := &l.geom
	return l.poolThreads(l.num * g.c * g.oh * g.ow * g.kh * g.kw)
}
