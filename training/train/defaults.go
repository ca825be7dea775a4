package train

import "fmt"

// PlainSGD applies the update rule of a scheme whose paper's is plain
// SGD (scheme.Info.PlainSGD), for a run that chose no momentum: SC17
// Eq. 1 is plain SGD, for Sync EASGD (Alg. 2–3) as for the others
// (measgd is the one with momentum, Eq. 5–6). It sets the solver's
// momentum to 0 and, since momentum mu multiplies SGD's steady-state
// step by 1/(1-mu), divides base_lr by 1 - mu to keep the solver's step
// size. It returns the momentum mu it divided by, 0 when base_lr is
// left as it was (no momentum in (0, 1)).
func (c *Config) PlainSGD() (mu float64) {
	if m := c.Solver.Momentum; m > 0 && m < 1 {
		c.Solver.BaseLR /= 1 - m
		mu = m
	}
	c.Solver.Momentum = 0
	return mu
}

// ScaleLR scales the solver's base_lr by the worker count
// (Config.Workers) by rule: "none" leaves it; "linear" multiplies it by
// the workers (Goyal et al.'s rule, for a global batch the workers'
// sum); "inverse" divides it by them (one worker's step size overall,
// for schemes whose workers' steps land in the same weights). It refuses
// another rule.
func (c *Config) ScaleLR(rule string) error {
	switch rule {
	case "none":
	case "linear":
		c.Solver.BaseLR *= float64(max(c.Workers, 1))
	case "inverse":
		c.Solver.BaseLR /= float64(c.Workers)
	default:
		return fmt.Errorf("Config.ScaleLR rule %q: choose none, linear or inverse", rule)
	}
	return nil
}
