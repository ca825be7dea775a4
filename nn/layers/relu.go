package layers

import (
	"fmt"
	"math"

	"dsgd/tensor"
)

// Type returns "ReLU".
func (*ReLUConfig) Type() string { return "ReLU" }

// Build returns a ReLU layer: top = max(x, 0) + NegativeSlope·min(x, 0). It
// takes one bottom and one top and may run in place.
func (c *ReLUConfig) Build(Context) (Layer, error) {
	if s := float64(c.NegativeSlope); math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("layers: ReLU: negative_slope %v is not finite", c.NegativeSlope)
	}
	return &reluLayer{slope: c.NegativeSlope}, nil
}

// reluLayer is a (leaky) rectifier. With a non-negative slope the output has
// the sign of the input, so Backward reads the mask from top data and in
// place needs no copy; a negative slope keeps the input in in.
//
// It runs on the caller's goroutine: splitting LeNet's relu1 (32000
// floats, about 50 µs) across two threads measured no faster, the
// hand-off costing what the split saves.
type reluLayer struct {
	slope float32
	in    []float32 // copy of the input, only when slope < 0
}

func (*reluLayer) Type() string    { return "ReLU" }
func (*reluLayer) Params() []Param { return nil }

func (l *reluLayer) Setup(bottom, top []*tensor.Blob) error {
	return checkBlobCount("ReLU", bottom, top, 1, 1, 1, 1)
}

func (l *reluLayer) Reshape(bottom, top []*tensor.Blob) error {
	if bottom[0] != top[0] {
		top[0].ReshapeLike(bottom[0])
	}
	if l.slope < 0 {
		l.in = fitBuf(l.in, bottom[0].Count())
	}
	return nil
}

func (l *reluLayer) Forward(bottom, top []*tensor.Blob) {
	x, y, s := bottom[0].Data, top[0].Data, l.slope
	y = y[:len(x)]
	if s < 0 {
		copy(l.in, x)
	}
	reluSelect(y, x, x, s)
}

func (l *reluLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	dy, dx, s := top[0].Diff, bottom[0].Diff, l.slope
	// The sign of the input: from the saved copy, or, when the slope is
	// non-negative, from the output, which has the same sign.
	ref := top[0].Data
	if s < 0 {
		ref = l.in
	}
	reluSelect(dx, ref, dy, s)
}

// reluSelect sets dst[i] = v[i] where ref[i] > 0 and s·v[i] elsewhere
// (NaN in ref selects s·v[i]), for i < len(ref); dst may alias ref or v.
//
// It selects with a bit mask instead of a branch: activations have random
// signs, which defeat the branch predictor. Both candidates are computed
// exactly as the branchy form would, so results are bit for bit the same.
func reluSelect(dst, ref, v []float32, s float32) {
	dst, v = dst[:len(ref)], v[:len(ref)]
	for i, r := range ref {
		x := v[i]
		m := -b2u32(r > 0) // all ones where ref > 0
		dst[i] = math.Float32frombits(math.Float32bits(x)&m | math.Float32bits(s*x)&^m)
	}
}

// b2u32 is 1 for true and 0 for false, without a branch.
func b2u32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// checkBlobCount checks that a layer got between minBottom and maxBottom
// bottoms and between minTop and maxTop tops.
func checkBlobCount(layer string, bottom, top []*tensor.Blob, minBottom, maxBottom, minTop, maxTop int) error {
	if err := checkRange(layer, "bottom", len(bottom), minBottom, maxBottom); err != nil {
		return err
	}
	return checkRange(layer, "top", len(top), minTop, maxTop)
}

func checkRange(layer, what string, n, lo, hi int) error {
	switch {
	case n >= lo && n <= hi:
		return nil
	case lo == hi:
		return fmt.Errorf("layers: %s takes %d %s blob(s), got %d", layer, lo, what, n)
	case hi == maxBlobs:
		return fmt.Errorf("layers: %s takes at least %d %s blobs, got %d", layer, lo, what, n)
	}
	return fmt.Errorf("layers: %s takes %d to %d %s blobs, got %d", layer, lo, hi, what, n)
}

// fitBuf returns buf resliced to n elements, reallocating only when its
// capacity is too small.
func fitBuf(buf []float32, n int) []float32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]float32, n)
}
