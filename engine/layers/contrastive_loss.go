package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// ContrastiveLossConfig is Caffe's ContrastiveLossParameter.
type ContrastiveLossConfig struct {
	Margin float32 // default 1
	// LegacyVersion uses max(margin − d², 0) for dissimilar pairs instead
	// of max(margin − d, 0)².
	LegacyVersion bool
}

// Type returns "ContrastiveLoss".
func (*ContrastiveLossConfig) Type() string { return "ContrastiveLoss" }

// Build returns a ContrastiveLoss layer over features a, b (N × C) and a
// similarity label y (N values, nonzero = similar): Σ [y·d² + (1−y)·max(m
// − d, 0)²] / 2N with d = ‖a − b‖ (the legacy version uses max(m − d², 0)
// for dissimilar pairs). a and b receive gradients, y none. It is a
// LossLayer.
func (c *ContrastiveLossConfig) Build(Context) (Layer, error) {
	return &contrastiveLossLayer{cfg: *c}, nil
}

type contrastiveLossLayer struct {
	cfg      ContrastiveLossConfig
	num, dim int
	diff     []float32
	dist2    []float64
}

func (*contrastiveLossLayer) Type() string    { return "ContrastiveLoss" }
func (*contrastiveLossLayer) Params() []Param { return nil }

// IsLoss marks ContrastiveLoss as a loss layer.
func (*contrastiveLossLayer) IsLoss() {}

func (l *contrastiveLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("ContrastiveLoss", bottom, top, 3, 3, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *contrastiveLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	a, b := bottom[0].Shape, bottom[1].Shape
	if len(a) == 0 || !a.Equal(b) {
		return fmt.Errorf("layers: ContrastiveLoss: feature bottoms %v and %v must have the same shape", []int(a), []int(b))
	}
	l.num, l.dim = a[0], a.CountFrom(1)
	if bottom[2].Count() != l.num {
		return fmt.Errorf("layers: ContrastiveLoss: label bottom %v needs %d values, one per pair", []int(bottom[2].Shape), l.num)
	}
	l.diff = fitBuf(l.diff, a.Count())
	if cap(l.dist2) < l.num {
		l.dist2 = make([]float64, l.num)
	}
	l.dist2 = l.dist2[:l.num]
	top[0].Reshape()
	return nil
}

func (l *contrastiveLossLayer) Forward(bottom, top []*tensor.Blob) {
	a, b, y := bottom[0].Data, bottom[1].Data, bottom[2].Data
	m := float64(l.cfg.Margin)
	var loss float64
	for i := range l.num {
		var d2 float64
		for j := i * l.dim; j < (i+1)*l.dim; j++ {
			d := a[j] - b[j]
			l.diff[j] = d
			d2 += float64(d) * float64(d)
		}
		l.dist2[i] = d2
		switch {
		case int(y[i]) != 0:
			loss += d2
		case l.cfg.LegacyVersion:
			loss += math.Max(m-d2, 0)
		default:
			h := math.Max(m-math.Sqrt(d2), 0)
			loss += h * h
		}
	}
	top[0].Data[0] = float32(loss / float64(l.num) / 2)
}

func (l *contrastiveLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	y := bottom[2].Data
	m := float64(l.cfg.Margin)
	for k, sign := range []float64{1, -1} {
		if !propagateDown[k] {
			continue
		}
		alpha := sign * float64(top[0].Diff[0]) / float64(l.num)
		dx := bottom[k].Diff
		for i := range l.num {
			var c float64 // the gradient's factor on diff for pair i
			switch {
			case int(y[i]) != 0:
				c = alpha
			case l.cfg.LegacyVersion:
				if m-l.dist2[i] > 0 {
					c = -alpha
				}
			default:
				d := math.Sqrt(l.dist2[i])
				if md := m - d; md > 0 {
					c = -alpha * md / (d + 1e-4)
				}
			}
			for j := i * l.dim; j < (i+1)*l.dim; j++ {
				dx[j] = float32(c * float64(l.diff[j]))
			}
		}
	}
}
