package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/cmd/internal/report"
	"dsgd/comm/collective"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/simulator/sim"
	"dsgd/simulator/study"
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

// runSimulate runs schemes in virtual time (simulator/study) on a model
// and network, for one worker count or a sweep, and prints per-iteration
// time, its breakdown, and weak-scaling speedup and efficiency.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	var f simFlags
	f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	given := map[string]string{} // the flags set, with their values
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = fl.Value.String() })
	set := func(name string) bool { _, ok := given[name]; return ok }
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "dsgd simulate: "+format+"\n", a...)
		return errUsage
	}
	if *f.repeat < 1 {
		return bad("--repeat must be at least 1, got %d", *f.repeat)
	}
	var ps []int
	var err error
	switch {
	case *f.validate && (set("params") || set("compute-ms") || set("network")):
		return bad("--validate measures this machine: it takes --model (or --solver), --scheme, --workers and --iters, not --params, --compute-ms or --network")
	case *f.validate:
		ps = []int{2}
		if set("workers") {
			n, err := strconv.Atoi(*f.workers)
			if err != nil || n < 2 {
				return bad("--validate --workers %q: want one count of at least 2", *f.workers)
			}
			ps = []int{n}
		}
	default:
		if ps, err = study.ParseWorkers(*f.workers); err != nil {
			return bad("--workers: %v", err)
		}
	}
	c, err := f.config(ps)
	if err != nil {
		return bad("%v", err)
	}
	if *f.validate {
		return runValidate(ctx, &f, c, given, stdout, stderr)
	}
	if c.Uniform {
		if set("model") || set("net") || set("solver") {
			return bad("--params and --compute-ms describe the model; give them or --model/--solver, not both")
		}
	} else if set("layers") {
		return bad("--layers splits a --params model; a --model has its own layers")
	}
	text := &study.Text{W: stdout, C: c}
	res, err := study.Sweep(ctx, c, text)
	if err != nil {
		return simRefused(err, stderr)
	}
	text.Swept()
	if *f.plot != "" {
		if err := report.PlotSweep(*f.plot, c.Schemes, res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plots: %[1]s-time.png, %[1]s-time.svg, %[1]s-efficiency.png, %[1]s-efficiency.svg\n", *f.plot)
	}
	return nil
}

// simRefused prints a study's refusal of its Config, the fields named as
// the flags that set them, and returns errUsage; it returns other errors
// as they are.
func simRefused(err error, stderr io.Writer) error {
	if ce := (*study.ConfigError)(nil); errors.As(err, &ce) {
		fmt.Fprintf(stderr, "dsgd simulate: %s\n", simulateFlagNames.Replace(ce.Error()))
		return errUsage
	}
	return err
}

// config is the study the flags describe for the worker counts ps, its
// flags' syntax checked; the study checks their values.
func (f *simFlags) config(ps []int) (study.Config, error) {
	c := study.Config{Schemes: strings.Split(*f.schemes, ","), Workers: ps,
		Uniform: flagGiven(f.fs, "params", "compute-ms"), Params: *f.params, Layers: *f.layers, ComputeMS: *f.computeMS,
		Job: f.m.options(), Threads: f.m.threads, Calibrate: *f.calibrate,
		Iters: *f.iters, Warmup: *f.warmup, Seed: 1, Timeline: *f.timeline,
		Pack: *f.pack, BucketKiB: *f.bucketKiB, Interval: *f.interval,
		Staleness: *f.staleness, Variant: *f.variant, Groups: *f.groups, Alpha: *f.alpha, OuterMomentum: *f.outerMomentum,
		RoundDeadline: *f.roundDeadline, Compress: *f.compress, CompressWarmup: *f.compressWarmup, Cores: *f.cores, Repeat: *f.repeat}
	if flagGiven(f.fs, "interval") {
		c.OuterInterval = *f.interval // else study's default, as dsgd train's
	}
	if f.m.seed >= 0 {
		c.Seed = uint64(f.m.seed)
	}
	if err := f.streaming.apply(f.fs, slices.ContainsFunc(c.Schemes, func(n string) bool { in, _ := scheme.Lookup(n); return in.Streaming }), &c.Fragments, &c.Overlap, &c.Mix, &c.OuterBits); err != nil {
		return c, err
	}
	var err error
	if c.Algo, err = collective.ParseAlgorithm(*f.algo); err != nil {
		return c, fmt.Errorf("--allreduce: %v", err)
	}
	if c.Finish, err = center.ParseFinish(*f.finish); err != nil {
		return c, fmt.Errorf("--finish: %v", err)
	}
	st, err := parseStraggle(*f.straggle, slices.Max(ps))
	if err != nil {
		return c, err
	}
	if st != nil {
		c.Straggle = &sim.Straggler{Rank: st.Rank, Prob: st.Prob, Delay: st.Delay}
	}
	if flagGiven(f.fs, "network") {
		nw, err := sim.ParseNetwork(*f.network)
		if err != nil {
			return c, fmt.Errorf("--network: %v", err)
		}
		c.Network = &nw
	}
	return c, nil
}

// runValidate trains each scheme for real with the study's workers over
// inproc, with every flag given that train knows, and prints measured
// against predicted per-iteration time (study.Validate).
func runValidate(ctx context.Context, f *simFlags, c study.Config, given map[string]string, stdout, stderr io.Writer) error {
	set := func(name string) bool { _, ok := given[name]; return ok }
	workers := c.Workers[0]
	c.Schemes = strings.Split(study.DefaultValidateSchemes, ",")
	if set("scheme") {
		c.Schemes = strings.Split(*f.schemes, ",")
	}
	c.ForValidate(f.m.threads, set("iters"), set("cores"))
	// The real run: every flag given that train knows, plus the scheme,
	// the workers and no tests or snapshots.
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
	base = append(base, "--workers="+strconv.Itoa(workers), "--iters="+strconv.Itoa(c.Iters), "--test-interval=0", "--test-iter=1", "--snapshot-prefix=none", "--display=0")
	if !set("reduce") {
		// The simulator models float32 reductions; exact sums' atoms and
		// digits are a cost of their own (docs/benchmarks.md).
		base = append(base, "--reduce=fast")
	}
	if err := c.Check(); err != nil {
		return simRefused(err, stderr)
	}
	text := &study.Text{W: stdout, C: c}
	text.Validating()
	trainOne := func(ctx context.Context, name string, run int) (study.Measured, error) {
		var tf trainFlags
		tfs := flag.NewFlagSet("train", flag.ContinueOnError)
		tf.register(tfs)
		tfs.SetOutput(io.Discard)
		if err := tfs.Parse(append(append([]string(nil), base...), "--scheme="+name)); err != nil {
			return study.Measured{}, fmt.Errorf("flags for %s: %w", name, err)
		}
		text.Training(name, run)
		if err := execute(ctx, &tf, nil, io.Discard, io.Discard); err != nil {
			text.Trained(nil)
			return study.Measured{}, fmt.Errorf("%s: %w", name, err)
		}
		res := tf.result
		if res == nil || res.Iters == 0 {
			return study.Measured{}, fmt.Errorf("%s: the run did no iteration", name)
		}
		n := time.Duration(res.Iters)
		m := study.Measured{Iter: res.Phases.Sum() / n, Comm: res.CommExposed / n,
			Compute: (res.Phases.Total(train.PhaseForward) + res.Phases.Total(train.PhaseBackward)) / n}
		text.Trained(&m)
		return m, nil
	}
	v, err := study.Validate(ctx, c, trainOne, text)
	if err != nil {
		return simRefused(err, stderr)
	}
	text.Verdict(v)
	return nil
}
