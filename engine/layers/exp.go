package layers

import (
	"fmt"
	"math"
)

// ExpConfig is Caffe's ExpParameter.
type ExpConfig struct {
	Base  float32 // default -1: e
	Scale float32 // default 1
	Shift float32 // default 0
}

// Type returns "Exp".
func (*ExpConfig) Type() string { return "Exp" }

// logBase is ln(base), with Caffe's base -1 meaning e; it rejects other
// non-positive bases, as Caffe does.
func logBase(layer string, base float32) (float64, error) {
	if base == -1 {
		return 1, nil
	}
	if !(base > 0) {
		return 0, fmt.Errorf("layers: %s: base must be strictly positive or -1 (e), got %v", layer, base)
	}
	return math.Log(float64(base)), nil
}

// Build returns an Exp layer: y = base^(shift + scale·x), dx =
// dy·y·ln(base)·scale. It may run in place.
func (c *ExpConfig) Build(Context) (Layer, error) {
	lb, err := logBase("Exp", c.Base)
	if err != nil {
		return nil, err
	}
	inner, outer := lb*float64(c.Scale), math.Exp(lb*float64(c.Shift))
	return newUnary("Exp", false, func(x float64) float64 {
		return outer * math.Exp(inner*x)
	}, func(_, y, dy float64) float64 {
		return dy * y * inner
	}), nil
}
