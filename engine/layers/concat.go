package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Type returns "Concat".
func (*ConcatConfig) Type() string { return "Concat" }

// Build returns a Concat layer, which joins its bottoms along Axis (negative
// counts from the end) into one top. The bottoms' shapes must agree on
// every other axis.
func (c *ConcatConfig) Build(ctx Context) (Layer, error) {
	l := &concatLayer{axis: c.Axis, threads: ctx.NumThreads(), pool: ctx.Pool}
	l.fwdFn, l.bwdFn = l.forwardChunk, l.backwardChunk
	return l, nil
}

// concatLayer copies its bottoms into its top (and the top's diff back),
// split across the pool by the outer index: the images, for the usual
// channel concat, so each thread copies the images it computed in the
// layers before (they split by images too) and the copies are the same
// bytes at any thread count. On one goroutine GoogLeNet's nine inception
// outputs took 50 ms of an iteration at one thread and 60 at two
// (docs/benchmarks.md, "GoogLeNet at two threads").
type concatLayer struct {
	axis  int // as configured
	ax    int // canonical, set by Reshape
	outer int // product of the dimensions before ax
	inner int // product of the dimensions after ax

	threads int
	pool    *tensor.Pool
	// The current pass's blobs, read by the workers; fwdFn and bwdFn are
	// forwardChunk and backwardChunk, bound once so passing them
	// allocates nothing.
	bottom, top  []*tensor.Blob
	propDown     []bool
	fwdFn, bwdFn func(lo, hi, worker int)
}

// concatPerThread is the element count below which another thread costs
// more than it saves on these copies (ReLU's threshold: both are
// memory-bound).
const concatPerThread = 1 << 16

// split runs fn over [0, outer) on as many threads as the top's size
// warrants.
func (l *concatLayer) split(top *tensor.Blob, fn func(lo, hi, worker int)) {
	l.pool.For(l.outer, max(1, min(l.threads, top.Count()/concatPerThread)), fn)
}

func (*concatLayer) Type() string    { return "Concat" }
func (*concatLayer) Params() []Param { return nil }

func (l *concatLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Concat", bottom, top, 1, maxBlobs, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *concatLayer) Reshape(bottom, top []*tensor.Blob) error {
	first := bottom[0].Shape
	ax, err := normAxis("Concat", l.axis, len(first))
	if err != nil {
		return err
	}
	total := 0
	for i, b := range bottom {
		if len(b.Shape) != len(first) {
			return fmt.Errorf("layers: Concat: bottom %d has %d axes, bottom 0 has %d", i, len(b.Shape), len(first))
		}
		for j := range first {
			if j != ax && b.Shape[j] != first[j] {
				return fmt.Errorf("layers: Concat: bottom %d shape %v does not match bottom 0 shape %v except on axis %d", i, b.Shape, first, ax)
			}
		}
		total += b.Shape[ax]
	}
	shape := first.Clone()
	shape[ax] = total
	l.ax, l.outer, l.inner = ax, first.CountRange(0, ax), first.CountFrom(ax+1)
	top[0].Reshape(shape...)
	return nil
}

func (l *concatLayer) Forward(bottom, top []*tensor.Blob) {
	l.bottom, l.top = bottom, top
	l.split(top[0], l.fwdFn)
	l.bottom, l.top = nil, nil
}

// forwardChunk copies outer indices [lo, hi) of every bottom into the top.
func (l *concatLayer) forwardChunk(lo, hi, _ int) {
	y := l.top[0].Data
	topStride := l.top[0].Shape[l.ax] * l.inner
	off := 0
	for _, b := range l.bottom {
		n := b.Shape[l.ax] * l.inner
		for o := lo; o < hi; o++ {
			copy(y[o*topStride+off:o*topStride+off+n], b.Data[o*n:(o+1)*n])
		}
		off += n
	}
}

func (l *concatLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	l.bottom, l.top, l.propDown = bottom, top, propagateDown
	l.split(top[0], l.bwdFn)
	l.bottom, l.top, l.propDown = nil, nil, nil
}

// backwardChunk copies outer indices [lo, hi) of the top's diff into the
// diffs of the bottoms that propagate.
func (l *concatLayer) backwardChunk(lo, hi, _ int) {
	dy := l.top[0].Diff
	topStride := l.top[0].Shape[l.ax] * l.inner
	off := 0
	for i, b := range l.bottom {
		n := b.Shape[l.ax] * l.inner
		if l.propDown[i] {
			for o := lo; o < hi; o++ {
				copy(b.Diff[o*n:(o+1)*n], dy[o*topStride+off:o*topStride+off+n])
			}
		}
		off += n
	}
}

// maxBlobs stands for "no upper bound" in checkBlobCount.
const maxBlobs = int(^uint(0) >> 1)

// normAxis turns a possibly negative axis into an index in [0, n), or
// returns an error naming the layer.
func normAxis(layer string, axis, n int) (int, error) {
	if axis < -n || axis >= n {
		return 0, fmt.Errorf("layers: %s: axis %d out of range for a blob with %d axes", layer, axis, n)
	}
	if axis < 0 {
		axis += n
	}
	return axis, nil
}
