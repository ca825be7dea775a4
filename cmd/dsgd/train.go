package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// trainFlags are the flags of train (and of worker, which runs one rank
// of the same job).
type trainFlags struct {
	m                                 modelFlags
	iters, testInterval, testIter     *int
	display, workers, warmup          *int
	resume, prefix, scheme, transport *string
	// caffeSnapshot is Caffe's -snapshot (our --resume).
	caffeSnapshot                    *string
	algo, metrics, lrScale, compress *string
	pack                             *bool
	bucketKiB                        *int
	commTimeout                      *time.Duration
	timeline                         *string
	weights, snapFormat              *string
	metricsListen                    *string
	log                              *string
	shm                              *string
	reduce                           *string
	atom                             *int
	compressWarmup                   *int

	// the asynchronous and elastic schemes
	interval, staleness, variant, groups *int
	alpha, rho, momentum                 *float64
	outerMomentum                        *float64
	streaming                            streamingFlags
	finish, straggle                     *string
	roundDeadline                        *time.Duration
	maxUpdateNorm                        *float64
	center                               centerFlags
	timeBudget                           *time.Duration
	elastic                              elasticFlags

	// reduceNote is the header's line on how gradients are summed.
	reduceNote string

	// result is the finished run's, for dsgd compare.
	result *train.Result
	// fs is the flag set the flags are registered in.
	fs *flag.FlagSet
	// note is what the flags changed that the header should say.
	note string
}

func (f *trainFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	f.m.register(fs)
	f.iters = fs.Int("iters", 0, "iterations to train (default: the solver's max_iter)")
	f.resume = fs.String("resume", "", "continue from this snapshot `FILE`")
	f.caffeSnapshot = fs.String("snapshot", "", "Caffe's spelling of --resume: continue from this snapshot `FILE` (a .solverstate, .solverstate.h5 or .dsgdsnap)")
	f.prefix = fs.String("snapshot-prefix", "", "write snapshots to `PREFIX`_iter_N.dsgdsnap (default: the solver's snapshot_prefix; \"none\" disables them)")
	f.weights = fs.String("weights", "", "start from the weights of these Caffe models (`A.caffemodel[,B.caffemodel]`), copied layer by layer by name as caffe train --weights")
	f.snapFormat = fs.String("snapshot-format", "", "snapshot format: dsgd (PREFIX_iter_N.dsgdsnap), caffe (PREFIX_iter_N.caffemodel and .solverstate, which Caffe reads; --resume takes the .solverstate) or hdf5 (Caffe's HDF5 format: .caffemodel.h5 and .solverstate.h5) (default: caffe or hdf5 when the solver says snapshot_format: BINARYPROTO or HDF5, else dsgd)")
	f.testInterval = fs.Int("test-interval", -1, "test every N iterations (default: the solver's test_interval; 0: only at the end)")
	f.testIter = fs.Int("test-iter", 0, "test batches per test pass of every test net (default: the solver's test_iter for each)")
	f.display = fs.Int("display", -1, "print progress every N iterations (default: the solver's display)")
	f.scheme = fs.String("scheme", "", "parallel scheme: "+strings.Join(scheme.Names(), ", ")+" (default: seq for one worker, sync-tree for more)")
	f.workers = fs.Int("workers", 0, "number of workers, each reading its own shard of the training set with the solver's batch_size (default 1: one worker computing on every core, which on one machine beats several workers; see the run header)")
	f.transport = fs.String("transport", "inproc", "how workers talk: inproc (goroutines in this process) or tcp (one process per rank on loopback); dsgd worker: tcp, or mpi (ranks from mpirun or srun, messages through Open MPI)")
	f.pack = fs.Bool("pack", true, "send all layers as one contiguous message (off: one message per layer)")
	f.bucketKiB = fs.Int("bucket", -1, "overlap: gather this many KiB of consecutive layers' gradients before each accumulate (one process: TRL's shared accumulator) or allreduce (across processes); 0: every parameter blob on its own (default: 0 in one process, each layer handed to the accumulator as backward finishes it, TRL Alg. 6-7; 1024 across processes, PyTorch DDP's buckets)")
	f.algo = fs.String("allreduce", "auto", "allreduce algorithm: auto (the scheme's choice), tree, ring, rd (recursive doubling), or mpi (MPI_Allreduce and MPI_Bcast, with dsgd worker --transport mpi)")
	f.metrics = fs.String("metrics", "", metricsUsage)
	f.log = fs.String("log", "", logUsage)
	f.metricsListen = fs.String("metrics-listen", "", metricsListenUsage)
	f.timeline = fs.String("timeline", "", "write a Chrome trace of every rank's work (per-layer forward and backward, communication, updates, waits) to `FILE`, for Perfetto or chrome://tracing (a worker process of rank N > 0 writes FILE.rankN, a parameter-server scheme's center FILE.center)")
	f.lrScale = fs.String("lr-scale", "none", "learning rate scaling: none, linear (base_lr x workers, for the global batch of the synchronous schemes, FireCaffe 7.2), or inverse (base_lr / workers, for async, ssp and hogwild, where every worker's steps land in the same weights)")
	f.warmup = fs.Int("warmup", 0, "ramp the learning rate linearly from 0 over the first N iterations (the gradual warm-up of large-batch training, Goyal et al. 2017; not in the five papers or Caffe)")
	f.compress = fs.String("compress", "none", "gradient compression of the synchronous schemes (sync-ring, sync-tree, overlap, local-sgd --interval 1, and sync-ps's pushes but for powersgd), with --reduce fast: none; fp16 (the tcp wire's encoding, half the bytes, every message rounded); or with error feedback (each worker keeps what was dropped and adds it to its next gradient): bf16 (values rounded to bfloat16; allreduce sums still travel as float32, sync-ps's pushes as half the bytes), powersgd:R (rank-R PowerSGD, Vogels et al. 2019, on every weight matrix, its first axis against the rest), topk:F (the fraction F of each block's largest entries, exchanged as index/value pairs by an allgather), sign (each value's sign and one scale per block, EF-signSGD, by an allgather)")
	f.compressWarmup = fs.Int("compress-warmup", -1, "with --compress bf16, powersgd:R, topk:F or sign: iterations of plain, uncompressed gradient sums before compressing (PyTorch's start_powerSGD_iter; default 10% of --iters)")
	f.reduce = fs.String("reduce", "auto", "how the synchronous schemes sum gradients: exact (the same bits as seq at any worker count: each atom's gradients rounded once onto a fixed grid and summed as integers, at a cost in speed), fast (float32 sums in whatever order the reduction takes; the bits depend on the worker count), or auto (exact for seq, sync-ps, sync-tree, sync-ring and overlap; the other schemes do not promise seq's numbers)")
	f.atom = fs.Int("atom", 0, "--reduce exact: images per atom, the unit of the global batch whose gradients are rounded and summed; runs give the same bits when their global batch and atom agree and the atom divides each worker's batch (default: the global batch over gcd(global batch, 24))")
	f.commTimeout = fs.Duration("comm-timeout", time.Minute, "give up on a peer that does not answer within this")
	f.shm = fs.String("shm", "on", shmUsage)
	f.interval = fs.Int("interval", 1, "asynchronous schemes: iterations between exchanges with the center (SpeeDO's S, ShmCaffe's update_interval, EASGD's tau); local-sgd: iterations between model averages (H); diloco and streaming-diloco: inner steps between outer steps (H; default 100 for them)")
	fs.Var(intAlias{f.interval}, "update-interval", "same as --interval (ShmCaffe's name)")
	f.staleness = fs.Int("staleness", 3, "ssp: a worker more than this many iterations ahead of the slowest waits")
	f.alpha = fs.Float64("alpha", 0, "elastic schemes: moving rate alpha (ShmCaffe's moving_rate, SC17's eta*rho); default 0.9/workers (EASGD's beta = 0.9); diloco: the outer learning rate (default 0.7)")
	f.outerMomentum = fs.Float64("outer-momentum", scheme.DiLoCoOuterMomentum, "diloco: the outer optimizer's Nesterov momentum (the paper's 0.9; 0 for plain outer SGD)")
	f.streaming.register(fs)
	f.rho = fs.Float64("rho", 0, "elastic schemes: SC17's rho; sets alpha = base_lr * rho")
	f.momentum = fs.Float64("momentum", -1, "solver momentum (default: the solver's; for "+strings.Join(scheme.PlainSGDNames(), ", ")+", whose rule is plain SGD (SC17 Eq. 1), 0 with base_lr / (1 - the solver's momentum); the header shows the momentum and base_lr the run uses)")
	f.variant = fs.Int("variant", 3, "sync-easgd: 1 center on a separate master, 2 center on worker 0, 3 as 2 with the exchange overlapped with compute (SC17 6.1)")
	f.groups = fs.Int("groups", 0, "hybrid: number of synchronous groups (default: 2, or 1 for an odd worker count)")
	f.finish = fs.String("finish", "own", "asynchronous schemes: when workers stop: own (each after its iterations), master (when worker 0 finishes), first (when the first finishes), average (when the mean count reaches the iterations)")
	f.roundDeadline = fs.Duration("round-deadline", 0, "weedout: close a round this long after its first gradients arrive (default: 2x the first round's compute time is not known, so 0 waits for every worker; set it to weed stragglers out)")
	f.maxUpdateNorm = fs.Float64("max-update-norm", 0, "asynchronous schemes: the center refuses, naming the worker, an update (push, elastic exchange, round) whose L2 norm exceeds this (0: no bound; non-finite updates are refused always)")
	f.center.register(fs)
	f.elastic.register(fs)
	f.timeBudget = fs.Duration("time-budget", 0, "stop training after this much training time (tests excluded), with the final test and snapshot (0: no limit)")
	f.straggle = fs.String("straggle", "", "inject a straggler: RANK:DELAY (that worker is slower by DELAY every iteration) or p=PROB:DELAY (any worker, with that probability per iteration)")
}

// intAlias is a second flag name for an int flag.
type intAlias struct{ p *int }

func (a intAlias) String() string {
	if a.p == nil {
		return "0"
	}
	return strconv.Itoa(*a.p)
}

func (a intAlias) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	*a.p = v
	return nil
}

// parseStraggle parses --straggle.
func parseStraggle(s string, workers int) (*train.Straggler, error) {
	if s == "" {
		return nil, nil
	}
	who, delay, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("--straggle %q: want RANK:DELAY or p=PROB:DELAY", s)
	}
	d, err := time.ParseDuration(delay)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("--straggle %q: delay %q is not a duration such as 50ms", s, delay)
	}
	st := &train.Straggler{Rank: -1, Delay: d}
	if p, isProb := strings.CutPrefix(who, "p="); isProb {
		if st.Prob, err = strconv.ParseFloat(p, 64); err != nil || st.Prob <= 0 || st.Prob > 1 {
			return nil, fmt.Errorf("--straggle %q: probability %q is not in (0,1]", s, p)
		}
		return st, nil
	}
	if st.Rank, err = strconv.Atoi(who); err != nil || st.Rank < 0 || st.Rank >= workers {
		return nil, fmt.Errorf("--straggle %q: rank %q is not a worker in [0,%d)", s, who, workers)
	}
	return st, nil
}

// asyncConfig applies the asynchronous schemes' flags to cfg.
func (f *trainFlags) asyncConfig(cfg *train.Config) error {
	var err error
	cfg.Staleness, cfg.Variant, cfg.RoundDeadline = *f.staleness, *f.variant, *f.roundDeadline
	cfg.MaxUpdateNorm = *f.maxUpdateNorm
	if *f.interval < 1 { // dsgd compare's runs reach here without validate
		return fmt.Errorf("--interval must be at least 1, got %d", *f.interval)
	}
	if cfg.Finish, err = center.ParseFinish(*f.finish); err != nil {
		return fmt.Errorf("--finish: %w", err)
	}
	opts := scheme.Options{Alpha: *f.alpha, Rho: *f.rho, LR: cfg.Solver.BaseLR, Groups: *f.groups,
		OuterMomentum: *f.outerMomentum, Resizable: f.elastic.on()}
	if flagGiven(f.fs, "interval", "update-interval") {
		opts.Interval = *f.interval
	}
	note, err := opts.Resolve(&cfg.Config)
	if err != nil {
		return asFlags(err, trainFlagNames)
	}
	in := cfg.Info()
	if err := f.streaming.apply(f.fs, in.Streaming, &cfg.Fragments, &cfg.Overlap, &cfg.Mix, &cfg.OuterBits); err != nil {
		return err
	}
	if cfg.OuterBits < 32 && in.Streaming && *f.compress != "none" {
		// The codes are packed into float32 words; a wire encoding of
		// floats would change their bits.
		return fmt.Errorf("--outer-bits %d with --compress %s: the quantised pseudo-gradients travel as packed codes, which a float encoding on the wire would corrupt; give one of them", cfg.OuterBits, *f.compress)
	}
	if note != "" {
		f.note += "dsgd: " + trainFlagNames.Replace(note) + "\n"
	}
	switch {
	case *f.momentum >= 0:
		cfg.Solver.Momentum = *f.momentum
	case cfg.Info().PlainSGD:
		if mu := cfg.PlainSGD(); mu > 0 {
			f.note = fmt.Sprintf("dsgd: %s is plain SGD (SC17 Eq. 1): momentum 0 and base_lr %g / (1 - %g) = %.4g, the solver's step size (--momentum to choose)\n", cfg.Name, cfg.Solver.BaseLR*(1-mu), mu, cfg.Solver.BaseLR)
		}
	}
	cfg.Straggle, err = parseStraggle(*f.straggle, cfg.Workers)
	return err
}

// caffeSpellings maps Caffe's train flags onto ours: -snapshot FILE is
// --resume FILE (both given is an error), and -gpu is noted on stderr,
// since the run trains on the CPU.
func (f *trainFlags) caffeSpellings(stderr io.Writer) error {
	if s := *f.caffeSnapshot; s != "" {
		if *f.resume != "" {
			fmt.Fprintf(stderr, "dsgd train: --snapshot %s and --resume %s: they are the same flag (Caffe's name and ours); give one\n", s, *f.resume)
			return errUsage
		}
		*f.resume = s
		fmt.Fprintf(stderr, "dsgd train: note: --snapshot %s is Caffe's spelling of --resume %s\n", s, s)
	}
	return f.m.checkGPU("train", stderr)
}

// schemeName is the scheme the flags ask for, with the default applied.
func (f *trainFlags) schemeName() string {
	if *f.scheme != "" {
		return *f.scheme
	}
	return scheme.DefaultName(*f.workers)
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var f trainFlags
	f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := f.caffeSpellings(stderr); err != nil {
		return err
	}
	if err := restoreRun(fs, *f.resume, stdout); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "dsgd train: %v\n", err)
		return errUsage
	}
	if *f.algo == allreduceMPI {
		fmt.Fprintln(stderr, "dsgd train: --allreduce mpi needs mpirun -np N dsgd worker --transport mpi --allreduce mpi ...")
		return errUsage
	}
	if err := f.elastic.check(&f); err != nil {
		fmt.Fprintf(stderr, "dsgd train: %v\n", err)
		return errUsage
	}
	switch *f.transport {
	case "inproc":
		if f.elastic.on() {
			fmt.Fprintln(stderr, "dsgd train: --elastic with --transport inproc: the workers of one process live and die together; give --transport tcp")
			return errUsage
		}
		if *f.compress == "fp16" {
			fmt.Fprintln(stderr, "dsgd train: --compress works with --transport tcp for fp16, the tcp wire's encoding (bf16, powersgd:R, topk:F and sign work over every transport)")
			return errUsage
		}
		return execute(ctx, &f, nil, stdout, stderr)
	case "tcp":
		if *f.workers < 1 {
			fmt.Fprintln(stderr, "dsgd train: --transport tcp needs --workers N")
			return errUsage
		}
		return launchRanks(ctx, args, &f, stdout, stderr)
	}
	if *f.transport == "mpi" {
		fmt.Fprintln(stderr, "dsgd train: --transport mpi: MPI starts the ranks; run mpirun -np N dsgd worker --transport mpi ... (or srun)")
		return errUsage
	}
	fmt.Fprintf(stderr, "dsgd train: --transport %q: choose inproc or tcp\n", *f.transport)
	return errUsage
}

// failedWorkers is the error of a run that finished although some of its
// in-process asynchronous workers failed on the way: the others trained
// on, but the exit status says it.
func failedWorkers(failed []error) error {
	if len(failed) == 0 {
		return nil
	}
	msgs := make([]string, len(failed))
	for i, err := range failed {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%d of the workers failed during the run (the others finished it; the snapshot holds the center's weights):\n%s", len(failed), strings.Join(msgs, "\n"))
}

func printSummary(w io.Writer, res *train.Result) {
	// images/s and the time it divides by on one line, the wall time
	// (tests and snapshots included) beside it, each named.
	fmt.Fprintf(w, "\ndone: %d iterations (from %d): %.0f images/s over %s of training; %s wall with tests and snapshots\n", res.Iters, res.Start, res.ImagesPerSec, res.TrainTime.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
	if f := res.Final(); len(f.Outputs) > 0 {
		fmt.Fprintf(w, "final test:")
		for _, o := range f.Outputs {
			fmt.Fprintf(w, "  %s %.4f", o.Name, o.Value)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "time per training iteration, by phase (rank 0):\n")
	res.Phases.WriteTable(w)
	if res.Workers > 1 && res.Iters > 0 {
		it := float64(res.Iters)
		busy := float64(res.CommBusy) / float64(time.Millisecond) / it
		exposed := float64(res.CommExposed) / float64(time.Millisecond) / it
		total := float64(res.Phases.Sum()) / float64(time.Millisecond) / it
		fmt.Fprintf(w, "communication (rank 0): %.3f ms/iter busy, %.3f ms/iter exposed; communication ratio %.1f%% (exposed / iteration)\n", busy, exposed, 100*exposed/total)
		if res.IdenticalKnown {
			fmt.Fprintf(w, "replicas identical at the end: %v\n", res.Identical)
		}
	}
	if c := res.Center; c != (center.Stats{}) {
		fmt.Fprintf(w, "center: %d pulls, %d pushes, %d elastic exchanges, %d rounds, %d gradients dropped (weed-out), %d waits for a slower worker (ssp)%s\n",
			c.Pulls, c.Pushes, c.Exchanges, c.Rounds, c.Dropped, c.Waits, staleText(c))
		if res.Iters > 0 {
			fmt.Fprintf(w, "center traffic: %.2f MB per iteration of rank 0 (all workers, both ways)\n", float64(4*c.Values)/float64(res.Iters)/1e6)
		}
	}
	if res.Straggled > 0 {
		fmt.Fprintf(w, "straggler: %d iterations delayed\n", res.Straggled)
	}
	for _, s := range res.Snapshots {
		fmt.Fprintf(w, "snapshot: %s\n", s)
	}
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// flagGiven reports whether any of names was set on fs's command line.
func flagGiven(fs *flag.FlagSet, names ...string) bool {
	given := false
	if fs != nil {
		fs.Visit(func(fl *flag.Flag) { given = given || slices.Contains(names, fl.Name) })
	}
	return given
}
