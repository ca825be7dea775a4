package layers

import "math"

// AbsValConfig configures Caffe's AbsVal layer (no fields).
type AbsValConfig struct{}

// Type returns "AbsVal".
func (*AbsValConfig) Type() string { return "AbsVal" }

// Build returns an AbsVal layer: y = |x|, dx = sign(x)·dy (0 at x = 0, as
// Caffe's caffe_sign). Caffe refuses to run it in place; dsgd allows it.
func (*AbsValConfig) Build(Context) (Layer, error) {
	return newUnary("AbsVal", true, math.Abs, func(x, _, dy float64) float64 {
		switch {
		case x > 0:
			return dy
		case x < 0:
			return -dy
		}
		return 0
	}), nil
}
