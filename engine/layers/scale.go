package layers

import (
	"fmt"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// Type returns "Scale".
func (*ScaleConfig) Type() string { return "Scale" }

// Build returns Caffe's Scale layer: top = bottom[0]·scale + bias, the scale
// and bias broadcast over the axes before Axis and after the scale's own.
//
// With one bottom the scale is a learned param of shape
// bottom[0].Shape[Axis : Axis+NumAxes] (NumAxes -1: to the last axis; 0: a
// scalar), filled by Filler. With two bottoms the second is the scale, its
// shape matching bottom[0]'s from Axis on (from 0 when it is a scalar), and
// it receives a gradient too. BiasTerm adds a learned bias of the scale's
// shape, filled by BiasFiller, as the last param. The layer may run in
// place.
func (c *ScaleConfig) Build(ctx Context) (Layer, error) {
	if c.NumAxes < -1 {
		return nil, fmt.Errorf("layers: Scale: num_axes %d must be -1 or more", c.NumAxes)
	}
	if err := c.Filler.Validate(); err != nil {
		return nil, fmt.Errorf("layers: Scale: filler: %w", err)
	}
	if err := c.BiasFiller.Validate(); err != nil {
		return nil, fmt.Errorf("layers: Scale: bias_filler: %w", err)
	}
	l := &scaleLayer{cfg: *c, threads: ctx.NumThreads(), pool: ctx.Pool}
	l.fwdFn, l.bwdFn = l.forwardRows, l.backwardRows
	return l, nil
}

type scaleLayer struct {
	paramGrads
	cfg    ScaleConfig
	params []Param
	scale  *tensor.Blob // the scale param, nil with two bottoms
	bias   *tensor.Blob // nil without a bias term

	ax                int // canonical axis of the scale in bottom[0]
	outer, dim, inner int
	in                []float32 // copy of bottom[0].Data when in place
	accScale, accBias []float64 // Backward's per-element sums

	// Its passes run on package simd's kernels, the scale's elements split
	// across the worker threads; each element's sums are taken by one
	// thread in a fixed order, so results do not depend on the thread
	// count. The current pass's operands, read by the workers:
	threads      int
	pool         *tensor.Pool
	x, y, a, b   []float32 // input, output, scale, bias (nil: none)
	dy, dx       []float32 // Backward's gradients (dx nil: not wanted)
	wantScale    bool      // Backward sums the scale's gradient
	wantBias     bool      // Backward sums the bias's gradient
	keep         bool      // Forward copies x to in (in place)
	fusedDx      bool      // Backward takes its sums for the joined BatchNorm and leaves dy as dx
	mask         []float32 // Backward first sets dy to 0 where this is not positive (a joined ReLU's pass); nil: not
	fwdFn, bwdFn func(lo, hi, worker int)

	fuse *bnScale // the BatchNorm whose top this Scale runs on, when joined
}

func (*scaleLayer) Type() string      { return "Scale" }
func (l *scaleLayer) Params() []Param { return l.params }

func (l *scaleLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Scale", bottom, top, 1, 2, 1, 1); err != nil {
		return err
	}
	shape, err := l.scaleShape(bottom)
	if err != nil {
		return err
	}
	if len(bottom) == 1 {
		l.scale = tensor.NewBlob("scale", shape...)
		l.params = append(l.params, Param{Blob: l.scale, Filler: l.cfg.Filler})
	}
	if l.cfg.BiasTerm {
		l.bias = tensor.NewBlob("bias", shape...)
		l.params = append(l.params, Param{Blob: l.bias, Filler: l.cfg.BiasFiller})
	}
	return l.Reshape(bottom, top)
}

// scaleShape validates the bottoms and returns the scale's shape, setting
// l.ax.
func (l *scaleLayer) scaleShape(bottom []*tensor.Blob) (tensor.Shape, error) {
	s := bottom[0].Shape
	if len(bottom) == 2 {
		ss := bottom[1].Shape
		l.ax = 0
		if len(ss) > 0 {
			ax, err := normAxis("Scale", l.cfg.Axis, len(s))
			if err != nil {
				return nil, err
			}
			l.ax = ax
		}
		if l.ax+len(ss) > len(s) || !ss.Equal(s[l.ax:l.ax+len(ss)]) {
			return nil, fmt.Errorf("layers: Scale: scale bottom shape %v does not match bottom 0 shape %v from axis %d", ss, s, l.ax)
		}
		return ss, nil
	}
	ax, err := normAxis("Scale", l.cfg.Axis, len(s))
	if err != nil {
		return nil, err
	}
	l.ax = ax
	n := l.cfg.NumAxes
	if n == -1 {
		n = len(s) - ax
	}
	if ax+n > len(s) {
		return nil, fmt.Errorf("layers: Scale: axis %d plus num_axes %d exceeds the %d axes of bottom shape %v", ax, n, len(s), s)
	}
	return s[ax : ax+n], nil
}

func (l *scaleLayer) Reshape(bottom, top []*tensor.Blob) error {
	shape, err := l.scaleShape(bottom)
	if err != nil {
		return err
	}
	if l.scale != nil && !l.scale.Shape.Equal(shape) {
		return fmt.Errorf("layers: Scale: bottom shape %v needs a scale of shape %v, the layer was set up with %v", bottom[0].Shape, shape, l.scale.Shape)
	}
	if l.bias != nil && !l.bias.Shape.Equal(shape) {
		return fmt.Errorf("layers: Scale: bottom shape %v needs a bias of shape %v, the layer was set up with %v", bottom[0].Shape, shape, l.bias.Shape)
	}
	s := bottom[0].Shape
	l.outer, l.dim, l.inner = s.CountRange(0, l.ax), shape.Count(), s.CountFrom(l.ax+len(shape))
	if bottom[0] == top[0] {
		if l.fuse == nil {
			l.in = fitBuf(l.in, bottom[0].Count())
		}
	} else {
		top[0].ReshapeLike(bottom[0])
	}
	if cap(l.accScale) < l.dim {
		l.accScale, l.accBias = make([]float64, l.dim), make([]float64, l.dim)
	}
	l.accScale, l.accBias = l.accScale[:l.dim], l.accBias[:l.dim]
	return nil
}

// scaleData is the current scale: the param's data or bottom[1]'s.
func (l *scaleLayer) scaleData(bottom []*tensor.Blob) []float32 {
	if l.scale != nil {
		return l.scale.Data
	}
	return bottom[1].Data
}

// scaleWorkers is how many threads a pass over count elements uses.
func (l *scaleLayer) workers(count int) int {
	return max(1, min(l.threads, l.dim, count/bnPerThread))
}

// row is the inner run of scale element d in outer slice o.
func (l *scaleLayer) row(v []float32, o, d int) []float32 {
	off := (o*l.dim + d) * l.inner
	return v[off : off+l.inner]
}

func (l *scaleLayer) Forward(bottom, top []*tensor.Blob) {
	if l.fuse != nil && l.fuse.on {
		return // the BatchNorm wrote this layer's output
	}
	x := bottom[0].Data
	if bottom[0] == top[0] {
		l.in = fitBuf(l.in, len(x))
	}
	l.x, l.y, l.a, l.b, l.keep = x, top[0].Data, l.scaleData(bottom), nil, bottom[0] == top[0]
	if l.bias != nil {
		l.b = l.bias.Data
	}
	l.pool.For(l.dim, l.workers(len(x)), l.fwdFn)
	l.x, l.y, l.a, l.b = nil, nil, nil, nil
}

// forwardRows writes y = x·scale + bias for scale elements [lo, hi),
// first keeping x for Backward when in place (keep).
func (l *scaleLayer) forwardRows(lo, hi, _ int) {
	for d := lo; d < hi; d++ {
		var b float32
		if l.b != nil {
			b = l.b[d]
		}
		for o := range l.outer {
			if l.keep {
				copy(l.row(l.in, o, d), l.row(l.x, o, d))
			}
			simd.Affine(l.row(l.y, o, d), l.row(l.x, o, d), l.a[d], b)
		}
	}
}

func (l *scaleLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	l.x = bottom[0].Data
	if bottom[0] == top[0] {
		l.x = l.in
	}
	joined := l.fuse != nil && l.fuse.on
	if joined {
		l.x = l.fuse.bn.xnorm
	}
	l.dy, l.a, l.dx = top[0].Diff, l.scaleData(bottom), nil
	if propagateDown[0] {
		l.dx = bottom[0].Diff
	}
	l.fusedDx = joined && l.dx != nil
	if joined && l.fuse.mask {
		l.mask = top[0].Data
	}
	l.wantScale = (l.scale != nil && l.want(0)) || (l.scale == nil && propagateDown[1])
	l.wantBias = l.bias != nil && l.want(len(l.params)-1)
	if l.wantScale || l.wantBias || l.dx != nil || l.mask != nil {
		l.pool.For(l.dim, l.workers(len(l.dy)), l.bwdFn)
	}
	if joined {
		l.fuse.ready = l.fusedDx
		l.fuse.mask = false
	}
	l.mask = nil
	switch {
	case l.scale != nil && l.wantScale:
		for d, v := range l.accScale {
			l.scale.Diff[d] += float32(v)
		}
	case l.scale == nil && propagateDown[1]:
		for d, v := range l.accScale {
			bottom[1].Diff[d] = float32(v)
		}
	}
	if l.wantBias {
		for d, v := range l.accBias {
			l.bias.Diff[d] += float32(v)
		}
	}
	l.x, l.dy, l.a, l.dx = nil, nil, nil, nil
}

// backwardRows sums the scale's and the bias's gradients of elements [lo,
// hi) over the outer slices (Σ dy·x and Σ dy) and then, when wanted,
// writes dx = dy·scale: in place dx is dy, so the sums come first. Joined
// to a BatchNorm (fusedDx) it takes the sums and leaves dy for it, after
// masking dy as a joined ReLU would have (mask).
func (l *scaleLayer) backwardRows(lo, hi, _ int) {
	for d := lo; d < hi; d++ {
		if sums := l.wantScale || l.wantBias || l.fusedDx; sums || l.mask != nil {
			// Each row masked (when a ReLU is joined) and summed while it
			// is in cache.
			var s, p float64
			for o := range l.outer {
				dy := l.row(l.dy, o, d)
				if l.mask != nil {
					simd.SelectScaled(dy, l.row(l.mask, o, d), dy, l.fuse.relu.slope)
				}
				if sums {
					sd, sdx := simd.SumDot(dy, l.row(l.x, o, d))
					s += float64(sd)
					p += float64(sdx)
				}
			}
			if sums {
				l.accScale[d], l.accBias[d] = p, s
			}
		}
		if l.dx != nil && !l.fusedDx {
			for o := range l.outer {
				simd.Affine(l.row(l.dx, o, d), l.row(l.dy, o, d), l.a[d], 0)
			}
		}
	}
}
