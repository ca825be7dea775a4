package layers

import (
	"math"

	"dsgd/engine/tensor"
)

// Type returns "Sigmoid".
func (*SigmoidConfig) Type() string { return "Sigmoid" }

// Build returns a Sigmoid layer: top = 1/(1+exp(-x)). It takes one bottom
// and one top and may run in place.
func (*SigmoidConfig) Build(Context) (Layer, error) { return &sigmoidLayer{}, nil }

// sigmoidLayer's gradient depends only on its output, so it runs in place
// with no saved state.
type sigmoidLayer struct{}

func (*sigmoidLayer) Type() string    { return "Sigmoid" }
func (*sigmoidLayer) Params() []Param { return nil }

func (*sigmoidLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("Sigmoid", bottom, top, 1, 1, 1, 1)
}

func (*sigmoidLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	}
	return nil
}

func (*sigmoidLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	y = y[:len(x)]
	for i, v := range x {
		// 0.5·tanh(x/2)+0.5 equals the logistic function and neither
		// overflows nor loses precision for large |x|.
		y[i] = float32(0.5*math.Tanh(0.5*float64(v)) + 0.5)
	}
}

func (*sigmoidLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	y, dy, dx := top[0].Data, top[0].Diff, bottom[0].Diff
	dy, dx = dy[:len(y)], dx[:len(y)]
	for i, v := range y {
		dx[i] = dy[i] * v * (1 - v)
	}
}
