package layers

import (
	"fmt"
	"math/rand/v2"

	"dsgd/engine/tensor"
)

// Type returns "Dropout".
func (*DropoutConfig) Type() string { return "Dropout" }

// Build returns a Dropout layer. In Train it keeps each element with
// probability 1-Ratio, drawn from ctx.Rand, and scales kept elements by
// 1/(1-Ratio); in Test it is the identity. It takes one bottom and one top
// and may run in place. Ratio must lie in [0, 1), and ctx.Rand must be set
// in Train.
func (c *DropoutConfig) Build(ctx Context) (Layer, error) {
	if !(c.Ratio >= 0 && c.Ratio < 1) {
		return nil, fmt.Errorf("layers: Dropout: dropout_ratio %v outside [0, 1)", c.Ratio)
	}
	if ctx.Phase == Train && ctx.Rand == nil {
		return nil, fmt.Errorf("layers: Dropout: no random source in the context")
	}
	return &dropoutLayer{
		ratio: c.Ratio,
		scale: 1 / (1 - c.Ratio),
		train: ctx.Phase == Train,
		rand:  ctx.Rand,
	}, nil
}

// dropoutLayer keeps its mask (0 or scale per element) for Backward, which
// therefore needs neither the input nor the output.
type dropoutLayer struct {
	ratio, scale float32
	train        bool
	rand         *rand.Rand
	mask         []float32
}

func (*dropoutLayer) Type() string    { return "Dropout" }
func (*dropoutLayer) Params() []Param { return nil }

func (*dropoutLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("Dropout", bottom, top, 1, 1, 1, 1)
}

func (l *dropoutLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	}
	if l.train {
		l.mask = fitBuf(l.mask, bottom[0].Count())
	}
	return nil
}

func (l *dropoutLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	if !l.train {
		copy(y, x)
		return
	}
	y, m := y[:len(x)], l.mask[:len(x)]
	for i, v := range x {
		if l.rand.Float32() >= l.ratio {
			m[i] = l.scale
		} else {
			m[i] = 0
		}
		y[i] = v * m[i]
	}
}

func (l *dropoutLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dy, dx := top[0].Diff, bottom[0].Diff
	if !l.train {
		copy(dx, dy)
		return
	}
	m := l.mask
	dy, dx = dy[:len(m)], dx[:len(m)]
	for i, s := range m {
		dx[i] = dy[i] * s
	}
}
