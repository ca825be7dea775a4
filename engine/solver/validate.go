package solver

import (
	"errors"
	"fmt"
	"math"
)

// Caffe's defaults for the fields Validate fills when they are zero.
const (
	defaultType           = "SGD"
	defaultMomentum2      = 0.999
	defaultDelta          = 1e-8
	defaultRMSDecay       = 0.99
	defaultRegularization = "L2"
)

// Validate fills Caffe's defaults into zero-valued fields (Type "SGD",
// Momentum2 0.999, Delta 1e-8, RMSDecay 0.99, Regularization "L2") and
// rejects what Caffe's solvers would reject or what cannot train: base_lr
// ≤ 0, an unknown type, lr_policy or regularization_type, a policy missing
// its parameters (step without stepsize > 0, multistep without strictly
// increasing stepvalue, poly without max_iter > 0), momentum outside [0, 1)
// (and non-zero for AdaGrad and RMSProp, as Caffe), momentum2 or rms_decay
// outside [0, 1), delta ≤ 0, negative weight_decay, and non-finite numbers.
// Parameters a rule or policy does not use are checked only for being
// finite. lr_policy has no default: Caffe requires it.
//
// Every problem found is reported, joined into one error; each names the
// field as Caffe's SolverParameter spells it.
func (c *Config) Validate() error {
	if c.Type == "" {
		c.Type = defaultType
	}
	if c.Momentum2 == 0 {
		c.Momentum2 = defaultMomentum2
	}
	if c.Delta == 0 {
		c.Delta = defaultDelta
	}
	if c.RMSDecay == 0 {
		c.RMSDecay = defaultRMSDecay
	}
	if c.Regularization == "" {
		c.Regularization = defaultRegularization
	}

	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("solver: "+format, args...))
	}
	finite := func(name string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad("%s %v is not a finite number", name, v)
			return false
		}
		return true
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"base_lr", c.BaseLR}, {"momentum", c.Momentum}, {"momentum2", c.Momentum2},
		{"delta", c.Delta}, {"rms_decay", c.RMSDecay}, {"weight_decay", c.WeightDecay},
		{"clip_gradients", c.ClipGradients}, {"gamma", c.Gamma}, {"power", c.Power},
	} {
		finite(f.name, f.v)
	}
	// unit reports v outside [0, 1) for a finite v.
	unit := func(name string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && (v < 0 || v >= 1) {
			bad("%s %v for type %q must lie in [0, 1)", name, v, c.Type)
		}
	}

	if c.BaseLR <= 0 {
		bad("base_lr must be > 0 (got %v)", c.BaseLR)
	}
	if c.WeightDecay < 0 {
		bad("weight_decay must be >= 0 (got %v)", c.WeightDecay)
	}
	switch c.Regularization {
	case "L1", "L2":
	default:
		bad("regularization_type %q is unknown (want \"L1\" or \"L2\")", c.Regularization)
	}

	switch c.Type {
	case "SGD", "Nesterov":
		unit("momentum", c.Momentum)
	case "AdaGrad", "RMSProp":
		if c.Momentum != 0 {
			bad("momentum cannot be used with type %q (got %v, want 0)", c.Type, c.Momentum)
		}
		if c.Delta <= 0 {
			bad("delta must be > 0 (got %v)", c.Delta)
		}
		if c.Type == "RMSProp" {
			unit("rms_decay", c.RMSDecay)
		}
	case "AdaDelta":
		unit("momentum", c.Momentum)
		if c.Delta <= 0 {
			bad("delta must be > 0 (got %v)", c.Delta)
		}
	case "Adam":
		unit("momentum", c.Momentum)
		unit("momentum2", c.Momentum2)
		if c.Delta <= 0 {
			bad("delta must be > 0 (got %v)", c.Delta)
		}
	default:
		bad("type %q is unknown (want SGD, Nesterov, AdaGrad, RMSProp, AdaDelta or Adam)", c.Type)
	}

	if c.StepSize < 0 {
		bad("stepsize must be >= 0 (got %d)", c.StepSize)
	}
	if c.MaxIter < 0 {
		bad("max_iter must be >= 0 (got %d)", c.MaxIter)
	}
	if c.WarmupIters < 0 {
		bad("warmup_iters must be >= 0 (got %d)", c.WarmupIters)
	}
	gammaNonNeg := func() {
		if c.Gamma < 0 {
			bad("lr_policy %q needs gamma >= 0 (got %v)", c.LRPolicy, c.Gamma)
		}
	}
	powerNonNeg := func() {
		if c.Power < 0 {
			bad("lr_policy %q needs power >= 0 (got %v)", c.LRPolicy, c.Power)
		}
	}
	switch c.LRPolicy {
	case "fixed":
	case "step":
		if c.StepSize <= 0 {
			bad("lr_policy \"step\" needs stepsize > 0 (got %d)", c.StepSize)
		}
		gammaNonNeg()
	case "multistep":
		// No stepvalue is allowed: Caffe then keeps base_lr throughout.
		for i, v := range c.StepValues {
			if v < 0 {
				bad("lr_policy \"multistep\": stepvalue %d must be >= 0 (got %d)", i, v)
			}
			if i > 0 && v <= c.StepValues[i-1] {
				bad("lr_policy \"multistep\": stepvalue must increase strictly (stepvalue %d is %d after %d)",
					i, v, c.StepValues[i-1])
			}
		}
		gammaNonNeg()
	case "exp":
		gammaNonNeg()
	case "inv":
		gammaNonNeg()
		powerNonNeg()
	case "poly":
		if c.MaxIter <= 0 {
			bad("lr_policy \"poly\" needs max_iter > 0 (got %d)", c.MaxIter)
		}
		powerNonNeg()
	case "sigmoid":
	case "":
		bad("lr_policy is missing (want fixed, step, multistep, exp, inv, poly or sigmoid)")
	default:
		bad("lr_policy %q is unknown (want fixed, step, multistep, exp, inv, poly or sigmoid)", c.LRPolicy)
	}
	return errors.Join(errs...)
}
