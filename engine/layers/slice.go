package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// SliceConfig is Caffe's SliceParameter.
type SliceConfig struct {
	Axis int // default 1; negative counts from the end
	// SlicePoints are the indices along Axis where a new top starts; one
	// fewer than the tops, increasing. Empty splits the axis evenly.
	SlicePoints []int
}

// Type returns "Slice".
func (*SliceConfig) Type() string { return "Slice" }

// Build returns a Slice layer: the bottom cut along Axis into the tops,
// at SlicePoints or into equal parts. The gradient is the tops' diffs put
// back in place.
func (c *SliceConfig) Build(Context) (Layer, error) {
	for i := 1; i < len(c.SlicePoints); i++ {
		if c.SlicePoints[i] <= c.SlicePoints[i-1] {
			return nil, fmt.Errorf("layers: Slice: slice_point must increase, got %v", c.SlicePoints)
		}
	}
	return &sliceLayer{cfg: *c}, nil
}

type sliceLayer struct {
	cfg          SliceConfig
	ax           int
	outer, inner int
	sizes        []int // each top's extent along the axis
}

func (*sliceLayer) Type() string    { return "Slice" }
func (*sliceLayer) Params() []Param { return nil }

func (l *sliceLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Slice", bottom, top, 1, 1, 1, maxBlobs); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *sliceLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	ax, err := normAxis("Slice", l.cfg.Axis, len(s))
	if err != nil {
		return err
	}
	n := s[ax]
	l.sizes = l.sizes[:0]
	switch {
	case len(l.cfg.SlicePoints) > 0:
		if len(l.cfg.SlicePoints) != len(top)-1 {
			return fmt.Errorf("layers: Slice: %d slice_point for %d tops; give one fewer than the tops", len(l.cfg.SlicePoints), len(top))
		}
		prev := 0
		for _, p := range l.cfg.SlicePoints {
			if p <= prev || p >= n {
				return fmt.Errorf("layers: Slice: slice_point %d is outside (%d, %d) on axis %d of %v", p, prev, n, ax, s)
			}
			l.sizes = append(l.sizes, p-prev)
			prev = p
		}
		l.sizes = append(l.sizes, n-prev)
	default:
		if n%len(top) != 0 {
			return fmt.Errorf("layers: Slice: axis %d of %v (%d) does not divide into %d tops", ax, s, n, len(top))
		}
		for range top {
			l.sizes = append(l.sizes, n/len(top))
		}
	}
	l.ax, l.outer, l.inner = ax, s.CountRange(0, ax), s.CountFrom(ax+1)
	for i, t := range top {
		shape := s.Clone()
		shape[ax] = l.sizes[i]
		t.Reshape(shape...)
	}
	return nil
}

func (l *sliceLayer) Forward(bottom, top []*tensor.Blob) {
	x := bottom[0].Data
	stride := bottom[0].Shape[l.ax] * l.inner
	off := 0
	for i, t := range top {
		n := l.sizes[i] * l.inner
		for o := range l.outer {
			copy(t.Data[o*n:(o+1)*n], x[o*stride+off:o*stride+off+n])
		}
		off += n
	}
}

func (l *sliceLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx := bottom[0].Diff
	stride := bottom[0].Shape[l.ax] * l.inner
	off := 0
	for i, t := range top {
		n := l.sizes[i] * l.inner
		for o := range l.outer {
			copy(dx[o*stride+off:o*stride+off+n], t.Diff[o*n:(o+1)*n])
		}
		off += n
	}
}
