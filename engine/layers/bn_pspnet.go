package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// PSPNetBNConfig is the BN layer of PSPNet's Caffe fork (hszhao/PSPNet,
// after yjxiong's): bn_param { slope_filler, bias_filler (Caffe's filler
// default, constant 0), momentum (0.9), eps (1e-5), frozen (false) }, with
// four blobs of shape 1×C×1×1: slope, bias, and the moving mean and
// variance. SegNet's fork has a different layer under the same type name
// (bn_param { scale_filler shift_filler bn_mode }); caffedef tells them
// apart by their fields and refuses SegNet's.
type PSPNetBNConfig struct {
	SlopeFiller, BiasFiller Filler
	// Momentum weighs the old moving statistics in the fork's update; dsgd
	// runs only the modes that use the stored statistics as they are.
	Momentum float32
	Eps      float32
	// Frozen uses the stored statistics in every phase and learns nothing
	// (the fork sets every blob's lr_mult to 0), as PSPNet fine-tunes and
	// evaluates.
	Frozen bool
}

// Type returns "BN".
func (*PSPNetBNConfig) Type() string { return "BN" }

// Build returns PSPNet's BN where it normalises with its stored moving
// statistics, frozen or in the TEST phase:
// y = slope·(x − mean)/sqrt(var + eps) + bias per channel (axis 1). Frozen,
// its Backward gives the input slope/sqrt(var + eps)·dy and its blobs no
// gradient, as the fork's; in the TEST phase, not frozen, the slope and
// bias take the gradients of that forward (the fork's TEST backward would
// use its batch formula). In the TRAIN phase, not frozen, the fork
// normalises by the batch's statistics and updates the moving ones; dsgd
// refuses that mode (BatchNorm followed by Scale computes it). It may run
// in place.
func (c *PSPNetBNConfig) Build(ctx Context) (Layer, error) {
	switch {
	case !c.Frozen && ctx.Phase == Train:
		return nil, fmt.Errorf("layers: BN: PSPNet's BN with frozen: false trains on its batch's statistics, which dsgd does not run; give bn_param { frozen: true } (how PSPNet fine-tunes), or write it as BatchNorm followed by Scale { bias_term: true }")
	case !(c.Eps > 0) || math.IsInf(float64(c.Eps), 0):
		return nil, fmt.Errorf("layers: BN: eps must be positive and finite, got %v", c.Eps)
	}
	for _, f := range []Filler{c.SlopeFiller, c.BiasFiller} {
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("layers: BN: %w", err)
		}
	}
	return &pspBNLayer{cfg: *c}, nil
}

type pspBNLayer struct {
	paramGrads
	cfg                   PSPNetBNConfig
	slope, bias, mean, vr *tensor.Blob
	params                []Param
	n, c, inner           int
	k                     []float32 // per channel: slope/sqrt(var + eps)
	inv                   []float32 // per channel: 1/sqrt(var + eps)
	saved                 []float32 // x, when in place and the slope takes a gradient
}

func (*pspBNLayer) Type() string { return "BN" }

func (l *pspBNLayer) Params() []Param { return l.params }

func (l *pspBNLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("BN", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	s := bottom[0].Shape
	if len(s) < 2 {
		return fmt.Errorf("layers: BN: bottom %v needs at least 2 axes", s)
	}
	c := s[1]
	l.slope = tensor.NewBlob("slope", 1, c, 1, 1)
	l.bias = tensor.NewBlob("bias", 1, c, 1, 1)
	l.mean = tensor.NewBlob("mean", 1, c, 1, 1)
	l.vr = tensor.NewBlob("variance", 1, c, 1, 1)
	// The fork fills the moving variance with 1 when frozen, 0 otherwise.
	varFill := Filler{Type: FillConstant}
	if l.cfg.Frozen {
		varFill.Value = 1
	}
	l.params = []Param{
		{Blob: l.slope, Filler: l.cfg.SlopeFiller, Frozen: l.cfg.Frozen},
		{Blob: l.bias, Filler: l.cfg.BiasFiller, Frozen: l.cfg.Frozen},
		{Blob: l.mean, Filler: Filler{Type: FillConstant}, Frozen: true},
		{Blob: l.vr, Filler: varFill, Frozen: true},
	}
	l.k = make([]float32, c)
	l.inv = make([]float32, c)
	return nil
}

func (l *pspBNLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) < 2 || s[1] != l.slope.Count() {
		return fmt.Errorf("layers: BN: bottom %v does not have the %d channels the layer was set up for", s, l.slope.Count())
	}
	l.n, l.c, l.inner = s[0], s[1], s.CountFrom(2)
	if top[0] != bottom[0] {
		top[0].ReshapeLike(bottom[0])
	} else if !l.cfg.Frozen {
		l.saved = fitBuf(l.saved, bottom[0].Count())
	}
	return nil
}

func (l *pspBNLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	if bottom[0] == top[0] && !l.cfg.Frozen {
		copy(l.saved, x[:len(l.saved)])
	}
	for c := range l.c {
		l.inv[c] = float32(math.Pow(float64(l.vr.Data[c]+l.cfg.Eps), -0.5))
		l.k[c] = l.slope.Data[c] * l.inv[c]
	}
	for i := range l.n * l.c {
		c := i % l.c
		m, inv, s, b := l.mean.Data[c], l.inv[c], l.slope.Data[c], l.bias.Data[c]
		for j, v := range x[i*l.inner : (i+1)*l.inner] {
			y[i*l.inner+j] = (v-m)*inv*s + b
		}
	}
}

func (l *pspBNLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dy := top[0].Diff
	if !l.cfg.Frozen {
		x := bottom[0].Data
		if bottom[0] == top[0] {
			x = l.saved
		}
		for i := range l.n * l.c {
			c := i % l.c
			m, inv := l.mean.Data[c], l.inv[c]
			var ds, db float32
			for j, v := range x[i*l.inner : (i+1)*l.inner] {
				d := dy[i*l.inner+j]
				ds += d * (v - m) * inv
				db += d
			}
			if l.want(0) {
				l.slope.Diff[c] += ds
			}
			if l.want(1) {
				l.bias.Diff[c] += db
			}
		}
	}
	if !propagateDown[0] {
		return
	}
	dx := bottom[0].Diff
	for i := range l.n * l.c {
		k := l.k[i%l.c]
		for j, d := range dy[i*l.inner : (i+1)*l.inner] {
			dx[i*l.inner+j] = d * k
		}
	}
}
