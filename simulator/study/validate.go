package study

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"dsgd/simulator/calib"
	"dsgd/simulator/sim"
)

// DefaultValidateSchemes are the schemes Validate measures by default,
// the ones the simulator aims to predict within 25%.
const DefaultValidateSchemes = "sync-ps,sync-tree,sync-ring,overlap"

// ValidateIters is the iterations per run Validate measures and
// predicts when none are given.
const ValidateIters = 150

// ForValidate sets c up for Validate on this machine, whose threads are
// shared over c.Workers[0] real workers: the iterations (ValidateIters,
// unless itersGiven), the threads each worker runs (at least 1) and,
// unless coresGiven, the cores the simulation shares over those threads
// (this machine's CPUs over the threads per worker; Cores 0 turns it
// off). On 2 cores, 4 LeNet workers came out within 25 % with it
// (overlap 5 % off, the synchronous schemes 17-25 % under: their real
// workers wait on each other more than a fair share predicts) and 33 %
// off without it (overlap; docs/benchmarks.md).
func (c *Config) ForValidate(threads int, itersGiven, coresGiven bool) {
	if !itersGiven {
		c.Iters = ValidateIters
	}
	c.Threads = max(1, threads/c.Workers[0])
	if !coresGiven {
		c.Cores = float64(runtime.NumCPU()) / float64(c.Threads)
	}
}

// validateCalibIters is the lockstep passes Validate calibrates on:
// enough for the jitter's estimate (a mean of |a-b| over the passes) to
// be within about 10%.
const validateCalibIters = 100

// validateSimIters is the fewest iterations Validate simulates, so that
// the jitter's draws average out (the mean of max(a,b) over n draws has
// a standard error of about 0.83·jitter/√n).
const validateSimIters = 2000

// Measured is one iteration's time and its parts: rank 0's phases per
// iteration of a real run (Iter, data loading included; Comm, exposed
// communication and waiting for the other workers; Compute, forward and
// backward), or the simulator's prediction of them.
type Measured struct {
	Iter, Comm, Compute time.Duration
}

// A Trainer trains a scheme for real with Validate's workers, Iters
// iterations, for the run-th time (from 0), and says what it measured.
type Trainer func(ctx context.Context, scheme string, run int) (Measured, error)

// Comparison is one scheme of Validate: the real run of median time,
// the prediction, and the prediction's error in percent of the
// measurement.
type Comparison struct {
	Scheme              string
	Measured, Predicted Measured
	Error               float64
}

// Validation is Validate's comparisons and the worst error among them,
// in percent.
type Validation struct {
	Rows  []Comparison
	Worst float64
}

// Validate trains each scheme for real with train, c.Repeat times round
// the schemes (so that a busy spell of the machine lands on several
// schemes' runs rather than all of one), then simulates it with the
// model measured under the same threads per worker and the same load
// (one copy per worker timed at once, since the real workers share this
// machine's cores) and the inproc transport's measured alpha and beta,
// and compares the median real run with the prediction. The real runs
// are every rank in one process, so overlap reduces through TRL's shared
// accumulator, and the simulation does too. With c.Cores below the
// workers, the simulation shares that many processors.
func Validate(ctx context.Context, c Config, train Trainer, r Reporter) (*Validation, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.Repeat < 1 {
		return nil, refuse("Config.Repeat must be at least 1, got %d", c.Repeat)
	}
	c.oneProcess = true
	workers := c.Workers[0]
	runs := make([][]Measured, len(c.Schemes))
	for k := range c.Repeat {
		for i, name := range c.Schemes {
			m, err := train(ctx, name, k)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], m)
		}
	}
	r.MeasuringLockstep(validateCalibIters)
	model, err := measureModels(ctx, c.Job, c.Threads, workers)
	if err != nil {
		return nil, err
	}
	nw, err := calib.Network(ctx, "inproc", calib.NetworkOptions{})
	if err != nil {
		return nil, err
	}
	r.Calibrated(model, nw)
	// With C cores below the workers: the lockstep measurement is the
	// compute with every worker sharing the cores. The simulation shares
	// C processors too (processor sharing), from the compute of one
	// worker with its share to itself, so that a worker computing while
	// others wait runs faster, as the real ones do.
	simCores := 0.0
	if float64(workers) > c.Cores && c.Cores > 0 {
		simCores = c.Cores
		model = scaleCompute(model, c.Cores/float64(workers))
		r.SharedCores(c.Cores, model)
	}
	// The prediction is an expectation: the simulator draws the jitter
	// over at least validateSimIters iterations.
	simIters := max(c.Iters, validateSimIters)
	r.Simulating(simIters)
	v := &Validation{}
	for i, name := range c.Schemes {
		cfg := sim.Config{Model: model, Network: nw, Iters: c.Warmup + simIters, Warmup: simWarmup(c.Warmup), Seed: 1, Algo: c.Algo, Finish: c.Finish, RoundDeadline: c.RoundDeadline, Cores: simCores}
		cfg.Scheme = c.schemeConfig(name, workers, model.Layout(), c.Warmup+simIters)
		res, err := sim.Run(cfg)
		if err != nil {
			return nil, fmt.Errorf("simulating %s: %w", name, err)
		}
		// The real node books waiting for the other worker's gradients as
		// exposed communication (it cannot tell them apart); the simulator
		// splits it into Comm and Wait, so the comparison adds them.
		row := Comparison{Scheme: name, Measured: medianRun(runs[i], func(m Measured) time.Duration { return m.Iter }),
			Predicted: Measured{Iter: res.Iter, Comm: res.Comm + res.Wait, Compute: res.Compute}}
		row.Error = 100 * (float64(row.Predicted.Iter) - float64(row.Measured.Iter)) / float64(row.Measured.Iter)
		v.Worst = max(v.Worst, math.Abs(row.Error))
		r.Compared(row)
		v.Rows = append(v.Rows, row)
	}
	return v, nil
}

// medianRun is the run whose key is the median of rs (the lower of the
// two middle ones for an even count).
func medianRun[T any](rs []T, key func(T) time.Duration) T {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[(len(s)-1)/2]
}

// scaleCompute is m with every layer's forward and backward time and the
// jitter multiplied by k.
func scaleCompute(m sim.Model, k float64) sim.Model {
	m.Layers = slices.Clone(m.Layers)
	for i := range m.Layers {
		m.Layers[i].Forward = time.Duration(float64(m.Layers[i].Forward) * k)
		m.Layers[i].Backward = time.Duration(float64(m.Layers[i].Backward) * k)
	}
	m.Jitter = time.Duration(float64(m.Jitter) * k)
	return m
}
