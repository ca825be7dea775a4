package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// Type returns "SoftmaxWithLoss".
func (*SoftmaxWithLossConfig) Type() string { return "SoftmaxWithLoss" }

// Build returns Caffe's SoftmaxWithLoss layer: the softmax of bottom[0]
// along Axis followed by the multinomial logistic loss against the class
// labels in bottom[1] (float32 integers, one per position outside Axis). Its
// top[0] is the scalar loss, -Σ log p[label] divided as Normalization says;
// positions labelled IgnoreLabel are skipped. An optional top[1] receives
// the probabilities. It is a LossLayer; no gradient flows to the labels.
func (c *SoftmaxWithLossConfig) Build(Context) (Layer, error) {
	if c.Normalization < NormValid || c.Normalization > NormNone {
		return nil, fmt.Errorf("layers: SoftmaxWithLoss: unknown normalization %d", c.Normalization)
	}
	l := &softmaxLossLayer{axis: c.Axis, norm: c.Normalization}
	if c.IgnoreLabel != nil {
		l.hasIgnore, l.ignore = true, *c.IgnoreLabel
	}
	return l, nil
}

type softmaxLossLayer struct {
	axis      int
	norm      LossNormalization
	hasIgnore bool
	ignore    int

	sm    softmax
	prob  []float32
	valid int // labels not ignored in the last Forward
}

func (*softmaxLossLayer) Type() string    { return "SoftmaxWithLoss" }
func (*softmaxLossLayer) Params() []Param { return nil }

// IsLoss marks SoftmaxWithLoss as a loss layer.
func (*softmaxLossLayer) IsLoss() {}

func (l *softmaxLossLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("SoftmaxWithLoss", bottom, top, 2, 2, 1, 2); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *softmaxLossLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := l.sm.reshape("SoftmaxWithLoss", l.axis, bottom[0].Shape); err != nil {
		return err
	}
	if err := checkLabels("SoftmaxWithLoss", bottom, l.sm.outer*l.sm.inner); err != nil {
		return err
	}
	l.prob = fitBuf(l.prob, bottom[0].Count())
	top[0].Reshape()
	if len(top) > 1 {
		top[1].ReshapeLike(bottom[0])
	}
	return nil
}

func (l *softmaxLossLayer) Forward(bottom, top []*tensor.Blob) {
	l.sm.forward(l.prob, bottom[0].Data)
	labels := bottom[1].Data
	c, inner := l.sm.channels, l.sm.inner
	var loss float64
	valid := 0
	for o := range l.sm.outer {
		for i := range inner {
			k, ok := l.label(labels[o*inner+i], c)
			if !ok {
				continue
			}
			p := l.prob[(o*c+k)*inner+i]
			loss -= math.Log(float64(max(p, math.SmallestNonzeroFloat32)))
			valid++
		}
	}
	l.valid = valid
	top[0].Data[0] = float32(loss / l.normalizer(valid))
	if len(top) > 1 {
		copy(top[1].Data, l.prob)
	}
}

func (l *softmaxLossLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dx, labels := bottom[0].Diff, bottom[1].Data
	copy(dx, l.prob)
	c, inner := l.sm.channels, l.sm.inner
	for o := range l.sm.outer {
		for i := range inner {
			k, ok := l.label(labels[o*inner+i], c)
			if ok {
				dx[(o*c+k)*inner+i]--
				continue
			}
			for j := range c {
				dx[(o*c+j)*inner+i] = 0
			}
		}
	}
	tensor.Scale(float32(float64(top[0].Diff[0])/l.normalizer(l.valid)), dx[:len(l.prob)])
}

// label returns the class index that v holds and true, or false when v is
// the ignore label. It panics when v is no class in [0, c): labels are
// validated where they are read.
func (l *softmaxLossLayer) label(v float32, c int) (int, bool) {
	return labelIndex(v, c, l.hasIgnore, l.ignore)
}

// normalizer is Caffe's: what the summed loss is divided by, at least 1.
func (l *softmaxLossLayer) normalizer(valid int) float64 {
	var n int
	switch l.norm {
	case NormFull:
		n = l.sm.outer * l.sm.inner
	case NormValid:
		n = valid
	case NormBatchSize:
		n = l.sm.outer
	case NormNone:
		n = 1
	}
	return float64(max(n, 1))
}

// labelIndex returns the class index that the label value v holds and true,
// or false when v equals the ignore label (hasIgnore). It panics when v is
// not an integer in [0, c).
func labelIndex(v float32, c int, hasIgnore bool, ignore int) (int, bool) {
	if hasIgnore && v == float32(ignore) {
		return 0, false
	}
	if !(v >= 0 && v < float32(c)) {
		panic(fmt.Sprintf("layers: label %v out of range [0,%d)", v, c))
	}
	if v != float32(math.Trunc(float64(v))) {
		panic(fmt.Sprintf("layers: label %v is not an integer", v))
	}
	return int(v), true
}

// checkLabels checks that bottom[1] holds one label per position outside
// the class axis: n values.
func checkLabels(layer string, bottom []*tensor.Blob, n int) error {
	if got := bottom[1].Count(); got != n {
		return fmt.Errorf("layers: %s: label bottom shape %v has %d values, want %d (one per position of bottom shape %v outside the class axis)", layer, bottom[1].Shape, got, n, bottom[0].Shape)
	}
	return nil
}
