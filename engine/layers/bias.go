package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// BiasConfig is Caffe's BiasParameter.
type BiasConfig struct {
	Axis    int    // default 1
	NumAxes int    // default 1; -1: to the last axis, 0: a scalar
	Filler  Filler // default constant 0
}

// Type returns "Bias".
func (*BiasConfig) Type() string { return "Bias" }

// Build returns Caffe's Bias layer: top = bottom[0] + bias, the bias
// broadcast over the axes before Axis and after its own. With one bottom
// the bias is a learned param of shape bottom[0].Shape[Axis :
// Axis+NumAxes]; with two the second bottom is the bias (its shape matching
// bottom[0]'s from Axis on) and receives a gradient. It may run in place.
func (c *BiasConfig) Build(Context) (Layer, error) {
	if c.NumAxes < -1 {
		return nil, fmt.Errorf("layers: Bias: num_axes %d must be -1 or more", c.NumAxes)
	}
	if err := c.Filler.Validate(); err != nil {
		return nil, fmt.Errorf("layers: Bias: filler: %w", err)
	}
	return &biasLayer{cfg: *c}, nil
}

type biasLayer struct {
	paramGrads
	cfg               BiasConfig
	bias              *tensor.Blob // the param; nil with two bottoms
	outer, dim, inner int
}

func (*biasLayer) Type() string { return "Bias" }

func (l *biasLayer) Params() []Param {
	if l.bias == nil {
		return nil
	}
	return []Param{{Blob: l.bias, Filler: l.cfg.Filler}}
}

func (l *biasLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Bias", bottom, top, 1, 2, 1, 1); err != nil {
		return err
	}
	if len(bottom) == 1 {
		s := bottom[0].Shape
		ax, err := normAxis("Bias", l.cfg.Axis, len(s))
		if err != nil {
			return err
		}
		end := len(s)
		if l.cfg.NumAxes >= 0 {
			end = ax + l.cfg.NumAxes
		}
		if end > len(s) {
			return fmt.Errorf("layers: Bias: axis %d with num_axes %d goes past the %d axes of %v", ax, l.cfg.NumAxes, len(s), s)
		}
		l.bias = tensor.NewBlob("bias", s[ax:end]...)
	}
	return l.Reshape(bottom, top)
}

func (l *biasLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	b := l.bias
	if len(bottom) == 2 {
		b = bottom[1]
	}
	ax := 0 // a scalar bias (no axes) applies everywhere, as in Caffe
	if len(b.Shape) > 0 {
		var err error
		if ax, err = normAxis("Bias", l.cfg.Axis, len(s)); err != nil {
			return err
		}
	}
	if ax+len(b.Shape) > len(s) {
		return fmt.Errorf("layers: Bias: bias shape %v does not fit bottom %v at axis %d", []int(b.Shape), []int(s), ax)
	}
	for i, d := range b.Shape {
		if s[ax+i] != d {
			return fmt.Errorf("layers: Bias: bias shape %v does not match bottom %v at axis %d", []int(b.Shape), []int(s), ax)
		}
	}
	l.outer, l.dim, l.inner = s.CountRange(0, ax), b.Count(), s.CountFrom(ax+len(b.Shape))
	if top[0] != bottom[0] {
		top[0].ReshapeLike(bottom[0])
	}
	return nil
}

func (l *biasLayer) biasBlob(bottom []*tensor.Blob) *tensor.Blob {
	if len(bottom) == 2 {
		return bottom[1]
	}
	return l.bias
}

func (l *biasLayer) Forward(bottom, top []*tensor.Blob) {
	x, y, b := bottom[0].Data, top[0].Data, l.biasBlob(bottom).Data
	for o := range l.outer {
		for d := range l.dim {
			off := (o*l.dim + d) * l.inner
			v := b[d]
			for i := off; i < off+l.inner; i++ {
				y[i] = x[i] + v
			}
		}
	}
}

func (l *biasLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dy := top[0].Diff
	if propagateDown[0] && bottom[0] != top[0] {
		copy(bottom[0].Diff, dy[:bottom[0].Count()])
	}
	var db []float32
	switch {
	case len(bottom) == 2 && propagateDown[1]:
		db = bottom[1].Diff
		clear(db[:l.dim])
	case len(bottom) == 1 && l.want(0):
		db = l.bias.Diff // params accumulate
	default:
		return
	}
	for o := range l.outer {
		for d := range l.dim {
			off := (o*l.dim + d) * l.inner
			var s float32
			for _, v := range dy[off : off+l.inner] {
				s += v
			}
			db[d] += s
		}
	}
}
