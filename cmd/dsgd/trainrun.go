package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"dsgd/comm/collective"
	"dsgd/comm/elastic"
	"dsgd/comm/transport"
	"dsgd/comm/transport/mpi"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/job"
	"dsgd/training/metrics"
	"dsgd/training/prom"
	"dsgd/training/train"
)

// execute runs the training job the flags describe: every rank in this
// process (g nil), or rank g.rank of a multi-process group. Its errors
// name the flags, not the Config fields the libraries name.
func execute(ctx context.Context, f *trainFlags, g *groupFlags, stdout, stderr io.Writer) (err error) {
	defer func() { err = asFlags(err, trainFlagNames) }()
	j, err := f.m.load()
	if err != nil {
		return err
	}
	printNotes(stderr, j)
	cfg, autoNote, err := f.config(j, g, stdout, stderr)
	if err != nil {
		return err
	}
	rank := g.rankOf()
	files := &job.RunFiles{}
	defer files.Close(func(err error) { fmt.Fprintf(stderr, "dsgd: %v\n", asFlags(err, trainFlagNames)) })
	defer j.Close()
	if err := f.prepare(j, files, &cfg, g, stderr); err != nil {
		return err
	}
	member, err := f.member(g, &cfg, stderr)
	if err != nil {
		return err
	}
	if g != nil && g.serve {
		return f.serve(ctx, j, cfg, g, rank, stdout, stderr)
	}
	d := &runDeps{}
	defer d.close()
	tr, err := f.build(ctx, cfg, member, g, d)
	if err != nil {
		return err
	}
	if err := f.check(j, tr, cfg, files, stderr); err != nil {
		return err
	}
	pr, stopProm, err := f.serveProm(ctx, g, rank, stderr)
	defer stopProm()
	if err != nil {
		return err
	}
	if err := f.connect(ctx, d, g, tr, member, j, pr); err != nil {
		return err
	}
	out := f.printRunHeader(stderr, j, tr, cfg, g, member, autoNote)
	res, err := tr.Run(ctx, d.Deps)
	f.result = res
	if err != nil {
		return err
	}
	return f.report(ctx, out, stderr, res, tr, cfg, g, rank, member, d)
}

// prepare opens the files the flags name for this process
// (RunFiles.Open), plans the run's sums and compression (plan) and opens
// the job's data for cfg.
func (f *trainFlags) prepare(j *job.Job, files *job.RunFiles, cfg *train.Config, g *groupFlags, stderr io.Writer) error {
	if err := files.Open(cfg, job.Files{Metrics: *f.metrics, Log: *f.log, Timeline: *f.timeline, Center: g != nil && g.serve}); err != nil {
		return err
	}
	if err := f.plan(j, cfg, stderr); err != nil {
		return err
	}
	return j.Open(cfg, *f.testIter)
}

// build makes the run's trainer and, for an elastic member, joins the
// group's coordinator with the trainer's layout (the connection closed
// with d).
func (f *trainFlags) build(ctx context.Context, cfg train.Config, member *elastic.Member, g *groupFlags, d *runDeps) (*train.Trainer, error) {
	tr, err := train.New(cfg)
	if err != nil || member == nil {
		return tr, err
	}
	if err := f.join(ctx, member, tr, g); err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { member.Client.Close() })
	return tr, nil
}

// serve runs the parameter server of a center scheme (dsgd ps) for
// cfg: its center is built from the run's start (Job.NewStart).
func (f *trainFlags) serve(ctx context.Context, j *job.Job, cfg train.Config, g *groupFlags, rank int, stdout, stderr io.Writer) error {
	st, err := j.NewStart(cfg)
	if err != nil {
		return err
	}
	pr, stopProm, err := f.serveProm(ctx, g, rank, stderr)
	defer stopProm()
	if err != nil {
		return err
	}
	return serveCenter(ctx, f, st, g.listen, g.token, stdout, pr.Registry())
}

// rankOf is g's rank: 0 for a run whose ranks are all in this process
// (g nil).
func (g *groupFlags) rankOf() int {
	if g == nil {
		return 0
	}
	return g.rank
}

// refuse prints err as the command's refusal of its flags and returns
// errUsage.
func refuse(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "dsgd train: %v\n", err)
	return errUsage
}

// config is the train.Config the flags give for j: the solver's, with
// the flags' overrides and the scheme's settings, placed on g's rank.
// autoNote is the header's note on the layout dsgd chose.
func (f *trainFlags) config(j *job.Job, g *groupFlags, stdout, stderr io.Writer) (cfg train.Config, autoNote string, err error) {
	m := &f.m
	sd := j.Solver
	if *f.workers == 0 {
		var note string
		*f.workers, note = job.DefaultWorkers(*f.scheme, m.threads)
		if note != "" {
			autoNote = "dsgd: " + trainFlagNames.Replace(note) + "\n"
		}
	}
	cfg = j.Config()
	cfg.Resume, cfg.Weights = *f.resume, weightsFrom(*f.weights, sd.Weights)
	cfg.Threads, cfg.Out, cfg.TTY = m.threads, stdout, ownTerminal(stdout, os.Getenv)
	cfg.GPUs, cfg.TF32, cfg.GPUFastest = m.gpuIDs, m.tf32, m.fastest
	if len(cfg.GPUs) == 0 {
		// The GPU's own line comes with the trainer's header; a solver
		// whose GPU is not used says why with the header's warnings.
		ids, note := j.SolverGPU(f.cpuOnly())
		if ids == nil && note != "" {
			j.Warnings = append(j.Warnings, note)
		}
		cfg.GPUs = ids
	}
	if *f.iters > 0 {
		cfg.MaxIter = *f.iters
	}
	switch {
	case *f.snapFormat == train.FormatDsgd || *f.snapFormat == train.FormatCaffe || *f.snapFormat == train.FormatHDF5:
		cfg.SnapshotFormat = *f.snapFormat
	case *f.snapFormat != "":
		fmt.Fprintf(stderr, "dsgd: --snapshot-format %q: want dsgd, caffe or hdf5\n", *f.snapFormat)
		return cfg, "", errUsage
	}
	switch *f.prefix {
	case "":
	case "none":
		cfg.SnapshotPrefix = ""
	default:
		cfg.SnapshotPrefix = *f.prefix
	}
	if *f.testInterval >= 0 {
		cfg.TestInterval = *f.testInterval
	}
	if *f.testIter > 0 {
		cfg.TestIter = *f.testIter // the further test nets' come with their data below
	}
	if *f.display >= 0 {
		cfg.Display = *f.display
	}
	if *f.workers < 1 {
		fmt.Fprintf(stderr, "dsgd train: --workers must be at least 1, got %d\n", *f.workers)
		return cfg, "", errUsage
	}
	algo, err := collective.ParseAlgorithm(*f.algo)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd train: --allreduce: %v\n", err)
		return cfg, "", errUsage
	}
	cfg.Name, cfg.Workers, cfg.Pack, cfg.Algo, cfg.CommTimeout = f.schemeName(), *f.workers, *f.pack, algo, *f.commTimeout
	// A rank of a multi-process run records how its ranks met: the
	// launcher strips --transport from their command lines, and a resumed
	// run must start its ranks the same way (--transport tcp).
	transport := ""
	if g != nil && g.mpi == nil {
		transport = "tcp"
	}
	cfg.Run = f.record(cfg.Name, cfg.Workers, transport)
	if *f.bucketKiB < -1 { // dsgd compare's runs reach here without validate
		fmt.Fprintf(stderr, "dsgd train: --bucket must not be negative, got %d\n", *f.bucketKiB)
		return cfg, "", errUsage
	}
	cfg.Bucket = scheme.BucketOf(*f.bucketKiB, g != nil)
	cfg.TimeBudget = *f.timeBudget
	if err := f.asyncConfig(&cfg); err != nil {
		fmt.Fprintf(stderr, "dsgd train: %v\n", err)
		return cfg, "", errUsage
	}
	if err := cfg.ScaleLR(*f.lrScale); err != nil {
		return cfg, "", refuse(stderr, asFlags(err, trainFlagNames))
	}
	if *f.warmup < 0 {
		fmt.Fprintf(stderr, "dsgd train: --warmup must not be negative, got %d\n", *f.warmup)
		return cfg, "", errUsage
	}
	if *f.warmup > 0 {
		cfg.Solver.WarmupIters = *f.warmup
	}
	if err := j.PlanTests(&cfg); err != nil {
		return cfg, "", err
	}
	if g != nil {
		job.Place(&cfg, g.rank, g.world, f.elastic.on())
	}
	return cfg, autoNote, nil
}

// cpuOnly names the flag that keeps this run on the CPU (what the GPU
// engine does not run), or "".
func (f *trainFlags) cpuOnly() string {
	switch {
	case *f.reduce == "exact":
		return "--reduce exact"
	case f.elastic.on():
		return "--elastic"
	}
	return ""
}

// plan applies --compress and --reduce to cfg and j (Job.Plan, which
// also makes a resumed run's data continue where its snapshot stopped),
// refusing what the run cannot take.
func (f *trainFlags) plan(j *job.Job, cfg *train.Config, stderr io.Writer) error {
	bounds := ""
	if f.elastic.on() {
		bounds = *f.elastic.bounds
	}
	note, err := j.Plan(cfg, job.Sums{Reduce: *f.reduce, Atom: *f.atom, Elastic: bounds, Compress: *f.compress}, *f.compressWarmup)
	if refused, ok := errors.AsType[*job.RefusedError](err); ok {
		return refuse(stderr, asFlags(refused.Err, trainFlagNames))
	}
	if err != nil {
		return err
	}
	f.reduceNote = trainFlagNames.Replace(note)
	return nil
}

// member is this rank's membership of an elastic group (nil without
// --elastic; train.NewMember), which marks cfg elastic.
func (f *trainFlags) member(g *groupFlags, cfg *train.Config, stderr io.Writer) (*elastic.Member, error) {
	if g == nil || !f.elastic.on() {
		return nil, nil
	}
	link, err := g.tcpConfig(*f.compress, *f.shm)
	if err != nil {
		return nil, err
	}
	link.Timeout = *f.commTimeout
	member, err := train.NewMember(cfg, g.rank, g.world, link)
	if err != nil {
		return nil, refuse(stderr, asFlags(err, trainFlagNames))
	}
	return member, nil
}

// join connects member to the elastic group's coordinator, for the
// layout tr built; the caller closes member.Client.
func (f *trainFlags) join(ctx context.Context, member *elastic.Member, tr *train.Trainer, g *groupFlags) error {
	member.TCP.ModelHash = tr.LayoutHash()
	var err error
	member.Client, err = elastic.Dial(ctx, *f.elastic.coordinator, g.token, *f.commTimeout)
	if err != nil {
		return fmt.Errorf("--elastic-coordinator %s: %w", *f.elastic.coordinator, err)
	}
	return nil
}

// check refuses, before the run, labels past the classes of the layers
// they feed, a compressor that would compress nothing, and a --metrics
// CSV file whose header is another run's columns.
func (f *trainFlags) check(j *job.Job, tr *train.Trainer, cfg train.Config, files *job.RunFiles, stderr io.Writer) error {
	if err := j.CheckLabels(tr.Net(), j.Train.Spec, j.Test.Spec); err != nil {
		return err
	}
	if err := train.CompressNothing(tr, cfg, f.m.netFlag()); err != nil {
		return refuse(stderr, asFlags(err, trainFlagNames))
	}
	return files.CheckHeader(cfg, tr.MetricsColumns())
}

// serveProm serves --metrics-listen where this process reports (one
// process, rank 0, or dsgd ps); nil otherwise. stop ends it.
func (f *trainFlags) serveProm(ctx context.Context, g *groupFlags, rank int, stderr io.Writer) (pr *prom.Run, stop func(), err error) {
	if *f.metricsListen == "" || !(g == nil || g.serve || rank == 0) {
		return nil, func() {}, nil
	}
	pr = prom.New()
	mctx, stop := context.WithCancel(ctx)
	addr, err := serveMetrics(mctx, *f.metricsListen, pr.Registry(), stderr)
	if err != nil {
		return nil, stop, err
	}
	fmt.Fprintf(stderr, "dsgd: metrics on http://%s/metrics\n", addr)
	return pr, stop, nil
}

// runDeps are a run's dependencies, the connections the built trainer
// makes possible (its layout hash, its join fields) and the hooks, with
// what closes the connections.
type runDeps struct {
	train.Deps
	// peak measures diloco's busiest step over a group's endpoint.
	peak    *metrics.PeakStep
	closers []func()
}

func (d *runDeps) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// connect fills d for tr: on a rank of a multi-process group (g), what
// its scheme talks to (train.Connect: an elastic group's membership and
// feeds, the center, the group's endpoint), and the hooks that measure
// and export the run (job.Observe).
func (f *trainFlags) connect(ctx context.Context, d *runDeps, g *groupFlags, tr *train.Trainer, member *elastic.Member, j *job.Job, pr *prom.Run) error {
	if g != nil {
		links := train.Links{
			Center: func(ctx context.Context, workers int) (center.Center, func(), error) {
				return dialCenter(ctx, f, tr, g.token, workers, *f.commTimeout)
			},
			Endpoint: func(ctx context.Context, hash uint64) (transport.Endpoint, error) {
				return g.connect(ctx, hash, *f.commTimeout, *f.compress, *f.shm)
			},
		}
		if member != nil {
			links.Elastic = &train.Elastic{Membership: member, Feeds: j.ReopenTrain}
		}
		var done func()
		var err error
		d.Deps, done, err = train.Connect(ctx, tr, links)
		d.closers = append(d.closers, done)
		if err != nil {
			return err
		}
	}
	d.peak = job.Observe(tr, &d.Deps, pr)
	if sc := tr.SchemeConfig(); sc.Info().Streaming {
		// Its fragments need the net's blocks: refuse them before
		// the header and the first test.
		if err := sc.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// printRunHeader writes the run's header: the job's, then the scheme and
// layout, the notes on what dsgd chose, and how gradients are summed and
// compressed. out is where it wrote, where the summary goes: cfg.Out,
// but nowhere on an elastic member other than rank 0.
func (f *trainFlags) printRunHeader(stderr io.Writer, j *job.Job, tr *train.Trainer, cfg train.Config, g *groupFlags, member *elastic.Member, autoNote string) (out io.Writer) {
	out = cfg.Out
	if member != nil && g.rank != 0 {
		out = io.Discard // the first generation's rank 0 prints the header
	}
	m := &f.m
	printHeader(out, stderr, j, tr.Net(), m.threads, cfg.MaxIter, cfg.Solver)
	threads := max(1, m.threads/cfg.Workers)
	where := *f.transport
	if g != nil {
		threads, where = m.threads, "tcp"
		if g.mpi != nil {
			where = "mpi (" + mpi.Version() + ")"
			if g.native != nil {
				where += ", MPI's own collectives"
			}
		}
	}
	fmt.Fprintf(out, "dsgd: scheme %s, %d worker(s) over %s, %d thread(s) each, pack %v\n", cfg.Name, cfg.Workers, where, threads, cfg.Pack)
	fmt.Fprint(out, autoNote)
	fmt.Fprint(out, f.note)
	if sc := tr.SchemeConfig(); sc.Info().Outer {
		fmt.Fprintf(out, "dsgd: %s: %s\n", sc.Name, sc.StreamingSummary())
	}
	fmt.Fprint(out, f.reduceNote)
	printCompressHeader(out, tr, cfg)
	if cfg.Resume != "" {
		fmt.Fprintf(out, "dsgd: resuming from %s\n", cfg.Resume)
	}
	return out
}

// report writes the finished run's summary (an elastic group's by its
// last generation's rank 0), what it sent, and returns the error of
// workers that failed on the way.
func (f *trainFlags) report(ctx context.Context, out, stderr io.Writer, res *train.Result, tr *train.Trainer, cfg train.Config, g *groupFlags, rank int, member *elastic.Member, d *runDeps) error {
	if member != nil {
		member.Client.Leave(ctx)
		// The last generation's rank 0 reports, whichever worker it is.
		if tr.GroupRank() == 0 {
			printSummary(cfg.Out, res)
			fmt.Fprintf(cfg.Out, "elastic: %d generation(s), %d worker(s) at the end\n", res.Generations, res.Workers)
		}
		return nil
	}
	printSummary(out, res)
	printCompressed(out, res, cfg)
	if g != nil && d.Endpoint != nil {
		w := out // rank 0's summary; the other ranks' output is discarded
		if rank != 0 {
			w = stderr
		}
		printTraffic(w, rank, g.world, d.Endpoint.Stats(), res)
		if d.peak != nil {
			most, at := d.peak.Peak()
			fmt.Fprintf(w, "peak step (rank %d, measured): sent %d bytes in iteration %d, the most of any iteration after the first (the initial broadcast and the end-of-run synchronisations excluded)\n", rank, most, at)
		}
		printLinks(w, d.Endpoint, res.Iters)
	} else if cfg.Group != nil {
		printLinks(out, d.Endpoint, res.Iters)
	}
	return failedWorkers(res.Failed)
}
