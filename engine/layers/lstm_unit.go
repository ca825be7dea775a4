package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// LSTMUnitConfig configures Caffe's LSTMUnit layer (no fields).
type LSTMUnitConfig struct{}

// Type returns "LSTMUnit".
func (*LSTMUnitConfig) Type() string { return "LSTMUnit" }

// Build returns an LSTMUnit layer: one LSTM timestep without weights.
// Bottoms: c_prev (1×N×H), the gate pre-activations X (1×N×4H, in Caffe's
// order i, f, o, g) and cont (1×N). Tops: c and h (1×N×H each), with
//
//	c = f'·c_prev + σ(i)·tanh(g),  h = σ(o)·tanh(c)
//
// where f' is 0 where cont is 0 and cont·σ(f) elsewhere. No gradient
// flows to cont (its diff is zeroed when asked for).
func (*LSTMUnitConfig) Build(Context) (Layer, error) { return &lstmUnitLayer{}, nil }

type lstmUnitLayer struct {
	h       int
	act     []float32 // the gate activations of the last Forward
	scratch []float32 // the diff Backward computes but was not asked for
}

func (*lstmUnitLayer) Type() string    { return "LSTMUnit" }
func (*lstmUnitLayer) Params() []Param { return nil }

func (l *lstmUnitLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("LSTMUnit", bottom, top, 3, 3, 2, 2)
}

func (l *lstmUnitLayer) Reshape(bottom, top []*tensor.Blob) error {
	c, x, cont := bottom[0], bottom[1], bottom[2]
	if len(c.Shape) != 3 || c.Shape[0] != 1 {
		return fmt.Errorf("layers: LSTMUnit: the previous cell bottom %q has shape %v; it must be (1, streams, hidden)", c.Name, c.Shape)
	}
	n, h := c.Shape[1], c.Shape[2]
	if !x.Shape.Equal(tensor.Shape{1, n, 4 * h}) {
		return fmt.Errorf("layers: LSTMUnit: the gate bottom %q has shape %v; it must be (1, %d, %d): 4× the hidden size of %q", x.Name, x.Shape, n, 4*h, c.Name)
	}
	if !cont.Shape.Equal(tensor.Shape{1, n}) {
		return fmt.Errorf("layers: LSTMUnit: the sequence continuation bottom %q has shape %v; it must be (1, %d)", cont.Name, cont.Shape, n)
	}
	l.h = h
	top[0].Reshape(1, n, h)
	top[1].Reshape(1, n, h)
	l.act = fitBuf(l.act, 4*n*h)
	l.scratch = fitBuf(l.scratch, 4*n*h)
	return nil
}

func (l *lstmUnitLayer) Forward(bottom, top []*tensor.Blob) {
	lstmUnitForward(l.h, bottom[0].Data, bottom[1].Data, bottom[2].Data, l.act, top[0].Data, top[1].Data)
}

func (l *lstmUnitLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if propagateDown[2] {
		clear(bottom[2].Diff)
	}
	if !propagateDown[0] && !propagateDown[1] {
		return
	}
	dcPrev, dx := bottom[0].Diff, bottom[1].Diff
	if !propagateDown[0] {
		dcPrev = l.scratch
	}
	if !propagateDown[1] {
		dx = l.scratch
	}
	lstmUnitBackward(l.h, bottom[0].Data, l.act, top[0].Data, top[0].Diff, top[1].Diff, dcPrev, dx)
}
