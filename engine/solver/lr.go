package solver

import (
	"fmt"
	"math"
)

// LR returns the learning rate at iteration iter (0-based, as Caffe's iter_)
// under the configured lr_policy, times the linear warm-up factor
// min(1, (iter+1)/WarmupIters) when WarmupIters > 0:
//
//	fixed      base_lr
//	step       base_lr · gamma^floor(iter/stepsize)
//	multistep  base_lr · gamma^k, k = the number of stepvalues ≤ iter
//	exp        base_lr · gamma^iter
//	inv        base_lr · (1 + gamma·iter)^(−power)
//	poly       base_lr · (1 − iter/max_iter)^power, 0 from max_iter on
//	sigmoid    base_lr / (1 + exp(−gamma·(iter − stepsize)))
//
// LR is a pure function of iter. Caffe's multistep keeps a counter that
// advances by at most one per iteration; with strictly increasing stepvalues
// (Validate insists) and every iteration visited, that counter equals k, and
// unlike the counter k is right after a resume at any iteration. Caffe's poly
// would take a fractional power of a negative number past max_iter; LR
// returns 0 there instead. LR computes in float64; Caffe computes in float,
// so the two can differ in the last bit of a float32.
//
// LR panics if iter is negative.
func (s *Solver) LR(iter int) float64 {
	if iter < 0 {
		panic(fmt.Sprintf("solver: LR at negative iteration %d", iter))
	}
	c := &s.cfg
	it := float64(iter)
	var rate float64
	switch c.LRPolicy {
	case "fixed":
		rate = c.BaseLR
	case "step":
		rate = c.BaseLR * math.Pow(c.Gamma, float64(iter/c.StepSize))
	case "multistep":
		k := 0
		for _, v := range c.StepValues {
			if iter >= v {
				k++
			}
		}
		rate = c.BaseLR * math.Pow(c.Gamma, float64(k))
	case "exp":
		rate = c.BaseLR * math.Pow(c.Gamma, it)
	case "inv":
		rate = c.BaseLR * math.Pow(1+float64(c.Gamma*it), -c.Power) // no FMA: same on every GOARCH
	case "poly":
		frac := 1 - it/float64(c.MaxIter)
		if frac < 0 {
			frac = 0
		}
		rate = c.BaseLR * math.Pow(frac, c.Power)
	case "sigmoid":
		rate = c.BaseLR / (1 + math.Exp(-c.Gamma*(it-float64(c.StepSize))))
	default:
		// New validated the config; reaching here means it was bypassed.
		panic(fmt.Sprintf("solver: lr_policy %q is unknown", c.LRPolicy))
	}
	if c.WarmupIters > 0 && iter+1 < c.WarmupIters {
		rate *= float64(iter+1) / float64(c.WarmupIters)
	}
	return rate
}
