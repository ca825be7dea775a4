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
func (c *EltwiseConfig) Build(ctx Context) (Layer, error) {
	switch c.Operation {
	case EltwiseProd, EltwiseMax:
		if len(c.Coeff) > 0 {
			return nil, fmt.Errorf("layers: Eltwise: coeff is only allowed with operation SUM")
		}
	case EltwiseSum:
	default:
		return nil, fmt.Errorf("layers: Eltwise: unknown operation %d", c.Operation)
	}
	l := &eltwiseLayer{op: c.Operation, coeff: append([]float32(nil), c.Coeff...), unstable: c.UnstableProdGrad,
		threads: ctx.NumThreads(), pool: ctx.Pool}
	l.sumFn, l.copyFn = l.sumChunk, l.copyChunk
	return l, nil
}

type eltwiseLayer struct {
	op       EltwiseOp
	unstable bool      // PROD: the gradient is top/bottom_i (stable_prod_grad: false)
	coeff    []float32 // SUM: one per bottom, set by Setup
	argmax   []int32   // MAX: index of the bottom holding each maximum

	// A SUM with every coefficient 1 (ResNet's shortcuts) runs on
	// memmove and SIMD adds, in cache-sized pieces split across the
	// worker threads: forward the first bottom copied to the top and the
	// others added in, each piece while it is in cache; backward dy copied
	// to each bottom's gradient. The same values as the loops below (x·1
	// is x; 0 + x, their first step, differs from x only in a zero's sign).
	threads       int
	pool          *tensor.Pool
	y, dy         []float32
	xs, dxs       [][]float32
	sumFn, copyFn func(lo, hi, worker int)
}

// eltwisePiece is the elements one piece of the unit-coefficient SUM
// covers: 64 KiB of each operand.
const eltwisePiece = 1 << 14

// unitSum reports whether the SUM's coefficients are all 1 and the top is
// none of the bottoms.
func (l *eltwiseLayer) unitSum(bottom, top []*tensor.Blob) bool {
	if l.op != EltwiseSum {
		return false
	}
	for i, b := range bottom {
		if l.coeff[i] != 1 || b == top[0] {
			return false
		}
	}
	return true
}

// pieces is how many pieces n elements make, and how many workers run them.
func (l *eltwiseLayer) pieces(n int) (pieces, workers int) {
	pieces = (n + eltwisePiece - 1) / eltwisePiece
	return pieces, max(1, min(l.threads, n/reluPerThread))
}

func (l *eltwiseLayer) sumChunk(lo, hi, _ int) {
	for p := lo; p < hi; p++ {
		a, b := p*eltwisePiece, min((p+1)*eltwisePiece, len(l.y))
		copy(l.y[a:b], l.xs[0][a:b])
		for _, x := range l.xs[1:] {
			tensor.AddTo(l.y[a:b], x[a:b])
		}
	}
}

func (l *eltwiseLayer) copyChunk(lo, hi, _ int) {
	for p := lo; p < hi; p++ {
		a, b := p*eltwisePiece, min((p+1)*eltwisePiece, len(l.dy))
		for _, dx := range l.dxs {
			copy(dx[a:b], l.dy[a:b])
		}
	}
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
		if l.unitSum(bottom, top) {
			l.y, l.xs = y, l.xs[:0]
			for _, b := range bottom {
				l.xs = append(l.xs, b.Data[:len(y)])
			}
			n, w := l.pieces(len(y))
			l.pool.For(n, w, l.sumFn)
			l.y, l.xs = nil, l.xs[:0]
			return
		}
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
	if l.unitSum(bottom, top) {
		l.dy, l.dxs = dy, l.dxs[:0]
		for i, b := range bottom {
			if propagateDown[i] {
				l.dxs = append(l.dxs, b.Diff[:len(dy)])
			}
		}
		n, w := l.pieces(len(dy))
		l.pool.For(n, w, l.copyFn)
		l.dy, l.dxs = nil, l.dxs[:0]
		return
	}
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
