package model

import (
	"fmt"

	"dsgd/engine/layers"
)

// HasLoss reports whether some top of the net carries a loss weight: a
// loss layer, or any layer given a non-zero loss_weight. A TRAIN net
// without one has nothing to minimise.
func (n *Net) HasLoss() bool {
	for _, nd := range n.nodes {
		for _, w := range nd.lossWeight {
			if w != 0 {
				return true
			}
		}
	}
	return false
}

// LabelUse says how a layer reads a label blob: as class indices below
// Classes (the channels of its scores along its axis), except Ignore when
// HasIgnore.
type LabelUse struct {
	Layer     string // the layer's name and position, for errors
	Classes   int
	HasIgnore bool
	Ignore    int
}

// LabelUses lists, per label blob, the layers that read it as class
// indices (SoftmaxWithLoss, Accuracy), so that a data source's labels can
// be checked against them before they reach the layer.
func (n *Net) LabelUses() map[string][]LabelUse {
	uses := map[string][]LabelUse{}
	for _, nd := range n.nodes {
		if len(nd.bottom) < 2 {
			continue
		}
		if u, ok := labelUse(nd.spec, nd.bottom[0].Shape); ok {
			name := nd.spec.Bottom[1]
			uses[name] = append(uses[name], u)
		}
	}
	return uses
}

// LabelReader is a layer that reads its second bottom as class indices
// (SoftmaxWithLoss, Accuracy), scored along an axis of its first.
type LabelReader struct {
	Layer LayerSpec
	Use   LabelUse
}

// LabelReaders lists, in the order of specs and of their layers, the
// layers that read a label blob as class indices and whose scores blob
// (their first bottom) n holds, the classes read off that blob's shape.
// A spec may be another phase's than n's: its layers are checked against
// the blobs n has.
func (n *Net) LabelReaders(specs ...Spec) []LabelReader {
	var out []LabelReader
	for _, spec := range specs {
		for _, l := range spec.Layers {
			if len(l.Bottom) < 2 {
				continue
			}
			scores := n.Blob(l.Bottom[0])
			if scores == nil {
				continue
			}
			if u, ok := labelUse(l, scores.Shape); ok {
				out = append(out, LabelReader{Layer: l, Use: u})
			}
		}
	}
	return out
}

// labelUse says how layer ls reads its label bottom when its scores have
// shape scores, or false when it reads no labels as class indices.
func labelUse(ls LayerSpec, scores []int) (LabelUse, bool) {
	axis, ignore := 1, (*int)(nil)
	switch c := ls.Config.(type) {
	case *layers.SoftmaxWithLossConfig:
		axis, ignore = c.Axis, c.IgnoreLabel
	case *layers.AccuracyConfig:
		axis, ignore = c.Axis, c.IgnoreLabel
	default:
		return LabelUse{}, false
	}
	if axis < 0 {
		axis += len(scores)
	}
	if axis < 0 || axis >= len(scores) {
		return LabelUse{}, false // Setup has refused it already
	}
	u := LabelUse{Layer: layerWhere(ls), Classes: scores[axis]}
	if ignore != nil {
		u.HasIgnore, u.Ignore = true, *ignore
	}
	return u, true
}

// CheckLabels returns an error naming the first label in labels that a
// use cannot take (negative, not an integer, or not below its classes), or
// nil.
func CheckLabels(labels []float32, uses []LabelUse) error {
	_, err := BadLabel(labels, uses)
	return err
}

// BadLabel is CheckLabels that also returns the index in labels of the
// label at fault (-1 with a nil error), so that a caller can name where it
// came from.
func BadLabel(labels []float32, uses []LabelUse) (int, error) {
	for _, u := range uses {
		for i, v := range labels {
			if u.HasIgnore && v == float32(u.Ignore) {
				continue
			}
			if !(v >= 0 && v < float32(u.Classes)) || v != float32(int64(v)) {
				return i, fmt.Errorf("label %v (item %d of the batch) is not a class index of %s, which has %d classes [0,%d)", v, i, u.Layer, u.Classes, u.Classes)
			}
		}
	}
	return -1, nil
}

// checkWindows refuses a Pooling layer whose last window lies wholly
// past its input. Caffe's ceiling rule allows it when the stride exceeds
// the kernel (pad 0): such a window is empty, Caffe's MAX outputs
// -FLT_MAX for it and has no input to send its gradient to. A net built
// here trains, so it is an error naming the geometry. round_mode: FLOOR
// never makes such a window.
func checkWindows(nd *node) error {
	c, ok := nd.spec.Config.(*layers.PoolingConfig)
	if !ok || c.GlobalPooling || len(nd.bottom) == 0 || len(nd.top) == 0 {
		return nil
	}
	b, t := nd.bottom[0].Shape, nd.top[0].Shape
	if len(b) != 4 || len(t) != 4 {
		return nil
	}
	if (t[2]-1)*c.StrideH-c.PadH >= b[2] || (t[3]-1)*c.StrideW-c.PadW >= b[3] {
		return fmt.Errorf("pooling kernel %dx%d with stride %dx%d and pad %dx%d over %dx%d leaves the last of its %dx%d windows outside the input (Caffe fills it with -FLT_MAX and it has no gradient); use a stride no larger than the kernel, pad, or round_mode: FLOOR",
			c.KernelH, c.KernelW, c.StrideH, c.StrideW, c.PadH, c.PadW, b[2], b[3], t[2], t[3])
	}
	return nil
}

// Bytes estimates the memory the net holds: its blobs' data and diffs,
// and its parameters with their gradients and a solver's history.
func (n *Net) Bytes() float64 { return n.bytes }
