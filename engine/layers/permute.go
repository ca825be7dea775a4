package layers

import (
	"fmt"
	"slices"

	"dsgd/engine/tensor"
)

// PermuteConfig is SSD's PermuteParameter (weiliu89/caffe): permute_param
// { order } (repeated; none keeps the axes in place).
type PermuteConfig struct {
	// Order lists the bottom axes in the order the top takes them; the
	// axes it leaves out follow in their own order, as SSD completes it.
	Order []int
}

// Type returns "Permute".
func (*PermuteConfig) Type() string { return "Permute" }

// Build returns a Permute layer: top axis i is bottom axis order[i] (SSD
// turns N×C×H×W into N×H×W×C with order 0, 2, 3, 1 before flattening its
// box predictions). Backward scatters the top's diff back through the same
// permutation. It does not run in place.
func (c *PermuteConfig) Build(Context) (Layer, error) {
	for i, o := range c.Order {
		if o < 0 {
			return nil, fmt.Errorf("layers: Permute: order must not be negative, got %d", o)
		}
		if slices.Contains(c.Order[:i], o) {
			return nil, fmt.Errorf("layers: Permute: order %v names axis %d twice", c.Order, o)
		}
	}
	return &permuteLayer{given: slices.Clone(c.Order)}, nil
}

type permuteLayer struct {
	given    []int
	order    []int // the full permutation
	oldSteps []int // the bottom's stride of each axis
	newSteps []int // the top's stride of each axis
	shape    []int
	identity bool
}

func (*permuteLayer) Type() string    { return "Permute" }
func (*permuteLayer) Params() []Param { return nil }

func (l *permuteLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Permute", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if top[0] == bottom[0] {
		return fmt.Errorf("layers: Permute cannot run in place: give it a top of its own")
	}
	axes := len(bottom[0].Shape)
	l.order = nil
	for _, o := range l.given {
		if o >= axes {
			return fmt.Errorf("layers: Permute: order %v names axis %d, but bottom %v has %d axes", l.given, o, bottom[0].Shape, axes)
		}
		l.order = append(l.order, o)
	}
	for i := range axes {
		if !slices.Contains(l.order, i) {
			l.order = append(l.order, i)
		}
	}
	l.identity = true
	for i, o := range l.order {
		l.identity = l.identity && i == o
	}
	l.oldSteps = make([]int, axes)
	l.newSteps = make([]int, axes)
	l.shape = make([]int, axes)
	return nil
}

func (l *permuteLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) != len(l.order) {
		return fmt.Errorf("layers: Permute: bottom %v has %d axes, the layer was set up for %d", s, len(s), len(l.order))
	}
	for i, o := range l.order {
		l.shape[i] = s[o]
		l.oldSteps[i] = s.CountFrom(i + 1)
	}
	top[0].Reshape(l.shape...)
	for i := range l.order {
		l.newSteps[i] = top[0].Shape.CountFrom(i + 1)
	}
	return nil
}

// run copies between the top (index i) and the bottom (the permuted
// index): forward reads the bottom, backward writes it.
func (l *permuteLayer) run(b, t []float32, forward bool) {
	if l.identity {
		if forward {
			copy(t, b[:len(t)])
		} else {
			copy(b, t[:len(b)])
		}
		return
	}
	for i := range t {
		old, idx := 0, i
		for j, o := range l.order {
			old += idx / l.newSteps[j] * l.oldSteps[o]
			idx %= l.newSteps[j]
		}
		if forward {
			t[i] = b[old]
		} else {
			b[old] = t[i]
		}
	}
}

func (l *permuteLayer) Forward(bottom, top []*tensor.Blob) {
	l.run(bottom[0].Data, top[0].Data[:top[0].Count()], true)
}

func (l *permuteLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if propagateDown[0] {
		l.run(bottom[0].Diff[:bottom[0].Count()], top[0].Diff[:top[0].Count()], false)
	}
}
