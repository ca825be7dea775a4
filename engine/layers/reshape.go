package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// ReshapeConfig is Caffe's ReshapeParameter.
type ReshapeConfig struct {
	// Shape is the new shape of the axes replaced: 0 copies the bottom's
	// dimension, -1 (at most once) is inferred from the count.
	Shape []int
	Axis  int // default 0: the first axis replaced; negative counts from the end
	// NumAxes is how many bottom axes are replaced; -1 (default) means all
	// from Axis on.
	NumAxes int
}

// Type returns "Reshape".
func (*ReshapeConfig) Type() string { return "Reshape" }

// Build returns a Reshape layer: the data unchanged under a new shape.
func (c *ReshapeConfig) Build(Context) (Layer, error) {
	inferred := 0
	for _, d := range c.Shape {
		switch {
		case d == -1:
			inferred++
		case d < -1:
			return nil, fmt.Errorf("layers: Reshape: dim %d: want -1, 0 or a positive size", d)
		}
	}
	if inferred > 1 {
		return nil, fmt.Errorf("layers: Reshape: at most one dim may be -1, got %v", c.Shape)
	}
	if c.NumAxes < -1 {
		return nil, fmt.Errorf("layers: Reshape: num_axes must be -1 or more, got %d", c.NumAxes)
	}
	return &reshapeLayer{cfg: *c}, nil
}

type reshapeLayer struct{ cfg ReshapeConfig }

func (*reshapeLayer) Type() string    { return "Reshape" }
func (*reshapeLayer) Params() []Param { return nil }

func (l *reshapeLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Reshape", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if bottom[0] == top[0] {
		return fmt.Errorf("layers: Reshape cannot run in place")
	}
	return l.Reshape(bottom, top)
}

func (l *reshapeLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	// Caffe's axis counts from the end as axis + n + 1: -1 appends.
	start := l.cfg.Axis
	if start < 0 {
		start += len(s) + 1
	}
	if start < 0 || start > len(s) {
		return fmt.Errorf("layers: Reshape: axis %d out of range for %v", l.cfg.Axis, s)
	}
	end := len(s)
	if l.cfg.NumAxes >= 0 {
		end = start + l.cfg.NumAxes
	}
	if end > len(s) {
		return fmt.Errorf("layers: Reshape: axis %d with num_axes %d goes past the %d axes of %v", start, l.cfg.NumAxes, len(s), s)
	}
	shape := append(tensor.Shape(nil), s[:start]...)
	infer := -1
	for i, d := range l.cfg.Shape {
		switch d {
		case 0:
			if start+i >= len(s) {
				return fmt.Errorf("layers: Reshape: dim 0 at %d copies an axis %v does not have", i, s)
			}
			d = s[start+i]
		case -1:
			infer = len(shape)
			d = 1
		}
		shape = append(shape, d)
	}
	shape = append(shape, s[end:]...)
	if infer >= 0 {
		rest := shape.Count()
		if rest == 0 || s.Count()%rest != 0 {
			return fmt.Errorf("layers: Reshape: cannot infer the -1 dim of %v from %v", l.cfg.Shape, s)
		}
		shape[infer] = s.Count() / rest
	}
	if shape.Count() != s.Count() {
		return fmt.Errorf("layers: Reshape: shape %v has %d elements, bottom %v has %d", []int(shape), shape.Count(), []int(s), s.Count())
	}
	top[0].Reshape(shape...)
	return nil
}

func (*reshapeLayer) Forward(bottom, top []*tensor.Blob) { copy(top[0].Data, bottom[0].Data) }

func (*reshapeLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if propagateDown[0] {
		copy(bottom[0].Diff, top[0].Diff)
	}
}
