package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// MVNConfig is Caffe's MVNParameter.
type MVNConfig struct {
	NormalizeVariance bool    // default true
	AcrossChannels    bool    // default false
	Eps               float32 // default 1e-9
}

// Type returns "MVN".
func (*MVNConfig) Type() string { return "MVN" }

// Build returns an MVN layer (mean-variance normalisation): each group of
// its bottom — every (item, channel) plane, or with AcrossChannels every
// item — has its mean subtracted and, with NormalizeVariance, is divided
// by its standard deviation plus Eps (Caffe adds Eps to the standard
// deviation, not to the variance). As in Caffe the bottom may have at most
// four axes, and the top has the bottom's shape padded with 1s to four.
// It may run in place.
func (c *MVNConfig) Build(Context) (Layer, error) {
	if math.IsNaN(float64(c.Eps)) || c.Eps < 0 {
		return nil, fmt.Errorf("layers: MVN: eps must not be negative, got %v", c.Eps)
	}
	return &mvnLayer{cfg: *c}, nil
}

type mvnLayer struct {
	cfg      MVNConfig
	num, dim int
	std      []float32 // per group: standard deviation plus eps
}

func (*mvnLayer) Type() string    { return "MVN" }
func (*mvnLayer) Params() []Param { return nil }

func (l *mvnLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("MVN", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *mvnLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	if len(b.Shape) > 4 {
		return fmt.Errorf("layers: MVN: bottom %q has %d axes; Caffe's MVN takes at most 4", b.Name, len(b.Shape))
	}
	n, c, h, w := b.Dim(0), b.Dim(1), b.Dim(2), b.Dim(3)
	if len(b.Shape) == 0 {
		n = 1
	}
	top[0].Reshape(n, c, h, w) // in place too: the count is unchanged
	l.num = n * c
	if l.cfg.AcrossChannels {
		l.num = n
	}
	l.dim = 0
	if l.num > 0 {
		l.dim = n * c * h * w / l.num
	}
	l.std = fitBuf(l.std, l.num)
	return nil
}

func (l *mvnLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	inv := 1 / float64(l.dim)
	for g := range l.num {
		xs, ys := x[g*l.dim:(g+1)*l.dim], y[g*l.dim:(g+1)*l.dim]
		var s float64
		for _, v := range xs {
			s += float64(v)
		}
		mean := float32(s * inv)
		for i, v := range xs {
			ys[i] = v - mean
		}
		if !l.cfg.NormalizeVariance {
			continue
		}
		var q float64
		for _, v := range ys {
			q += float64(v) * float64(v)
		}
		sd := float32(math.Sqrt(q*inv)) + l.cfg.Eps
		l.std[g] = sd
		for i := range ys {
			ys[i] /= sd
		}
	}
}

func (l *mvnLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	y, dy, dx := top[0].Data, top[0].Diff, bottom[0].Diff
	inv := 1 / float64(l.dim)
	for g := range l.num {
		ys, dys, dxs := y[g*l.dim:(g+1)*l.dim], dy[g*l.dim:(g+1)*l.dim], dx[g*l.dim:(g+1)*l.dim]
		var sdy, sydy float64
		for i, d := range dys {
			sdy += float64(d)
			sydy += float64(ys[i]) * float64(d)
		}
		if !l.cfg.NormalizeVariance {
			m := float32(sdy * inv)
			for i, d := range dys {
				dxs[i] = d - m
			}
			continue
		}
		// Caffe's gradient: (dy − (Σdy + y·Σ(y·dy))/dim) / (std + eps).
		sd := float64(l.std[g])
		for i, d := range dys {
			dxs[i] = float32((float64(d) - (sdy+float64(ys[i])*sydy)*inv) / sd)
		}
	}
}
