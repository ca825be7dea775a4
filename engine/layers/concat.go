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
func (c *ConcatConfig) Build(Context) (Layer, error) {
	return &concatLayer{axis: c.Axis}, nil
}

type concatLayer struct {
	axis  int // as configured
	ax    int // canonical, set by Reshape
	outer int // product of the dimensions before ax
	inner int // product of the dimensions after ax
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
	y := top[0].Data
	topStride := top[0].Shape[l.ax] * l.inner
	off := 0
	for _, b := range bottom {
		n := b.Shape[l.ax] * l.inner
		for o := range l.outer {
			copy(y[o*topStride+off:o*topStride+off+n], b.Data[o*n:(o+1)*n])
		}
		off += n
	}
}

func (l *concatLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dy := top[0].Diff
	topStride := top[0].Shape[l.ax] * l.inner
	off := 0
	for i, b := range bottom {
		n := b.Shape[l.ax] * l.inner
		if propagateDown[i] {
			for o := range l.outer {
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
