package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// Type returns "ReLU".
func (*ReLUConfig) Type() string { return "ReLU" }

// Build returns a ReLU layer: top = max(x, 0) + NegativeSlope·min(x, 0). It
// takes one bottom and one top and may run in place.
func (c *ReLUConfig) Build(ctx Context) (Layer, error) {
	if s := float64(c.NegativeSlope); math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("layers: ReLU: negative_slope %v is not finite", c.NegativeSlope)
	}
	l := &reluLayer{slope: c.NegativeSlope, threads: ctx.NumThreads(), pool: ctx.Pool}
	l.fn = l.chunk
	return l, nil
}

// reluLayer is a (leaky) rectifier. With a non-negative slope the output has
// the sign of the input, so Backward reads the mask from top data and in
// place needs no copy; a negative slope keeps the input in in.
//
// It runs on the caller's goroutine: splitting LeNet's relu1 (32000
// floats, about 50 µs) across two threads measured no faster, the
// hand-off costing what the split saves.
type reluLayer struct {
	slope   float32
	in      []float32 // copy of the input, only when slope < 0
	threads int
	pool    *tensor.Pool

	// The current pass's operands, read by the workers; fn is chunk,
	// bound once so passing it allocates nothing.
	dst, ref, v []float32
	fn          func(lo, hi, worker int)

	fuse *bnScale // the BatchNorm and Scale before it, when FuseReLU joined them
}

// reluPerThread is the element count below which another thread costs more
// than it saves on this memory-bound loop.
const reluPerThread = 1 << 16

// run computes dst = ref > 0 ? v : slope·v over the worker threads.
func (l *reluLayer) run(dst, ref, v []float32) {
	l.dst, l.ref, l.v = dst[:len(ref)], ref, v[:len(ref)]
	l.pool.For(len(ref), max(1, min(l.threads, len(ref)/reluPerThread)), l.fn)
	l.dst, l.ref, l.v = nil, nil, nil
}

func (l *reluLayer) chunk(lo, hi, _ int) {
	simd.SelectScaled(l.dst[lo:hi], l.ref[lo:hi], l.v[lo:hi], l.slope)
}

func (*reluLayer) Type() string    { return "ReLU" }
func (*reluLayer) Params() []Param { return nil }

func (l *reluLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("ReLU", bottom, top, 1, 1, 1, 1)
}

func (l *reluLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	}
	if l.slope < 0 {
		l.in = fitBuf(l.in, bottom[0].Count())
	}
	return nil
}

func (l *reluLayer) Forward(bottom, top []*tensor.Blob) {
	if l.fuse != nil && l.fuse.on {
		return // the BatchNorm rectified its output
	}
	x, y := bottom[0].Data, top[0].Data
	if l.slope < 0 {
		copy(l.in, x)
	}
	l.run(y, x, x)
}

func (l *reluLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if l.fuse != nil && l.fuse.on {
		l.fuse.mask = propagateDown[0] // the Scale's Backward masks dy
		return
	}
	if !propagateDown[0] {
		return
	}
	dy, dx := top[0].Diff, bottom[0].Diff
	// The sign of the input: from the saved copy, or, when the slope is
	// non-negative, from the output, which has the same sign.
	ref := top[0].Data
	if l.slope < 0 {
		ref = l.in
	}
	l.run(dx, ref, dy)
}

// checkBlobCount checks that a layer got between minBottom and maxBottom
// bottoms and between minTop and maxTop tops.
func checkBlobCount(layer string, bottom, top []*tensor.Blob, minBottom, maxBottom, minTop, maxTop int) error {
	if err := checkRange(layer, "bottom", len(bottom), minBottom, maxBottom); err != nil {
		return err
	}
	return checkRange(layer, "top", len(top), minTop, maxTop)
}

func checkRange(layer, what string, n, lo, hi int) error {
	switch {
	case n >= lo && n <= hi:
		return nil
	case lo == hi:
		return fmt.Errorf("layers: %s takes %d %s blob(s), got %d", layer, lo, what, n)
	case hi == maxBlobs:
		return fmt.Errorf("layers: %s takes at least %d %s blobs, got %d", layer, lo, what, n)
	}
	return fmt.Errorf("layers: %s takes %d to %d %s blobs, got %d", layer, lo, hi, what, n)
}

// fitBuf returns buf resliced to n elements, reallocating only when its
// capacity is too small.
func fitBuf(buf []float32, n int) []float32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]float32, n)
}
