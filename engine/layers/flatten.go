package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Type returns "Flatten".
func (*FlattenConfig) Type() string { return "Flatten" }

// Build returns a Flatten layer, which merges the axes Axis through EndAxis
// (both inclusive, negative counting from the end) of its one bottom into
// one axis of its one top. The data are copied unchanged.
func (c *FlattenConfig) Build(Context) (Layer, error) {
	return &flattenLayer{axis: c.Axis, endAxis: c.EndAxis}, nil
}

type flattenLayer struct {
	axis, endAxis int
	shape         []int // the top's shape, reused between Reshapes
}

func (*flattenLayer) Type() string    { return "Flatten" }
func (*flattenLayer) Params() []Param { return nil }

func (l *flattenLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Flatten", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if bottom[0] == top[0] {
		return fmt.Errorf("layers: Flatten cannot run in place")
	}
	return l.Reshape(bottom, top)
}

func (l *flattenLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	start, err := normAxis("Flatten", l.axis, len(s))
	if err != nil {
		return err
	}
	end, err := normAxis("Flatten", l.endAxis, len(s))
	if err != nil {
		return err
	}
	if start > end {
		return fmt.Errorf("layers: Flatten: axis %d comes after end_axis %d for a blob with %d axes", l.axis, l.endAxis, len(s))
	}
	l.shape = append(l.shape[:0], s[:start]...)
	l.shape = append(l.shape, s.CountRange(start, end+1))
	l.shape = append(l.shape, s[end+1:]...)
	top[0].Reshape(l.shape...)
	return nil
}

func (*flattenLayer) Forward(bottom, top []*tensor.Blob) {
	copy(top[0].Data, bottom[0].Data)
}

func (*flattenLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if propagateDown[0] {
		copy(bottom[0].Diff, top[0].Diff)
	}
}
