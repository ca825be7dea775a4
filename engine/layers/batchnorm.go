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
