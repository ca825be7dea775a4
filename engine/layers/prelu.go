package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// PReLUConfig is Caffe's PReLUParameter.
type PReLUConfig struct {
	Filler        Filler // default constant 0.25
	ChannelShared bool   // one slope for all channels
}

// Type returns "PReLU".
func (*PReLUConfig) Type() string { return "PReLU" }

// Build returns a PReLU layer: y = max(0, x) + a·min(0, x) with a learned
// slope a per channel (axis 1), or one for all with ChannelShared. It may
// run in place.
func (c *PReLUConfig) Build(Context) (Layer, error) {
	if err := c.Filler.Validate(); err != nil {
		return nil, fmt.Errorf("layers: PReLU: filler: %w", err)
	}
	return &preluLayer{cfg: *c}, nil
}

type preluLayer struct {
	paramGrads
	cfg          PReLUConfig
	slope        *tensor.Blob
	channels, in int // channels and the count of each channel's plane
	saved        []float32
}

func (*preluLayer) Type() string { return "PReLU" }

func (l *preluLayer) Params() []Param { return []Param{{Blob: l.slope, Filler: l.cfg.Filler}} }

func (l *preluLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("PReLU", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	s := bottom[0].Shape
	if len(s) < 2 {
		return fmt.Errorf("layers: PReLU: bottom %v needs at least 2 axes", []int(s))
	}
	if l.cfg.ChannelShared {
		l.slope = tensor.NewBlob("slope")
	} else {
		l.slope = tensor.NewBlob("slope", s[1])
	}
	return l.Reshape(bottom, top)
}

func (l *preluLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) < 2 || !l.cfg.ChannelShared && s[1] != l.slope.Count() {
		return fmt.Errorf("layers: PReLU: bottom %v does not have the %d channels the slopes were made for", []int(s), l.slope.Count())
	}
	l.channels, l.in = s[1], s.CountFrom(2)
	if top[0] != bottom[0] {
		top[0].ReshapeLike(bottom[0])
	} else {
		l.saved = fitBuf(l.saved, bottom[0].Count())
	}
	return nil
}

func (l *preluLayer) slopeOf(i int) float32 {
	if l.cfg.ChannelShared {
		return l.slope.Data[0]
	}
	return l.slope.Data[(i/l.in)%l.channels]
}

func (l *preluLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	if bottom[0] == top[0] {
		copy(l.saved, x)
	}
	for i, v := range x[:bottom[0].Count()] {
		if v < 0 {
			v *= l.slopeOf(i)
		}
		y[i] = v
	}
}

func (l *preluLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	x, dy := bottom[0].Data, top[0].Diff
	if bottom[0] == top[0] {
		x = l.saved
	}
	n := bottom[0].Count()
	da := l.slope.Diff
	for i, v := range x[:n] {
		if v <= 0 && l.want(0) {
			c := 0
			if !l.cfg.ChannelShared {
				c = (i / l.in) % l.channels
			}
			da[c] += dy[i] * v
		}
	}
	if !propagateDown[0] {
		return
	}
	dx := bottom[0].Diff
	for i, v := range x[:n] {
		if v > 0 {
			dx[i] = dy[i]
		} else {
			dx[i] = dy[i] * l.slopeOf(i)
		}
	}
}
