package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// CropConfig is Caffe's CropParameter.
type CropConfig struct {
	Axis int // default 2; the first axis cropped, negative counts from the end
	// Offset is where the crop starts: none means 0 everywhere, one value
	// applies to every cropped axis, else one value per cropped axis.
	Offset []int
}

// Type returns "Crop".
func (*CropConfig) Type() string { return "Crop" }

// Build returns a Crop layer: bottom[0] cut to the shape of bottom[1] on
// the axes from Axis on, starting at Offset. bottom[1] only gives the shape
// and receives no gradient.
func (c *CropConfig) Build(Context) (Layer, error) {
	for _, o := range c.Offset {
		if o < 0 {
			return nil, fmt.Errorf("layers: Crop: negative offset %d", o)
		}
	}
	return &cropLayer{cfg: *c}, nil
}

type cropLayer struct {
	cfg     CropConfig
	offsets []int // one per axis of bottom[0] (0 before Axis)
	idx     []int
}

func (*cropLayer) Type() string    { return "Crop" }
func (*cropLayer) Params() []Param { return nil }

func (l *cropLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Crop", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *cropLayer) Reshape(bottom, top []*tensor.Blob) error {
	a, b := bottom[0].Shape, bottom[1].Shape
	if len(a) != len(b) {
		return fmt.Errorf("layers: Crop: bottoms have %d and %d axes; they must have the same", len(a), len(b))
	}
	ax, err := normAxis("Crop", l.cfg.Axis, len(a))
	if err != nil {
		return err
	}
	n := len(a) - ax
	if k := len(l.cfg.Offset); k > 1 && k != n {
		return fmt.Errorf("layers: Crop: %d offsets for %d cropped axes; give one, or one per axis", k, n)
	}
	l.offsets = make([]int, len(a))
	shape := a.Clone()
	for i := ax; i < len(a); i++ {
		off := 0
		switch len(l.cfg.Offset) {
		case 0:
		case 1:
			off = l.cfg.Offset[0]
		default:
			off = l.cfg.Offset[i-ax]
		}
		if off+b[i] > a[i] {
			return fmt.Errorf("layers: Crop: axis %d: offset %d + size %d is past the bottom's %d", i, off, b[i], a[i])
		}
		l.offsets[i], shape[i] = off, b[i]
	}
	l.idx = make([]int, len(a))
	top[0].Reshape(shape...)
	return nil
}

// each calls fn(src, dst, n) for every innermost row of the crop: src
// indexes bottom[0], dst the top.
func (l *cropLayer) each(src, dst tensor.Shape, fn func(s, d, n int)) {
	last := len(dst) - 1
	idx := l.idx
	clear(idx)
	rows := dst.CountRange(0, last)
	for d := range rows {
		s := 0
		for i := range last {
			s = s*src[i] + idx[i] + l.offsets[i]
		}
		s = s*src[last] + l.offsets[last]
		fn(s, d*dst[last], dst[last])
		for i := last - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < dst[i] {
				break
			}
			idx[i] = 0
		}
	}
}

func (l *cropLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	l.each(bottom[0].Shape, top[0].Shape, func(s, d, n int) { copy(y[d:d+n], x[s:s+n]) })
}

func (l *cropLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx, dy := bottom[0].Diff[:bottom[0].Count()], top[0].Diff
	clear(dx)
	l.each(bottom[0].Shape, top[0].Shape, func(s, d, n int) { copy(dx[s:s+n], dy[d:d+n]) })
}
