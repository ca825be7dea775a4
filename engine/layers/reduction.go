package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// ReductionOp is Caffe's ReductionParameter.ReductionOp.
type ReductionOp int

// The reductions, numbered as in Caffe's proto.
const (
	ReduceSum   ReductionOp = 1
	ReduceASum  ReductionOp = 2
	ReduceSumSq ReductionOp = 3
	ReduceMean  ReductionOp = 4
)

// ReductionConfig is Caffe's ReductionParameter.
type ReductionConfig struct {
	Operation ReductionOp // default SUM
	Axis      int         // default 0: the axes from Axis on are reduced
	Coeff     float32     // default 1: the result is scaled by it
}

// Type returns "Reduction".
func (*ReductionConfig) Type() string { return "Reduction" }

// Build returns a Reduction layer: for each index of the axes before Axis,
// the sum (SUM), sum of |x| (ASUM), sum of x² (SUMSQ) or mean (MEAN) of the
// axes from Axis on, times Coeff. The top has the shape of the axes before
// Axis (a scalar for Axis 0).
func (c *ReductionConfig) Build(Context) (Layer, error) {
	if c.Operation < ReduceSum || c.Operation > ReduceMean {
		return nil, fmt.Errorf("layers: Reduction: unknown operation %d", c.Operation)
	}
	return &reductionLayer{cfg: *c}, nil
}

type reductionLayer struct {
	cfg      ReductionConfig
	num, dim int
}

func (*reductionLayer) Type() string    { return "Reduction" }
func (*reductionLayer) Params() []Param { return nil }

func (l *reductionLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Reduction", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *reductionLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	ax, err := normAxis("Reduction", l.cfg.Axis, len(s))
	if err != nil {
		return err
	}
	l.num, l.dim = s.CountRange(0, ax), s.CountFrom(ax)
	top[0].Reshape(s[:ax]...)
	return nil
}

func (l *reductionLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	for i := range l.num {
		var acc float64
		for _, v := range x[i*l.dim : (i+1)*l.dim] {
			switch l.cfg.Operation {
			case ReduceASum:
				acc += math.Abs(float64(v))
			case ReduceSumSq:
				acc += float64(v) * float64(v)
			default:
				acc += float64(v)
			}
		}
		if l.cfg.Operation == ReduceMean {
			acc /= float64(l.dim)
		}
		y[i] = float32(acc * float64(l.cfg.Coeff))
	}
}

func (l *reductionLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	x, dx, dy := bottom[0].Data, bottom[0].Diff, top[0].Diff
	for i := range l.num {
		g := dy[i] * l.cfg.Coeff
		if l.cfg.Operation == ReduceMean {
			g /= float32(l.dim)
		}
		for j := i * l.dim; j < (i+1)*l.dim; j++ {
			switch l.cfg.Operation {
			case ReduceASum:
				switch {
				case x[j] > 0:
					dx[j] = g
				case x[j] < 0:
					dx[j] = -g
				default:
					dx[j] = 0
				}
			case ReduceSumSq:
				dx[j] = 2 * g * x[j]
			default:
				dx[j] = g
			}
		}
	}
}
