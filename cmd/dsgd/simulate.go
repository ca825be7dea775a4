package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/cmd/internal/report"
	"dsgd/comm/collective"
	"dsgd/comm/compress"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/simulator/calib"
	"dsgd/simulator/sim"
	"dsgd/training/job"
	"dsgd/training/timeline"
	"dsgd/training/train"
)

// simFlags are the flags of dsgd simulate.
type simFlags struct {
	m                          modelFlags
	cores                      *float64
	compress                   *string
	compressWarmup             *int
	schemes, workers, network  *string
	params, layers             *int
	computeMS                  *float64
	calibrate, validate, pack  *bool
	straggle, plot, timeline   *string
	iters, warmup, repeat      *int
	interval, staleness        *int
	variant, groups, bucketKiB *int
	alpha, outerMomentum       *float64
	streaming                  streamingFlags
	fs                         *flag.FlagSet
	finish, algo               *string
	roundDeadline              *time.Duration
}

func (f *simFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	f.m.register(fs)
	f.schemes = fs.String("scheme", "sync-tree", "scheme, or comma-separated schemes (one table block and one plot line each): "+strings.Join(scheme.Names(), ", "))
	f.workers = fs.String("workers", "1,2,4,8,16", "worker count `P`, or a sweep: 1,2,4,8 or 1,2,4,...,4096 (\"...\" continues the doubling, or the step, of the two counts before it)")
	f.params = fs.Int("params", 0, "a model of `N` parameters in one layer, instead of --model (needs --compute-ms)")
	f.computeMS = fs.Float64("compute-ms", 0, "with --params: forward plus backward time of one iteration in `ms`")
	f.layers = fs.Int("layers", 1, "with --params: split the parameters and the compute into `L` equal layers (so overlap has layers to overlap)")
	f.network = fs.String("network", "", "the interconnect: fdr-ib, qdr-ib, 10gbe (SC17 Table 2) or alpha=7.2us,beta=0.9ns (default 10gbe; with --calibrate, this machine's tcp transport as measured)")
	f.calibrate = fs.Bool("calibrate", false, "measure this machine: the model's per-layer times with the real engine (always done for --model), the add rate, and with no --network the tcp transport's alpha and beta")
	f.straggle = fs.String("straggle", "", "a straggler: RANK:DELAY (that worker slower by DELAY every iteration) or p=PROB:DELAY (any worker, with that probability per iteration)")
	f.iters = fs.Int("iters", 20, "simulated iterations timed per run")
	f.warmup = fs.Int("warmup", 2, "simulated iterations run first and not timed")
	f.pack = fs.Bool("pack", true, "send all layers as one message (off: one message per layer)")
	f.bucketKiB = fs.Int("bucket", -1, "overlap: KiB of consecutive layers' gradients per allreduce or, with --validate (one process), per accumulate into TRL's shared accumulator (0: every block on its own; default: 1024 across processes, 0 in one process, as dsgd train)")
	f.algo = fs.String("allreduce", "auto", "allreduce algorithm: auto (the scheme's choice), tree, ring, rd")
	f.interval = fs.Int("interval", 1, "asynchronous schemes: iterations between exchanges with the center; local-sgd, diloco and streaming-diloco: inner steps between averages (diloco's default 100, as dsgd train)")
	f.staleness = fs.Int("staleness", 3, "ssp: the staleness bound")
	f.outerMomentum = fs.Float64("outer-momentum", scheme.DiLoCoOuterMomentum, "diloco: the outer optimizer's Nesterov momentum (the paper's 0.9; 0 for plain outer SGD)")
	f.alpha = fs.Float64("alpha", 0, "elastic schemes: moving rate (default 0.9/workers; hybrid 0.9/groups); diloco: the outer learning rate (default 0.7)")
	f.streaming.register(fs)
	f.variant = fs.Int("variant", 3, "sync-easgd: 1 separate master, 2 center on worker 0, 3 as 2 overlapped")
	f.groups = fs.Int("groups", 0, "hybrid: synchronous groups (default 2, or 1 for an odd worker count)")
	f.finish = fs.String("finish", "own", "asynchronous schemes: own, master, first or average")
	f.roundDeadline = fs.Duration("round-deadline", 0, "weedout: close a round this long after its first gradients arrive (0: wait for all)")
	f.plot = fs.String("plot", "", "write iteration time and weak-scaling efficiency against P to `PREFIX`-time.{png,svg} and PREFIX-efficiency.{png,svg}")
	f.timeline = fs.String("timeline", "", "write every run's virtual-time trace to `FILE` (Chrome trace JSON: one process per scheme and P, one track per rank)")
	f.validate = fs.Bool("validate", false, "train sync-ps, sync-tree, sync-ring and overlap for real with 2 workers here, simulate the same with the calibrated model and inproc network, and print measured against predicted")
	f.repeat = fs.Int("repeat", 3, "with --validate: real runs per scheme, interleaved; the median one is compared")
	f.compress = fs.String("compress", "none", "the synchronous schemes' gradient compression, as dsgd train's: none, powersgd:R (two allreduces of rank-R factors per weight matrix), topk:F or sign (an allgather of every worker's pairs or packed signs), or bf16 (float32 sums: the plain traffic)")
	f.compressWarmup = fs.Int("compress-warmup", 0, "with --compress: iterations of plain allreduces first")
	f.cores = fs.Float64("cores", 0, "the processors the workers' computes share: k workers computing at once each run at min(1, cores/k) of the model's speed, as workers oversubscribing one machine do (0: a processor per worker; --validate's default: this machine's cores over the threads per worker when its workers oversubscribe them, 0 to turn it off)")
}

// simRun is one simulated (scheme, P).
type simRun struct {
	scheme  string
	workers int
	res     sim.Result
}

// runSimulate runs schemes in virtual time (package sim) on a model and
// network, for one worker count or a sweep, and prints per-iteration time,
// its breakdown, and weak-scaling speedup and efficiency.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	var f simFlags
	f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	given := map[string]string{} // the flags set, with their values
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name], set[fl.Name] = fl.Value.String(), true })
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "dsgd simulate: "+format+"\n", a...)
		return errUsage
	}
	if *f.iters <= 0 {
		return bad("--iters must be positive, got %d", *f.iters)
	}
	if *f.warmup < 0 {
		return bad("--warmup must not be negative, got %d", *f.warmup)
	}
	if *f.repeat < 1 {
		return bad("--repeat must be at least 1, got %d", *f.repeat)
	}
	if *f.validate {
		return runValidate(ctx, &f, given, stdout, stderr)
	}
	ps, err := parseWorkers(*f.workers)
	if err != nil {
		return bad("--workers: %v", err)
	}
	maxP := ps[len(ps)-1]
	for _, p := range ps {
		maxP = max(maxP, p)
	}
	names := strings.Split(*f.schemes, ",")
	seed := uint64(1)
	if f.m.seed >= 0 {
		seed = uint64(f.m.seed)
	}
	opts, err := f.simOptions(maxP)
	if err != nil {
		return bad("%v", err)
	}
	// The flags are all checked before anything is measured.
	var nw sim.Network
	if set["network"] {
		if nw, err = sim.ParseNetwork(*f.network); err != nil {
			return bad("--network: %v", err)
		}
	}
	if set["params"] || set["compute-ms"] {
		switch {
		case *f.params <= 0:
			return bad("--params must be a positive parameter count (with --compute-ms), got %d", *f.params)
		case !(*f.computeMS > 0):
			return bad("--compute-ms must be a positive time in ms (with --params), got %g", *f.computeMS)
		case set["model"] || set["net"] || set["solver"]:
			return bad("--params and --compute-ms describe the model; give them or --model/--solver, not both")
		case *f.layers < 1 || *f.layers > *f.params:
			return bad("--layers must be between 1 and --params, got %d", *f.layers)
		}
	} else if set["layers"] {
		return bad("--layers splits a --params model; a --model has its own layers")
	}
	// Every (scheme, P) is checked on a stand-in layout before anything is
	// measured; the real layout is the model's.
	for _, name := range names {
		for _, p := range ps {
			stand := scheme.Layout{N: 1, Blocks: []scheme.Range{{Lo: 0, Hi: 1}}}
			if in, _ := scheme.Lookup(name); in.Streaming {
				// As many blocks as fragments: whether the model has
				// them is checked on its own layout.
				stand = scheme.Layout{}
				for range max(opts.fragments, 1) {
					stand.Blocks = append(stand.Blocks, scheme.Range{Lo: stand.N, Hi: stand.N + 1<<16})
					stand.N += 1 << 16
				}
			}
			sc := opts.schemeConfig(name, p, stand, *f.warmup+*f.iters)
			if err := sc.Validate(); err != nil {
				return bad("--scheme %s with --workers %d: %v", name, p, asFlags(err, trainFlagNames))
			}
		}
	}

	model, err := f.simModel(ctx, set, stdout)
	if err != nil {
		return err
	}
	switch {
	case set["network"]:
	case *f.calibrate:
		fmt.Fprintf(stdout, "dsgd simulate: measuring the tcp transport on loopback (ping-pong, 4 B to 16 MiB)...\n")
		if nw, err = calib.Network(ctx, "tcp", calib.NetworkOptions{}); err != nil {
			return err
		}
	default:
		nw = sim.Presets["10gbe"]
	}

	var tl *timeline.Writer
	if *f.timeline != "" {
		tf, err := os.Create(*f.timeline)
		if err != nil {
			return fmt.Errorf("--timeline: %w", err)
		}
		defer tf.Close()
		tl = timeline.New(tf, time.Time{})
	}

	fmt.Fprintf(stdout, "dsgd simulate: model %s, %d parameters (%.1f MB of float32), compute %.3f ms + update %.3f ms per iteration\n",
		model.Name, model.Params(), float64(4*model.Params())/1e6, ms(modelCompute(model)), ms(model.Update))
	fmt.Fprintf(stdout, "dsgd simulate: network %s; %d iterations after %d warm-up, seed %d\n", nw, *f.iters, *f.warmup, seed)
	comp, err := parseSimCompress(*f.compress, *f.compressWarmup)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd simulate: %v\n", err)
		return errUsage
	}
	if *f.cores < 0 {
		fmt.Fprintf(stderr, "dsgd simulate: --cores %v must not be negative\n", *f.cores)
		return errUsage
	}
	base := sim.Config{Model: model, Network: nw, Iters: *f.warmup + *f.iters, Warmup: simWarmup(*f.warmup), Seed: seed, Algo: opts.algo, RoundDeadline: opts.roundDeadline, Finish: opts.finish, Cores: *f.cores, Compress: comp}
	t1 := seqTime(base, opts)
	fmt.Fprintf(stdout, "T1 = %.3f ms, one worker's iteration under seq (no communication). Weak scaling: every worker trains its own batch, so\n", ms(t1))
	fmt.Fprintf(stdout, "  speedup = P*T1/T(P) (throughput over one worker's); efficiency = T1/T(P) = speedup/P.\n")
	fmt.Fprintf(stdout, "Times are worker 0's means per iteration; comm is exposed communication, wait is waiting for other workers, comm %% = (comm + wait) / iteration.\n\n")

	var runs []simRun
	pid := 0
	fmt.Fprintf(stdout, "%-16s %6s %10s %10s %10s %10s %7s %9s %10s\n", "scheme", "P", "iter ms", "compute ms", "comm ms", "wait ms", "comm %", "speedup", "efficiency")
	for _, name := range names {
		for _, p := range ps {
			cfg := base
			cfg.Scheme = opts.schemeConfig(name, p, model.Layout(), *f.warmup+*f.iters)
			if st := opts.straggle; st != nil && (st.Rank < p || st.Prob > 0) {
				cfg.Straggle = &sim.Straggler{Rank: st.Rank, Prob: st.Prob, Delay: st.Delay}
			}
			if tl != nil {
				traceRun(tl, pid, &cfg)
				pid++
			}
			res, err := sim.Run(cfg)
			if err != nil {
				return fmt.Errorf("%s with %d workers: %w", name, p, err)
			}
			sp, eff := weakScaling(t1, res.Iter, p)
			fmt.Fprintf(stdout, "%-16s %6d %10.3f %10.3f %10.3f %10.3f %6.1f%% %9.2f %10.3f\n",
				name, p, ms(res.Iter), ms(res.Compute), ms(res.Comm), ms(res.Wait), 100*res.CommRatio, sp, eff)
			runs = append(runs, simRun{name, p, res})
		}
	}
	if opts.straggle != nil && opts.straggle.Prob == 0 {
		fmt.Fprintf(stdout, "(the straggler, rank %d, is in the runs with more than %d workers)\n", opts.straggle.Rank, opts.straggle.Rank)
	}
	if tl != nil {
		if err := tl.Close(); err != nil {
			return fmt.Errorf("--timeline %s: %w", *f.timeline, err)
		}
		fmt.Fprintf(stdout, "timeline: %s\n", *f.timeline)
	}
	if *f.plot != "" {
		if err := plotSweep(*f.plot, names, runs, t1, model.Name, nw.Name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plots: %[1]s-time.png, %[1]s-time.svg, %[1]s-efficiency.png, %[1]s-efficiency.svg\n", *f.plot)
	}
	return nil
}

// simOptions are the scheme and sim settings the flags give, checked.
type simOptions struct {
	pack                                       bool
	bucket, interval, staleness, variant, grps int
	intervalGiven                              bool // --interval was set: diloco's default H does not apply
	alpha, outerMomentum                       float64
	fragments, overlap, outerBits              int
	mix                                        float32
	algo                                       collective.Algorithm
	finish                                     center.Finish
	roundDeadline                              time.Duration
	straggle                                   *train.Straggler
	// oneProcess: the ranks share one process (--validate's real runs),
	// so overlap uses TRL's shared accumulator; bucketSet: --bucket was
	// given.
	oneProcess, bucketSet bool
}

func (f *simFlags) simOptions(maxWorkers int) (simOptions, error) {
	o := simOptions{pack: *f.pack, interval: *f.interval, intervalGiven: flagGiven(f.fs, "interval"), staleness: *f.staleness, variant: *f.variant, grps: *f.groups, alpha: *f.alpha, outerMomentum: *f.outerMomentum, roundDeadline: *f.roundDeadline}
	var err error
	switch {
	case *f.bucketKiB < -1:
		return o, fmt.Errorf("--bucket must not be negative, got %d", *f.bucketKiB)
	case *f.interval < 1:
		return o, fmt.Errorf("--interval must be at least 1, got %d", *f.interval)
	case *f.groups < 0:
		return o, fmt.Errorf("--groups must not be negative, got %d", *f.groups)
	case *f.alpha < 0 || *f.alpha >= 1:
		return o, fmt.Errorf("--alpha must be in [0,1), got %g", *f.alpha)
	case *f.roundDeadline < 0:
		return o, fmt.Errorf("--round-deadline must not be negative, got %v", *f.roundDeadline)
	}
	if err := f.streaming.apply(f.fs, slices.ContainsFunc(strings.Split(*f.schemes, ","), func(n string) bool { in, _ := scheme.Lookup(n); return in.Streaming }), &o.fragments, &o.overlap, &o.mix, &o.outerBits); err != nil {
		return o, err
	}
	o.bucket = 1024 << 10 / 4 // across processes: DDP's buckets, as dsgd train
	if *f.bucketKiB >= 0 {
		o.bucket, o.bucketSet = *f.bucketKiB<<10/4, true
	}
	if o.algo, err = collective.ParseAlgorithm(*f.algo); err != nil {
		return o, fmt.Errorf("--allreduce: %v", err)
	}
	if o.finish, err = center.ParseFinish(*f.finish); err != nil {
		return o, fmt.Errorf("--finish: %v", err)
	}
	if o.straggle, err = parseStraggle(*f.straggle, maxWorkers); err != nil {
		return o, err
	}
	return o, nil
}

// schemeConfig is the scheme config of one run, with train's defaults
// for the moving rate and hybrid's groups.
func (o simOptions) schemeConfig(name string, workers int, layout scheme.Layout, iters int) scheme.Config {
	c := scheme.Config{Name: name, Workers: workers, MaxIter: iters, Pack: o.pack, Layout: layout, Bucket: o.bucket,
		Interval: o.interval, Staleness: o.staleness, Variant: o.variant, Groups: o.grps}
	if c.Info().Outer && !o.intervalGiven {
		c.Interval = diLoCoDefaultH // as dsgd train
	}
	if o.oneProcess && workers > 1 {
		// Every rank in one process, as dsgd train's default: overlap
		// reduces through TRL's shared accumulator, layer by layer
		// unless --bucket says otherwise.
		c.Accumulate = c.Info().Accumulator
		if c.Accumulate && !o.bucketSet {
			c.Bucket = 0
		}
	}
	if c.Groups == 0 {
		c.Groups = 1
		if workers%2 == 0 {
			c.Groups = 2
		}
	}
	a := o.alpha
	if a == 0 {
		a = c.Info().DefaultAlpha(workers, c.Groups)
	}
	c.Alpha = float32(a)
	c.OuterMomentum = float32(o.outerMomentum)
	if c.Info().Streaming {
		c.Fragments, c.Overlap, c.Mix, c.OuterBits = o.fragments, o.overlap, o.mix, o.outerBits
	}
	c.Aligned = o.finish != center.FinishOwn
	return c
}

// simModel is the model the flags describe: uniform from --params and
// --compute-ms, else the --model (or --solver) net measured here.
func (f *simFlags) simModel(ctx context.Context, set map[string]bool, stdout io.Writer) (sim.Model, error) {
	if set["params"] {
		m := sim.Layered(*f.params, time.Duration(*f.computeMS*float64(time.Millisecond)), *f.layers)
		if *f.calibrate {
			m.AddRate = calib.AddRate(calib.DefaultAddLen, 50*time.Millisecond)
			fmt.Fprintf(stdout, "dsgd simulate: measured the add rate here: %.2f G float32 adds/s\n", m.AddRate/1e9)
		}
		return m, nil
	}
	why := "--calibrate"
	if !*f.calibrate {
		why = "compute times must come from somewhere; --params N --compute-ms T gives them instead"
	}
	fmt.Fprintf(stdout, "dsgd simulate: measuring the model with the real engine, %d thread(s) per layer (%s)...\n", f.m.threads, why)
	return measureModel(ctx, &f.m, f.m.threads)
}

// measureModel calibrates the net the model flags describe with threads
// goroutines per layer and the solver stepping on as many.
func measureModel(ctx context.Context, m *modelFlags, threads int) (sim.Model, error) {
	j, net, err := job.TrainNet(ctx, m.options(), threads)
	if err != nil {
		return sim.Model{}, err
	}
	defer j.Close()
	sc := j.Solver.Solver
	model, err := calib.Model(ctx, net, calib.ModelOptions{Warmup: 3, Iters: 20, Solver: &sc, Threads: threads})
	if err != nil {
		return sim.Model{}, err
	}
	model.Name = j.Name
	return model, nil
}

// measureModels calibrates copies nets of the model flags' model at once
// and in lockstep (calib.Concurrent), threads goroutines each, as that
// many synchronous workers run: the model carries their compute jitter.
func measureModels(ctx context.Context, m *modelFlags, threads, copies int) (sim.Model, error) {
	nets := make([]*model.Net, copies)
	var name string
	var sc solver.Config
	for i := range nets {
		j, net, err := job.TrainNet(ctx, m.options(), threads)
		if err != nil {
			return sim.Model{}, err
		}
		defer j.Close()
		nets[i], name, sc = net, j.Name, j.Solver.Solver
	}
	mod, err := calib.Concurrent(ctx, nets, calib.ModelOptions{Warmup: 3, Iters: validateCalibIters, Solver: &sc, Threads: threads})
	if err != nil {
		return sim.Model{}, err
	}
	mod.Name = name
	return mod, nil
}

// validateCalibIters is the lockstep passes --validate calibrates on:
// enough for the jitter's estimate (a mean of |a-b| over the passes) to
// be within about 10%.
const validateCalibIters = 100

// simWarmup is sim.Config.Warmup for w warm-up iterations (sim reads 0
// as its default and a negative count as none).
func simWarmup(w int) int {
	if w == 0 {
		return -1
	}
	return w
}

// seqTime is T1: one worker's simulated iteration under seq, or, should
// the simulator refuse seq, the model's compute and update.
func seqTime(base sim.Config, o simOptions) time.Duration {
	cfg := base
	cfg.Scheme = o.schemeConfig("seq", 1, base.Model.Layout(), base.Iters)
	cfg.Straggle = nil
	if res, err := sim.Run(cfg); err == nil && res.Iter > 0 {
		return res.Iter
	}
	return modelCompute(base.Model) + base.Model.Update
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

// plotSweep writes the iteration-time and efficiency plots, one line per
// scheme.
func plotSweep(prefix string, names []string, runs []simRun, t1 time.Duration, modelName, netName string) error {
	var times, effs []report.Series
	for _, name := range names {
		st, se := report.Series{Name: name}, report.Series{Name: name}
		for _, r := range runs {
			if r.scheme != name {
				continue
			}
			_, eff := weakScaling(t1, r.res.Iter, r.workers)
			st.X, st.Y = append(st.X, float64(r.workers)), append(st.Y, ms(r.res.Iter))
			se.X, se.Y = append(se.X, float64(r.workers)), append(se.Y, eff)
		}
		times, effs = append(times, st), append(effs, se)
	}
	where := modelName + ", " + netName
	if err := report.PlotXY(times, "simulated iteration time, "+where, "workers P", "iteration time (ms)", true, true, prefix+"-time.png", prefix+"-time.svg"); err != nil {
		return err
	}
	return report.PlotXY(effs, "weak-scaling efficiency T1/T(P), "+where, "workers P", "efficiency", true, false, prefix+"-efficiency.png", prefix+"-efficiency.svg")
}

// parseWorkers reads --workers: counts separated by commas, increasing,
// where "..." (or "…") continues the two counts before it, doubling when
// the second is twice the first and else by their difference, up to the
// count after it: "1,2,...,16" is 1,2,4,8,16 and "4,6,...,12" 4,6,8,10,12.
func parseWorkers(s string) ([]int, error) {
	parts := strings.Split(s, ",")
	var out []int
	for i := 0; i < len(parts); i++ {
		p := strings.TrimSpace(parts[i])
		if p == "..." || p == "…" {
			if len(out) < 2 || i+1 >= len(parts) {
				return nil, fmt.Errorf("%q: \"...\" needs two counts before it and one after", s)
			}
			end, err := parseCount(parts[i+1])
			if err != nil {
				return nil, fmt.Errorf("%q: %v", s, err)
			}
			a, b := out[len(out)-2], out[len(out)-1]
			for {
				next := b + (b - a)
				if b == 2*a {
					next = 2 * b
				}
				if next >= end {
					break
				}
				if len(out) >= maxSweep {
					return nil, fmt.Errorf("%q is more than %d counts", s, maxSweep)
				}
				out = append(out, next)
				a, b = b, next
			}
			continue
		}
		n, err := parseCount(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q: %d does not increase on %d", s, n, out[len(out)-1])
		}
		if len(out) >= maxSweep {
			return nil, fmt.Errorf("%q is more than %d counts", s, maxSweep)
		}
		out = append(out, n)
	}
	return out, nil
}

// Limits on --workers, so that a typo cannot run for hours.
const (
	maxSweep   = 64
	maxWorkers = 1 << 16
)

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a worker count", s)
	case n < 1 || n > maxWorkers:
		return 0, fmt.Errorf("worker count %d is outside [1,%d]", n, maxWorkers)
	}
	return n, nil
}

// modelCompute is a model's forward and backward time.
func modelCompute(m sim.Model) time.Duration {
	var d time.Duration
	for _, l := range m.Layers {
		d += l.Forward + l.Backward
	}
	return d
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// validateSchemes are the schemes --validate measures, the ones the issue
// asks the simulator to predict within 25%.
const validateSchemes = "sync-ps,sync-tree,sync-ring,overlap"

// runValidate trains each scheme for real with 2 workers over inproc, then
// simulates it with the model measured under the same threads per worker
// and the same load (one copy per worker timed at once, since the real
// workers share this machine's cores) and the inproc transport's measured
// alpha and beta, and prints measured against predicted per-iteration time.
func runValidate(ctx context.Context, f *simFlags, given map[string]string, stdout, stderr io.Writer) error {
	set := func(name string) bool { _, ok := given[name]; return ok }
	workers := 2
	names := strings.Split(validateSchemes, ",")
	if set("scheme") {
		names = strings.Split(*f.schemes, ",")
	}
	if set("params") || set("compute-ms") || set("network") {
		fmt.Fprintln(stderr, "dsgd simulate: --validate measures this machine: it takes --model (or --solver), --scheme, --workers and --iters, not --params, --compute-ms or --network")
		return errUsage
	}
	if set("workers") {
		n, err := strconv.Atoi(*f.workers)
		if err != nil || n < 2 {
			fmt.Fprintf(stderr, "dsgd simulate: --validate --workers %q: want one count of at least 2\n", *f.workers)
			return errUsage
		}
		workers = n
	}
	opts, err := f.simOptions(workers)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd simulate: %v\n", err)
		return errUsage
	}
	// The real runs are every rank in this process: overlap reduces
	// through TRL's shared accumulator there, and the simulation does too.
	opts.oneProcess = true
	iters := *f.iters
	if !set("iters") {
		iters = 150
	}
	// The real run: every flag given that train knows, plus the scheme,
	// two workers and no tests or snapshots.
	var base []string
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	var probe trainFlags
	probe.register(fs)
	for _, name := range slices.Sorted(maps.Keys(given)) {
		v := given[name]
		switch name {
		case "scheme", "workers", "iters", "warmup", "validate", "calibrate", "plot", "timeline", "network", "params", "compute-ms":
			continue
		}
		if fs.Lookup(name) != nil {
			base = append(base, "--"+name+"="+v)
		}
	}
	base = append(base, "--workers="+strconv.Itoa(workers), "--iters="+strconv.Itoa(iters), "--test-interval=0", "--test-iter=1", "--snapshot-prefix=none", "--display=0")
	if !set("reduce") {
		// The simulator models float32 reductions; exact sums' atoms and
		// digits are a cost of their own (docs/benchmarks.md).
		base = append(base, "--reduce=fast")
	}
	threads := max(1, f.m.threads/workers)
	reps := *f.repeat
	fmt.Fprintf(stdout, "dsgd simulate --validate: %d workers over inproc, %d thread(s) each, %d iterations per scheme, %d run(s) each (interleaved; the median is compared), float32 sums (--reduce fast)\n", workers, threads, iters, reps)

	type row struct {
		name                       string
		measured, comm, compute    time.Duration
		predicted, simComm, simCmp time.Duration
	}
	// The runs go round the schemes reps times, so that a busy spell on
	// this machine lands on several schemes' runs rather than all of one.
	runs := make([][]row, len(names))
	for k := range reps {
		for i, name := range names {
			var tf trainFlags
			tfs := flag.NewFlagSet("train", flag.ContinueOnError)
			tf.register(tfs)
			tfs.SetOutput(io.Discard)
			if err := tfs.Parse(append(append([]string(nil), base...), "--scheme="+name)); err != nil {
				return fmt.Errorf("flags for %s: %w", name, err)
			}
			fmt.Fprintf(stdout, "  training %-10s (run %d) ", name, k+1)
			if err := execute(ctx, &tf, nil, io.Discard, io.Discard); err != nil {
				fmt.Fprintln(stdout)
				return fmt.Errorf("%s: %w", name, err)
			}
			res := tf.result
			if res == nil || res.Iters == 0 {
				return fmt.Errorf("%s: the run did no iteration", name)
			}
			n := time.Duration(res.Iters)
			r := row{name: name, measured: res.Phases.Sum() / n, comm: res.CommExposed / n,
				compute: (res.Phases.Total(train.PhaseForward) + res.Phases.Total(train.PhaseBackward)) / n}
			runs[i] = append(runs[i], r)
			fmt.Fprintf(stdout, "%.3f ms per iteration\n", ms(r.measured))
		}
	}
	rows := make([]row, len(names))
	for i, rs := range runs {
		rows[i] = medianRun(rs, func(r row) time.Duration { return r.measured })
	}

	fmt.Fprintf(stdout, "  measuring the model (%d copies at once and in lockstep, as synchronous workers run, %d thread(s) each, %d passes) and the inproc transport...\n", workers, threads, validateCalibIters)
	model, err := measureModels(ctx, &f.m, threads, workers)
	if err != nil {
		return err
	}
	nw, err := calib.Network(ctx, "inproc", calib.NetworkOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  model %s: compute %.3f ms, jitter %.3f ms (one worker's standard deviation per iteration, from the two copies' differences), update %.3f ms, %.2f G adds/s; network %s\n",
		model.Name, ms(modelCompute(model)), ms(model.Jitter), ms(model.Update), model.AddRate/1e9, nw)
	// With C cores below the workers: the lockstep measurement is the
	// compute with every worker sharing the cores. The simulation shares
	// C processors too (processor sharing), from the compute of one
	// worker with its share to itself, so that a worker computing while
	// others wait runs faster, as the real ones do.
	// By default when the workers oversubscribe this machine (--cores 0
	// turns it off): on 2 cores, 4 LeNet workers came out within 25 % with
	// it (overlap 5 % off, the synchronous schemes 17-25 % under: their
	// real workers wait on each other more than a fair share predicts)
	// and 33 % off without it (overlap; docs/benchmarks.md).
	cores := float64(runtime.NumCPU()) / float64(threads)
	if set("cores") {
		cores = *f.cores
	}
	simCores := 0.0
	if float64(workers) > cores && cores > 0 {
		simCores = cores
		model = scaleCompute(model, cores/float64(workers))
		fmt.Fprintf(stdout, "  %d workers of %d thread(s) share %d cores: simulated on %.3g shared processors (processor sharing), from %.3f ms per worker computing alone\n",
			workers, threads, runtime.NumCPU(), cores, ms(modelCompute(model)))
	}
	// The prediction is an expectation: the simulator draws the jitter
	// over at least validateSimIters iterations.
	simIters := max(iters, validateSimIters)
	fmt.Fprintf(stdout, "  simulating %d iterations per scheme, seed 1\n\n", simIters)
	fmt.Fprintf(stdout, "%-16s %12s %12s %8s %16s %16s\n", "scheme", "measured ms", "predicted ms", "error", "compute ms m/p", "comm+wait ms m/p")
	worst := 0.0
	for i := range rows {
		r := &rows[i]
		cfg := sim.Config{Model: model, Network: nw, Iters: *f.warmup + simIters, Warmup: simWarmup(*f.warmup), Seed: 1, Algo: opts.algo, Finish: opts.finish, RoundDeadline: opts.roundDeadline, Cores: simCores}
		cfg.Scheme = opts.schemeConfig(r.name, workers, model.Layout(), *f.warmup+simIters)
		res, err := sim.Run(cfg)
		if err != nil {
			return fmt.Errorf("simulating %s: %w", r.name, err)
		}
		// The real node books waiting for the other worker's gradients as
		// exposed communication (it cannot tell them apart); the simulator
		// splits it into Comm and Wait, so the comparison adds them.
		r.predicted, r.simComm, r.simCmp = res.Iter, res.Comm+res.Wait, res.Compute
		e := 100 * (float64(r.predicted) - float64(r.measured)) / float64(r.measured)
		worst = max(worst, abs(e))
		fmt.Fprintf(stdout, "%-16s %12.3f %12.3f %7.1f%% %7.3f/%-8.3f %7.3f/%-8.3f\n", r.name, ms(r.measured), ms(r.predicted), e, ms(r.compute), ms(r.simCmp), ms(r.comm), ms(r.simComm))
	}
	verdict := "within"
	if worst > 25 {
		verdict = "NOT within"
	}
	fmt.Fprintf(stdout, "\nworst error %.1f%%: %s the 25%% the simulator aims for (measured: rank 0's phases per iteration, data loading included, in the run of median time; m/p: measured/predicted; the real workers share this machine's cores, and so may other jobs: repeat before trusting one run)\n", worst, verdict)
	return nil
}

// validateSimIters is the fewest iterations --validate simulates, so
// that the jitter's draws average out (the mean of max(a,b) over n
// draws has a standard error of about 0.83·jitter/√n).
const validateSimIters = 2000

// medianRun is the run whose key is the median of rs (the lower of the
// two middle ones for an even count).
func medianRun[T any](rs []T, key func(T) time.Duration) T {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[(len(s)-1)/2]
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
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

// parseSimCompress reads simulate's --compress as dsgd train's: nil for
// none; fp16 is the tcp wire's encoding, which the simulator does not
// model.
func parseSimCompress(v string, warmup int) (*sim.Compression, error) {
	if warmup < 0 {
		return nil, fmt.Errorf("--compress-warmup %d is negative", warmup)
	}
	spec, err := compress.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("--compress: %w", err)
	}
	switch spec.Kind {
	case compress.None:
		return nil, nil
	case compress.FP16:
		return nil, fmt.Errorf("--compress %q: the tcp wire's half precision is not modelled (powersgd:R, topk:F, sign and bf16 are)", v)
	}
	return &sim.Compression{Spec: spec, Warmup: warmup}, nil
}
