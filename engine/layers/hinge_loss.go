package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// HingeNorm is Caffe's HingeLossParameter.Norm.
type HingeNorm int

const (
	// HingeL1 sums the hinges (Caffe's default).
	HingeL1 HingeNorm = iota + 1
	// HingeL2 sums their squares.
	HingeL2
)

// HingeLossConfig is Caffe's HingeLossParameter.
type HingeLossConfig struct {
	Norm HingeNorm // default L1
}

// Type returns "HingeLoss".
func (*HingeLossConfig) Type() string { return "HingeLoss" }

// Build returns a HingeLoss layer, the one-versus-all hinge loss of scores
// bottom[0] (N × K, K everything after the first axis) against labels
// bottom[1] (N values): Σ max(0, 1 − s·x) over every score, s = +1 for the
// label's class and −1 for the others, squared for L2, divided by N. It is
// a LossLayer; no gradient flows to the labels.
func (c *HingeLossConfig) Build(Context) (Layer, error) {
	if c.Norm != HingeL1 && c.Norm != HingeL2 {
		return nil, fmt.Errorf("layers: HingeLoss: unknown norm %d", c.Norm)
	}
	return &hingeLossLayer{cfg: *c}, nil
}

type hingeLossLayer struct {
	cfg      HingeLossConfig
	num, dim int
	margin   []float32
}

func (*hingeLossLayer) Type() string    { return "HingeLoss" }
func (*hingeLossLayer) Params() []Param { return nil }

// IsLoss marks HingeLoss as a loss layer.
func (*hingeLossLayer) IsLoss() {}

func (l *hingeLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("HingeLoss", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *hingeLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	if len(bottom[0].Shape) == 0 {
		return fmt.Errorf("layers: HingeLoss: bottom 0 has no axes")
	}
	l.num, l.dim = bottom[0].Shape[0], bottom[0].Shape.CountFrom(1)
	if err := checkLabels("HingeLoss", bottom, l.num); err != nil {
		return err
	}
	l.margin = fitBuf(l.margin, bottom[0].Count())
	top[0].Reshape()
	return nil
}

func (l *hingeLossLayer) Forward(bottom, top []*tensor.Blob) {
	x, labels := bottom[0].Data, bottom[1].Data
	var loss float64
	for i := range l.num {
		k, _ := labelIndex(labels[i], l.dim, false, 0)
		for j := range l.dim {
			s := float32(-1)
			if j == k {
				s = 1
			}
			h := max(0, 1-s*x[i*l.dim+j])
			l.margin[i*l.dim+j] = s * h // the sign kept for Backward
			if l.cfg.Norm == HingeL2 {
				loss += float64(h) * float64(h)
			} else {
				loss += float64(h)
			}
		}
	}
	top[0].Data[0] = float32(loss / float64(l.num))
}

func (l *hingeLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx := bottom[0].Diff
	g := top[0].Diff[0] / float32(l.num)
	for i, sh := range l.margin {
		switch {
		case sh == 0:
			dx[i] = 0
		case l.cfg.Norm == HingeL2:
			dx[i] = -2 * sh * g // d/dx h² = 2h·(−s), and sh = s·h
		default:
			dx[i] = -float32(math.Copysign(1, float64(sh))) * g
		}
	}
}
