package layers

import (
	"dsgd/engine/tensor"
)

// SplitConfig configures Caffe's Split layer (no fields).
type SplitConfig struct{}

// Type returns "Split".
func (*SplitConfig) Type() string { return "Split" }

// Build returns a Split layer: every top is a copy of the bottom, and the
// bottom's gradient is the sum of the tops'. (dsgd's model already splits
// a blob read by several layers; this is the layer for files that spell
// it out.)
func (*SplitConfig) Build(Context) (Layer, error) { return &splitLayer{}, nil }

type splitLayer struct{}

func (*splitLayer) Type() string    { return "Split" }
func (*splitLayer) Params() []Param { return nil }

func (*splitLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("Split", bottom, top, 1, 1, 1, maxBlobs)
}

func (*splitLayer) Reshape(bottom, top []*tensor.Blob) error {
	for _, t := range top {
		if t != bottom[0] {
			t.ReshapeLike(bottom[0])
		}
	}
	return nil
}

func (*splitLayer) Forward(bottom, top []*tensor.Blob) {
	for _, t := range top {
		if t != bottom[0] {
			copy(t.Data, bottom[0].Data)
		}
	}
}

func (*splitLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx := bottom[0].Diff[:bottom[0].Count()]
	if top[0] != bottom[0] {
		copy(dx, top[0].Diff)
	}
	for _, t := range top[1:] {
		tensor.AddTo(dx, t.Diff[:len(dx)])
	}
}
