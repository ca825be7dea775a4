package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// InfogainLossConfig is Caffe's InfogainLossParameter with its
// LossParameter.
type InfogainLossConfig struct {
	Axis          int // default 1: the class axis
	IgnoreLabel   *int
	Normalization LossNormalization // default VALID
	// H is the K×K infogain matrix when it is not a third bottom (Caffe
	// reads it from infogain_loss_param.source); row-major.
	H []float32
}

// Type returns "InfogainLoss".
func (*InfogainLossConfig) Type() string { return "InfogainLoss" }

// Build returns an InfogainLoss layer as in Caffe 1.0: the softmax p of
// bottom[0] along Axis, then −Σ_positions Σ_k H[label, k]·log(max(p_k,
// 1e-20)) (Caffe's kLOG_THRESHOLD), divided as Normalization says, over
// the labels bottom[1] (one per position outside Axis). H, K×K, is
// bottom[2] or the config's H. With H the identity it equals
// SoftmaxWithLoss but for the threshold. The gradient reaches bottom[0]
// only. It is a LossLayer. A second top, as in Caffe, receives p (shaped
// as bottom[0]); no gradient flows back from it.
func (c *InfogainLossConfig) Build(Context) (Layer, error) {
	if c.Normalization < NormValid || c.Normalization > NormNone {
		return nil, fmt.Errorf("layers: InfogainLoss: unknown normalization %d", c.Normalization)
	}
	return &infogainLossLayer{cfg: *c}, nil
}

type infogainLossLayer struct {
	cfg   InfogainLossConfig
	sm    softmax
	prob  []float32
	rowH  []float64 // Σ_k H[l, k] per label l
	valid int
}

func (*infogainLossLayer) Type() string    { return "InfogainLoss" }
func (*infogainLossLayer) Params() []Param { return nil }

// IsLoss marks InfogainLoss as a loss layer.
func (*infogainLossLayer) IsLoss() {}

func (l *infogainLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("InfogainLoss", bottom, top, 2, 3, 1, 2); err != nil {
		return err
	}
	if len(bottom) == 2 && l.cfg.H == nil {
		return fmt.Errorf("layers: InfogainLoss: needs the infogain matrix H, as a third bottom or from infogain_loss_param.source")
	}
	return l.Reshape(bottom, top)
}

func (l *infogainLossLayer) matrix(bottom []*tensor.Blob) []float32 {
	if len(bottom) == 3 {
		return bottom[2].Data
	}
	return l.cfg.H
}

func (l *infogainLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := l.sm.reshape("InfogainLoss", l.cfg.Axis, bottom[0].Shape); err != nil {
		return err
	}
	if err := checkLabels("InfogainLoss", bottom, l.sm.outer*l.sm.inner); err != nil {
		return err
	}
	k := l.sm.channels
	n := len(l.cfg.H)
	if len(bottom) == 3 {
		n = bottom[2].Count()
	}
	if n != k*k {
		return fmt.Errorf("layers: InfogainLoss: H has %d values; %d classes need %d×%d", n, k, k, k)
	}
	l.prob = fitBuf(l.prob, bottom[0].Count())
	l.rowH = make([]float64, k)
	top[0].Reshape()
	if len(top) == 2 {
		top[1].ReshapeLike(bottom[0])
	}
	return nil
}

func (l *infogainLossLayer) Forward(bottom, top []*tensor.Blob) {
	l.sm.forward(l.prob, bottom[0].Data)
	h, labels := l.matrix(bottom), bottom[1].Data
	c, inner := l.sm.channels, l.sm.inner
	var loss float64
	valid := 0
	for o := range l.sm.outer {
		for i := range inner {
			lab, ok := labelIndex(labels[o*inner+i], c, l.cfg.IgnoreLabel != nil, deref(l.cfg.IgnoreLabel))
			if !ok {
				continue
			}
			for k := range c {
				p := max(l.prob[(o*c+k)*inner+i], logThreshold)
				loss -= float64(h[lab*c+k]) * math.Log(float64(p))
			}
			valid++
		}
	}
	l.valid = valid
	top[0].Data[0] = float32(loss / lossNormalizer(l.cfg.Normalization, l.sm.outer, inner, valid))
	if len(top) == 2 {
		copy(top[1].Data, l.prob)
	}
}

func (l *infogainLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	h, labels, dx := l.matrix(bottom), bottom[1].Data, bottom[0].Diff
	c, inner := l.sm.channels, l.sm.inner
	for r := range c {
		var s float64
		for k := range c {
			s += float64(h[r*c+k])
		}
		l.rowH[r] = s
	}
	scale := float64(top[0].Diff[0]) / lossNormalizer(l.cfg.Normalization, l.sm.outer, inner, l.valid)
	for o := range l.sm.outer {
		for i := range inner {
			lab, ok := labelIndex(labels[o*inner+i], c, l.cfg.IgnoreLabel != nil, deref(l.cfg.IgnoreLabel))
			for k := range c {
				j := (o*c+k)*inner + i
				if !ok {
					dx[j] = 0
					continue
				}
				dx[j] = float32(scale * (float64(l.prob[j])*l.rowH[lab] - float64(h[lab*c+k])))
			}
		}
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
