package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// EmbedConfig is Caffe's EmbedParameter.
type EmbedConfig struct {
	NumOutput    int
	InputDim     int  // the vocabulary: indices are in [0, InputDim)
	BiasTerm     bool // default true
	WeightFiller Filler
	BiasFiller   Filler
}

// Type returns "Embed".
func (*EmbedConfig) Type() string { return "Embed" }

// Build returns an Embed layer: each bottom value, an integer index, is
// replaced by row index of the InputDim×NumOutput weight (plus the bias),
// so the top has the bottom's shape with NumOutput appended. No gradient
// flows to the indices. An index that is not an integer in [0, InputDim)
// yields a row of NaN, which the trainer reports as a diverged value
// naming the layer.
func (c *EmbedConfig) Build(Context) (Layer, error) {
	if c.NumOutput < 1 || c.InputDim < 1 {
		return nil, fmt.Errorf("layers: Embed: num_output and input_dim must be positive, got %d and %d", c.NumOutput, c.InputDim)
	}
	for _, f := range []Filler{c.WeightFiller, c.BiasFiller} {
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("layers: Embed: %w", err)
		}
	}
	return &embedLayer{cfg: *c}, nil
}

type embedLayer struct {
	paramGrads
	cfg          EmbedConfig
	weight, bias *tensor.Blob
}

func (*embedLayer) Type() string { return "Embed" }

func (l *embedLayer) Params() []Param {
	ps := []Param{{Blob: l.weight, Filler: l.cfg.WeightFiller}}
	if l.bias != nil {
		ps = append(ps, Param{Blob: l.bias, Filler: l.cfg.BiasFiller})
	}
	return ps
}

func (l *embedLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Embed", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	l.weight = tensor.NewBlob("weight", l.cfg.InputDim, l.cfg.NumOutput)
	if l.cfg.BiasTerm {
		l.bias = tensor.NewBlob("bias", l.cfg.NumOutput)
	}
	return l.Reshape(bottom, top)
}

func (l *embedLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] == top[0] {
		return fmt.Errorf("layers: Embed cannot run in place")
	}
	top[0].Reshape(append(bottom[0].Shape.Clone(), l.cfg.NumOutput)...)
	return nil
}

// index returns v as a row index, or -1 when it is not one.
func (l *embedLayer) index(v float32) int {
	if v < 0 || v >= float32(l.cfg.InputDim) || v != float32(math.Trunc(float64(v))) {
		return -1
	}
	return int(v)
}

func (l *embedLayer) Forward(bottom, top []*tensor.Blob) {
	k := l.cfg.NumOutput
	w, y := l.weight.Data, top[0].Data
	for n, v := range bottom[0].Data[:bottom[0].Count()] {
		row := y[n*k : (n+1)*k]
		i := l.index(v)
		if i < 0 {
			for j := range row {
				row[j] = float32(math.NaN())
			}
			continue
		}
		copy(row, w[i*k:(i+1)*k])
		if l.bias != nil {
			tensor.AddTo(row, l.bias.Data)
		}
	}
}

func (l *embedLayer) Backward(top []*tensor.Blob, _ []bool, bottom []*tensor.Blob) {
	k := l.cfg.NumOutput
	dw, dy := l.weight.Diff, top[0].Diff
	for n, v := range bottom[0].Data[:bottom[0].Count()] {
		i := l.index(v)
		if i < 0 {
			continue
		}
		g := dy[n*k : (n+1)*k]
		if l.want(0) {
			tensor.AddTo(dw[i*k:(i+1)*k], g)
		}
		if l.bias != nil && l.want(1) {
			tensor.AddTo(l.bias.Diff, g)
		}
	}
}

// AllowBackward implements GradientBlocker: the indices take no gradient.
func (*embedLayer) AllowBackward(int) bool { return false }
