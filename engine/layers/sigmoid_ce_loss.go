package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// SigmoidCrossEntropyLossConfig is Caffe's SigmoidCrossEntropyLoss layer's
// LossParameter.
type SigmoidCrossEntropyLossConfig struct {
	IgnoreLabel *int // targets equal to it are skipped
	// Normalization divides the summed loss; Caffe's default for this
	// layer is BATCH_SIZE (the caffedef package applies it).
	Normalization LossNormalization
}

// Type returns "SigmoidCrossEntropyLoss".
func (*SigmoidCrossEntropyLossConfig) Type() string { return "SigmoidCrossEntropyLoss" }

// Build returns a SigmoidCrossEntropyLoss layer: the cross-entropy between
// sigmoid(bottom[0]) and targets bottom[1] in [0, 1] of the same count,
// −Σ [t·log σ(x) + (1−t)·log(1−σ(x))], computed without overflow, divided
// as Normalization says (outer count N = the first axis). The gradient is
// (σ(x) − t) times the loss weight over the normalizer; none flows to the
// targets. An optional second top... is not supported: one top, the loss.
func (c *SigmoidCrossEntropyLossConfig) Build(Context) (Layer, error) {
	if c.Normalization < NormValid || c.Normalization > NormNone {
		return nil, fmt.Errorf("layers: SigmoidCrossEntropyLoss: unknown normalization %d", c.Normalization)
	}
	return &sigmoidCELossLayer{cfg: *c}, nil
}

type sigmoidCELossLayer struct {
	cfg          SigmoidCrossEntropyLossConfig
	outer, inner int
	valid        int
}

func (*sigmoidCELossLayer) Type() string    { return "SigmoidCrossEntropyLoss" }
func (*sigmoidCELossLayer) Params() []Param { return nil }

// IsLoss marks SigmoidCrossEntropyLoss as a loss layer.
func (*sigmoidCELossLayer) IsLoss() {}

func (l *sigmoidCELossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("SigmoidCrossEntropyLoss", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *sigmoidCELossLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0].Count() != bottom[1].Count() || len(bottom[0].Shape) == 0 {
		return fmt.Errorf("layers: SigmoidCrossEntropyLoss: bottoms %v and %v must have the same count", []int(bottom[0].Shape), []int(bottom[1].Shape))
	}
	l.outer, l.inner = bottom[0].Shape[0], bottom[0].Shape.CountFrom(1)
	top[0].Reshape()
	return nil
}

func (l *sigmoidCELossLayer) ignored(t float32) bool {
	return l.cfg.IgnoreLabel != nil && t == float32(*l.cfg.IgnoreLabel)
}

func (l *sigmoidCELossLayer) Forward(bottom, top []*tensor.Blob) {
	x, t := bottom[0].Data, bottom[1].Data
	var loss float64
	valid := 0
	for i := range l.outer * l.inner {
		if l.ignored(t[i]) {
			continue
		}
		v := float64(x[i])
		pos := 0.0
		if v >= 0 {
			pos = 1
		}
		loss -= v*(float64(t[i])-pos) - math.Log1p(math.Exp(v-2*v*pos))
		valid++
	}
	l.valid = valid
	top[0].Data[0] = float32(loss / lossNormalizer(l.cfg.Normalization, l.outer, l.inner, valid))
}

func (l *sigmoidCELossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	x, t, dx := bottom[0].Data, bottom[1].Data, bottom[0].Diff
	scale := float64(top[0].Diff[0]) / lossNormalizer(l.cfg.Normalization, l.outer, l.inner, l.valid)
	for i := range l.outer * l.inner {
		if l.ignored(t[i]) {
			dx[i] = 0
			continue
		}
		s := 0.5*math.Tanh(0.5*float64(x[i])) + 0.5
		dx[i] = float32((s - float64(t[i])) * scale)
	}
}

// lossNormalizer is Caffe's LossLayer normalizer: what a summed loss over
// outer×inner positions, valid of them counted, is divided by; at least 1.
func lossNormalizer(norm LossNormalization, outer, inner, valid int) float64 {
	var n int
	switch norm {
	case NormFull:
		n = outer * inner
	case NormValid:
		n = valid
	case NormBatchSize:
		n = outer
	case NormNone:
		n = 1
	}
	return float64(max(n, 1))
}
