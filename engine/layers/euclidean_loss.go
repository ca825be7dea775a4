package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// EuclideanLossConfig configures Caffe's EuclideanLoss layer (no fields).
type EuclideanLossConfig struct{}

// Type returns "EuclideanLoss".
func (*EuclideanLossConfig) Type() string { return "EuclideanLoss" }

// Build returns an EuclideanLoss layer: Σ (a − b)² / (2N) over two bottoms
// of the same count, N the first axis. Both bottoms receive a gradient
// (±(a − b)/N times the loss weight). It is a LossLayer.
func (*EuclideanLossConfig) Build(Context) (Layer, error) { return &euclideanLossLayer{}, nil }

type euclideanLossLayer struct{ diff []float32 }

func (*euclideanLossLayer) Type() string    { return "EuclideanLoss" }
func (*euclideanLossLayer) Params() []Param { return nil }

// IsLoss marks EuclideanLoss as a loss layer.
func (*euclideanLossLayer) IsLoss() {}

func (l *euclideanLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("EuclideanLoss", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *euclideanLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0].Count() != bottom[1].Count() || len(bottom[0].Shape) == 0 {
		return fmt.Errorf("layers: EuclideanLoss: bottoms %v and %v must have the same count", []int(bottom[0].Shape), []int(bottom[1].Shape))
	}
	l.diff = fitBuf(l.diff, bottom[0].Count())
	top[0].Reshape()
	return nil
}

func (l *euclideanLossLayer) Forward(bottom, top []*tensor.Blob) {
	a, b := bottom[0].Data, bottom[1].Data
	var s float64
	for i := range l.diff {
		d := a[i] - b[i]
		l.diff[i] = d
		s += float64(d) * float64(d)
	}
	top[0].Data[0] = float32(s / float64(bottom[0].Shape[0]) / 2)
}

func (l *euclideanLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	g := top[0].Diff[0] / float32(bottom[0].Shape[0])
	for k, sign := range []float32{1, -1} {
		if !propagateDown[k] {
			continue
		}
		dx := bottom[k].Diff
		for i, d := range l.diff {
			dx[i] = sign * g * d
		}
	}
}
