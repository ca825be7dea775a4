package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// TileConfig is Caffe's TileParameter.
type TileConfig struct {
	Axis  int // default 1; negative counts from the end
	Tiles int // required, at least 1
}

// Type returns "Tile".
func (*TileConfig) Type() string { return "Tile" }

// Build returns a Tile layer: the bottom repeated Tiles times along Axis
// (each block of the axes from Axis on is copied Tiles times). The
// gradient sums the copies.
func (c *TileConfig) Build(Context) (Layer, error) {
	if c.Tiles < 1 {
		return nil, fmt.Errorf("layers: Tile: tiles must be at least 1, got %d", c.Tiles)
	}
	return &tileLayer{cfg: *c}, nil
}

type tileLayer struct {
	cfg          TileConfig
	outer, inner int
}

func (*tileLayer) Type() string    { return "Tile" }
func (*tileLayer) Params() []Param { return nil }

func (l *tileLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Tile", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *tileLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	ax, err := normAxis("Tile", l.cfg.Axis, len(s))
	if err != nil {
		return err
	}
	l.outer, l.inner = s.CountRange(0, ax), s.CountFrom(ax)
	shape := s.Clone()
	shape[ax] *= l.cfg.Tiles
	top[0].Reshape(shape...)
	return nil
}

func (l *tileLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	n, t := l.inner, l.cfg.Tiles
	for o := range l.outer {
		for k := range t {
			copy(y[(o*t+k)*n:(o*t+k+1)*n], x[o*n:(o+1)*n])
		}
	}
}

func (l *tileLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx, dy := bottom[0].Diff, top[0].Diff
	n, t := l.inner, l.cfg.Tiles
	for o := range l.outer {
		d := dx[o*n : (o+1)*n]
		copy(d, dy[o*t*n:(o*t+1)*n])
		for k := 1; k < t; k++ {
			tensor.AddTo(d, dy[(o*t+k)*n:(o*t+k+1)*n])
		}
	}
}
