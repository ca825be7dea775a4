package layers

import "math"

// SwishConfig is Caffe's SwishParameter.
type SwishConfig struct {
	Beta float32 // default 1
}

// Type returns "Swish".
func (*SwishConfig) Type() string { return "Swish" }

// Build returns a Swish layer: y = x·σ(βx); dx = dy·(βy + σ(βx)(1 − βy)),
// Caffe's form of the derivative. It may run in place.
func (c *SwishConfig) Build(Context) (Layer, error) {
	b := float64(c.Beta)
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-b*x)) }
	return newUnary("Swish", true, func(x float64) float64 {
		return x * sig(x)
	}, func(x, y, dy float64) float64 {
		return dy * (b*y + sig(x)*(1-b*y))
	}), nil
}
