package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// ShuffleChannelConfig is the ShuffleChannelParameter of the ShuffleNet
// ports' Caffe fork (farmingyard/ShuffleNet): shuffle_channel_param
// { group } (default 1).
type ShuffleChannelConfig struct {
	Group int
}

// Type returns "ShuffleChannel".
func (*ShuffleChannelConfig) Type() string { return "ShuffleChannel" }

// Build returns a ShuffleChannel layer: the C channels (axis 1), read as a
// Group×(C/Group) matrix, are written transposed, so input channel
// g·(C/Group) + j becomes output channel j·Group + g (ShuffleNet's channel
// shuffle). Backward applies the inverse permutation. It does not run in
// place.
func (c *ShuffleChannelConfig) Build(Context) (Layer, error) {
	if c.Group <= 0 {
		return nil, fmt.Errorf("layers: ShuffleChannel: group must be positive, got %d", c.Group)
	}
	return &shuffleLayer{group: c.Group}, nil
}

type shuffleLayer struct {
	group          int
	n, rows, inner int // rows is C/group
}

func (*shuffleLayer) Type() string    { return "ShuffleChannel" }
func (*shuffleLayer) Params() []Param { return nil }

func (l *shuffleLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("ShuffleChannel", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	if top[0] == bottom[0] {
		return fmt.Errorf("layers: ShuffleChannel cannot run in place: give it a top of its own")
	}
	return nil
}

func (l *shuffleLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if len(s) < 2 || s[1]%l.group != 0 {
		return fmt.Errorf("layers: ShuffleChannel: bottom %v needs a channel axis that group %d divides", s, l.group)
	}
	l.n, l.rows, l.inner = s[0], s[1]/l.group, s.CountFrom(2)
	top[0].ReshapeLike(bottom[0])
	return nil
}

// shuffle copies src's channels, a rows×cols matrix of planes per item,
// into dst transposed.
func (l *shuffleLayer) shuffle(dst, src []float32, rows, cols int) {
	plane := rows * cols * l.inner
	for n := range l.n {
		s, d := src[n*plane:(n+1)*plane], dst[n*plane:(n+1)*plane]
		for i := range rows {
			for j := range cols {
				copy(d[(j*rows+i)*l.inner:(j*rows+i+1)*l.inner], s[(i*cols+j)*l.inner:(i*cols+j+1)*l.inner])
			}
		}
	}
}

func (l *shuffleLayer) Forward(bottom, top []*tensor.Blob) {
	l.shuffle(top[0].Data, bottom[0].Data, l.group, l.rows)
}

func (l *shuffleLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if propagateDown[0] {
		l.shuffle(bottom[0].Diff, top[0].Diff, l.rows, l.group)
	}
}
