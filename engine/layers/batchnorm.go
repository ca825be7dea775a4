package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// Type returns "BatchNorm".
func (*BatchNormConfig) Type() string { return "BatchNorm" }

// Build returns Caffe's BatchNorm layer. It normalises each channel (axis 1)
// of its one bottom to zero mean and unit variance, with no learned scale or
// shift (a Scale layer follows for that), and may run in place.
//
// Its three Frozen params are Caffe's blobs: the running mean [C], the
// running variance [C] and a one-element moving-average factor f. With batch
// statistics, each Forward updates them as Caffe does: f = f·λ + 1,
// mean = μ + λ·mean and variance = m/(m-1)·σ² + λ·variance, where λ is
// MovingAverageFraction, m the number of values per channel and σ² the
// biased batch variance. With global statistics the layer normalises with
// mean/f and variance/f (zero when f is zero).
func (c *BatchNormConfig) Build(ctx Context) (Layer, error) {
	if f := c.MovingAverageFraction; !(f >= 0 && f <= 1) {
		return nil, fmt.Errorf("layers: BatchNorm: moving_average_fraction %v outside [0, 1]", f)
	}
	if !(c.Eps >= 0) || math.IsInf(float64(c.Eps), 0) {
		return nil, fmt.Errorf("layers: BatchNorm: eps %v must be finite and non-negative", c.Eps)
	}
	global := ctx.Phase == Test
	if c.UseGlobalStats != nil {
		global = *c.UseGlobalStats
	}
	l := &batchNormLayer{global: global, maf: c.MovingAverageFraction, eps: c.Eps, threads: ctx.NumThreads(), pool: ctx.Pool}
	l.fwdFn, l.bwdFn = l.forwardChannels, l.backwardChannels
	return l, nil
}

// batchNormLayer runs on the SSE kernels of package simd (norm.go there),
// one channel at a time, channels split across the worker threads: each
// channel's mean, variance and gradient sums are taken by one thread in a
// fixed order (16-lane float32 sums per image plane, planes added in
// float64), so the results do not depend on the thread count. oneDNN's
// batch normalisation was measured against it and not taken: its fast
// kernel wants channels blocked by 16, and the reorders to and from
// Caffe's NCHW cost more than this whole layer (docs/benchmarks.md).
type batchNormLayer struct {
	global   bool // normalise with the stored statistics
	maf, eps float32
	params   []Param // mean, variance, factor
	threads  int
	pool     *tensor.Pool

	num, channels, spatial int
	mean, variance         []float32 // per channel, of the current Forward
	std                    []float32 // per channel: sqrt(variance + eps)
	xnorm                  []float32 // the normalised output, for Backward

	// The current pass's operands, read by the workers; fwdFn and bwdFn
	// are bound once so passing them allocates nothing.
	x, y, dy, dx []float32
	fwdFn, bwdFn func(lo, hi, worker int)

	fuse *bnScale // the Scale that follows in place, when FuseBatchNormScale joined them
}

// bnPerThread is the element count below which another thread costs more
// than it saves on these memory-bound passes.
const bnPerThread = 1 << 15

func (*batchNormLayer) Type() string      { return "BatchNorm" }
func (l *batchNormLayer) Params() []Param { return l.params }

func (l *batchNormLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("BatchNorm", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if len(bottom[0].Shape) == 0 {
		return fmt.Errorf("layers: BatchNorm: bottom has no axes")
	}
	l.channels = bottom[0].Dim(1)
	if len(bottom[0].Shape) == 1 {
		l.channels = 1
	}
	l.params = []Param{
		{Blob: tensor.NewBlob("mean", l.channels), Frozen: true},
		{Blob: tensor.NewBlob("variance", l.channels), Frozen: true},
		{Blob: tensor.NewBlob("moving_average_factor", 1), Frozen: true},
	}
	l.mean = make([]float32, l.channels)
	l.variance = make([]float32, l.channels)
	l.std = make([]float32, l.channels)
	return l.Reshape(bottom, top)
}

func (l *batchNormLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	c := 1
	if len(b.Shape) > 1 {
		c = b.Shape[1]
	}
	if len(b.Shape) == 0 || c != l.channels {
		return fmt.Errorf("layers: BatchNorm: bottom shape %v does not have the %d channels the layer was set up with", b.Shape, l.channels)
	}
	l.num = b.Shape[0]
	l.spatial = 0
	if l.num*c > 0 {
		l.spatial = b.Count() / (l.num * c)
	}
	if b != top[0] {
		top[0].ReshapeLike(b)
	}
	if !l.global {
		l.xnorm = fitBuf(l.xnorm, b.Count())
	}
	return nil
}

// workers is how many threads a pass over the blob uses.
func (l *batchNormLayer) workers() int {
	return max(1, min(l.threads, l.channels, l.num*l.channels*l.spatial/bnPerThread))
}

func (l *batchNormLayer) Forward(bottom, top []*tensor.Blob) {
	if l.global {
		f := l.params[2].Blob.Data[0]
		var s float32
		if f != 0 {
			s = 1 / f
		}
		for c := range l.channels {
			l.mean[c] = s * l.params[0].Blob.Data[c]
			l.variance[c] = s * l.params[1].Blob.Data[c]
		}
	}
	if f := l.fuse; f != nil {
		f.on = f.fits()
		f.ready, f.mask = false, false
	}
	l.x, l.y = bottom[0].Data, top[0].Data
	l.pool.For(l.channels, l.workers(), l.fwdFn)
	l.x, l.y = nil, nil
	if !l.global {
		l.updateStats(l.num * l.spatial)
	}
}

// plane is image n's plane of channel c in a blob's data.
func (l *batchNormLayer) plane(v []float32, n, c int) []float32 {
	off := (n*l.channels + c) * l.spatial
	return v[off : off+l.spatial]
}

// forwardChannels normalises channels [lo, hi): with batch statistics it
// takes each channel's mean, then its biased variance as the mean of
// (x − mean)², then writes (x − mean)/std to the top and to xnorm.
func (l *batchNormLayer) forwardChannels(lo, hi, _ int) {
	m := float64(l.num * l.spatial)
	for c := lo; c < hi; c++ {
		if !l.global {
			var s, q float64
			for n := range l.num {
				s += float64(simd.Sum(l.plane(l.x, n, c)))
			}
			if m > 0 {
				s /= m
			}
			mu := float32(s)
			for n := range l.num {
				q += float64(simd.SumSqDev(l.plane(l.x, n, c), mu))
			}
			if m > 0 {
				q /= m
			}
			l.mean[c], l.variance[c] = mu, float32(q)
		}
		l.std[c] = float32(math.Sqrt(float64(l.variance[c]) + float64(l.eps)))
		mu, inv := l.mean[c], 1/l.std[c]
		if f := l.fuse; f != nil && f.on {
			// The Scale's output straight away: what its Affine over
			// this top would write, bit for bit.
			a, b := f.scaleBias(c)
			for n := range l.num {
				xn, y := l.plane(l.xnorm, n, c), l.plane(l.y, n, c)
				simd.Normalize(xn, nil, l.plane(l.x, n, c), mu, inv)
				simd.Affine(y, xn, a, b)
				if r := f.relu; r != nil {
					simd.SelectScaled(y, y, y, r.slope)
				}
			}
			continue
		}
		for n := range l.num {
			var xn []float32
			if !l.global {
				xn = l.plane(l.xnorm, n, c)
			}
			simd.Normalize(l.plane(l.y, n, c), xn, l.plane(l.x, n, c), mu, inv)
		}
	}
}

// updateStats folds this batch's mean and variance into the stored
// statistics, as Caffe does.
func (l *batchNormLayer) updateStats(m int) {
	mean, variance, factor := l.params[0].Blob.Data, l.params[1].Blob.Data, l.params[2].Blob.Data
	factor[0] = factor[0]*l.maf + 1
	correction := float32(1)
	if m > 1 {
		correction = float32(m) / float32(m-1)
	}
	for c := range l.channels {
		mean[c] = l.mean[c] + l.maf*mean[c]
		variance[c] = correction*l.variance[c] + l.maf*variance[c]
	}
}

func (l *batchNormLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	l.dy, l.dx = top[0].Diff, bottom[0].Diff
	l.pool.For(l.channels, l.workers(), l.bwdFn)
	l.dy, l.dx = nil, nil
	if l.fuse != nil {
		l.fuse.ready = false
	}
}

// backwardChannels writes the input gradient of channels [lo, hi): dy/std
// with global statistics, else (dy − mean(dy) − mean(dy·y)·y)/std, the
// means over the channel's values.
func (l *batchNormLayer) backwardChannels(lo, hi, _ int) {
	m := float64(l.num * l.spatial)
	for c := lo; c < hi; c++ {
		inv := 1 / l.std[c]
		if l.global {
			for n := range l.num {
				simd.Affine(l.plane(l.dx, n, c), l.plane(l.dy, n, c), inv, 0)
			}
			continue
		}
		if f := l.fuse; f != nil && f.on && f.ready {
			// dy is the Scale's output gradient, left unscaled: the
			// input gradient is scale·inv·(dy − mean(dy) − mean(dy·y)·y),
			// with the sums the Scale's Backward took for its own
			// gradients.
			a, b := f.sc.accBias[c], f.sc.accScale[c]
			if m > 0 {
				a /= m
				b /= m
			}
			g, _ := f.scaleBias(c)
			for n := range l.num {
				simd.NormBackward(l.plane(l.dx, n, c), l.plane(l.dy, n, c), l.plane(l.xnorm, n, c), float32(a), float32(b), g*inv)
			}
			continue
		}
		var a, b float64
		for n := range l.num {
			s, p := simd.SumDot(l.plane(l.dy, n, c), l.plane(l.xnorm, n, c))
			a += float64(s)
			b += float64(p)
		}
		if m > 0 {
			a /= m
			b /= m
		}
		for n := range l.num {
			simd.NormBackward(l.plane(l.dx, n, c), l.plane(l.dy, n, c), l.plane(l.xnorm, n, c), float32(a), float32(b), inv)
		}
	}
}

// bnScale joins a BatchNorm with batch statistics and the Scale (a learned
// per-channel scale, optionally a bias) that runs in place on its top as
// its only reader, as every ResNet's BatchNorm + Scale pair does: the
// BatchNorm writes the Scale's output directly (x̂ to its own buffer, then
// scale·x̂ + bias from it, while the channel is in cache) and the Scale's
// Forward does nothing; in Backward the Scale takes its sums Σdy and Σdy·x̂
// from x̂ as before but leaves dy in place unscaled, and the BatchNorm uses
// those sums instead of taking its own over scale·dy. Two passes over the
// blob saved each way (Scale's copy and Affine forward, its Affine and the
// BatchNorm's sums backward). Forward tops are the same bits as unjoined;
// the bottom gradient differs by rounding (scale·Σdy·x̂ in place of
// Σ(scale·dy)·x̂).
//
// A ReLU (slope 0 or more) that runs next in place joins them too
// (FuseReLU): the BatchNorm rectifies each plane after the Scale's
// Affine, and the Scale's Backward masks dy by the top's sign before its
// sums, the ReLU doing neither pass; the same kernels on the same values,
// so the same bits.
type bnScale struct {
	bn   *batchNormLayer
	sc   *scaleLayer
	relu *reluLayer // nil: none joined
	// on: the current pass runs joined (the shapes fit; decided in the
	// BatchNorm's Forward). ready: the Scale's Backward has left its sums
	// in sc.accScale and sc.accBias for the BatchNorm's. mask: the ReLU's
	// Backward left its gradient for the Scale's to mask.
	on, ready, mask bool
}

// fits reports whether the Scale's current shape is one scale element per
// BatchNorm channel over the same planes.
func (f *bnScale) fits() bool {
	b, s := f.bn, f.sc
	return !b.global && s.scale != nil && s.ax == 1 && s.dim == b.channels && s.outer == b.num && s.inner == b.spatial
}

// scaleBias is channel c's scale and bias (0 without a bias term).
func (f *bnScale) scaleBias(c int) (a, b float32) {
	a = f.sc.scale.Data[c]
	if f.sc.bias != nil {
		b = f.sc.bias.Data[c]
	}
	return a, b
}

// FuseBatchNormScale joins bn, a BatchNorm, and sc, a Scale with a learned
// scale: see bnScale. The caller (the net) promises that sc runs right
// after bn, in place on bn's only top, that nothing else reads that top's
// value between them, and that the top carries no loss weight. It reports
// whether they were joined: only a BatchNorm with batch statistics and a
// one-bottom Scale on axis 1 are, and each layer only once.
func FuseBatchNormScale(bn, sc Layer) bool {
	b, ok := bn.(*batchNormLayer)
	s, ok2 := sc.(*scaleLayer)
	if !ok || !ok2 || b.global || s.scale == nil || s.ax != 1 || b.fuse != nil || s.fuse != nil {
		return false
	}
	f := &bnScale{bn: b, sc: s}
	b.fuse, s.fuse = f, f
	s.in = nil // x̂ is the BatchNorm's; Forward allocates it if a pass runs unjoined
	return true
}

// FuseReLU joins a ReLU with a slope of 0 or more to the BatchNorm and
// Scale that FuseBatchNormScale joined as sc (see bnScale). The caller
// promises that it runs right after sc, in place on sc's top, which
// carries no loss weight. It reports whether they were joined.
func FuseReLU(sc, relu Layer) bool {
	s, ok := sc.(*scaleLayer)
	r, ok2 := relu.(*reluLayer)
	if !ok || !ok2 || s.fuse == nil || s.fuse.relu != nil || r.fuse != nil || r.slope < 0 {
		return false
	}
	s.fuse.relu, r.fuse = r, s.fuse
	return true
}
