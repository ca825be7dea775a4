package layers

import "math"

// BNLLConfig configures Caffe's BNLL layer (no fields).
type BNLLConfig struct{}

// Type returns "BNLL".
func (*BNLLConfig) Type() string { return "BNLL" }

// bnllThreshold caps the exponent of the gradient, as Caffe's
// kBNLL_THRESHOLD does.
const bnllThreshold = 50

// Build returns a BNLL ("binomial normal log likelihood") layer: y =
// log(1 + exp(x)), computed as x + log(1 + exp(-x)) for x > 0 so that it
// does not overflow; dx = dy·e/(1+e) with e = exp(min(x, 50)).
func (*BNLLConfig) Build(Context) (Layer, error) {
	return newUnary("BNLL", true, func(x float64) float64 {
		if x > 0 {
			return x + math.Log1p(math.Exp(-x))
		}
		return math.Log1p(math.Exp(x))
	}, func(x, _, dy float64) float64 {
		e := math.Exp(math.Min(x, bnllThreshold))
		return dy * e / (e + 1)
	}), nil
}
