package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"dsgd/internal/interrupt"
	"dsgd/protocol/scheme"
	"dsgd/training/job"
	"dsgd/training/train"
)

// trainFlags are the flags of train (and of worker, which runs one rank
// of the same job, and ps): they set o's fields (job.RunOptions), the
// model flags and the center's address.
type trainFlags struct {
	m modelFlags
	o job.RunOptions
	// caffeSnapshot is Caffe's -snapshot (our --resume).
	caffeSnapshot string
	streaming     streamingFlags
	center        centerFlags
	// sigint and sighup are Caffe's -sigint_effect and -sighup_effect;
	// snapshotAsked reads a snapshot request of theirs (nil: none can
	// come).
	sigint, sighup string
	snapshotAsked  func() bool

	// result is the finished run's, for dsgd compare.
	result *train.Result
	// fs is the flag set the flags are registered in.
	fs *flag.FlagSet
}

func (f *trainFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	f.m.register(fs)
	o := &f.o
	*o = job.DefaultRunOptions()
	fs.IntVar(&o.Iters, "iters", o.Iters, "iterations to train (default: the solver's max_iter)")
	fs.StringVar(&o.Resume, "resume", o.Resume, "continue from this snapshot `FILE`")
	fs.StringVar(&f.caffeSnapshot, "snapshot", "", "Caffe's spelling of --resume: continue from this snapshot `FILE` (a .solverstate, .solverstate.h5 or .dsgdsnap)")
	fs.StringVar(&o.SnapshotPrefix, "snapshot-prefix", o.SnapshotPrefix, "write snapshots to `PREFIX`_iter_N.dsgdsnap (default: the solver's snapshot_prefix; \"none\" disables them)")
	fs.StringVar(&o.Weights, "weights", o.Weights, "start from the weights of these Caffe models (`A.caffemodel[,B.caffemodel]`), copied layer by layer by name as caffe train --weights")
	const effects = ": stop (at the end of the iteration in progress, with a snapshot; exit 128+N), snapshot (a snapshot there, and training goes on; runs of one process) or none"
	fs.StringVar(&f.sigint, "sigint-effect", "stop", "what SIGINT (Ctrl-C) does, as Caffe's -sigint_effect"+effects)
	fs.Var(stringAlias{&f.sigint}, "sigint_effect", "Caffe's spelling of --sigint-effect")
	fs.StringVar(&f.sighup, "sighup-effect", "stop", "what SIGHUP does, as Caffe's -sighup_effect (Caffe's own default is snapshot)"+effects)
	fs.Var(stringAlias{&f.sighup}, "sighup_effect", "Caffe's spelling of --sighup-effect")
	fs.StringVar(&o.SnapshotFormat, "snapshot-format", o.SnapshotFormat, "snapshot format: dsgd (PREFIX_iter_N.dsgdsnap), caffe (PREFIX_iter_N.caffemodel and .solverstate, which Caffe reads; --resume takes the .solverstate) or hdf5 (Caffe's HDF5 format: .caffemodel.h5 and .solverstate.h5) (default: caffe or hdf5 when the solver says snapshot_format: BINARYPROTO or HDF5, else dsgd)")
	fs.IntVar(&o.TestInterval, "test-interval", o.TestInterval, "test every N iterations (default: the solver's test_interval; 0: only at the end)")
	fs.IntVar(&o.TestIter, "test-iter", o.TestIter, "test batches per test pass of every test net (default: the solver's test_iter for each)")
	fs.IntVar(&o.Display, "display", o.Display, "print progress every N iterations (default: the solver's display)")
	fs.StringVar(&o.Scheme, "scheme", o.Scheme, "parallel scheme: "+strings.Join(scheme.Names(), ", ")+" (default: seq for one worker, sync-tree for more)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "number of workers, each reading its own shard of the training set with the solver's batch_size (default 1: one worker computing on every core, which on one machine beats several workers; see the run header)")
	fs.StringVar(&o.Transport, "transport", o.Transport, "how workers talk: inproc (goroutines in this process) or tcp (one process per rank on loopback); dsgd worker: tcp, or mpi (ranks from mpirun or srun, messages through Open MPI)")
	fs.BoolVar(&o.Pack, "pack", o.Pack, "send all layers as one contiguous message (off: one message per layer)")
	fs.IntVar(&o.Bucket, "bucket", o.Bucket, "overlap: gather this many KiB of consecutive layers' gradients before each accumulate (one process: TRL's shared accumulator) or allreduce (across processes); 0: every parameter blob on its own (default: 0 in one process, each layer handed to the accumulator as backward finishes it, TRL Alg. 6-7; 1024 across processes, PyTorch DDP's buckets)")
	fs.StringVar(&o.Allreduce, "allreduce", o.Allreduce, "allreduce algorithm: auto (the scheme's choice), tree, ring, rd (recursive doubling), or mpi (MPI_Allreduce and MPI_Bcast, with dsgd worker --transport mpi)")
	fs.StringVar(&o.Metrics, "metrics", o.Metrics, metricsUsage)
	fs.StringVar(&o.Log, "log", o.Log, logUsage)
	fs.StringVar(&o.MetricsListen, "metrics-listen", o.MetricsListen, metricsListenUsage)
	fs.StringVar(&o.Timeline, "timeline", o.Timeline, "write a Chrome trace of every rank's work (per-layer forward and backward, communication, updates, waits) to `FILE`, for Perfetto or chrome://tracing (a worker process of rank N > 0 writes FILE.rankN, a parameter-server scheme's center FILE.center)")
	fs.StringVar(&o.LRScale, "lr-scale", o.LRScale, "learning rate scaling: none, linear (base_lr x workers, for the global batch of the synchronous schemes, FireCaffe 7.2), or inverse (base_lr / workers, for async, ssp and hogwild, where every worker's steps land in the same weights)")
	fs.IntVar(&o.Warmup, "warmup", o.Warmup, "ramp the learning rate linearly from 0 over the first N iterations (the gradual warm-up of large-batch training, Goyal et al. 2017; not in the five papers or Caffe)")
	fs.StringVar(&o.Compress, "compress", o.Compress, "gradient compression of the synchronous schemes (sync-ring, sync-tree, overlap, local-sgd --interval 1, and sync-ps's pushes but for powersgd), with --reduce fast: none; fp16 (the tcp wire's encoding, half the bytes, every message rounded); or with error feedback (each worker keeps what was dropped and adds it to its next gradient): bf16 (values rounded to bfloat16; allreduce sums still travel as float32, sync-ps's pushes as half the bytes), powersgd:R (rank-R PowerSGD, Vogels et al. 2019, on every weight matrix, its first axis against the rest), topk:F (the fraction F of each block's largest entries, exchanged as index/value pairs by an allgather), sign (each value's sign and one scale per block, EF-signSGD, by an allgather)")
	fs.IntVar(&o.CompressWarmup, "compress-warmup", o.CompressWarmup, "with --compress bf16, powersgd:R, topk:F or sign: iterations of plain, uncompressed gradient sums before compressing (PyTorch's start_powerSGD_iter; default 10% of --iters)")
	fs.StringVar(&o.Reduce, "reduce", o.Reduce, "how the synchronous schemes sum gradients: exact (the same bits as seq at any worker count: each atom's gradients rounded once onto a fixed grid and summed as integers, at a cost in speed), fast (float32 sums in whatever order the reduction takes; the bits depend on the worker count), or auto (exact for seq, sync-ps, sync-tree, sync-ring and overlap; the other schemes do not promise seq's numbers)")
	fs.IntVar(&o.Atom, "atom", o.Atom, "--reduce exact: images per atom, the unit of the global batch whose gradients are rounded and summed; runs give the same bits when their global batch and atom agree and the atom divides each worker's batch (default: the global batch over gcd(global batch, 24))")
	fs.DurationVar(&o.CommTimeout, "comm-timeout", o.CommTimeout, "give up on a peer that does not answer within this")
	fs.StringVar(&o.Shm, "shm", o.Shm, shmUsage)
	fs.IntVar(&o.Interval, "interval", o.Interval, "asynchronous schemes: iterations between exchanges with the center (SpeeDO's S, ShmCaffe's update_interval, EASGD's tau); local-sgd: iterations between model averages (H); diloco and streaming-diloco: inner steps between outer steps (H; default 100 for them)")
	fs.Var(intAlias{&o.Interval}, "update-interval", "same as --interval (ShmCaffe's name)")
	fs.IntVar(&o.Staleness, "staleness", o.Staleness, "ssp: a worker more than this many iterations ahead of the slowest waits")
	fs.Float64Var(&o.Alpha, "alpha", o.Alpha, "elastic schemes: moving rate alpha (ShmCaffe's moving_rate, SC17's eta*rho); default 0.9/workers (EASGD's beta = 0.9); diloco: the outer learning rate (default 0.7)")
	fs.Float64Var(&o.OuterMomentum, "outer-momentum", o.OuterMomentum, "diloco: the outer optimizer's Nesterov momentum (the paper's 0.9; 0 for plain outer SGD)")
	f.streaming.register(fs)
	fs.Float64Var(&o.Rho, "rho", o.Rho, "elastic schemes: SC17's rho; sets alpha = base_lr * rho")
	fs.Float64Var(&o.Momentum, "momentum", o.Momentum, "solver momentum (default: the solver's; for "+strings.Join(scheme.PlainSGDNames(), ", ")+", whose rule is plain SGD (SC17 Eq. 1), 0 with base_lr / (1 - the solver's momentum); the header shows the momentum and base_lr the run uses)")
	fs.IntVar(&o.Variant, "variant", o.Variant, "sync-easgd: 1 center on a separate master, 2 center on worker 0, 3 as 2 with the exchange overlapped with compute (SC17 6.1)")
	fs.IntVar(&o.Groups, "groups", o.Groups, "hybrid: number of synchronous groups (default: 2, or 1 for an odd worker count)")
	fs.StringVar(&o.Finish, "finish", o.Finish, "asynchronous schemes: when workers stop: own (each after its iterations), master (when worker 0 finishes), first (when the first finishes), average (when the mean count reaches the iterations)")
	fs.DurationVar(&o.RoundDeadline, "round-deadline", o.RoundDeadline, "weedout: close a round this long after its first gradients arrive (default: 2x the first round's compute time is not known, so 0 waits for every worker; set it to weed stragglers out)")
	fs.Float64Var(&o.MaxUpdateNorm, "max-update-norm", o.MaxUpdateNorm, "asynchronous schemes: the center refuses, naming the worker, an update (push, elastic exchange, round) whose L2 norm exceeds this (0: no bound; non-finite updates are refused always)")
	f.center.register(fs, &o.Store)
	registerElastic(fs, &o.Elastic, &o.ElasticCoordinator)
	fs.DurationVar(&o.TimeBudget, "time-budget", o.TimeBudget, "stop training after this much training time (tests excluded), with the final test and snapshot (0: no limit)")
	fs.StringVar(&o.Straggle, "straggle", o.Straggle, "inject a straggler: RANK:DELAY (that worker is slower by DELAY every iteration) or p=PROB:DELAY (any worker, with that probability per iteration)")
}

// stringAlias is a second flag name for a string flag.
type stringAlias struct{ p *string }

func (a stringAlias) String() string {
	if a.p == nil {
		return ""
	}
	return *a.p
}

func (a stringAlias) Set(s string) error {
	*a.p = s
	return nil
}

// watchSignals gives SIGINT and SIGHUP the effects the flags ask for
// under ctx's interrupter (interrupt.Interrupter.SetEffect). A snapshot
// while training goes on is taken by the updating rank when it asks; in
// a run of several processes the signal reaches a launcher or one rank,
// so there it is refused.
func (f *trainFlags) watchSignals(ctx context.Context, oneProcess bool) error {
	in := interrupt.From(ctx)
	for _, s := range []struct {
		flag, value string
		sig         os.Signal
	}{{"--sigint-effect", f.sigint, syscall.SIGINT}, {"--sighup-effect", f.sighup, syscall.SIGHUP}} {
		e, err := interrupt.ParseEffect(s.value)
		switch {
		case err != nil:
			return fmt.Errorf("%s %w", s.flag, err)
		case e == interrupt.Snapshot && !oneProcess:
			return fmt.Errorf("%s snapshot: a run of several processes (--transport tcp, dsgd worker, dsgd ps) snapshots on a signal only as it stops; use stop, or --snapshot N for snapshots as it trains", s.flag)
		case e == interrupt.Snapshot && in != nil:
			f.snapshotAsked = in.TakeSnapshotRequest
		}
		if in != nil {
			in.SetEffect(s.sig, e, s.flag)
		}
	}
	return nil
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

// parseStraggle parses --straggle (job.ParseStraggle), naming the flag.
func parseStraggle(s string, workers int) (*train.Straggler, error) {
	st, err := job.ParseStraggle(s, workers)
	return st, asFlags(err, trainFlagNames)
}

// caffeSpellings maps Caffe's train flags onto ours: -snapshot FILE is
// --resume FILE (both given is an error), and -gpu is noted on stderr,
// since the run trains on the CPU.
func (f *trainFlags) caffeSpellings(stderr io.Writer) error {
	if s := f.caffeSnapshot; s != "" {
		if f.o.Resume != "" {
			fmt.Fprintf(stderr, "dsgd train: --snapshot %s and --resume %s: they are the same flag (Caffe's name and ours); give one\n", s, f.o.Resume)
			return errUsage
		}
		f.o.Resume = s
		fmt.Fprintf(stderr, "dsgd train: note: --snapshot %s is Caffe's spelling of --resume %s\n", s, s)
	}
	return f.m.checkGPU("train", stderr)
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
	if err := restoreRun(fs, f.o.Resume, stdout); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return refuse(stderr, err)
	}
	o := &f.o
	if err := f.watchSignals(ctx, o.Transport == "inproc"); err != nil {
		return refuse(stderr, err)
	}
	switch {
	case o.Allreduce == job.AllreduceMPI:
		fmt.Fprintln(stderr, "dsgd train: --allreduce mpi needs mpirun -np N dsgd worker --transport mpi --allreduce mpi ...")
		return errUsage
	case o.Transport == "inproc" && o.Elastic != "":
		return refuse(stderr, errors.New("--elastic with --transport inproc: the workers of one process live and die together; give --transport tcp"))
	case o.Transport == "inproc" && o.Compress == "fp16":
		return refuse(stderr, errors.New("--compress works with --transport tcp for fp16, the tcp wire's encoding (bf16, powersgd:R, topk:F and sign work over every transport)"))
	case o.Transport == "inproc":
		return execute(ctx, &f, nil, stdout, stderr)
	case o.Transport == "tcp" && o.Workers < 1:
		return refuse(stderr, errors.New("--transport tcp needs --workers N"))
	case o.Transport == "tcp":
		return launchRanks(ctx, args, &f, stdout, stderr)
	case o.Transport == "mpi":
		return refuse(stderr, errors.New("--transport mpi: MPI starts the ranks; run mpirun -np N dsgd worker --transport mpi ... (or srun)"))
	}
	return refuse(stderr, fmt.Errorf("--transport %q: choose inproc or tcp", o.Transport))
}

// flagGiven reports whether any of names was set on fs's command line.
func flagGiven(fs *flag.FlagSet, names ...string) bool {
	given := false
	if fs != nil {
		fs.Visit(func(fl *flag.Flag) { given = given || slices.Contains(names, fl.Name) })
	}
	return given
}
