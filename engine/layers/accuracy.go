package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Type returns "Accuracy".
func (*AccuracyConfig) Type() string { return "Accuracy" }

// Build returns Caffe's Accuracy layer. Its bottoms are scores (classes
// along Axis) and labels (float32 integers, one per position outside Axis);
// top[0] is the scalar fraction of positions, IgnoreLabel skipped, whose
// label's score is among the TopK highest (fewer than TopK other classes
// score at least as high). An optional top[1] of shape [classes] gets each
// class's accuracy. It has no gradient: Backward does nothing.
func (c *AccuracyConfig) Build(Context) (Layer, error) {
	if c.TopK < 1 {
		return nil, fmt.Errorf("layers: Accuracy: top_k %d must be at least 1", c.TopK)
	}
	l := &accuracyLayer{topK: c.TopK, axis: c.Axis}
	if c.IgnoreLabel != nil {
		l.hasIgnore, l.ignore = true, *c.IgnoreLabel
	}
	return l, nil
}

type accuracyLayer struct {
	topK, axis int
	hasIgnore  bool
	ignore     int

	outer, channels, inner int
	perClass, classCount   []int // top[1]: hits and labels per class
}

func (*accuracyLayer) Type() string    { return "Accuracy" }
func (*accuracyLayer) Params() []Param { return nil }

func (l *accuracyLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Accuracy", bottom, top, 2, 2, 1, 2); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *accuracyLayer) Reshape(bottom, top []*tensor.Blob) error {
	s := bottom[0].Shape
	ax, err := normAxis("Accuracy", l.axis, len(s))
	if err != nil {
		return err
	}
	l.outer, l.channels, l.inner = s.CountRange(0, ax), s[ax], s.CountFrom(ax+1)
	if l.topK > l.channels {
		return fmt.Errorf("layers: Accuracy: top_k %d exceeds the %d classes of bottom shape %v", l.topK, l.channels, s)
	}
	if err := checkLabels("Accuracy", bottom, l.outer*l.inner); err != nil {
		return err
	}
	top[0].Reshape()
	if len(top) > 1 {
		top[1].Reshape(l.channels)
		if cap(l.perClass) < l.channels {
			l.perClass, l.classCount = make([]int, l.channels), make([]int, l.channels)
		}
		l.perClass, l.classCount = l.perClass[:l.channels], l.classCount[:l.channels]
	}
	return nil
}

func (l *accuracyLayer) Forward(bottom, top []*tensor.Blob) {
	x, labels := bottom[0].Data, bottom[1].Data
	c, inner := l.channels, l.inner
	perClass := len(top) > 1
	if perClass {
		clear(l.perClass)
		clear(l.classCount)
	}
	hits, count := 0, 0
	for o := range l.outer {
		for i := range inner {
			k, ok := labelIndex(labels[o*inner+i], c, l.hasIgnore, l.ignore)
			if !ok {
				continue
			}
			base := o*c*inner + i
			truth := x[base+k*inner]
			better := 0
			for j := 0; j < c && better < l.topK; j++ {
				if j != k && x[base+j*inner] >= truth {
					better++
				}
			}
			hit := better < l.topK
			if hit {
				hits++
			}
			count++
			if perClass {
				l.classCount[k]++
				if hit {
					l.perClass[k]++
				}
			}
		}
	}
	top[0].Data[0] = 0
	if count > 0 {
		top[0].Data[0] = float32(hits) / float32(count)
	}
	if perClass {
		for j, n := range l.classCount {
			top[1].Data[j] = 0
			if n > 0 {
				top[1].Data[j] = float32(l.perClass[j]) / float32(n)
			}
		}
	}
}

// Backward does nothing: accuracy has no gradient.
func (*accuracyLayer) Backward([]*tensor.Blob, []bool, []*tensor.Blob) {}
