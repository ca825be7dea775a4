package layers

import (
	"math"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/dnnl"
)

// Type returns "Softmax".
func (*SoftmaxConfig) Type() string { return "Softmax" }

// Build returns a Softmax layer, which normalises its one bottom with the
// softmax function along Axis (negative counts from the end) into its one
// top. It subtracts the maximum first, so large inputs do not overflow.
func (c *SoftmaxConfig) Build(Context) (Layer, error) {
	return &softmaxLayer{axis: c.Axis}, nil
}

type softmaxLayer struct {
	axis int
	sm   softmax
}

func (*softmaxLayer) Type() string    { return "Softmax" }
func (*softmaxLayer) Params() []Param { return nil }

func (l *softmaxLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Softmax", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *softmaxLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := l.sm.reshape("Softmax", l.axis, bottom[0].Shape); err != nil {
		return err
	}
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	}
	return nil
}

func (l *softmaxLayer) Forward(bottom, top []*tensor.Blob) {
	l.sm.forward(top[0].Data, bottom[0].Data)
}

func (l *softmaxLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	l.sm.backward(bottom[0].Diff, top[0].Diff, top[0].Data)
}

// softmax is the softmax computation shared by Softmax and SoftmaxWithLoss
// over a blob viewed as outer × channels × inner, the softmax taken along
// channels. Its loops run along inner, with a per-position scratch row, so
// they stream through memory whatever the axis.
type softmax struct {
	ax                     int
	outer, channels, inner int
	scratch                []float32     // inner
	dn                     *dnnl.Softmax // nil: the Go loops (softmax_dnnl.go)
	dnShape                [3]int        // the view dn was built for
}

// reshape sets the view for a blob of shape s, the softmax along axis.
func (s *softmax) reshape(layer string, axis int, shape tensor.Shape) error {
	ax, err := normAxis(layer, axis, len(shape))
	if err != nil {
		return err
	}
	s.ax = ax
	s.outer, s.channels, s.inner = shape.CountRange(0, ax), shape[ax], shape.CountFrom(ax+1)
	s.scratch = fitBuf(s.scratch, s.inner)
	s.dnnlSetup()
	return nil
}

// forward writes softmax(x) to y; y may be x.
func (s *softmax) forward(y, x []float32) {
	if s.dn != nil {
		s.dn.Forward(x, y)
		return
	}
	n, inner := s.channels*s.inner, s.inner
	m := s.scratch
	for o := range s.outer {
		xs, ys := x[o*n:(o+1)*n], y[o*n:(o+1)*n]
		copy(m, xs[:inner])
		for c := 1; c < s.channels; c++ {
			for i, v := range xs[c*inner : (c+1)*inner] {
				m[i] = max(m[i], v)
			}
		}
		for c := range s.channels {
			row := c * inner
			for i, v := range xs[row : row+inner] {
				ys[row+i] = float32(math.Exp(float64(v - m[i])))
			}
		}
		clear(m)
		for c := range s.channels {
			for i, v := range ys[c*inner : (c+1)*inner] {
				m[i] += v
			}
		}
		for i := range m {
			m[i] = 1 / m[i]
		}
		for c := range s.channels {
			for i := range ys[c*inner : (c+1)*inner] {
				ys[c*inner+i] *= m[i]
			}
		}
	}
}

// backward writes dx = y·(dy - Σ_c dy·y) given the output y and its
// gradient dy; dx may be dy.
func (s *softmax) backward(dx, dy, y []float32) {
	if s.dn != nil {
		s.dn.Backward(y, dy, dx)
		return
	}
	n, inner := s.channels*s.inner, s.inner
	dot := s.scratch
	for o := range s.outer {
		dys, dxs, ys := dy[o*n:(o+1)*n], dx[o*n:(o+1)*n], y[o*n:(o+1)*n]
		clear(dot)
		for c := range s.channels {
			row := c * inner
			for i, v := range dys[row : row+inner] {
				dot[i] += v * ys[row+i]
			}
		}
		for c := range s.channels {
			row := c * inner
			for i, v := range dys[row : row+inner] {
				dxs[row+i] = ys[row+i] * (v - dot[i])
			}
		}
	}
}
