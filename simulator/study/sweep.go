package study

import (
	"context"
	"fmt"
	"os"
	"time"

	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/simulator/calib"
	"dsgd/simulator/sim"
	"dsgd/training/job"
	"dsgd/training/timeline"
)

// A Reporter hears of a study's progress, in order, as it happens: what
// is about to be measured, what was, and each run. dsgd simulate prints
// it. Quiet hears nothing.
type Reporter interface {
	// AddRate: a uniform model's add rate was measured (Calibrate), in
	// float32 additions per second.
	AddRate(rate float64)
	// MeasuringModel: Sweep is about to measure the Job's net.
	MeasuringModel()
	// MeasuringNetwork: Sweep is about to measure the tcp transport on
	// loopback.
	MeasuringNetwork()
	// Start: the model and network Sweep simulates.
	Start(m sim.Model, nw sim.Network)
	// Baseline: T1, one worker's iteration under seq; the runs follow.
	Baseline(t1 time.Duration)
	// Run: one (scheme, P) of Sweep simulated.
	Run(r Run)
	// MeasuringLockstep: Validate's real runs are done, and it is about
	// to measure the model (as many copies as workers, at once and in
	// lockstep, passes times) and the inproc transport.
	MeasuringLockstep(passes int)
	// Calibrated: the model and network Validate measured.
	Calibrated(m sim.Model, nw sim.Network)
	// SharedCores: Validate's workers oversubscribe the cores, and are
	// simulated on that many shared processors from the model alone (one
	// worker computing with its share to itself).
	SharedCores(cores float64, alone sim.Model)
	// Simulating: Validate simulates iters iterations per scheme, seed 1.
	Simulating(iters int)
	// Compared: one scheme measured and predicted.
	Compared(c Comparison)
}

// Quiet is a Reporter that hears nothing; embed it to hear some events.
type Quiet struct{}

// AddRate does nothing.
func (Quiet) AddRate(float64) {}

// MeasuringModel does nothing.
func (Quiet) MeasuringModel() {}

// MeasuringNetwork does nothing.
func (Quiet) MeasuringNetwork() {}

// Start does nothing.
func (Quiet) Start(sim.Model, sim.Network) {}

// Baseline does nothing.
func (Quiet) Baseline(time.Duration) {}

// Run does nothing.
func (Quiet) Run(Run) {}

// MeasuringLockstep does nothing.
func (Quiet) MeasuringLockstep(int) {}

// Calibrated does nothing.
func (Quiet) Calibrated(sim.Model, sim.Network) {}

// SharedCores does nothing.
func (Quiet) SharedCores(float64, sim.Model) {}

// Simulating does nothing.
func (Quiet) Simulating(int) {}

// Compared does nothing.
func (Quiet) Compared(Comparison) {}

// Run is one simulated (scheme, P) of a sweep, with its weak scaling
// against T1: Speedup = P*T1/T(P), Efficiency = T1/T(P).
type Run struct {
	Scheme              string
	Workers             int
	Result              sim.Result
	Speedup, Efficiency float64
}

// Result is a sweep: the model and network simulated, T1 (one worker's
// iteration under seq) and every run, scheme by scheme.
type Result struct {
	Model   sim.Model
	Network sim.Network
	T1      time.Duration
	Runs    []Run
}

// Sweep simulates every scheme at every worker count in virtual time
// (package sim) on the model and network c describes, measuring them
// here as c says, and reports each run to r as it is simulated. A
// *ConfigError refuses c; the settings of the model and the schemes are
// all checked before anything is measured.
func Sweep(ctx context.Context, c Config, r Reporter) (*Result, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if err := c.checkSweep(); err != nil {
		return nil, err
	}
	model, err := c.model(ctx, r)
	if err != nil {
		return nil, err
	}
	var nw sim.Network
	switch {
	case c.Network != nil:
		nw = *c.Network
	case c.Calibrate:
		r.MeasuringNetwork()
		if nw, err = calib.Network(ctx, "tcp", calib.NetworkOptions{}); err != nil {
			return nil, err
		}
	default:
		nw = sim.Presets["10gbe"]
	}
	var tl *timeline.Writer
	if c.Timeline != "" {
		tf, err := os.Create(c.Timeline)
		if err != nil {
			return nil, fmt.Errorf("Config.Timeline: %w", err)
		}
		defer tf.Close()
		tl = timeline.New(tf, time.Time{})
	}
	r.Start(model, nw)
	comp, err := c.compression()
	if err != nil {
		return nil, err
	}
	if c.Cores < 0 {
		return nil, refuse("Config.Cores %v must not be negative", c.Cores)
	}
	iters := c.Warmup + c.Iters
	base := sim.Config{Model: model, Network: nw, Iters: iters, Warmup: simWarmup(c.Warmup), Seed: c.Seed, Algo: c.Algo, RoundDeadline: c.RoundDeadline, Finish: c.Finish, Cores: c.Cores, Compress: comp}
	res := &Result{Model: model, Network: nw, T1: c.seqTime(base)}
	r.Baseline(res.T1)
	pid := 0
	for _, name := range c.Schemes {
		for _, p := range c.Workers {
			cfg := base
			cfg.Scheme = c.schemeConfig(name, p, model.Layout(), iters)
			if st := c.Straggle; st != nil && (st.Rank < p || st.Prob > 0) {
				cfg.Straggle = &sim.Straggler{Rank: st.Rank, Prob: st.Prob, Delay: st.Delay}
			}
			if tl != nil {
				traceRun(tl, pid, &cfg)
				pid++
			}
			out, err := sim.Run(cfg)
			if err != nil {
				return nil, fmt.Errorf("%s with %d workers: %w", name, p, err)
			}
			run := Run{Scheme: name, Workers: p, Result: out}
			run.Speedup, run.Efficiency = weakScaling(res.T1, out.Iter, p)
			r.Run(run)
			res.Runs = append(res.Runs, run)
		}
	}
	if tl != nil {
		if err := tl.Close(); err != nil {
			return nil, fmt.Errorf("Config.Timeline %s: %w", c.Timeline, err)
		}
	}
	return res, nil
}

// model is the model c describes: uniform from Params and ComputeMS,
// else the Job's net measured here.
func (c Config) model(ctx context.Context, r Reporter) (sim.Model, error) {
	if c.Uniform {
		m := sim.Layered(c.Params, time.Duration(c.ComputeMS*float64(time.Millisecond)), c.Layers)
		if c.Calibrate {
			m.AddRate = calib.AddRate(calib.DefaultAddLen, 50*time.Millisecond)
			r.AddRate(m.AddRate)
		}
		return m, nil
	}
	r.MeasuringModel()
	return measureModel(ctx, c.Job, c.Threads)
}

// measureModel calibrates the job's train net with threads goroutines
// per layer and the solver stepping on as many.
func measureModel(ctx context.Context, o job.Options, threads int) (sim.Model, error) {
	j, net, err := job.TrainNet(ctx, o, threads)
	if err != nil {
		return sim.Model{}, err
	}
	defer j.Close()
	// The model is of a training run, which needs the solver's rate.
	if err := j.Solver.CheckTrain(); err != nil {
		return sim.Model{}, err
	}
	sc := j.Solver.Solver
	model, err := calib.Model(ctx, net, calib.ModelOptions{Warmup: 3, Iters: 20, Solver: &sc, Threads: threads})
	if err != nil {
		return sim.Model{}, err
	}
	model.Name = j.Name
	return model, nil
}

// measureModels calibrates copies nets of the job's train net at once
// and in lockstep (calib.Concurrent), threads goroutines each, as that
// many synchronous workers run: the model carries their compute jitter.
func measureModels(ctx context.Context, o job.Options, threads, copies int) (sim.Model, error) {
	nets := make([]*model.Net, copies)
	var name string
	var sc solver.Config
	for i := range nets {
		j, net, err := job.TrainNet(ctx, o, threads)
		if err != nil {
			return sim.Model{}, err
		}
		defer j.Close()
		if err := j.Solver.CheckTrain(); err != nil {
			return sim.Model{}, err
		}
		nets[i], name, sc = net, j.Name, j.Solver.Solver
	}
	mod, err := calib.Concurrent(ctx, nets, calib.ModelOptions{Warmup: 3, Iters: validateCalibIters, Solver: &sc, Threads: threads})
	if err != nil {
		return sim.Model{}, err
	}
	mod.Name = name
	return mod, nil
}

// seqTime is T1: one worker's simulated iteration under seq, or, should
// the simulator refuse seq, the model's compute and update.
func (c Config) seqTime(base sim.Config) time.Duration {
	cfg := base
	cfg.Scheme = c.schemeConfig("seq", 1, base.Model.Layout(), base.Iters)
	cfg.Straggle = nil
	if res, err := sim.Run(cfg); err == nil && res.Iter > 0 {
		return res.Iter
	}
	return base.Model.Compute() + base.Model.Update
}

// weakScaling is the speedup P*T1/T(P) and efficiency T1/T(P) of an
// iteration time tp against one worker's t1.
func weakScaling(t1, tp time.Duration, p int) (speedup, efficiency float64) {
	if tp <= 0 {
		return 0, 0
	}
	efficiency = float64(t1) / float64(tp)
	return float64(p) * efficiency, efficiency
}

// traceRun makes cfg report its spans to tl as process pid.
func traceRun(tl *timeline.Writer, pid int, cfg *sim.Config) {
	sc := cfg.Scheme
	tl.Process(pid, fmt.Sprintf("%s, P=%d", sc.Name, sc.Workers))
	if uses, _ := sc.UsesCenter(); uses {
		tl.Track(pid, sc.Ranks(), "center")
	}
	for r := 0; r < sc.Ranks(); r++ {
		name := fmt.Sprintf("worker %d", r)
		if r >= sc.Workers {
			name = sc.Info().RoleName()
		}
		tl.Track(pid, r, name)
	}
	span := tl.Virtual(pid)
	cfg.Trace = func(e sim.TraceEvent) { span(e.Rank, e.Name, e.Cat, e.Start, e.Dur) }
}
