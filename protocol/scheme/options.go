package scheme

import (
	"errors"
	"fmt"
)

// Options are the scheme settings a user gave (a command's flags), zero
// meaning not given; Resolve turns them into a Config's fields with the
// defaults for the rest, so that every command resolves them alike.
type Options struct {
	// Alpha is the elastic moving rate (SC17's η·ρ; an Outer scheme's
	// outer learning rate); 0: Rho's, else Info.DefaultAlphaFor.
	Alpha float64
	// Rho is SC17's ρ: Alpha = LR·Rho. Give Alpha or Rho, not both.
	Rho float64
	// LR is the solver's base learning rate, which Rho multiplies.
	LR float64
	// Groups is hybrid's number of synchronous groups; 0: DefaultGroups.
	Groups int
	// Interval is Config.Interval; 0: DefaultOuterInterval for an Outer
	// scheme, else 1.
	Interval int
	// OuterMomentum is Config.OuterMomentum, as given (0 is plain outer
	// SGD; the paper's is DiLoCoOuterMomentum).
	OuterMomentum float64
	// Resizable says the job's membership may change (dsgd's --elastic),
	// which changes the defaults of Alpha and Groups.
	Resizable bool
}

// Resolve sets c's Alpha, Groups, Interval and OuterMomentum from o, the
// defaults where o gives none; c.Name and c.Workers must be set. It
// returns a note on what an Outer scheme's outer step does (empty for
// other schemes), naming the Config fields that set it, and refuses
// both Alpha and Rho given, naming the Options fields.
func (o Options) Resolve(c *Config) (note string, err error) {
	in := c.Info()
	c.Interval = o.Interval
	if c.Interval == 0 {
		c.Interval = 1
		if in.Outer {
			c.Interval = DefaultOuterInterval
		}
	}
	c.Groups = o.Groups
	if c.Groups == 0 {
		c.Groups = DefaultGroups(c.Workers, o.Resizable)
	}
	alpha := o.Alpha
	switch {
	case o.Rho > 0 && alpha > 0:
		return "", errors.New("Options.Alpha and Options.Rho both set; give one (alpha = base_lr * rho)")
	case o.Rho > 0:
		alpha = o.LR * o.Rho
	case alpha == 0:
		alpha = in.DefaultAlphaFor(c.Workers, c.Groups, o.Resizable)
	}
	c.Alpha = float32(alpha)
	c.OuterMomentum = float32(o.OuterMomentum)
	if in.Outer {
		note = fmt.Sprintf("%s: every %d iterations (Config.Interval) the workers' mean pseudo-gradient takes an outer Nesterov SGD step, lr %g (Config.Alpha), momentum %g (Config.OuterMomentum); the solver is the inner optimizer", c.Name, max(c.Interval, 1), alpha, o.OuterMomentum)
	}
	return note, nil
}

// Check refuses an Alpha or Rho no scheme takes: Alpha (an elastic
// moving rate, or an outer learning rate) in [0, 1), 0 meaning the
// default; Rho not negative.
func (o Options) Check() error {
	switch {
	case o.Alpha < 0 || o.Alpha >= 1:
		return fmt.Errorf("Options.Alpha must be in [0,1), got %g", o.Alpha)
	case o.Rho < 0:
		return fmt.Errorf("Options.Rho must not be negative, got %g", o.Rho)
	}
	return nil
}

// BucketOf is Config.Bucket for a bucket of kib KiB, in float32 values;
// DefaultBucket(multiProcess) for a negative kib (none given).
func BucketOf(kib int, multiProcess bool) int {
	if kib < 0 {
		return DefaultBucket(multiProcess)
	}
	return kib << 10 / 4
}
