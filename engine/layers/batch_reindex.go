package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// BatchReindexConfig configures Caffe's BatchReindex layer (no fields).
type BatchReindexConfig struct{}

// Type returns "BatchReindex".
func (*BatchReindexConfig) Type() string { return "BatchReindex" }

// Build returns a BatchReindex layer: bottom[0] is data of shape (N, ...),
// bottom[1] a 1-D blob of K indices into its first axis (floats holding
// integers); the top, of shape (K, ...), holds item idx[k] of the data at
// item k. Backward sums the top's gradient into the items it came from, so
// an index given twice receives both gradients; the indices take none.
// Forward panics on an index outside [0, N), as Caffe's CHECK aborts.
func (*BatchReindexConfig) Build(Context) (Layer, error) { return &batchReindexLayer{}, nil }

type batchReindexLayer struct{}

func (*batchReindexLayer) Type() string    { return "BatchReindex" }
func (*batchReindexLayer) Params() []Param { return nil }

// AllowBackward implements GradientBlocker: the indices take no gradient.
func (*batchReindexLayer) AllowBackward(i int) bool { return i == 0 }

func (l *batchReindexLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("BatchReindex", bottom, top, 2, 2, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (*batchReindexLayer) Reshape(bottom, top []*tensor.Blob) error {
	d, idx := bottom[0], bottom[1]
	if len(idx.Shape) != 1 {
		return fmt.Errorf("layers: BatchReindex: the index bottom %q must have one axis, got shape %v", idx.Name, idx.Shape)
	}
	if len(d.Shape) == 0 {
		return fmt.Errorf("layers: BatchReindex: the data bottom %q must have at least one axis", d.Name)
	}
	shape := append([]int{idx.Shape[0]}, d.Shape[1:]...)
	top[0].Reshape(shape...)
	return nil
}

// reindex returns the data item an index value names, panicking when it
// is not in [0, n) (NaN included), as Caffe's CHECKs abort. A fractional
// index is truncated, as Caffe's cast does.
func reindex(v float32, n int) int {
	if !(v >= 0) || v >= float32(n) {
		panic(fmt.Sprintf("layers: BatchReindex: index %v outside the data's %d items", v, n))
	}
	return int(v)
}

func (*batchReindexLayer) Forward(bottom, top []*tensor.Blob) {
	d, idx := bottom[0], bottom[1]
	n := d.Num()
	inner := d.Shape.CountFrom(1)
	for k, v := range idx.Data {
		i := reindex(v, n)
		copy(top[0].Data[k*inner:(k+1)*inner], d.Data[i*inner:(i+1)*inner])
	}
}

func (*batchReindexLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	d, idx := bottom[0], bottom[1]
	n := d.Num()
	inner := d.Shape.CountFrom(1)
	dx := d.Diff[:d.Count()]
	clear(dx)
	for k, v := range idx.Data {
		i := reindex(v, n)
		tensor.AddTo(dx[i*inner:(i+1)*inner], top[0].Diff[k*inner:(k+1)*inner])
	}
}
