package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// AxpyConfig is SENet's Axpy layer (hujie-frank/SENet); it has no
// parameters.
type AxpyConfig struct{}

// Type returns "Axpy".
func (*AxpyConfig) Type() string { return "Axpy" }

// Build returns an Axpy layer of three bottoms, a scale a of shape N×C (or
// N×C×1×1), x of shape N×C×… and y of x's shape: top = a·x + y, each
// channel of x scaled by its a, as SENet's squeeze-and-excitation block
// joins its shortcut. Backward gives a the sum over each channel of x·dtop,
// x a·dtop and y dtop. The top may be y itself (in place); not a or x.
func (*AxpyConfig) Build(Context) (Layer, error) { return &axpyLayer{}, nil }

type axpyLayer struct {
	n, c, inner int
}

func (*axpyLayer) Type() string    { return "Axpy" }
func (*axpyLayer) Params() []Param { return nil }

func (l *axpyLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Axpy", bottom, top, 3, 3, 1, 1); err != nil {
		return err
	}
	if top[0] == bottom[0] || top[0] == bottom[1] {
		return fmt.Errorf("layers: Axpy: the top may replace y (bottom 2) in place, not the scale or x")
	}
	return nil
}

func (l *axpyLayer) Reshape(bottom, top []*tensor.Blob) error {
	a, x, y := bottom[0].Shape, bottom[1].Shape, bottom[2].Shape
	if len(x) < 2 {
		return fmt.Errorf("layers: Axpy: x (bottom 1) %v needs at least 2 axes (N×C×…)", x)
	}
	if len(a) < 2 || a[0] != x[0] || a[1] != x[1] || a.CountFrom(2) != 1 {
		return fmt.Errorf("layers: Axpy: the scale (bottom 0) %v must be N×C or N×C×1×1 for x %v", a, x)
	}
	if !y.Equal(x) {
		return fmt.Errorf("layers: Axpy: y (bottom 2) %v must have x's shape %v", y, x)
	}
	l.n, l.c, l.inner = x[0], x[1], x.CountFrom(2)
	if top[0] != bottom[2] {
		top[0].ReshapeLike(bottom[1])
	}
	return nil
}

func (l *axpyLayer) Forward(bottom, top []*tensor.Blob) {
	a, x, y, out := bottom[0].Data, bottom[1].Data, bottom[2].Data, top[0].Data
	for i, s := range a[:l.n*l.c] {
		xs, ys, os := x[i*l.inner:(i+1)*l.inner], y[i*l.inner:(i+1)*l.inner], out[i*l.inner:(i+1)*l.inner]
		for j, v := range xs {
			os[j] = s*v + ys[j]
		}
	}
}

func (l *axpyLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dtop := top[0].Diff
	a, x := bottom[0].Data, bottom[1].Data
	for i := range l.n * l.c {
		d := dtop[i*l.inner : (i+1)*l.inner]
		if propagateDown[0] {
			var s float32
			for j, v := range x[i*l.inner : (i+1)*l.inner] {
				s += v * d[j]
			}
			bottom[0].Diff[i] = s
		}
		if propagateDown[1] {
			dx := bottom[1].Diff[i*l.inner : (i+1)*l.inner]
			for j, v := range d {
				dx[j] = a[i] * v
			}
		}
	}
	if propagateDown[2] && top[0] != bottom[2] {
		copy(bottom[2].Diff, dtop[:bottom[2].Count()])
	}
}
