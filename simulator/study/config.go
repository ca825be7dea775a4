package study

import (
	"fmt"
	"strings"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/compress"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/simulator/sim"
	"dsgd/training/job"
)

// Config is a study: the schemes and worker counts simulated, the model
// (uniform, or a Caffe job measured here), the network, and the schemes'
// settings. Its errors name its fields ("Config.Iters must be positive");
// dsgd simulate renames them to its flags. The zero value is not a study
// of defaults: dsgd simulate's flags set every field.
type Config struct {
	// Schemes are the schemes simulated, each at every count of Workers
	// (one table block and one plot line each).
	Schemes []string
	// Workers are the worker counts, increasing (ParseWorkers reads a
	// sweep); Validate takes the first, at least 2.
	Workers []int

	// Uniform: the model is Params parameters in Layers equal layers
	// whose forward plus backward time is ComputeMS milliseconds, not Job
	// measured with the real engine.
	Uniform        bool
	Params, Layers int
	ComputeMS      float64
	// Job is the Caffe job whose train net is measured, with Threads
	// goroutines per layer (per worker, for Validate).
	Job     job.Options
	Threads int
	// Calibrate measures this machine: a uniform model's add rate, and
	// the tcp transport on loopback where Network is nil.
	Calibrate bool
	// Network is the interconnect; nil: sim.Presets["10gbe"], or with
	// Calibrate this machine's tcp transport as measured.
	Network *sim.Network

	// Iters are the simulated iterations timed per run (Validate: the
	// real ones too), after Warmup untimed ones.
	Iters, Warmup int
	// Seed seeds the simulator's draws (Validate's are seed 1).
	Seed uint64
	// Timeline, if not empty, is the file every run's virtual-time trace
	// is written to (Chrome trace JSON: one process per scheme and P, one
	// track per rank).
	Timeline string

	// Pack sends all layers as one message.
	Pack bool
	// BucketKiB is overlap's KiB of consecutive layers' gradients per
	// allreduce (in one process, Validate's, per accumulate into TRL's
	// shared accumulator); -1: dsgd train's default, 1024 across
	// processes and every block on its own in one process.
	BucketKiB int
	// Interval is the asynchronous schemes' iterations between exchanges
	// with the center, and local-sgd's inner steps; OuterInterval is
	// diloco's and streaming-diloco's inner steps between averages (0:
	// scheme.DefaultOuterInterval, as dsgd train's).
	Interval, OuterInterval int
	// Staleness is ssp's bound; Variant sync-easgd's (1, 2 or 3);
	// Groups hybrid's synchronous groups (0: 2, or 1 for an odd count).
	Staleness, Variant, Groups int
	// Alpha is the elastic schemes' moving rate (0: 0.9/workers, hybrid
	// 0.9/groups) and diloco's outer learning rate (0: 0.7);
	// OuterMomentum the outer optimizer's Nesterov momentum.
	Alpha, OuterMomentum float64
	// Fragments, Overlap, Mix and OuterBits are streaming-diloco's
	// (scheme.Config's fields of those names).
	Fragments, Overlap, OuterBits int
	Mix                           float32
	// Algo is the allreduce algorithm; Finish how the asynchronous
	// schemes finish; RoundDeadline weedout's (0: wait for all).
	Algo          collective.Algorithm
	Finish        center.Finish
	RoundDeadline time.Duration
	// Straggle, if not nil, slows a worker (its Rank in the runs with
	// more workers than it, or any with probability Prob).
	Straggle *sim.Straggler
	// Compress is the synchronous schemes' gradient compression, in
	// compress.Parse's syntax ("none": none), after CompressWarmup plain
	// iterations.
	Compress       string
	CompressWarmup int
	// Cores are the processors the workers' computes share (processor
	// sharing; 0: a processor per worker).
	Cores float64
	// Repeat is Validate's real runs per scheme, interleaved.
	Repeat int

	// oneProcess: the ranks share one process (Validate's real runs), so
	// overlap uses TRL's shared accumulator.
	oneProcess bool
}

// A ConfigError is a Config a study refuses; its message names the
// fields.
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

func refuse(format string, a ...any) error { return &ConfigError{fmt.Sprintf(format, a...)} }

// Check refuses the settings that Sweep and Validate share (they call
// it themselves): a caller that prints before calling them can refuse c
// first.
func (c Config) Check() error {
	switch {
	case c.Iters <= 0:
		return refuse("Config.Iters must be positive, got %d", c.Iters)
	case c.Warmup < 0:
		return refuse("Config.Warmup must not be negative, got %d", c.Warmup)
	case len(c.Workers) == 0:
		return refuse("Config.Workers is empty")
	case c.BucketKiB < -1:
		return refuse("Config.BucketKiB must not be negative, got %d", c.BucketKiB)
	case c.Interval < 1:
		return refuse("Config.Interval must be at least 1, got %d", c.Interval)
	case c.Groups < 0:
		return refuse("Config.Groups must not be negative, got %d", c.Groups)
	case c.RoundDeadline < 0:
		return refuse("Config.RoundDeadline must not be negative, got %v", c.RoundDeadline)
	}
	if err := (scheme.Options{Alpha: c.Alpha}).Check(); err != nil {
		// The scheme's rule, said of this Config's field.
		return refuse("%s", strings.Replace(err.Error(), "Options.Alpha", "Config.Alpha", 1))
	}
	return nil
}

// checkSweep refuses what Sweep cannot simulate, before anything is
// measured: the uniform model's sizes, and every (scheme, P) on a
// stand-in layout (the real layout is the model's).
func (c Config) checkSweep() error {
	if c.Uniform {
		switch {
		case c.Params <= 0:
			return refuse("Config.Params must be a positive parameter count (with Config.ComputeMS), got %d", c.Params)
		case !(c.ComputeMS > 0):
			return refuse("Config.ComputeMS must be a positive time in ms (with Config.Params), got %g", c.ComputeMS)
		case c.Layers < 1 || c.Layers > c.Params:
			return refuse("Config.Layers must be between 1 and Config.Params, got %d", c.Layers)
		}
	}
	for _, name := range c.Schemes {
		for _, p := range c.Workers {
			stand := scheme.Layout{N: 1, Blocks: []scheme.Range{{Lo: 0, Hi: 1}}}
			if in, _ := scheme.Lookup(name); in.Streaming {
				// As many blocks as fragments: whether the model has
				// them is checked on its own layout.
				stand = scheme.Layout{}
				for range max(c.Fragments, 1) {
					stand.Blocks = append(stand.Blocks, scheme.Range{Lo: stand.N, Hi: stand.N + 1<<16})
					stand.N += 1 << 16
				}
			}
			sc := c.schemeConfig(name, p, stand, c.Warmup+c.Iters)
			if err := sc.Validate(); err != nil {
				return refuse("Config.Schemes %s with Config.Workers %d: %v", name, p, err)
			}
		}
	}
	return nil
}

// compression is Compress and CompressWarmup read as dsgd train reads
// them: nil for none; fp16 is the tcp wire's encoding, which the
// simulator does not model.
func (c Config) compression() (*sim.Compression, error) {
	if c.CompressWarmup < 0 {
		return nil, refuse("Config.CompressWarmup %d is negative", c.CompressWarmup)
	}
	spec, err := compress.Parse(c.Compress)
	if err != nil {
		return nil, refuse("Config.Compress: %v", err)
	}
	switch spec.Kind {
	case compress.None:
		return nil, nil
	case compress.FP16:
		return nil, refuse("Config.Compress %q: the tcp wire's half precision is not modelled (powersgd:R, topk:F, sign and bf16 are)", c.Compress)
	}
	return &sim.Compression{Spec: spec, Warmup: c.CompressWarmup}, nil
}

// schemeConfig is the scheme config of one run, with train's defaults
// for the moving rate and hybrid's groups.
func (c Config) schemeConfig(name string, workers int, layout scheme.Layout, iters int) scheme.Config {
	bucketSet := c.BucketKiB >= 0
	sc := scheme.Config{Name: name, Workers: workers, MaxIter: iters, Pack: c.Pack, Layout: layout,
		Bucket:    scheme.BucketOf(c.BucketKiB, true), // across processes, as dsgd train
		Staleness: c.Staleness, Variant: c.Variant}
	opts := scheme.Options{Alpha: c.Alpha, Groups: c.Groups, Interval: c.Interval, OuterMomentum: c.OuterMomentum}
	if sc.Info().Outer {
		opts.Interval = c.OuterInterval
	}
	// Options' only refusal is Alpha with Rho, which a study has not.
	_, _ = opts.Resolve(&sc)
	if c.oneProcess && workers > 1 {
		// Every rank in one process, as dsgd train's default: overlap
		// reduces through TRL's shared accumulator, layer by layer
		// unless BucketKiB says otherwise.
		sc.Accumulate = sc.Info().Accumulator
		if sc.Accumulate && !bucketSet {
			sc.Bucket = 0
		}
	}
	if sc.Info().Streaming {
		sc.Fragments, sc.Overlap, sc.Mix, sc.OuterBits = c.Fragments, c.Overlap, c.Mix, c.OuterBits
	}
	sc.Aligned = c.Finish != center.FinishOwn
	return sc
}

// simWarmup is sim.Config.Warmup for w warm-up iterations (sim reads 0
// as its default and a negative count as none).
func simWarmup(w int) int {
	if w == 0 {
		return -1
	}
	return w
}
