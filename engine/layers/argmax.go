package layers

import (
	"fmt"
	"slices"

	"dsgd/engine/tensor"
)

// ArgMaxConfig is Caffe's ArgMaxParameter.
type ArgMaxConfig struct {
	OutMaxVal bool // also (or, with an axis, instead) output the values
	TopK      int  // default 1
	// Axis, when set, takes the top k along that axis; nil takes it over
	// everything after the first axis.
	Axis *int
}

// Type returns "ArgMax".
func (*ArgMaxConfig) Type() string { return "ArgMax" }

// Build returns an ArgMax layer: the indices (as float32) of the TopK
// largest values, per item of the first axis or along Axis, largest first;
// ties go to the higher index, as Caffe's sort does. Without an axis the
// top has shape (N, 1, TopK), or (N, 2, TopK) with OutMaxVal: indices then
// values; with an axis it is the bottom's shape with TopK on that axis,
// holding values when OutMaxVal, else indices. It has no gradient.
func (c *ArgMaxConfig) Build(Context) (Layer, error) {
	if c.TopK < 1 {
		return nil, fmt.Errorf("layers: ArgMax: top_k must be at least 1, got %d", c.TopK)
	}
	return &argMaxLayer{cfg: *c}, nil
}

type argMaxLayer struct {
	cfg                ArgMaxConfig
	outer, dim, stride int
	pairs              []argPair
}

type argPair struct {
	v float32
	i int
}

func (*argMaxLayer) Type() string    { return "ArgMax" }
func (*argMaxLayer) Params() []Param { return nil }

func (l *argMaxLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("ArgMax", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *argMaxLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	if l.cfg.Axis != nil {
		ax, err := normAxis("ArgMax", *l.cfg.Axis, len(s))
		if err != nil {
			return err
		}
		if l.cfg.TopK > s[ax] {
			return fmt.Errorf("layers: ArgMax: top_k %d is more than axis %d's %d", l.cfg.TopK, ax, s[ax])
		}
		l.outer, l.dim, l.stride = s.CountRange(0, ax), s[ax], s.CountFrom(ax+1)
		shape := s.Clone()
		shape[ax] = l.cfg.TopK
		top[0].Reshape(shape...)
	} else {
		if len(s) < 1 {
			return fmt.Errorf("layers: ArgMax: bottom has no axes")
		}
		l.outer, l.dim, l.stride = s[0], s.CountFrom(1), 1
		if l.cfg.TopK > l.dim {
			return fmt.Errorf("layers: ArgMax: top_k %d is more than the %d values per item", l.cfg.TopK, l.dim)
		}
		shape := make([]int, max(len(s), 3))
		for i := range shape {
			shape[i] = 1
		}
		shape[0], shape[2] = s[0], l.cfg.TopK
		if l.cfg.OutMaxVal {
			shape[1] = 2
		}
		top[0].Reshape(shape...)
	}
	l.pairs = make([]argPair, l.dim)
	return nil
}

func (l *argMaxLayer) Forward(bottom, top []*tensor.Blob) {
	x, y := bottom[0].Data, top[0].Data
	k := l.cfg.TopK
	for o := range l.outer {
		for in := range l.stride {
			for j := range l.dim {
				l.pairs[j] = argPair{x[(o*l.dim+j)*l.stride+in], j}
			}
			slices.SortFunc(l.pairs, func(a, b argPair) int {
				switch {
				case a.v > b.v:
					return -1
				case a.v < b.v:
					return 1
				}
				return b.i - a.i
			})
			for j := range k {
				p := l.pairs[j]
				switch {
				case l.cfg.Axis != nil && l.cfg.OutMaxVal:
					y[(o*k+j)*l.stride+in] = p.v
				case l.cfg.Axis != nil:
					y[(o*k+j)*l.stride+in] = float32(p.i)
				case l.cfg.OutMaxVal:
					y[o*2*k+j] = float32(p.i)
					y[o*2*k+k+j] = p.v
				default:
					y[o*k+j] = float32(p.i)
				}
			}
		}
	}
}

// Backward gives no gradient: the indices are piecewise constant.
func (l *argMaxLayer) Backward(_ []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if propagateDown[0] {
		clear(bottom[0].Diff[:bottom[0].Count()])
	}
}
