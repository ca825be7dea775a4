package layers

import (
	"dsgd/engine/tensor"
	"dsgd/engine/tensor/dnnl"
)

// LRN across channels runs on oneDNN when it loads: its formula is Caffe's
// (k + α/n·Σx² over the n channels centred on each, clipped to the image's
// channels). A batch is split by images, one dnnl.LRN per worker, as
// convolutions are; nothing is summed across images, so results do not
// depend on the thread count. WITHIN_CHANNEL stays on the Go loops.
type lrnDnnl struct {
	on   bool
	why  string    // when not on: why (for Kernel)
	impl dnnl.Impl // when on: what oneDNN runs
	lrns perWorker[*dnnl.LRN]
}

func (l *lrnLayer) dnnlSetup() {
	d := &l.dn
	d.on, d.why = false, ownWhy()
	d.lrns.reset(l.threads)
	if !dnnlReady() || l.num == 0 {
		return
	}
	if l.cfg.NormRegion != AcrossChannels {
		d.why = "WITHIN_CHANNEL"
		return
	}
	if err := d.lrns.first(l.num, l.threads, l.newDnnlLRN); err != nil {
		d.why = buildWhy(err)
		return
	}
	d.on, d.why = true, ""
	d.impl = d.lrns.items[0].Impl()
}

// Kernel says which kernels the LRN runs on: oneDNN's (naming its
// implementation and layout) or dsgd's Go loops, and why.
func (l *lrnLayer) Kernel() string {
	return kernelName(l.dn.on, l.dn.impl, "Go loops", l.dn.why)
}

func (l *lrnLayer) newDnnlLRN(n int) (*dnnl.LRN, error) {
	return dnnl.NewLRN(n, l.c, l.h, l.w, l.cfg.LocalSize, l.cfg.Alpha, l.cfg.Beta, l.cfg.K)
}

func (l *lrnLayer) dnnlLRN(w, n int) *dnnl.LRN {
	x, _ := l.dn.lrns.get(w, n, "LRN", l.newDnnlLRN)
	return x
}

func (l *lrnLayer) dnnlForward(lo, hi, w int) {
	if lo >= hi {
		return
	}
	sz := l.c * l.h * l.w
	l.dnnlLRN(w, hi-lo).Forward(l.in.Data[lo*sz:hi*sz], l.out.Data[lo*sz:hi*sz])
}

func (l *lrnLayer) dnnlBackward(lo, hi, w int) {
	if lo >= hi {
		return
	}
	sz := l.c * l.h * l.w
	l.dnnlLRN(w, hi-lo).Backward(l.in.Data[lo*sz:hi*sz], l.out.Diff[lo*sz:hi*sz], l.in.Diff[lo*sz:hi*sz])
}

// dnnlParallel runs fn over the batch's images in l.threads chunks.
func (l *lrnLayer) dnnlParallel(fn func(lo, hi, w int)) {
	tensor.ParallelFor(l.num, l.threads, fn)
}
