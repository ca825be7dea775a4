package layers

import "dsgd/engine/tensor"

// unaryLayer is an elementwise layer of one bottom and one top: y = f(x),
// dx = g(x, y, dy). It runs in place: when bottom and top are the same blob
// and g needs x, Forward keeps a copy of x.
type unaryLayer struct {
	typ   string
	f     func(x float64) float64
	g     func(x, y, dy float64) float64
	needX bool // g reads x
	saved []float32
}

func newUnary(typ string, needX bool, f func(x float64) float64, g func(x, y, dy float64) float64) *unaryLayer {
	return &unaryLayer{typ: typ, f: f, g: g, needX: needX}
}

func (l *unaryLayer) Type() string  { return l.typ }
func (*unaryLayer) Params() []Param { return nil }

func (l *unaryLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount(l.typ, bottom, top, 1, 1, 1, 1)
}

func (l *unaryLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	} else if l.needX {
		l.saved = fitBuf(l.saved, bottom[0].Count())
	}
	return nil
}

func (l *unaryLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	y = y[:len(x)]
	if bottom[0] == top[0] && l.needX {
		copy(l.saved, x)
	}
	for i, v := range x {
		y[i] = float32(l.f(float64(v)))
	}
}

func (l *unaryLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	x, y, dy, dx := bottom[0].Data, top[0].Data, top[0].Diff, bottom[0].Diff
	if bottom[0] == top[0] && l.needX {
		x = l.saved
	}
	dy, dx = dy[:len(y)], dx[:len(y)]
	for i := range y {
		dx[i] = float32(l.g(float64(x[i]), float64(y[i]), float64(dy[i])))
	}
}
