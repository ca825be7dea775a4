package job

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"dsgd/comm/collective"
	"dsgd/comm/elastic"
	"dsgd/comm/transport"
	"dsgd/comm/transport/mpi"
	"dsgd/comm/transport/tcp"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/launch"
	"dsgd/training/metrics"
	"dsgd/training/prom"
	"dsgd/training/train"
)

// RunDeps are what a run takes from its caller besides its options:
// where it prints, how its messages name the settings, and on a rank of
// a multi-process group what its scheme connects to.
type RunDeps struct {
	// Stdout gets the header, the progress and the summary; Stderr the
	// warnings and notes. TTY says Stdout is this process's own terminal,
	// where a progress bar may be redrawn.
	Stdout, Stderr io.Writer
	TTY            bool
	// Names renames the fields the printed notes and warnings name
	// (RunOptions', Config's) as the caller calls them; nil keeps them.
	Names func(string) string
	// Record is the run configuration a snapshot records (Config.Run)
	// for the scheme, worker count and transport ("tcp" on a rank of a
	// tcp group, else "") the run uses; nil records none.
	Record func(scheme string, workers int, transport string) []byte
	// Group places this process in a multi-process group; nil runs
	// every rank in this process.
	Group *Group
	// SnapshotRequested, when set, says whether a snapshot was asked for
	// since it was last asked (train.Deps.SnapshotRequested).
	SnapshotRequested func() bool
}

// Group is this process's place in a multi-process run, how it joins
// its group's endpoint (tcp at the rendezvous, or MPI), and the
// factories of the center's client and server, which the caller makes:
// they are the servers' (package centernet), which training does not
// import.
type Group struct {
	// Rank is this process's rank of World.
	Rank, World int
	// Listen is the address of this rank's data connections; Token the
	// group's shared secret; Rendezvous where rank 0 gathers a tcp group,
	// and Hint what an error of joining it adds (launcher.Placement.Hint).
	Listen, Token, Rendezvous, Hint string
	// MPI is this rank's endpoint of an MPI job (JoinMPI; nil over tcp);
	// Native, when MPI's own collectives run the allreduce, the same
	// with them.
	MPI    *mpi.Endpoint
	Native transport.Endpoint
	// Serve, when set, makes this process the server of a center-only
	// scheme (dsgd ps): it serves the center made from the run's start,
	// with reg (nil without metrics) for its counters.
	Serve func(ctx context.Context, start *train.Start, reg *prometheus.Registry) error
	// Center connects a worker to its center, serving workers workers;
	// the func returned closes it.
	Center func(ctx context.Context, tr *train.Trainer, workers int) (center.Center, func(), error)
}

// runner is one Train call: its settings, its dependencies and what it
// has made so far.
type runner struct {
	o   RunOptions
	d   RunDeps
	j   *Job
	cfg train.Config
	// notes are the header's lines on what the run chose (the layout,
	// the scheme's options, the sums), named by d.Names.
	autoNote, note, reduceNote string
	member                     *elastic.Member
	deps                       train.Deps
	peak                       *metrics.PeakStep
	closers                    []func()
}

// Train runs the training job o describes with d: every rank in this
// process, or d.Group's rank of a multi-process group. It checks o
// (Check), loads the job, makes the train.Config (config), opens the
// run's files and data, plans the sums and the compressor, joins an
// elastic group, builds the trainer, checks labels, the compressor and
// the records file, connects the rank, prints the header, runs, and
// prints the summary (WriteSummary) and what the rank sent. Its errors
// name RunOptions' and Config's fields; a refusal of the options is a
// *RefusedError. res is the run's as far as it went.
func Train(ctx context.Context, o RunOptions, d RunDeps) (res *train.Result, err error) {
	if d.Names == nil {
		d.Names = func(s string) string { return s }
	}
	if err := o.Check(); err != nil {
		return nil, &RefusedError{err}
	}
	j, err := Load(o.Model)
	if err != nil {
		return nil, err
	}
	// A solver without base_lr or lr_policy was read, as Caffe reads it;
	// training needs them: refuse before any data or file is opened.
	if err := j.Solver.CheckTrain(); err != nil {
		return nil, err
	}
	j.WriteNotes(d.Stderr)
	r := &runner{o: o, d: d, j: j}
	if err := r.config(); err != nil {
		return nil, err
	}
	g := d.Group
	files := &RunFiles{}
	defer files.Close(func(err error) { fmt.Fprintf(d.Stderr, "dsgd: %s\n", d.Names(err.Error())) })
	defer j.Close()
	if err := r.prepare(files); err != nil {
		return nil, err
	}
	if g != nil && g.Serve != nil {
		return nil, r.serve(ctx)
	}
	defer r.close()
	tr, err := r.build(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.check(tr, files); err != nil {
		return nil, err
	}
	pr, stopProm, err := r.serveProm(ctx)
	defer stopProm()
	if err != nil {
		return nil, err
	}
	if err := r.connect(ctx, tr, pr); err != nil {
		return nil, err
	}
	out := r.header(tr)
	res, err = tr.Run(ctx, r.deps)
	if err != nil {
		return res, err
	}
	return res, r.report(ctx, out, res, tr)
}

// refused is err as a refusal of the options.
func refused(err error) error {
	if err == nil {
		return nil
	}
	return &RefusedError{err}
}

// config makes r.cfg from the job and the options: the solver's, with
// the options' overrides and the scheme's settings, placed on the
// group's rank.
func (r *runner) config() error {
	o, j := &r.o, r.j
	if o.Workers == 0 {
		var note string
		o.Workers, note = DefaultWorkers(o.Scheme, o.Threads)
		if note != "" {
			r.autoNote = "dsgd: " + r.d.Names(note) + "\n"
		}
	}
	cfg := j.Config()
	cfg.Resume, cfg.Weights = o.Resume, WeightsFrom(o.Weights, j.Solver.Weights)
	cfg.Threads, cfg.Out, cfg.TTY = o.Threads, r.d.Stdout, r.d.TTY
	cfg.GPUs, cfg.TF32, cfg.GPUFastest = o.GPUs, o.TF32, o.GPUFastest
	if len(cfg.GPUs) == 0 {
		// The GPU's own line comes with the trainer's header; a solver
		// whose GPU is not used says why with the header's warnings.
		ids, note := j.SolverGPU(o.cpuOnly())
		if ids == nil && note != "" {
			j.Warnings = append(j.Warnings, note)
		}
		cfg.GPUs = ids
	}
	if o.Iters > 0 {
		cfg.MaxIter = o.Iters
	}
	if o.SnapshotFormat != "" {
		cfg.SnapshotFormat = o.SnapshotFormat
	}
	switch o.SnapshotPrefix {
	case "":
	case "none":
		cfg.SnapshotPrefix = ""
	default:
		cfg.SnapshotPrefix = o.SnapshotPrefix
	}
	if o.TestInterval >= 0 {
		cfg.TestInterval = o.TestInterval
	}
	if o.TestIter > 0 {
		cfg.TestIter = o.TestIter // the further test nets' come with their data
	}
	if o.Display >= 0 {
		cfg.Display = o.Display
	}
	if o.Workers < 1 {
		return refused(fmt.Errorf("RunOptions.Workers must be at least 1, got %d", o.Workers))
	}
	algo, err := collective.ParseAlgorithm(o.Allreduce)
	if err != nil {
		return refused(fmt.Errorf("RunOptions.Allreduce: %v", err))
	}
	g := r.d.Group
	cfg.Name, cfg.Workers, cfg.Pack, cfg.Algo, cfg.CommTimeout = o.SchemeName(), o.Workers, o.Pack, algo, o.CommTimeout
	// A rank of a multi-process run records how its ranks met: the
	// launcher strips the transport from their command lines, and a
	// resumed run must start its ranks the same way (tcp).
	if r.d.Record != nil {
		transport := ""
		if g != nil && g.MPI == nil {
			transport = "tcp"
		}
		cfg.Run = r.d.Record(cfg.Name, cfg.Workers, transport)
	}
	cfg.Bucket = scheme.BucketOf(o.Bucket, g != nil)
	cfg.TimeBudget = o.TimeBudget
	if err := r.schemeConfig(&cfg); err != nil {
		return refused(err)
	}
	if err := cfg.ScaleLR(o.LRScale); err != nil {
		return refused(err)
	}
	if o.Warmup > 0 {
		cfg.Solver.WarmupIters = o.Warmup
	}
	if err := j.PlanTests(&cfg); err != nil {
		return err
	}
	if g != nil {
		Place(&cfg, g.Rank, g.World, o.Elastic != "")
	}
	r.cfg = cfg
	return nil
}

// schemeConfig applies the scheme's options to cfg (the asynchronous
// and elastic schemes', scheme.Options.Resolve, streaming-diloco's, the
// momentum of a plain-SGD scheme, the straggler), with the header's
// notes on what they chose.
func (r *runner) schemeConfig(cfg *train.Config) error {
	o := r.o
	var err error
	cfg.Staleness, cfg.Variant, cfg.RoundDeadline = o.Staleness, o.Variant, o.RoundDeadline
	cfg.MaxUpdateNorm = o.MaxUpdateNorm
	if cfg.Finish, err = center.ParseFinish(o.Finish); err != nil {
		return fmt.Errorf("RunOptions.Finish: %w", err)
	}
	if cfg.MaxIter == 0 {
		// A run of no iteration (max_iter 0, which Caffe runs): every
		// rule stops the workers at once, and the center's rules count
		// to an iteration there is not.
		cfg.Finish = center.FinishOwn
	}
	opts := scheme.Options{Alpha: o.Alpha, Rho: o.Rho, LR: cfg.Solver.BaseLR, Groups: o.Groups,
		OuterMomentum: o.OuterMomentum, Resizable: o.Elastic != ""}
	if o.IntervalSet {
		opts.Interval = o.Interval
	}
	note, err := opts.Resolve(&cfg.Config)
	if err != nil {
		return err
	}
	in := cfg.Info()
	cfg.Fragments, cfg.Overlap, cfg.Mix, cfg.OuterBits = o.Fragments, o.Overlap, o.Mix, o.OuterBits
	if cfg.OuterBits < 32 && in.Streaming && o.Compress != "none" {
		// The codes are packed into float32 words; a wire encoding of
		// floats would change their bits.
		return fmt.Errorf("RunOptions.OuterBits %d with RunOptions.Compress %s: the quantised pseudo-gradients travel as packed codes, which a float encoding on the wire would corrupt; give one of them", cfg.OuterBits, o.Compress)
	}
	if note != "" {
		r.note += "dsgd: " + r.d.Names(note) + "\n"
	}
	switch {
	case o.Momentum >= 0:
		cfg.Solver.Momentum = o.Momentum
	case in.PlainSGD:
		if mu := cfg.PlainSGD(); mu > 0 {
			r.note = r.d.Names(fmt.Sprintf("dsgd: %s is plain SGD (SC17 Eq. 1): momentum 0 and base_lr %g / (1 - %g) = %.4g, the solver's step size (RunOptions.Momentum to choose)\n", cfg.Name, cfg.Solver.BaseLR*(1-mu), mu, cfg.Solver.BaseLR))
		}
	}
	cfg.Straggle, err = ParseStraggle(o.Straggle, cfg.Workers)
	return err
}

// cpuOnly names the option that keeps this run on the CPU (what the
// GPU engine does not run), or "".
func (o RunOptions) cpuOnly() string {
	switch {
	case o.Reduce == "exact":
		return "RunOptions.Reduce exact"
	case o.Elastic != "":
		return "RunOptions.Elastic"
	}
	return ""
}

// prepare opens the run's files for this process (RunFiles.Open), plans
// its sums and compressor (Job.Plan), opens the job's data, and makes
// an elastic group's membership (train.NewMember, which marks the
// Config elastic).
func (r *runner) prepare(files *RunFiles) error {
	o, g, cfg := r.o, r.d.Group, &r.cfg
	if err := files.Open(cfg, Files{Metrics: o.Metrics, Log: o.Log, Timeline: o.Timeline, Center: g != nil && g.Serve != nil}); err != nil {
		return err
	}
	note, err := r.j.Plan(cfg, Sums{Reduce: o.Reduce, Atom: o.Atom, Elastic: o.Elastic, Compress: o.Compress}, o.CompressWarmup)
	if err != nil {
		return err
	}
	r.reduceNote = r.d.Names(note)
	if err := r.j.Open(cfg, o.TestIter); err != nil {
		return err
	}
	if g == nil || o.Elastic == "" {
		return nil
	}
	link, err := o.TCP(g.Listen, g.Token)
	if err != nil {
		return err
	}
	link.Timeout = o.CommTimeout
	r.member, err = train.NewMember(cfg, g.Rank, g.World, link)
	return refused(err)
}

// serve runs the center of a center-only scheme (dsgd ps), made from
// the run's start (Job.NewStart).
func (r *runner) serve(ctx context.Context) error {
	st, err := r.j.NewStart(r.cfg)
	if err != nil {
		return err
	}
	pr, stopProm, err := r.serveProm(ctx)
	defer stopProm()
	if err != nil {
		return err
	}
	return r.d.Group.Serve(ctx, st, pr.Registry())
}

// build makes the run's trainer and, for an elastic member, joins the
// group's coordinator with the trainer's layout (closed with r).
func (r *runner) build(ctx context.Context) (*train.Trainer, error) {
	tr, err := train.New(r.cfg)
	if err != nil || r.member == nil {
		return tr, err
	}
	r.member.TCP.ModelHash = tr.LayoutHash()
	r.member.Client, err = elastic.Dial(ctx, r.o.ElasticCoordinator, r.d.Group.Token, r.o.CommTimeout)
	if err != nil {
		return nil, fmt.Errorf("RunOptions.ElasticCoordinator %s: %w", r.o.ElasticCoordinator, err)
	}
	r.closers = append(r.closers, func() { r.member.Client.Close() })
	return tr, nil
}

// close closes what the run connected, the last first.
func (r *runner) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// check refuses, before the run, labels past the classes of the layers
// they feed, a compressor that would compress nothing, and a records CSV
// file whose header is another run's columns.
func (r *runner) check(tr *train.Trainer, files *RunFiles) error {
	if err := r.j.CheckLabels(tr.Net(), r.j.Train.Spec, r.j.Test.Spec); err != nil {
		return err
	}
	if err := train.CompressNothing(tr, r.cfg, r.o.Model.NetName()); err != nil {
		return refused(err)
	}
	return files.CheckHeader(r.cfg, tr.MetricsColumns())
}

// serveProm serves RunOptions.MetricsListen where this process reports
// (one process, rank 0, or dsgd ps); nil otherwise. stop ends it.
func (r *runner) serveProm(ctx context.Context) (pr *prom.Run, stop func(), err error) {
	g := r.d.Group
	if r.o.MetricsListen == "" || !(g == nil || g.Serve != nil || g.Rank == 0) {
		return nil, func() {}, nil
	}
	pr = prom.New()
	mctx, stop := context.WithCancel(ctx)
	addr, err := serveMetrics(mctx, r.o.MetricsListen, pr.Registry(), r.d.Stderr, r.d.Names)
	if err != nil {
		return nil, stop, err
	}
	fmt.Fprintf(r.d.Stderr, "dsgd: metrics on http://%s/metrics\n", addr)
	return pr, stop, nil
}

// connect makes the run's deps for tr: on a rank of a multi-process
// group, what its scheme talks to (train.Connect: an elastic group's
// membership and feeds, the center, the group's endpoint), and the hooks
// that measure and export the run (Observe).
func (r *runner) connect(ctx context.Context, tr *train.Trainer, pr *prom.Run) error {
	if g := r.d.Group; g != nil {
		links := train.Links{
			Center: func(ctx context.Context, workers int) (center.Center, func(), error) {
				return g.Center(ctx, tr, workers)
			},
			Endpoint: func(ctx context.Context, hash uint64) (transport.Endpoint, error) {
				return g.endpoint(ctx, hash, r.o)
			},
		}
		if r.member != nil {
			links.Elastic = &train.Elastic{Membership: r.member, Feeds: r.j.ReopenTrain}
		}
		var done func()
		var err error
		r.deps, done, err = train.Connect(ctx, tr, links)
		r.closers = append(r.closers, done)
		if err != nil {
			return err
		}
	}
	r.deps.SnapshotRequested = r.d.SnapshotRequested
	r.peak = Observe(tr, &r.deps, pr)
	if sc := tr.SchemeConfig(); sc.Info().Streaming {
		// Its fragments need the net's blocks: refuse them before the
		// header and the first test.
		if err := sc.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// header writes the run's header: the job's (WriteHeader), then the
// scheme and layout, the notes on what the run chose, and how gradients
// are summed and compressed. out is where it wrote, where the summary
// goes: Config.Out, but nowhere on an elastic member other than rank 0.
func (r *runner) header(tr *train.Trainer) (out io.Writer) {
	cfg, o, g := r.cfg, r.o, r.d.Group
	out = cfg.Out
	if r.member != nil && g.Rank != 0 {
		out = io.Discard // the first generation's rank 0 prints the header
	}
	r.j.WriteHeader(out, r.d.Stderr, tr.Net(), o.Threads, cfg.MaxIter, cfg.Solver, r.d.Names)
	threads := max(1, o.Threads/cfg.Workers)
	where := o.Transport
	if g != nil {
		threads, where = o.Threads, "tcp"
		if g.MPI != nil {
			where = "mpi (" + mpi.Version() + ")"
			if g.Native != nil {
				where += ", MPI's own collectives"
			}
		}
	}
	fmt.Fprintf(out, "dsgd: scheme %s, %d worker(s) over %s, %d thread(s) each, pack %v\n", cfg.Name, cfg.Workers, where, threads, cfg.Pack)
	fmt.Fprint(out, r.autoNote)
	fmt.Fprint(out, r.note)
	if sc := tr.SchemeConfig(); sc.Info().Outer {
		fmt.Fprintf(out, "dsgd: %s: %s\n", sc.Name, sc.StreamingSummary())
	}
	fmt.Fprint(out, r.reduceNote)
	fmt.Fprint(out, r.d.Names(CompressHeader(tr, cfg)))
	if cfg.Resume != "" {
		fmt.Fprintf(out, "dsgd: resuming from %s\n", cfg.Resume)
	}
	return out
}

// report writes the finished run's summary (an elastic group's by its
// last generation's rank 0), what this rank sent, and returns the error
// of workers that failed on the way (FailedWorkers).
func (r *runner) report(ctx context.Context, out io.Writer, res *train.Result, tr *train.Trainer) error {
	cfg, g := r.cfg, r.d.Group
	if r.member != nil {
		r.member.Client.Leave(ctx)
		// The last generation's rank 0 reports, whichever worker it is.
		if tr.GroupRank() == 0 {
			WriteSummary(cfg.Out, res)
			fmt.Fprintf(cfg.Out, "elastic: %d generation(s), %d worker(s) at the end\n", res.Generations, res.Workers)
		}
		return nil
	}
	WriteSummary(out, res)
	WriteCompressed(out, res, cfg)
	if ep := r.deps.Endpoint; g != nil && ep != nil {
		w := out // rank 0's summary; the other ranks' output is discarded
		if g.Rank != 0 {
			w = r.d.Stderr
		}
		WriteTraffic(w, g.Rank, g.World, ep.Stats(), res)
		if r.peak != nil {
			most, at := r.peak.Peak()
			fmt.Fprintf(w, "peak step (rank %d, measured): sent %d bytes in iteration %d, the most of any iteration after the first (the initial broadcast and the end-of-run synchronisations excluded)\n", g.Rank, most, at)
		}
		WriteLinks(w, ep, res.Iters)
	} else if cfg.Group != nil {
		WriteLinks(out, r.deps.Endpoint, res.Iters)
	}
	return FailedWorkers(res.Failed)
}

// endpoint joins g's group with the layout hash every rank must share:
// over MPI, checking that every rank runs rank 0's layout
// (mpi.AgreeLayout), or over tcp at the rendezvous.
func (g *Group) endpoint(ctx context.Context, hash uint64, o RunOptions) (transport.Endpoint, error) {
	if g.MPI != nil {
		ctx, cancel := context.WithTimeout(ctx, o.CommTimeout)
		defer cancel()
		if err := mpi.AgreeLayout(ctx, g.MPI, hash); err != nil {
			return nil, err
		}
		if g.Native != nil {
			return g.Native, nil
		}
		return g.MPI, nil
	}
	cfg, err := o.TCP(g.Listen, g.Token)
	if err != nil {
		return nil, err
	}
	cfg.Rank, cfg.Size, cfg.Rendezvous, cfg.ModelHash, cfg.Timeout = g.Rank, g.World, g.Rendezvous, hash, o.CommTimeout
	ep, err := tcp.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("rank %d of %d joining %s: %w%s", g.Rank, g.World, g.Rendezvous, err, g.Hint)
	}
	return ep, nil
}

// JoinMPI makes this process a rank of its MPI job: the rank and world
// come from MPI, and a rank (>= 0) or world (> 0) given that disagrees
// is refused. native also opens MPI's own collectives (Group.Native).
func JoinMPI(rank, world int, native bool) (ep *mpi.Endpoint, nativeEp transport.Endpoint, err error) {
	ep, err = mpi.World()
	if err != nil {
		return nil, nil, fmt.Errorf("RunOptions.Transport mpi: %w", err)
	}
	if (rank >= 0 && rank != ep.Rank()) || (world > 0 && world != ep.Size()) {
		ep.Close()
		return nil, nil, fmt.Errorf("Placement.Rank %d Placement.World %d disagree with MPI, which made this rank %d of %d; leave them out under mpirun or srun", rank, world, ep.Rank(), ep.Size())
	}
	if native {
		if nativeEp, err = mpi.Native(ep); err != nil {
			ep.Close()
			return nil, nil, err
		}
	}
	return ep, nativeEp, nil
}

// Launch runs o's job on this host as a process per rank over loopback
// tcp (launch.Run, dsgd train's tcp transport). l carries what the
// caller makes of its command line (the ranks' and the center's
// arguments, the store, signals and writers); o gives the scheme, the
// threads, the trace file and an elastic group's bounds. l.Token is kept
// for an elastic group only, whose workers started later join with it;
// the others get a random one. A failure to start names the field that
// asked for the processes (RunOptions.Transport tcp, RunOptions.Elastic).
func Launch(ctx context.Context, o RunOptions, l launch.Config) error {
	l.Scheme = scheme.Config{Name: o.SchemeName(), Workers: o.Workers, Variant: o.Variant}
	l.Threads, l.Timeline = o.Threads, o.Timeline
	if o.Elastic == "" {
		l.Token = ""
	} else {
		lo, hi, err := ElasticBounds(o.Elastic)
		if err != nil {
			return err
		}
		l.Elastic = &launch.Elastic{Min: lo, Max: hi, Spec: o.Elastic, Timeout: o.CommTimeout}
	}
	err := launch.Run(ctx, l)
	if se, ok := errors.AsType[*launch.StartError](err); ok {
		field := "RunOptions.Transport tcp"
		if se.Elastic {
			field = "RunOptions.Elastic"
		}
		return fmt.Errorf("%s: %w", field, se.Err)
	}
	return err
}

// FinishMPI ends MPI after a rank's run (ep, from JoinMPI; nil over
// tcp) that ended with err, and returns err. A failed rank exits without
// MPI_Finalize (which would wait for the others): mpirun then stops the
// job, as a synchronous group cannot go on without it.
func FinishMPI(ep *mpi.Endpoint, err error) error {
	if ep == nil || err != nil {
		return err
	}
	ep.Close()
	return mpi.Finalize()
}
