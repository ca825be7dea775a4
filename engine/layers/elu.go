package layers

import "math"

// ELUConfig is Caffe's ELUParameter.
type ELUConfig struct {
	Alpha float32 // default 1
}

// Type returns "ELU".
func (*ELUConfig) Type() string { return "ELU" }

// Build returns an ELU layer: y = x for x > 0, α(exp(x) − 1) otherwise;
// dx = dy for x > 0, dy·(y + α) otherwise. It may run in place.
func (c *ELUConfig) Build(Context) (Layer, error) {
	a := float64(c.Alpha)
	return newUnary("ELU", true, func(x float64) float64 {
		if x > 0 {
			return x
		}
		return a * math.Expm1(x)
	}, func(x, y, dy float64) float64 {
		if x > 0 {
			return dy
		}
		return dy * (y + a)
	}), nil
}
