package layers

import (
	"fmt"
	"math"
)

// SeLuConfig is the SeLuParameter of the SNN Caffe reimplementation that
// soeaver/caffe-model's SELU nets use
// (HolmesShuan/SNNs-Self-Normalizing-Neural-Networks-Caffe-Reimplementation):
// selu_param { lambda = 1 (default 1.050700987), alpha = 2 (default
// 1.67326324) }, LayerParameter field 161 in that fork.
type SeLuConfig struct {
	// Lambda scales both sides (SELU's λ, 1.0507009873554805).
	Lambda float32
	// Alpha scales the negative side's exp(x) − 1 (SELU's α,
	// 1.6732632423543772).
	Alpha float32
}

// Type returns "SeLu".
func (*SeLuConfig) Type() string { return "SeLu" }

// Build returns the SNN fork's SeLu layer (Klambauer et al. 2017): y = λx
// for x > 0, λα(exp(x) − 1) otherwise; dx = λ·dy for x > 0, λα·exp(x)·dy
// otherwise. It may run in place: it keeps x for Backward then (the fork's
// backward reads the bottom, which in place is already y, and so takes
// exp(y) for exp(x) there; dsgd gives the derivative of its forward).
func (c *SeLuConfig) Build(Context) (Layer, error) {
	l, a := float64(c.Lambda), float64(c.Alpha)
	if math.IsNaN(l) || math.IsInf(l, 0) || math.IsNaN(a) || math.IsInf(a, 0) {
		return nil, fmt.Errorf("layers: SeLu: lambda and alpha must be finite, got %g and %g", c.Lambda, c.Alpha)
	}
	return newUnary("SeLu", true, func(x float64) float64 {
		if x > 0 {
			return l * x
		}
		return l * a * math.Expm1(x)
	}, func(x, _, dy float64) float64 {
		if x > 0 {
			return l * dy
		}
		return l * a * math.Exp(x) * dy
	}), nil
}
