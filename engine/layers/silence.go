package layers

import "dsgd/engine/tensor"

// SilenceConfig configures Caffe's Silence layer (no fields).
type SilenceConfig struct{}

// Type returns "Silence".
func (*SilenceConfig) Type() string { return "Silence" }

// Build returns a Silence layer: it takes any number of bottoms, has no
// top, and gives its bottoms a zero gradient. It marks blobs as used so
// that they are not net outputs.
func (*SilenceConfig) Build(Context) (Layer, error) { return silenceLayer{}, nil }

type silenceLayer struct{}

func (silenceLayer) Type() string    { return "Silence" }
func (silenceLayer) Params() []Param { return nil }
func (silenceLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("Silence", bottom, top, 1, maxBlobs, 0, 0)
}
func (silenceLayer) Reshape(_, _ []*tensor.Blob) error { return nil }
func (silenceLayer) Forward(_, _ []*tensor.Blob)       {}
func (silenceLayer) Backward(_ []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	for i, b := range bottom {
		if propagateDown[i] {
			clear(b.Diff[:b.Count()])
		}
	}
}
