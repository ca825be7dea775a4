package layers

import (
	"fmt"
	"math"
)

// PowerConfig is Caffe's PowerParameter.
type PowerConfig struct {
	Power float32 // default 1
	Scale float32 // default 1
	Shift float32 // default 0
}

// Type returns "Power".
func (*PowerConfig) Type() string { return "Power" }

// Build returns a Power layer: y = (shift + scale·x)^power, dx =
// dy·power·scale·(shift + scale·x)^(power−1), with Caffe's special cases:
// power·scale = 0 gives a zero gradient, power 1 the constant scale. It may
// run in place.
func (c *PowerConfig) Build(Context) (Layer, error) {
	p, a, b := float64(c.Power), float64(c.Scale), float64(c.Shift)
	if math.IsNaN(p) || math.IsNaN(a) || math.IsNaN(b) {
		return nil, fmt.Errorf("layers: Power: NaN parameter")
	}
	return newUnary("Power", true, func(x float64) float64 {
		return math.Pow(b+a*x, p)
	}, func(x, _, dy float64) float64 {
		switch {
		case p*a == 0:
			return 0
		case p == 1:
			return dy * a
		case p == 2:
			return dy * 2 * a * (b + a*x)
		}
		return dy * p * a * math.Pow(b+a*x, p-1)
	}), nil
}
