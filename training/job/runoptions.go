package job

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/compress"
	"dsgd/comm/transport/tcp"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// RunOptions are a training run's settings as a user gives them, each a
// plain typed value: what dsgd train, dsgd worker and dsgd ps parse from
// their flags, and what Train assembles a train.Config from. Start from
// DefaultRunOptions: several fields use -1 for "the solver's" or "the
// scheme's". Check refuses values out of range, naming the fields.
type RunOptions struct {
	// Model chooses the net, the solver and their data.
	Model Options
	// Threads are the goroutines each layer computes with, shared by
	// the workers of one process.
	Threads int
	// GPUs are the devices the nets run on (nil: the solver's
	// solver_mode, else the CPU); TF32 and GPUFastest set their math.
	GPUs             []int
	TF32, GPUFastest bool

	// Iters are the iterations to train; 0: the solver's max_iter.
	Iters int
	// TestInterval and Display are the solver's test_interval and
	// display; -1: the solver's. TestIter is every test net's batches per
	// pass; 0: each net's test_iter.
	TestInterval, TestIter, Display int
	// Resume is the snapshot to continue from ("" for none).
	Resume string
	// SnapshotPrefix is where snapshots go ("" the solver's, "none" no
	// snapshots); SnapshotFormat is dsgd, caffe or hdf5 ("" the
	// solver's snapshot_format, else dsgd).
	SnapshotPrefix, SnapshotFormat string
	// Weights are comma-separated .caffemodel files to start from ("":
	// the solver's weights).
	Weights string

	// Scheme is the parallel scheme ("": DefaultName's for Workers);
	// Workers the worker count (0: DefaultWorkers).
	Scheme  string
	Workers int
	// Transport is how the workers talk: inproc, tcp or mpi.
	Transport string
	// Allreduce is the allreduce algorithm (collective.ParseAlgorithm's
	// names, or mpi: MPI's own collectives). Pack sends every layer as
	// one message.
	Allreduce string
	Pack      bool
	// Bucket is the KiB of gradients gathered before each exchange; -1:
	// scheme.BucketOf's default.
	Bucket int
	// CommTimeout is how long a peer may stay silent.
	CommTimeout time.Duration
	// Shm is on or off: ranks on one host talk through shared memory.
	Shm string
	// LRScale is the learning rate's scaling with the workers: none,
	// linear or inverse (train.Config.ScaleLR). Warmup ramps the rate
	// from 0 over this many iterations.
	LRScale string
	Warmup  int
	// Compress is the gradient compressor (compress.Parse), after
	// CompressWarmup plain iterations (-1: PlanCompress's default).
	Compress       string
	CompressWarmup int
	// Reduce and Atom say how gradients are summed (Sums).
	Reduce string
	Atom   int

	// Metrics, Log and Timeline are the files the run writes beside its
	// output (Files); MetricsListen serves its Prometheus metrics.
	Metrics, Log, Timeline, MetricsListen string

	// Interval is scheme.Options.Interval when IntervalSet (given),
	// else the scheme's default applies.
	Interval    int
	IntervalSet bool
	// Staleness, Variant and Groups are ssp's bound, sync-easgd's
	// variant and hybrid's groups (0: the default).
	Staleness, Variant, Groups int
	// Alpha, Rho and OuterMomentum are scheme.Options'.
	Alpha, Rho, OuterMomentum float64
	// Momentum replaces the solver's; -1 keeps it (or, for a plain-SGD
	// scheme, folds it into the step size).
	Momentum float64
	// Fragments, Overlap, Mix and OuterBits are streaming-diloco's
	// settings (scheme.Config's), checked by the caller.
	Fragments, Overlap, OuterBits int
	Mix                           float32
	// Finish is when asynchronous workers stop (center.ParseFinish).
	Finish string
	// Straggle injects a straggler: RANK:DELAY or p=PROB:DELAY
	// (ParseStraggle).
	Straggle string
	// RoundDeadline is weedout's round deadline; MaxUpdateNorm bounds a
	// center's updates (0: none).
	RoundDeadline time.Duration
	MaxUpdateNorm float64
	// TimeBudget stops training after this much training time (0: none).
	TimeBudget time.Duration
	// Elastic is an elastic group's MIN:MAX ("" for none);
	// ElasticCoordinator the coordinator a worker joins at.
	Elastic, ElasticCoordinator string
	// Store is the Redis store carrying a parameter server's weights.
	Store string
}

// DefaultRunOptions are the settings of a run told nothing: the
// solver's figures, the scheme's defaults, one process. Model and
// Threads are left to the caller, whose model options choose them.
func DefaultRunOptions() RunOptions {
	return RunOptions{
		TestInterval: -1, Display: -1, Transport: "inproc", Allreduce: "auto", Pack: true, Bucket: -1,
		CommTimeout: time.Minute, Shm: "on", LRScale: "none", Compress: "none", CompressWarmup: -1, Reduce: "auto",
		Interval: 1, Staleness: 3, Variant: 3, OuterMomentum: scheme.DiLoCoOuterMomentum, Momentum: -1,
		Fragments: 1, Mix: scheme.StreamingMix, OuterBits: 32, Finish: "own",
	}
}

// SchemeName is the scheme o asks for, DefaultName's when it names none.
func (o RunOptions) SchemeName() string {
	if o.Scheme != "" {
		return o.Scheme
	}
	return scheme.DefaultName(o.Workers)
}

// Check refuses, before any work is done (data loaded, nets built,
// processes started), every value out of its range, naming the field.
func (o RunOptions) Check() error {
	for _, c := range []struct {
		name   string
		v, min int // min: -1 where -1 means the default
	}{
		{"Iters", o.Iters, 0}, {"TestIter", o.TestIter, 0}, {"Workers", o.Workers, 0}, {"Warmup", o.Warmup, 0},
		{"Staleness", o.Staleness, 0}, {"Groups", o.Groups, 0}, {"TestInterval", o.TestInterval, -1},
		{"Display", o.Display, -1}, {"Bucket", o.Bucket, -1}, {"Atom", o.Atom, 0},
	} {
		if c.v < c.min {
			return fmt.Errorf("RunOptions.%s must not be negative, got %d", c.name, c.v)
		}
	}
	switch {
	case o.Interval < 1:
		return fmt.Errorf("RunOptions.Interval must be at least 1, got %d", o.Interval)
	case o.TimeBudget < 0:
		return fmt.Errorf("RunOptions.TimeBudget must not be negative, got %v", o.TimeBudget)
	case o.CommTimeout <= 0:
		return fmt.Errorf("RunOptions.CommTimeout must be positive, got %v", o.CommTimeout)
	case o.RoundDeadline < 0:
		return fmt.Errorf("RunOptions.RoundDeadline must not be negative, got %v", o.RoundDeadline)
	case o.MaxUpdateNorm < 0:
		return fmt.Errorf("RunOptions.MaxUpdateNorm must not be negative, got %g", o.MaxUpdateNorm)
	case o.Momentum < 0 && o.Momentum != -1:
		return fmt.Errorf("RunOptions.Momentum must not be negative, got %g", o.Momentum)
	case o.Variant < 1 || o.Variant > 3:
		return fmt.Errorf("RunOptions.Variant must be 1, 2 or 3, got %d", o.Variant)
	}
	if err := (scheme.Options{Alpha: o.Alpha, Rho: o.Rho}).Check(); err != nil {
		return err
	}
	if o.Scheme != "" && !slices.Contains(scheme.Names(), o.Scheme) {
		return fmt.Errorf("RunOptions.Scheme %q: unknown; choose one of %s", o.Scheme, strings.Join(scheme.Names(), ", "))
	}
	if _, err := collective.ParseAlgorithm(o.Allreduce); err != nil && o.Allreduce != AllreduceMPI {
		return fmt.Errorf("RunOptions.Allreduce: %v", err)
	}
	if _, err := center.ParseFinish(o.Finish); err != nil {
		return fmt.Errorf("RunOptions.Finish: %v", err)
	}
	if _, err := compress.Parse(o.Compress); err != nil {
		return fmt.Errorf("RunOptions.Compress: %v", err)
	}
	if err := oneOf("LRScale", o.LRScale, "choose none, linear or inverse", "none", "linear", "inverse"); err != nil {
		return err
	}
	if err := oneOf("Transport", o.Transport, "choose inproc, tcp or mpi (dsgd worker under mpirun or srun)", "inproc", "tcp", "mpi"); err != nil {
		return err
	}
	if _, err := ParseStraggle(o.Straggle, max(o.Workers, 1<<30)); err != nil {
		return err
	}
	if err := oneOf("Reduce", o.Reduce, "choose exact, fast or auto", "auto", "exact", "fast"); err != nil {
		return err
	}
	if err := oneOf("SnapshotFormat", o.SnapshotFormat, "want dsgd, caffe or hdf5", "", train.FormatDsgd, train.FormatCaffe, train.FormatHDF5); err != nil {
		return err
	}
	if err := o.checkStore(); err != nil {
		return err
	}
	return o.checkElastic()
}

// oneOf refuses a value of field not among choices, saying want.
func oneOf(field, v, want string, choices ...string) error {
	if slices.Contains(choices, v) {
		return nil
	}
	return fmt.Errorf("RunOptions.%s %q: %s", field, v, want)
}

// checkStore refuses a Store for a scheme without a parameter server
// that Redis could carry: one whose ranks exchange over the transport,
// or one whose center is smb's shared buffers.
func (o RunOptions) checkStore() error {
	if o.Store == "" {
		return nil
	}
	name := o.SchemeName()
	var stores []string
	for _, n := range scheme.Names() {
		if in, _ := scheme.Lookup(n); in.Center != scheme.NoCenter && !in.SharedBuffers {
			stores = append(stores, n)
		}
	}
	switch in, _ := scheme.Lookup(name); {
	case in.Center == scheme.NoCenter:
		return fmt.Errorf("RunOptions.Store: %s moves its gradients and weights over RunOptions.Transport between its ranks, not through a center that Redis could carry (SpeeDO 3.1 also put sync SGD's weights in Redis; dsgd does not); RunOptions.Store is for %s", name, strings.Join(stores, ", "))
	case in.SharedBuffers:
		return fmt.Errorf("RunOptions.Store: %s keeps its global weights in dsgd smb's shared buffers, not in a parameter server; RunOptions.Store is for %s", name, strings.Join(stores, ", "))
	}
	return nil
}

// ElasticBounds parses Elastic, MIN:MAX with 1 <= MIN <= MAX.
func ElasticBounds(spec string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(spec, ":")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || lo < 1 || hi < lo {
		return 0, 0, fmt.Errorf("RunOptions.Elastic %q: want MIN:MAX with 1 <= MIN <= MAX, for example 2:4", spec)
	}
	return lo, hi, nil
}

// checkElastic refuses Elastic where it cannot run, naming both
// fields: a coordinator without bounds, a scheme without elastic
// membership, a compressor whose residuals a re-formed group would
// lose, and a worker count outside the bounds.
func (o RunOptions) checkElastic() error {
	if o.Elastic == "" {
		if o.ElasticCoordinator != "" {
			return errors.New("RunOptions.ElasticCoordinator without RunOptions.Elastic MIN:MAX")
		}
		return nil
	}
	lo, hi, err := ElasticBounds(o.Elastic)
	if err != nil {
		return err
	}
	if name := o.SchemeName(); !train.ElasticScheme(name) {
		return fmt.Errorf("RunOptions.Elastic with RunOptions.Scheme %s: elastic membership is for %s; the asynchronous schemes' workers already come and go at their center", name, strings.Join(train.ElasticSchemes, ", "))
	}
	if o.Compress != "none" && o.Compress != "fp16" {
		return fmt.Errorf("RunOptions.Elastic with RunOptions.Compress %s: each worker's error-feedback residual would be lost when the group re-forms; give one of them", o.Compress)
	}
	if w := o.Workers; w > 0 && (w < lo || w > hi) && o.ElasticCoordinator == "" {
		return fmt.Errorf("RunOptions.Workers %d outside RunOptions.Elastic %d:%d", w, lo, hi)
	}
	return nil
}

// AllreduceMPI is RunOptions.Allreduce's value that hands the
// collectives to MPI (a rank of mpirun's, over the mpi transport).
const AllreduceMPI = "mpi"

// TCP is the tcp transport's configuration from o's settings that do
// not change with a group's membership: the wire's encoding (fp16 of
// Compress; the gradient compressors run above the transport) and
// shared memory, with the address to listen on and the token.
func (o RunOptions) TCP(listen, token string) (tcp.Config, error) {
	c := tcp.CompressNone
	if spec, err := compress.Parse(o.Compress); err != nil {
		return tcp.Config{}, fmt.Errorf("RunOptions.Compress: %w", err)
	} else if spec.Kind == compress.FP16 {
		c = tcp.CompressFP16
	}
	sm, err := tcp.ParseShm(o.Shm)
	if err != nil {
		return tcp.Config{}, fmt.Errorf("RunOptions.Shm: %w", err)
	}
	return tcp.Config{Listen: listen, Token: token, Compress: c, Shm: sm}, nil
}

// ParseStraggle parses RunOptions.Straggle for a run of workers: "" is
// none, RANK:DELAY slows that worker by DELAY every iteration,
// p=PROB:DELAY any worker with that probability per iteration.
func ParseStraggle(s string, workers int) (*train.Straggler, error) {
	if s == "" {
		return nil, nil
	}
	who, delay, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("RunOptions.Straggle %q: want RANK:DELAY or p=PROB:DELAY", s)
	}
	d, err := time.ParseDuration(delay)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("RunOptions.Straggle %q: delay %q is not a duration such as 50ms", s, delay)
	}
	st := &train.Straggler{Rank: -1, Delay: d}
	if p, isProb := strings.CutPrefix(who, "p="); isProb {
		if st.Prob, err = strconv.ParseFloat(p, 64); err != nil || st.Prob <= 0 || st.Prob > 1 {
			return nil, fmt.Errorf("RunOptions.Straggle %q: probability %q is not in (0,1]", s, p)
		}
		return st, nil
	}
	if st.Rank, err = strconv.Atoi(who); err != nil || st.Rank < 0 || st.Rank >= workers {
		return nil, fmt.Errorf("RunOptions.Straggle %q: rank %q is not a worker in [0,%d)", s, who, workers)
	}
	return st, nil
}

// NetName names the option that chose the TRAIN net, for messages.
func (o Options) NetName() string {
	switch {
	case o.Solver != "":
		return "the net of Options.Solver " + o.Solver
	case o.Net != "":
		return "Options.Net " + o.Net
	case o.Model != "":
		return "Options.Model " + o.Model
	}
	return "the default net"
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// WeightsFrom returns the .caffemodel files to start from: the given
// list (RunOptions.Weights), or else the solver's weights fields (each
// may be a comma-separated list), as caffe train lets its flag replace
// them.
func WeightsFrom(given string, solver []string) []string {
	if given != "" {
		return splitList(given)
	}
	return splitList(strings.Join(solver, ","))
}
