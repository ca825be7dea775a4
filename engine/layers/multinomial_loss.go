package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// MultinomialLogisticLossConfig configures Caffe's MultinomialLogisticLoss
// layer (no fields).
type MultinomialLogisticLossConfig struct{}

// Type returns "MultinomialLogisticLoss".
func (*MultinomialLogisticLossConfig) Type() string { return "MultinomialLogisticLoss" }

// logThreshold is Caffe's kLOG_THRESHOLD: probabilities are clipped to it
// before the log.
const logThreshold = 1e-20

// Build returns a MultinomialLogisticLoss layer: −Σ log(max(p[label],
// 1e-20)) / N over probabilities bottom[0] (N × classes, the classes being
// everything after the first axis) and labels bottom[1] (N values). It is
// a LossLayer; no gradient flows to the labels.
func (*MultinomialLogisticLossConfig) Build(Context) (Layer, error) {
	return &multinomialLossLayer{}, nil
}

type multinomialLossLayer struct{ num, dim int }

func (*multinomialLossLayer) Type() string    { return "MultinomialLogisticLoss" }
func (*multinomialLossLayer) Params() []Param { return nil }

// IsLoss marks MultinomialLogisticLoss as a loss layer.
func (*multinomialLossLayer) IsLoss() {}

func (l *multinomialLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("MultinomialLogisticLoss", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *multinomialLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	if len(bottom[0].Shape) == 0 {
		return fmt.Errorf("layers: MultinomialLogisticLoss: bottom 0 has no axes")
	}
	l.num, l.dim = bottom[0].Shape[0], bottom[0].Shape.CountFrom(1)
	if err := checkLabels("MultinomialLogisticLoss", bottom, l.num); err != nil {
		return err
	}
	top[0].Reshape()
	return nil
}

func (l *multinomialLossLayer) Forward(bottom, top []*tensor.Blob) {
	p, labels := bottom[0].Data, bottom[1].Data
	var loss float64
	for i := range l.num {
		k, _ := labelIndex(labels[i], l.dim, false, 0)
		loss -= math.Log(math.Max(float64(p[i*l.dim+k]), logThreshold))
	}
	top[0].Data[0] = float32(loss / float64(l.num))
}

func (l *multinomialLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	p, labels, dx := bottom[0].Data, bottom[1].Data, bottom[0].Diff
	clear(dx[:l.num*l.dim])
	scale := -float64(top[0].Diff[0]) / float64(l.num)
	for i := range l.num {
		k, _ := labelIndex(labels[i], l.dim, false, 0)
		dx[i*l.dim+k] = float32(scale / math.Max(float64(p[i*l.dim+k]), logThreshold))
	}
}
