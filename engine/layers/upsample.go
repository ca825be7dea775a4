package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// UpsampleConfig is the UpsampleParameter of SegNet's Caffe fork
// (alexgkendall/caffe-segnet): upsample_param { scale (2), scale_h,
// scale_w, pad_out_h (false), pad_out_w (false), upsample_h, upsample_w }.
// Zero fields are not given.
type UpsampleConfig struct {
	// UpsampleH and UpsampleW give the output size (both or neither);
	// otherwise it is the input's times ScaleH and ScaleW, less one where
	// PadOutH or PadOutW (scale 2 only: an odd size pooled by 2).
	UpsampleH, UpsampleW int
	ScaleH, ScaleW       int
	PadOutH, PadOutW     bool
}

// Type returns "Upsample".
func (*UpsampleConfig) Type() string { return "Upsample" }

// Build returns SegNet's Upsample layer, max-unpooling: two bottoms, the
// values and the argmax mask of a MAX Pooling layer (its second top, the
// index of each maximum within its input plane); the top, zero but where
// the mask points, receives each value at its index. Backward gathers the
// top's diff at the same indices. A mask index outside the top's plane
// (the Pooling's input was not the size of this top) panics, as the fork
// stops there; the net turns that into its error naming the layer
// (model.Net.Err), and training stops with it.
func (c *UpsampleConfig) Build(Context) (Layer, error) {
	switch {
	case c.UpsampleH < 0 || c.UpsampleW < 0 || (c.UpsampleH == 0) != (c.UpsampleW == 0):
		return nil, fmt.Errorf("layers: Upsample: give both upsample_h and upsample_w or neither, got %d and %d", c.UpsampleH, c.UpsampleW)
	case c.UpsampleH == 1 || c.UpsampleW == 1:
		return nil, fmt.Errorf("layers: Upsample: upsample_h and upsample_w must be greater than 1, got %d and %d", c.UpsampleH, c.UpsampleW)
	case c.UpsampleH == 0 && (c.ScaleH < 2 || c.ScaleW < 2):
		return nil, fmt.Errorf("layers: Upsample: the scale must be greater than 1, got %dx%d", c.ScaleH, c.ScaleW)
	case c.UpsampleH == 0 && (c.PadOutH && c.ScaleH != 2 || c.PadOutW && c.ScaleW != 2):
		return nil, fmt.Errorf("layers: Upsample: pad_out_h and pad_out_w need scale 2")
	}
	return &upsampleLayer{cfg: *c}, nil
}

type upsampleLayer struct {
	cfg           UpsampleConfig
	planes, in    int // N·C planes of in values each
	oh, ow, plane int // the top's plane
}

func (*upsampleLayer) Type() string    { return "Upsample" }
func (*upsampleLayer) Params() []Param { return nil }

func (l *upsampleLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Upsample", bottom, top, 2, 2, 1, 1); err != nil {
		return fmt.Errorf("%w (SegNet's Upsample reads the values and the argmax mask of a MAX Pooling)", err)
	}
	if top[0] == bottom[0] || top[0] == bottom[1] {
		return fmt.Errorf("layers: Upsample cannot run in place: give it a top of its own")
	}
	return nil
}

// AllowBackward implements GradientBlocker: the mask takes no gradient.
func (*upsampleLayer) AllowBackward(i int) bool { return i == 0 }

func (l *upsampleLayer) Reshape(bottom, top []*tensor.Blob) error {
	x, m := bottom[0].Shape, bottom[1].Shape
	if len(x) != 4 || !m.Equal(x) {
		return fmt.Errorf("layers: Upsample: the values %v must be 4-D (NCHW) and the mask %v of their shape", x, m)
	}
	l.oh, l.ow = l.cfg.UpsampleH, l.cfg.UpsampleW
	if l.oh == 0 {
		l.oh, l.ow = x[2]*l.cfg.ScaleH, x[3]*l.cfg.ScaleW
		if l.cfg.PadOutH {
			l.oh--
		}
		if l.cfg.PadOutW {
			l.ow--
		}
	}
	l.planes, l.in, l.plane = x[0]*x[1], x[2]*x[3], l.oh*l.ow
	top[0].Reshape(x[0], x[1], l.oh, l.ow)
	return nil
}

// index is the mask's value i of plane p, checked against the top's plane.
func (l *upsampleLayer) index(mask []float32, j int) int {
	idx := int(mask[j])
	if idx < 0 || idx >= l.plane {
		panic(fmt.Sprintf("layers: Upsample: mask index %v out of range for the %dx%d top: the Pooling that made the mask pooled another size (check scale or upsample_h/w)", mask[j], l.oh, l.ow))
	}
	return idx
}

func (l *upsampleLayer) Forward(bottom, top []*tensor.Blob) {
	x, mask, y := bottom[0].Data, bottom[1].Data, top[0].Data
	clear(y[:l.planes*l.plane])
	for p := range l.planes {
		yp := y[p*l.plane : (p+1)*l.plane]
		for i := p * l.in; i < (p+1)*l.in; i++ {
			yp[l.index(mask, i)] = x[i]
		}
	}
}

func (l *upsampleLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx, mask, dy := bottom[0].Diff, bottom[1].Data, top[0].Diff
	for p := range l.planes {
		dp := dy[p*l.plane : (p+1)*l.plane]
		for i := p * l.in; i < (p+1)*l.in; i++ {
			dx[i] = dp[l.index(mask, i)]
		}
	}
}
