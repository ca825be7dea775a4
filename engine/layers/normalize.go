package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// NormalizeConfig is SSD's NormalizeParameter (weiliu89/caffe):
// norm_param { across_spatial (default true), scale_filler (default
// constant 1), channel_shared (default true), eps (default 1e-10) }.
type NormalizeConfig struct {
	// AcrossSpatial normalizes each item as one vector (C×H×W); false
	// normalizes each spatial position's C channels (SSD's conv4_3_norm).
	AcrossSpatial bool
	// ChannelShared learns one scale; false learns one per channel.
	ChannelShared bool
	// Eps is added to the sum of squares before the square root.
	Eps float32
	// ScaleFiller fills the scale.
	ScaleFiller Filler
}

// Type returns "Normalize".
func (*NormalizeConfig) Type() string { return "Normalize" }

// Build returns a Normalize layer: y = s·x / sqrt(Σx² + eps), the sum over
// each item (AcrossSpatial) or over the channels at each position, with
// the learned scale s (one, or one per channel, axis 1).
//
// Forward is SSD's. Backward is the derivative of that forward: where the
// scale is per channel, SSD's Backward multiplies the projected gradient by
// the scale after projecting, (dy − x·Σx·dy/‖x‖²)·s/‖x‖, which is not
// the derivative s·dy/‖x‖ − x·Σs·x·dy/‖x‖³ unless the channels' scales are
// equal; dsgd computes the derivative (they agree with channel_shared).
// The scale's gradient is Σ dy·x/‖x‖, which SSD writes as Σ dy·y/s. It
// does not run in place.
func (c *NormalizeConfig) Build(Context) (Layer, error) {
	if !(c.Eps >= 0) || math.IsInf(float64(c.Eps), 0) {
		return nil, fmt.Errorf("layers: Normalize: eps must be finite and not negative, got %v", c.Eps)
	}
	if err := c.ScaleFiller.Validate(); err != nil {
		return nil, fmt.Errorf("layers: Normalize: scale_filler: %w", err)
	}
	return &normalizeLayer{cfg: *c}, nil
}

type normalizeLayer struct {
	paramGrads
	cfg           NormalizeConfig
	scale         *tensor.Blob
	n, c, spatial int
	norm          []float32 // 1/‖x‖ per item (across spatial) or per item and position
	dot           []float32 // per position: Σ_c s_c·x_c·dy_c
}

func (*normalizeLayer) Type() string { return "Normalize" }

func (l *normalizeLayer) Params() []Param {
	return []Param{{Blob: l.scale, Filler: l.cfg.ScaleFiller}}
}

func (l *normalizeLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Normalize", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if top[0] == bottom[0] {
		return fmt.Errorf("layers: Normalize cannot run in place: give it a top of its own")
	}
	s := bottom[0].Shape
	if len(s) < 2 {
		return fmt.Errorf("layers: Normalize: bottom %v needs at least 2 axes", s)
	}
	if l.cfg.ChannelShared {
		l.scale = tensor.NewBlob("scale")
	} else {
		l.scale = tensor.NewBlob("scale", s[1])
	}
	return nil
}

func (l *normalizeLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) < 2 || !l.cfg.ChannelShared && s[1] != l.scale.Count() {
		return fmt.Errorf("layers: Normalize: bottom %v does not have the %d channels the scales were made for", s, l.scale.Count())
	}
	l.n, l.c, l.spatial = s[0], s[1], s.CountFrom(2)
	if l.cfg.AcrossSpatial {
		l.norm = fitBuf(l.norm, l.n)
	} else {
		l.norm = fitBuf(l.norm, l.n*l.spatial)
	}
	l.dot = fitBuf(l.dot, l.spatial)
	top[0].ReshapeLike(bottom[0])
	return nil
}

// scaleOf is channel c's scale.
func (l *normalizeLayer) scaleOf(c int) float32 {
	if l.cfg.ChannelShared {
		return l.scale.Data[0]
	}
	return l.scale.Data[c]
}

func (l *normalizeLayer) Forward(bottom, top []*tensor.Blob) {
	dim := l.c * l.spatial
	eps := float64(l.cfg.Eps)
	for n := range l.n {
		x, y := bottom[0].Data[n*dim:(n+1)*dim], top[0].Data[n*dim:(n+1)*dim]
		if l.cfg.AcrossSpatial {
			var ss float64
			for _, v := range x {
				ss += float64(v) * float64(v)
			}
			inv := float32(1 / math.Sqrt(ss+eps))
			l.norm[n] = inv
			for c := range l.c {
				k := inv * l.scaleOf(c)
				for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
					y[c*l.spatial+i] = v * k
				}
			}
			continue
		}
		inv := l.norm[n*l.spatial : (n+1)*l.spatial]
		for i := range inv {
			var ss float64
			for c := range l.c {
				v := float64(x[c*l.spatial+i])
				ss += v * v
			}
			inv[i] = float32(1 / math.Sqrt(ss+eps))
		}
		for c := range l.c {
			s := l.scaleOf(c)
			for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
				y[c*l.spatial+i] = v * inv[i] * s
			}
		}
	}
}

func (l *normalizeLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dim := l.c * l.spatial
	for n := range l.n {
		x, dy := bottom[0].Data[n*dim:(n+1)*dim], top[0].Diff[n*dim:(n+1)*dim]
		// inv(i) is 1/‖x‖ at position i.
		inv := func(int) float32 { return l.norm[n] }
		if !l.cfg.AcrossSpatial {
			row := l.norm[n*l.spatial : (n+1)*l.spatial]
			inv = func(i int) float32 { return row[i] }
		}
		if l.want(0) {
			sd := l.scale.Diff
			for c := range l.c {
				var g float64
				for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
					g += float64(v * inv(i) * dy[c*l.spatial+i])
				}
				if l.cfg.ChannelShared {
					sd[0] += float32(g)
				} else {
					sd[c] += float32(g)
				}
			}
		}
		if !propagateDown[0] {
			continue
		}
		dx := bottom[0].Diff[n*dim : (n+1)*dim]
		if l.cfg.AcrossSpatial {
			var a float64 // Σ s·x·dy
			for c := range l.c {
				s := float64(l.scaleOf(c))
				for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
					a += s * float64(v) * float64(dy[c*l.spatial+i])
				}
			}
			r := float64(l.norm[n])
			k := float32(a * r * r * r)
			for c := range l.c {
				s := l.scaleOf(c) * l.norm[n]
				for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
					j := c*l.spatial + i
					dx[j] = s*dy[j] - v*k
				}
			}
			continue
		}
		clear(l.dot)
		for c := range l.c {
			s := l.scaleOf(c)
			for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
				l.dot[i] += s * v * dy[c*l.spatial+i]
			}
		}
		for c := range l.c {
			s := l.scaleOf(c)
			for i, v := range x[c*l.spatial : (c+1)*l.spatial] {
				r := inv(i)
				j := c*l.spatial + i
				dx[j] = s*dy[j]*r - v*l.dot[i]*r*r*r
			}
		}
	}
}
