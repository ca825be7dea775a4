package layers

import (
	"math"

	"dsgd/engine/tensor"
)

// Type returns "TanH".
func (*TanHConfig) Type() string { return "TanH" }

// Build returns a TanH layer: top = tanh(x). It takes one bottom and one top
// and may run in place.
func (*TanHConfig) Build(Context) (Layer, error) { return &tanhLayer{}, nil }

// tanhLayer's gradient depends only on its output, so it runs in place with
// no saved state.
type tanhLayer struct{}

func (*tanhLayer) Type() string    { return "TanH" }
func (*tanhLayer) Params() []Param { return nil }

func (*tanhLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("TanH", bottom, top, 1, 1, 1, 1)
}

func (*tanhLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	}
	return nil
}

func (*tanhLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32(math.Tanh(float64(v)))
	}
}

func (*tanhLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	y, dy, dx := top[0].Data, top[0].Diff, bottom[0].Diff
	dy, dx = dy[:len(y)], dx[:len(y)]
	for i, v := range y {
		dx[i] = dy[i] * (1 - v*v)
	}
}
