package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Type returns "Eltwise".
func (*EltwiseConfig) Type() string { return "Eltwise" }

// Build returns an Eltwise layer, which combines two or more bottoms of one
// shape elementwise into one top: their product, their sum weighted by
// Coeff (one per bottom; all 1 when empty), or their maximum. For MAX the
// gradient goes to the one bottom that holds the maximum; ties are broken as
// Caffe does: bottom 1 over bottom 0, otherwise the earlier bottom.
func (c *EltwiseConfig) Build(Context) (Layer, error) {
	switch c.Operation {
	case EltwiseProd, EltwiseMax:
		if len(c.Coeff) > 0 {
			return nil, fmt.Errorf("layers: Eltwise: coeff is only allowed with operation SUM")
		}
	case EltwiseSum:
	default:
		return nil, fmt.Errorf("layers: Eltwise: unknown operation %d", c.Operation)
	}
	return &eltwiseLayer{op: c.Operation, coeff: append([]float32(nil), c.Coeff...), unstable: c.UnstableProdGrad}, nil
}

type eltwiseLayer struct {
	op       EltwiseOp
	unstable bool      // PROD: the gradient is top/bottom_i (stable_prod_grad: false)
	coeff    []float32 // SUM: one per bottom, set by Setup
	argmax   []int32   // MAX: index of the bottom holding each maximum
}

func (*eltwiseLayer) Type() string    { return "Eltwise" }
func (*eltwiseLayer) Params() []Param { return nil }

func (l *eltwiseLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Eltwise", bottom, top, 2, maxBlobs, 1, 1); err != nil {
		return err
	}
	if l.op == EltwiseSum {
		switch len(l.coeff) {
		case 0:
			l.coeff = make([]float32, len(bottom))
			for i := range l.coeff {
				l.coeff[i] = 1
			}
		case len(bottom):
		default:
			return fmt.Errorf("layers: Eltwise: %d coeffs for %d bottoms", len(l.coeff), len(bottom))
		}
	}
	return l.Reshape(bottom, top)
}

func (l *eltwiseLayer) Reshape(bottom, top []*tensor.Blob) error {
	for i, b := range bottom[1:] {
		if !b.Shape.Equal(bottom[0].Shape) {
			return fmt.Errorf("layers: Eltwise: bottom %d shape %v does not match bottom 0 shape %v", i+1, b.Shape, bottom[0].Shape)
		}
	}
	top[0].ReshapeLike(bottom[0])
	if l.op == EltwiseMax {
		n := bottom[0].Count()
		if cap(l.argmax) < n {
			l.argmax = make([]int32, n)
		}
		l.argmax = l.argmax[:n]
	}
	return nil
}

func (l *eltwiseLayer) Forward(bottom, top []*tensor.Blob) {
	y := top[0].Data
	switch l.op {
	case EltwiseProd:
		vecMul(y, bottom[0].Data, bottom[1].Data)
		for _, b := range bottom[2:] {
			vecMul(y, y, b.Data)
		}
	case EltwiseSum:
		clear(y)
		for i, b := range bottom {
			tensor.Axpy(l.coeff[i], b.Data, y)
		}
	case EltwiseMax:
		// Caffe's tie rule: bottom 1 wins ties with bottom 0, and a later
		// bottom must be strictly greater to win.
		a, b := bottom[0].Data[:len(y)], bottom[1].Data[:len(y)]
		for j := range y {
			if a[j] > b[j] {
				y[j], l.argmax[j] = a[j], 0
			} else {
				y[j], l.argmax[j] = b[j], 1
			}
		}
		for i, bl := range bottom[2:] {
			x := bl.Data[:len(y)]
			for j, v := range x {
				if v > y[j] {
					y[j] = v
					l.argmax[j] = int32(i + 2)
				}
			}
		}
	}
}

func (l *eltwiseLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	dy := top[0].Diff
	for i, b := range bottom {
		if !propagateDown[i] {
			continue
		}
		dx := b.Diff[:len(dy)]
		switch l.op {
		case EltwiseProd:
			if l.unstable {
				// Caffe's stable_prod_grad: false: top/bottom[i], which
				// is Inf or NaN where bottom[i] is 0.
				vecDiv(dx, top[0].Data, b.Data)
			} else {
				// The product of the other bottoms, computed directly
				// rather than as top/bottom[i], in Caffe's order: the
				// others left to right, then the top diff.
				first := true
				for j, o := range bottom {
					switch {
					case j == i:
					case first:
						copy(dx, o.Data[:len(dx)])
						first = false
					default:
						vecMul(dx, dx, o.Data)
					}
				}
			}
			vecMul(dx, dx, dy)
		case EltwiseSum:
			for j, v := range dy {
				dx[j] = l.coeff[i] * v
			}
		case EltwiseMax:
			for j, v := range dy {
				if l.argmax[j] == int32(i) {
					dx[j] = v
				} else {
					dx[j] = 0
				}
			}
		}
	}
}

// vecMul computes dst[i] = a[i]·b[i]; dst may alias a or b.
func vecMul(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

// vecDiv computes dst[i] = a[i]/b[i]; dst may alias a or b.
func vecDiv(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}
