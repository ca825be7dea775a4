package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"dsgd/accum"
	"dsgd/center"
	"dsgd/checkpoint"
	"dsgd/collective"
	"dsgd/metrics"
	"dsgd/model"
	"dsgd/nn/layers"
	"dsgd/node"
	"dsgd/scheme"
	"dsgd/solver"
	"dsgd/tensor"
	"dsgd/timeline"
	"dsgd/transport"
)

// Source fills the blobs of one data layer with the next batch. Fill must
// write every element of every blob it is given.
type Source interface {
	Fill(ctx context.Context, tops []*tensor.Blob) error
}

// Feed binds a Source to the input blobs it fills (a Data layer's tops).
type Feed struct {
	Tops   []string
	Source Source
}

// Phase timer indices, in report order.
const (
	PhaseData = iota
	PhaseForward
	PhaseBackward
	PhaseUpdate
)

const numPhases = PhaseUpdate + 1

// PhaseNames names the phases of a training iteration, in report order.
var PhaseNames = []string{"data", "forward", "backward", "update"}

// Config is one single-worker training run: Caffe's Solver::Solve.
type Config struct {
	// Train and Test are the nets of each phase; Test may have no layers,
	// which disables testing.
	Train, Test model.Spec
	// TrainShapes and TestShapes give the shape of every input blob.
	TrainShapes, TestShapes map[string]tensor.Shape
	// TrainFeeds and TestFeeds fill the inputs every iteration.
	TrainFeeds, TestFeeds []Feed

	Solver solver.Config
	// IterSize is Caffe's iter_size: each iteration's compute step runs
	// forward and backward on IterSize batches and contributes the mean
	// of their gradients (and of their losses), so one update sees
	// IterSize×batch samples per worker (1 when zero).
	IterSize int
	// MaxIter is the iteration to stop at.
	MaxIter int
	// TestInterval runs the test net every TestInterval iterations (0:
	// only at the end), over TestIter batches.
	TestInterval, TestIter int
	// TestInitialization tests before the first iteration, as Caffe does.
	TestInitialization bool
	// ExtraTests are further test nets (Caffe's second and later test_net
	// with their test_iter), tested after Test at every test pass; their
	// outputs are reported as "netK/NAME", K counting from 1.
	ExtraTests []TestNet
	// Display prints progress every Display iterations (0: never).
	Display int
	// AverageLoss, when > 0, makes the displayed loss the mean of the last
	// AverageLoss iterations' losses (Caffe's average_loss); 0 keeps an
	// exponential moving average.
	AverageLoss int
	// NoFinalSnapshot skips the snapshot at the end of training (Caffe's
	// snapshot_after_train: false); interval snapshots are still written.
	NoFinalSnapshot bool
	// Snapshot writes a snapshot every Snapshot iterations (0: only at the
	// end) to SnapshotPrefix + "_iter_N.dsgdsnap". An empty prefix disables
	// snapshots.
	Snapshot       int
	SnapshotPrefix string
	// SnapshotFormat is FormatDsgd ("" too) or FormatCaffe.
	SnapshotFormat string
	// Weights lists .caffemodel files whose layers are copied into the
	// initial weights by name, in order (caffe train --weights).
	Weights []string
	// Resume, when set, is a snapshot to continue from; ResumeFlag names
	// it in errors ("--resume" when empty).
	Resume, ResumeFlag string
	// Run is the run's configuration, recorded in every snapshot for a
	// resume to restore (opaque here; dsgd writes its flags as JSON).
	Run []byte
	// Seed seeds the parameter fillers and every random layer.
	Seed uint64
	// Threads is how many goroutines the layers use.
	Threads int
	// Out receives progress and reports; TTY redraws the progress bar in
	// place.
	Out io.Writer
	TTY bool
	// OnIter, when set, is called after every training iteration with
	// rank 0's loss and the iteration's wall time on rank 0.
	OnIter func(iter int, loss float64, d time.Duration)

	// Scheme names the parallel scheme (scheme.Names); "" means seq.
	Scheme string
	// Workers is the number of workers (1 when zero). Worker r > 0 reads
	// WorkerFeeds[r-1]; worker 0 reads TrainFeeds.
	Workers     int
	WorkerFeeds [][]Feed
	// Pack sends all layers as one message (default in the command).
	Pack bool
	// Bucket is overlap's allreduce bucket, in values (scheme.Config).
	Bucket int
	// Algo overrides the allreduce algorithm for every allreduce
	// (collective.Auto: the scheme's choice).
	Algo collective.Algorithm
	// CommTimeout bounds a wait for a peer (0: none).
	CommTimeout time.Duration
	// Group, when set, makes this process one rank of a multi-process
	// group (TCP): it runs only rank Group.Rank, fed by TrainFeeds
	// (WorkerFeeds is unused). Without it every rank runs in this process
	// over in-process endpoints.
	Group *Group
	// Metrics, when set, receives one JSON line per iteration per worker
	// (see IterMetrics).
	Metrics io.Writer
	// Timeline, when set, receives a trace of every local rank's work
	// (see traceRank): per-layer forward and backward, communication,
	// updates and waits. The caller closes it after Run.
	Timeline *timeline.Writer

	// The asynchronous and elastic schemes' settings (scheme.Config):
	// exchange interval, ssp's staleness, the elastic moving rate,
	// sync-easgd's variant and hybrid's groups.
	Interval, Staleness, Variant, Groups int
	Alpha                                float32
	// Finish is the asynchronous schemes' aligned-termination rule.
	Finish center.Finish
	// RoundDeadline is how long a weed-out round waits after its first
	// gradients (0: for every worker).
	RoundDeadline time.Duration
	// MaxUpdateNorm, when > 0, makes the center refuse an update whose L2
	// norm exceeds it (center.Config.MaxUpdateNorm); non-finite updates
	// are refused always.
	MaxUpdateNorm float64
	// Center, when set, is the center the asynchronous schemes' workers
	// talk to (a parameter server's client); otherwise the trainer makes
	// an in-process one, which CenterStats then reports on.
	Center center.Center
	// Straggle slows workers down for experiments (nil: none).
	Straggle *Straggler
	// TimeBudget, when positive, ends training at the first iteration
	// after this much training time (testing excluded), as a normal end
	// with the final test and snapshot.
	TimeBudget time.Duration
}

// errBudget ends a run whose time budget is spent.
var errBudget = errors.New("time budget spent")

// ErrDiverged is wrapped by the error of a run whose loss or weights
// became non-finite or exploded: no snapshot is written of such a state.
var ErrDiverged = errors.New("training diverged")

// MaxSnapshotWeight is the largest weight magnitude a snapshot may hold:
// beyond it the run has exploded (a learning rate schedule that grows, a
// gradient blow-up) and the weights are worth nothing to resume from.
const MaxSnapshotWeight = 1e8

// Straggler delays a worker's computation: rank Rank every iteration, or,
// with Rank < 0, any worker with probability Prob per iteration.
type Straggler struct {
	Rank  int
	Prob  float64
	Delay time.Duration
}

// Group places a trainer in a multi-process group. Rank and Size are
// known before the trainer is built; Endpoint is connected afterwards
// (the connection checks every rank's LayoutHash) and must be set before
// Run.
type Group struct {
	Rank, Size int
	Endpoint   transport.Endpoint
}

// IterMetrics is one line of the --metrics file: what one worker did in
// one iteration. Times are milliseconds.
type IterMetrics struct {
	Rank      int     `json:"rank"`
	Iter      int     `json:"iter"`
	Loss      float64 `json:"loss"`
	DataMS    float64 `json:"data_ms"`
	ForwardMS float64 `json:"forward_ms"`
	BackMS    float64 `json:"backward_ms"`
	CommMS    float64 `json:"comm_exposed_ms"`
	CommBusy  float64 `json:"comm_busy_ms"`
	UpdateMS  float64 `json:"update_ms"`
	WaitMS    float64 `json:"wait_ms"`
	WallMS    float64 `json:"wall_ms"`
}

// TestNet is one further test net of Config.ExtraTests.
type TestNet struct {
	Spec   model.Spec
	Shapes map[string]tensor.Shape
	Feeds  []Feed
	// Iter is its test_iter: batches per test pass.
	Iter int
}

// TestResult is the mean of each scalar net output over a test pass.
type TestResult struct {
	Iter    int
	Outputs []NamedValue
	// Elapsed is the training time (tests excluded) when the test ran.
	Elapsed time.Duration
}

// NamedValue is one reported figure.
type NamedValue struct {
	Name  string
	Value float64
}

// Get returns the value named name and whether it exists.
func (r TestResult) Get(name string) (float64, bool) {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o.Value, true
		}
	}
	return 0, false
}

// Result summarises a finished run.
type Result struct {
	// Iters is the number of iterations run in this invocation; Start is
	// the iteration it started from (non-zero after Resume).
	Iters, Start int
	Wall         time.Duration
	// ImagesPerSec counts training images per second of wall time spent
	// in training iterations (testing excluded).
	ImagesPerSec float64
	// TrainTime is the time ImagesPerSec divides by: the iterations' own,
	// without the tests and snapshots between them.
	TrainTime time.Duration
	Phases    *metrics.Phases
	// Tests holds every test pass, the last one at the end of training.
	Tests []TestResult
	// Snapshots lists the snapshot files written.
	Snapshots []string
	// Params are the final weights (a view of the net's buffer).
	Params []float32
	// Comm is rank 0's communication account: busy time (hidden or not)
	// and exposed time, over Iters iterations; zero for one worker.
	CommBusy, CommExposed time.Duration
	// Workers and Scheme say how the run was parallelised.
	Workers int
	Scheme  string
	// Identical reports whether every worker ended with bitwise the same
	// weights; IdenticalKnown whether that could be checked (all ranks in
	// this process).
	Identical, IdenticalKnown bool
	// Center counts what the in-process center did (asynchronous schemes).
	Center center.Stats
	// Straggled counts the iterations a straggler delay was injected.
	Straggled int64
	// Failed lists the in-process workers of an asynchronous scheme that
	// failed while the others trained on, each error naming its worker;
	// the run's weights are the center's, as the others left them.
	Failed []error
}

// Final is the last test pass, or the zero TestResult.
func (r *Result) Final() TestResult {
	if len(r.Tests) == 0 {
		return TestResult{}
	}
	return r.Tests[len(r.Tests)-1]
}

// Trainer runs a Config. Build it with New, run it with Run.
type Trainer struct {
	cfg       Config
	net, test *model.Net   // rank 0's
	extra     []*model.Net // rank 0's further test nets (Config.ExtraTests)
	solver    *solver.Solver
	layout    uint64
	batch     int
	start     int
	out       io.Writer
	// ranks holds every rank's model and solver (rank 0 first; a
	// parameter server last).
	ranks   []*rankState
	updater int // the rank whose solver state a snapshot records
	// metricsMu serialises the ranks' metrics lines.
	metricsMu sync.Mutex
}

// rankState is one rank's model, solver and data.
type rankState struct {
	rank   int
	net    *model.Net
	solver *solver.Solver
	feeds  []Feed
	comp   *netComputer
}

// New builds the nets and the solver, loads the snapshot to resume from,
// and checks that snapshots can be written, so that a bad path fails now
// and not after hours of training.
func New(cfg Config) (*Trainer, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.MaxIter <= 0 {
		return nil, fmt.Errorf("train: max_iter must be positive, got %d", cfg.MaxIter)
	}
	t := &Trainer{cfg: cfg, out: cfg.Out}
	var err error
	t.net, err = model.Build(cfg.Train, cfg.TrainShapes, model.Options{Phase: layers.Train, Threads: cfg.Threads, Seed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("train: TRAIN net: %w", err)
	}
	if !t.net.HasLoss() {
		return nil, fmt.Errorf("train: the TRAIN net %q has no loss: no loss layer (SoftmaxWithLoss, EuclideanLoss, ...) and no loss_weight, so there is nothing to minimise", cfg.Train.Name)
	}
	if len(cfg.Test.Layers) > 0 {
		t.test, err = model.Build(cfg.Test, cfg.TestShapes, model.Options{Phase: layers.Test, Threads: cfg.Threads, Seed: cfg.Seed, ShareWith: t.net})
		if err != nil {
			return nil, fmt.Errorf("train: TEST net: %w", err)
		}
	}
	if err := checkFeeds(t.net, cfg.TrainFeeds, "TRAIN"); err != nil {
		return nil, err
	}
	if t.test != nil {
		if err := checkFeeds(t.test, cfg.TestFeeds, "TEST"); err != nil {
			return nil, err
		}
	}
	if err := t.buildExtraTests(t.net); err != nil {
		return nil, err
	}
	// Labels a loss or accuracy layer cannot take are an error naming the
	// data layer and the consumer, not a panic inside the layer.
	t.cfg.TrainFeeds = checkLabels(t.net, cfg.TrainFeeds)
	for i, f := range cfg.WorkerFeeds {
		t.cfg.WorkerFeeds[i] = checkLabels(t.net, f)
	}
	if t.test != nil {
		t.cfg.TestFeeds = checkLabels(t.test, cfg.TestFeeds)
	}
	cfg = t.cfg
	t.solver, err = solver.New(cfg.Solver, len(t.net.Params()), Segments(t.net.Blocks()))
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t.solver.SetThreads(cfg.Threads)
	t.layout = Layout(t.net.Blocks())
	for _, name := range cfg.Train.Inputs {
		t.batch = max(t.batch, cfg.TrainShapes[name].Count()/max(1, cfg.TrainShapes[name].CountFrom(1))*max(cfg.IterSize, 1))
	}
	if err := t.buildRanks(); err != nil {
		return nil, err
	}
	switch f := cfg.SnapshotFormat; {
	case f != "" && f != FormatDsgd && f != FormatCaffe:
		return nil, fmt.Errorf("train: snapshot format %q: want %s or %s", f, FormatDsgd, FormatCaffe)
	case len(cfg.Weights) > 0 && cfg.Resume != "":
		return nil, errors.New("train: give --weights or --resume, not both (a snapshot already holds its weights)")
	}
	if len(cfg.Weights) > 0 {
		if err := t.loadWeights(cfg.Weights); err != nil {
			return nil, err
		}
	}
	if cfg.Resume != "" {
		resume := t.resume
		if strings.HasSuffix(cfg.Resume, ".solverstate") {
			resume = t.resumeCaffe
		}
		if err := resume(cfg.Resume); err != nil {
			return nil, err
		}
	}
	if cfg.SnapshotPrefix != "" {
		if err := checkWritable(cfg.SnapshotPrefix); err != nil {
			return nil, err
		}
		removed, err := checkpoint.CleanTemps(cfg.SnapshotPrefix + "_iter_*.dsgdsnap")
		for _, p := range removed {
			fmt.Fprintf(t.out, "dsgd: removed %s, left by a snapshot write that was killed\n", p)
		}
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	return t, nil
}

// Segments turns a net's blocks into the solver's segments.
func Segments(blocks []model.Block) []solver.Segment {
	segs := make([]solver.Segment, len(blocks))
	for i, b := range blocks {
		segs[i] = solver.Segment{Off: b.Off, Len: b.Len(), LRMult: b.LRMult, DecayMult: b.DecayMult}
	}
	return segs
}

// Layout is the checkpoint layout hash of a net's blocks.
func Layout(blocks []model.Block) uint64 {
	cb := make([]checkpoint.Block, len(blocks))
	for i, b := range blocks {
		cb[i] = checkpoint.Block{Name: b.Name, Shape: b.Shape}
	}
	return checkpoint.LayoutHash(cb)
}

func checkFeeds(net *model.Net, feeds []Feed, phase string) error {
	for _, f := range feeds {
		for _, name := range f.Tops {
			if net.Input(name) == nil {
				return fmt.Errorf("train: %s net has no input %q to feed", phase, name)
			}
		}
	}
	return nil
}

// checkWritable makes the snapshot directory if needed and proves that a
// file can be created in it.
func checkWritable(prefix string) error {
	dir := filepath.Dir(prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: snapshot_prefix %q: cannot create directory %s: %w", prefix, dir, err)
	}
	f, err := os.CreateTemp(dir, ".dsgd-write-test*")
	if err != nil {
		return fmt.Errorf("train: snapshot_prefix %q: directory %s is not writable: %w", prefix, dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

func (t *Trainer) resume(path string) error {
	st, err := checkpoint.Read(path)
	if err != nil {
		return fmt.Errorf("train: %s: %w", t.resumeFlag(), err)
	}
	if st.Layout != t.layout || len(st.Params) != len(t.net.Params()) {
		return fmt.Errorf("train: %s %s: the snapshot was taken from a different net (%d parameters, layout %016x; this net has %d, layout %016x)", t.resumeFlag(), path, len(st.Params), st.Layout, len(t.net.Params()), t.layout)
	}
	for _, r := range t.ranks {
		if err := r.solver.ReadState(bytes.NewReader(st.Solver)); err != nil {
			return fmt.Errorf("train: %s %s: solver state: %w", t.resumeFlag(), path, err)
		}
		copy(r.net.Params(), st.Params)
	}
	if msg := insane(t.net); msg != "" {
		return fmt.Errorf("train: %s %s: %w: %s; not weights to continue or test from", t.resumeFlag(), path, ErrDiverged, msg)
	}
	t.start = st.Iter
	return nil
}

func (t *Trainer) resumeFlag() string {
	if t.cfg.ResumeFlag != "" {
		return t.cfg.ResumeFlag
	}
	return "--resume"
}

// SetOnIter sets Config.OnIter, for a caller that can build its hook only
// once the trainer exists.
func (t *Trainer) SetOnIter(f func(iter int, loss float64, d time.Duration)) { t.cfg.OnIter = f }

// GlobalBatch is the number of training images one iteration consumes,
// all workers together.
func (t *Trainer) GlobalBatch() int { return t.batch * max(t.cfg.Workers, 1) }

// StartIter is the iteration the trainer starts from: that of the
// snapshot it resumed, else 0.
func (t *Trainer) StartIter() int { return t.start }

// LayoutHash identifies the model's parameter layout; ranks of a group
// must agree on it.
func (t *Trainer) LayoutHash() uint64 { return t.layout }

// Net is the TRAIN net.
func (t *Trainer) Net() *model.Net { return t.net }

// buildRanks builds the nets and solvers of the ranks this process runs
// (all of them in-process; one with an Endpoint): the same spec and seed,
// so the same initial weights everywhere.
func (t *Trainer) buildRanks() error {
	cfg := t.cfg
	if cfg.Scheme == "" {
		t.cfg.Scheme = "seq"
		cfg.Scheme = "seq"
	}
	workers := max(cfg.Workers, 1)
	sc := t.schemeConfig(0)
	nranks := sc.Ranks()
	local := make([]int, nranks)
	for r := range local {
		local[r] = r
	}
	threads := max(1, cfg.Threads/workers)
	if g := cfg.Group; g != nil {
		if g.Size != nranks {
			return fmt.Errorf("train: scheme %s with %d workers runs on %d ranks, but the group has %d", cfg.Scheme, workers, nranks, g.Size)
		}
		if g.Rank < 0 || g.Rank >= g.Size {
			return fmt.Errorf("train: rank %d out of range [0,%d)", g.Rank, g.Size)
		}
		local, threads = []int{g.Rank}, max(cfg.Threads, 1)
	} else if workers > 1 && len(cfg.WorkerFeeds) != workers-1 {
		return fmt.Errorf("train: %d workers need %d worker feeds, got %d", workers, workers-1, len(cfg.WorkerFeeds))
	}
	t.updater = 0
	if sc.Info().ServerUpdates {
		t.updater = nranks - 1
	}
	hogwild := sc.Info().SharedWeights
	if hogwild && cfg.Group != nil {
		return errors.New("train: hogwild shares weights in memory; it runs with --transport inproc only")
	}
	if local[0] != 0 {
		t.test, t.extra = nil, nil // only rank 0 tests
	}
	// Every local rank builds a net of its own: refuse now, with the
	// figure, when they will not fit together.
	if lim := tensor.MemoryLimit(); lim > 0 && len(local) > 1 {
		if need := float64(len(local)) * t.net.Bytes(); need > float64(lim) {
			return fmt.Errorf("train: %d ranks in this process need %s (%s each), more than the %s this machine has; use fewer workers, a smaller batch, or --transport tcp across machines",
				len(local), tensor.HumanBytes(need), tensor.HumanBytes(t.net.Bytes()), tensor.HumanBytes(float64(lim)))
		}
	}
	for i, r := range local {
		net, sv := t.net, t.solver
		if i > 0 || threads != cfg.Threads {
			var err error
			opt := model.Options{Phase: layers.Train, Threads: threads, Seed: cfg.Seed}
			if hogwild && i > 0 {
				// Hogwild: every worker updates rank 0's weights, with
				// no lock, from gradients of its own.
				opt.ShareWith, opt.OwnGrads = t.ranks[0].net, true
			}
			net, err = model.Build(cfg.Train, cfg.TrainShapes, opt)
			if err != nil {
				return fmt.Errorf("train: TRAIN net of rank %d: %w", r, err)
			}
		}
		if i > 0 {
			var err error
			if sv, err = solver.New(cfg.Solver, len(net.Params()), Segments(net.Blocks())); err != nil {
				return fmt.Errorf("train: %w", err)
			}
		}
		if i == 0 && net != t.net {
			// The first local rank replaces the net New built before the
			// worker count was known; the TEST net follows it.
			t.net = net
			if t.test != nil {
				var err error
				t.test, err = model.Build(cfg.Test, cfg.TestShapes, model.Options{Phase: layers.Test, Threads: cfg.Threads, Seed: cfg.Seed, ShareWith: net})
				if err != nil {
					return fmt.Errorf("train: TEST net: %w", err)
				}
				if err := t.buildExtraTests(net); err != nil {
					return err
				}
			}
		}
		if sv == t.solver && net.Pool().Threads() == sv.Threads() {
			// The update runs on the threads (and caches) of the net.
			sv.SetPool(net.Pool())
		}
		rs := &rankState{rank: r, net: net, solver: sv}
		if r < workers {
			switch {
			case i == 0:
				rs.feeds = cfg.TrainFeeds
			default:
				rs.feeds = cfg.WorkerFeeds[r-1]
			}
			if err := checkFeeds(net, rs.feeds, fmt.Sprintf("rank %d's TRAIN", r)); err != nil {
				return err
			}
			rs.comp = newNetComputer(net, rs.feeds)
			rs.comp.iterSize = max(cfg.IterSize, 1)
			if st := cfg.Straggle; st != nil && (st.Rank == r || st.Rank < 0) {
				rng := rand.New(rand.NewPCG(cfg.Seed, uint64(r)+1))
				rs.comp.delay = func() time.Duration {
					if st.Rank < 0 && rng.Float64() >= st.Prob {
						return 0
					}
					return st.Delay
				}
			}
		}
		t.ranks = append(t.ranks, rs)
	}
	return nil
}

// rank returns the local state of rank r, or nil if another process runs it.
func (t *Trainer) rank(r int) *rankState {
	for _, rs := range t.ranks {
		if rs.rank == r {
			return rs
		}
	}
	return nil
}

// netComputer is a node.Computer over a model and its feeds.
type netComputer struct {
	net    *model.Net
	feeds  []Feed
	tops   [][]*tensor.Blob
	ready  func(lo, hi int)
	phases *metrics.Phases
	// trace, when set, records the data and compute spans of the rank's
	// timeline track.
	trace func(name, cat string, start time.Time, dur time.Duration)
	// delay, when set, says how long to stall this iteration (a
	// straggler); straggled counts the stalls.
	delay     func() time.Duration
	straggled int64
	// iterSize is the number of forward/backward passes per Compute
	// (Caffe's iter_size); acc sums the gradients of the passes before
	// the last, and final marks the last pass, whose gradient hook adds
	// acc to each block, averages it and only then reports it ready.
	iterSize int
	acc      []float32
	final    bool
}

func newNetComputer(net *model.Net, feeds []Feed) *netComputer {
	c := &netComputer{net: net, feeds: feeds, phases: metrics.NewPhases(PhaseNames...)}
	for _, f := range feeds {
		tops := make([]*tensor.Blob, len(f.Tops))
		for i, name := range f.Tops {
			tops[i] = net.Input(name)
		}
		c.tops = append(c.tops, tops)
	}
	net.SetGradHook(func(blocks []int) {
		if !c.final {
			return
		}
		all := net.Blocks()
		for _, bi := range blocks {
			b := all[bi]
			lo, hi := b.Off, b.Off+b.Len()
			if c.iterSize > 1 {
				g := net.Grads()[lo:hi]
				tensor.AddTo(g, c.acc[lo:hi])
				tensor.Scale(1/float32(c.iterSize), g)
			}
			if c.ready != nil {
				c.ready(lo, hi)
			}
		}
	})
	return c
}

// Compute fills the inputs, runs forward and backward, and stops on a
// non-finite loss before anything is updated. With iter_size k > 1 it does
// so k times, each pass on the next batch, and leaves in the net's
// gradient the mean of the k passes' gradients (Caffe accumulates them and
// scales by 1/k before the update); the loss returned is the mean loss.
// Blocks are reported ready only in the last pass, once they hold the mean.
func (c *netComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	k := max(c.iterSize, 1)
	if k > 1 && len(c.acc) != len(c.net.Grads()) {
		c.acc = make([]float32, len(c.net.Grads()))
	}
	var sum float64
	for pass := range k {
		loss, err := c.pass(ctx, ready, pass == k-1, pass == 0)
		if err != nil {
			return loss, err
		}
		sum += loss
		if pass < k-1 {
			if pass == 0 {
				copy(c.acc, c.net.Grads())
			} else {
				tensor.AddTo(c.acc, c.net.Grads())
			}
		}
	}
	c.phases.Iter()
	return sum / float64(k), nil
}

// pass is one forward/backward pass of Compute; last says whether it is
// the pass whose gradients are final, first whether a straggler's delay
// applies.
func (c *netComputer) pass(ctx context.Context, ready func(lo, hi int), last, first bool) (float64, error) {
	t0 := time.Now()
	for i, f := range c.feeds {
		if err := f.Source.Fill(ctx, c.tops[i]); err != nil {
			return 0, err
		}
	}
	t1 := c.phases.Since(PhaseData, t0)
	if c.trace != nil {
		c.trace("data", "data", t0, t1.Sub(t0))
	}
	if c.delay != nil && first {
		if d := c.delay(); d > 0 {
			c.straggled++
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	loss := c.net.Forward()
	t2 := c.phases.Since(PhaseForward, t1)
	if c.trace != nil {
		c.trace("forward", "compute", t1, t2.Sub(t1))
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		where := c.net.NonFinite()
		if where == "" {
			where = "the loss itself"
		}
		return loss, fmt.Errorf("%w: loss is %v; first non-finite value: %s (the last good snapshot, if any, is kept; lower base_lr or check the data)", ErrDiverged, loss, where)
	}
	if err := ctx.Err(); err != nil {
		return 0, err // aborted (weedout's restart) or cancelled
	}
	c.ready, c.final = ready, last
	c.net.Backward()
	c.ready, c.final = nil, false
	t3 := c.phases.Since(PhaseBackward, t2)
	if c.trace != nil {
		c.trace("backward", "compute", t2, t3.Sub(t2))
	}
	return loss, nil
}

// Run trains from the start (or resumed) iteration to MaxIter under the
// configured scheme. When ctx is cancelled it writes a snapshot of the
// last completed iteration and returns ctx's error with the partial
// result.
func (t *Trainer) Run(ctx context.Context) (*Result, error) {
	cfg := t.cfg
	workers := max(cfg.Workers, 1)
	res := &Result{Start: t.start, Phases: metrics.NewPhases(append(PhaseNames, "comm (exposed)", "wait")...), Params: t.net.Params(), Workers: workers, Scheme: cfg.Scheme}
	prog := metrics.NewProgress(t.out, cfg.MaxIter, cfg.TTY)
	prog.From(t.start)
	defer prog.Done()
	begin := time.Now()
	var testing time.Duration // time spent testing, not training
	if t.test != nil && cfg.TestInitialization && t.start == 0 && cfg.TestInterval > 0 {
		t0 := time.Now()
		tr, err := t.Test(ctx, 0)
		if err != nil {
			return res, err
		}
		testing += time.Since(t0)
		res.Tests = append(res.Tests, tr)
		prog.Printf("%s\n", tr)
	}
	sc := t.schemeConfig(t.start)
	schemes, err := scheme.New(sc)
	if err != nil {
		return res, fmt.Errorf("train: %w", err)
	}
	var eps []transport.Endpoint // indexed by rank
	switch {
	case cfg.Group != nil:
		if cfg.Group.Endpoint == nil && !sc.CenterOnly() {
			return res, errors.New("train: the group's endpoint is not connected")
		}
		eps = make([]transport.Endpoint, cfg.Group.Size)
		eps[cfg.Group.Rank] = cfg.Group.Endpoint
		if ep := cfg.Group.Endpoint; ep != nil {
			if err := t.agree(ctx, ep); err != nil {
				transport.Abort(ep, err)
				return res, err
			}
		}
	case len(t.ranks) > 1:
		eps = transport.NewInproc(len(t.ranks))
	}
	cen, local, err := t.makeCenter(sc)
	if err != nil {
		return res, err
	}
	var acc *accum.Shared
	if sc.Accumulate {
		if acc, err = accum.New(sc.Workers, sc.Layout.N); err != nil {
			return res, fmt.Errorf("train: %w", err)
		}
	}
	nodes := make([]*node.Rank, len(t.ranks))
	weights := t.modelWeights(sc, cen, nodes)
	var saved []float32
	// withModelCtx runs fn with rank 0's weights replaced by the model
	// the scheme trains (the center, for the elastic and asynchronous
	// schemes), so tests and snapshots see that model. It runs between
	// rank 0's iterations, when nothing reads its weights.
	withModelCtx := func(ctx context.Context, fn func() error) error {
		if weights == nil {
			return fn()
		}
		p := t.net.Params()
		saved = append(saved[:0], p...)
		if err := weights(ctx, p); err != nil {
			return fmt.Errorf("train: fetching the model's weights: %w", err)
		}
		err := fn()
		copy(p, saved)
		return err
	}
	withModel := func(fn func() error) error { return withModelCtx(ctx, fn) }
	updater := t.rank(t.updater)
	var smooth, trainSecs float64
	var window []float64 // the last AverageLoss losses
	done := t.start
	lastDisplay, lastDisplayTime, lastIter := t.start, time.Now(), time.Now()
	onIter := func(iter int, loss float64) error {
		now := time.Now()
		d := now.Sub(lastIter)
		trainSecs += d.Seconds()
		switch {
		case cfg.AverageLoss > 0:
			// Caffe's UpdateSmoothedLoss: the mean over a window.
			if len(window) < cfg.AverageLoss {
				window = append(window, loss)
			} else {
				window[(iter-t.start)%cfg.AverageLoss] = loss
			}
			smooth = 0
			for _, l := range window {
				smooth += l
			}
			smooth /= float64(len(window))
		case iter == t.start:
			smooth = loss
		default:
			smooth = 0.98*smooth + 0.02*loss
		}
		done = iter + 1
		if cfg.OnIter != nil {
			cfg.OnIter(iter, loss, d)
		}
		if cfg.Display > 0 && (done%cfg.Display == 0 || done == cfg.MaxIter) {
			ips := float64((done-lastDisplay)*t.batch*workers) / now.Sub(lastDisplayTime).Seconds()
			lastDisplay, lastDisplayTime = done, now
			prog.Line(metrics.Status{Iter: done, Loss: smooth, LR: t.solver.LR(iter), ImagesSec: ips})
		}
		if t.test != nil && cfg.TestInterval > 0 && done%cfg.TestInterval == 0 && done < cfg.MaxIter {
			var tr TestResult
			t0 := time.Now()
			err := withModel(func() (err error) {
				tr, err = t.Test(ctx, done)
				return err
			})
			if err != nil {
				return err
			}
			tr.Elapsed = t0.Sub(begin) - testing
			testing += time.Since(t0)
			res.Tests = append(res.Tests, tr)
			prog.Printf("%s\n", tr)
			lastDisplayTime = lastDisplayTime.Add(time.Since(now))
		}
		lastIter = time.Now()
		if cfg.TimeBudget > 0 && lastIter.Sub(begin)-testing >= cfg.TimeBudget {
			return errBudget
		}
		return nil
	}
	// The updating rank (rank 0, or the parameter server) snapshots.
	snapIter := func(iter int, _ float64) error {
		if n := iter + 1; cfg.SnapshotPrefix != "" && cfg.Snapshot > 0 && n%cfg.Snapshot == 0 && n < cfg.MaxIter {
			var p string
			err := withModel(func() (err error) {
				p, err = t.snapshot(n)
				return err
			})
			if err != nil {
				return err
			}
			res.Snapshots = append(res.Snapshots, p)
			prog.Printf("snapshot %s\n", p)
		}
		return nil
	}
	// Without rank 0 here, the first local rank counts the iterations.
	countIter := func(iter int, _ float64) error {
		done = iter + 1
		return nil
	}
	for i, rs := range t.ranks {
		r := rs.rank
		n := &node.Rank{
			Scheme:   schemes[r],
			Params:   rs.net.Params(),
			Grads:    rs.net.Grads(),
			Update:   func(iter int) { rs.solver.Step(iter, rs.net.Params(), rs.net.Grads()) },
			Timeout:  cfg.CommTimeout,
			Algo:     t.algo,
			Center:   cen,
			CenterID: centerID(sc, r),
		}
		if acc != nil {
			n.Accum = acc
		}
		if rs.comp != nil {
			n.Computer = rs.comp
		}
		if eps != nil {
			n.Ep = eps[r]
		}
		var hooks []func(int, float64) error
		switch {
		case r == 0:
			hooks = append(hooks, onIter)
		case i == 0:
			hooks = append(hooks, countIter)
		}
		if rs == updater {
			hooks = append(hooks, snapIter)
		}
		n.OnIter = chain(hooks)
		if cfg.Metrics != nil && rs.comp != nil {
			n.OnIter = t.metricsHook(r, n, rs.comp, n.OnIter)
		}
		if cfg.Timeline != nil {
			t.traceRank(rs, n)
		}
		nodes[i] = n
	}
	var iso isolation
	rankIDs := make([]int, len(t.ranks))
	for i, rs := range t.ranks {
		rankIDs[i] = rs.rank
	}
	errs := node.RunAllIsolated(ctx, nodes, iso.isolator(sc, nodes, rankIDs, prog))
	res.Failed = iso.errs()
	for _, f := range res.Failed {
		for i, err := range errs {
			if err != nil && errors.Is(f, err) {
				errs[i] = nil // reported in res.Failed; the run went on
			}
		}
	}
	if cfg.Group == nil {
		for _, ep := range eps {
			ep.Close()
		}
	}
	res.Iters = done - t.start
	if c := t.ranks[0].comp; c != nil {
		for i := range PhaseNames {
			if i != PhaseUpdate {
				res.Phases.Add(i, c.phases.Total(i))
			}
		}
	}
	res.Phases.Add(PhaseUpdate, nodes[0].Stats.Phase[node.PhaseUpdate])
	res.Phases.Add(len(PhaseNames), nodes[0].Stats.Phase[node.PhaseComm])
	res.Phases.Add(len(PhaseNames)+1, nodes[0].Stats.Phase[node.PhaseWait])
	for i := 0; i < res.Iters; i++ {
		res.Phases.Iter()
	}
	res.CommBusy, res.CommExposed = nodes[0].Stats.CommBusy, nodes[0].Stats.Phase[node.PhaseComm]
	if local != nil {
		res.Center = local.Stats()
	}
	for _, rs := range t.ranks {
		if rs.comp != nil {
			res.Straggled += rs.comp.straggled
		}
	}
	err = firstError(ctx, errs)
	if errors.Is(err, errBudget) {
		err = nil
	}
	if err != nil {
		if cfg.Group != nil && cfg.Group.Endpoint != nil {
			// Tell the other ranks why this one leaves, so the error that
			// cascades through the group keeps naming its first cause.
			transport.Abort(cfg.Group.Endpoint, fmt.Errorf("rank %d: %w", cfg.Group.Rank, err))
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		} else {
			err = fmt.Errorf("train: iteration %d: %w", done, err)
		}
		if errors.Is(err, ErrDiverged) {
			return res, err
		}
		// Interrupted, or a peer failed: the weights are those of the
		// last completed iteration (the update follows the exchange), so
		// keep them.
		return res, t.interrupted(ctx, res, done, err, withModelCtx)
	}
	if trainSecs > 0 {
		res.ImagesPerSec = float64(res.Iters*t.batch*workers) / trainSecs
		res.TrainTime = time.Duration(trainSecs * float64(time.Second))
	}
	replicated := !sc.Elastic() && !sc.Info().SharedWeights
	if uses, _ := sc.UsesCenter(); uses {
		replicated = false
	}
	res.Identical, res.IdenticalKnown = cfg.Group == nil && replicated, cfg.Group == nil && replicated
	for _, rs := range t.ranks[1:] {
		if !slices.Equal(rs.net.Params(), t.net.Params()) {
			res.Identical = false
		}
	}
	if weights != nil && t.ranks[0].rank == 0 {
		// The model is the center: keep it as the final weights.
		if err := weights(ctx, t.net.Params()); err != nil {
			return res, fmt.Errorf("train: fetching the model's final weights: %w", err)
		}
	}
	if cfg.SnapshotPrefix != "" && updater != nil && !cfg.NoFinalSnapshot {
		p, err := t.snapshot(done)
		if err != nil {
			return res, err
		}
		res.Snapshots = append(res.Snapshots, p)
	}
	if t.test != nil {
		trained := time.Since(begin) - testing
		tr, err := t.Test(ctx, done)
		if err != nil {
			return res, err
		}
		tr.Elapsed = trained
		res.Tests = append(res.Tests, tr)
	}
	res.Wall = time.Since(begin)
	return res, nil
}

// schemeConfig is the scheme's configuration for a run from start.
func (t *Trainer) schemeConfig(start int) scheme.Config {
	cfg := t.cfg
	sc := scheme.Config{Name: cfg.Scheme, Workers: max(cfg.Workers, 1), StartIter: start, MaxIter: cfg.MaxIter,
		Pack: cfg.Pack, Bucket: cfg.Bucket, Interval: cfg.Interval, Staleness: cfg.Staleness, Alpha: cfg.Alpha,
		Variant: cfg.Variant, Groups: cfg.Groups, Aligned: cfg.Finish != center.FinishOwn,
		// Ranks in other processes built their models apart.
		Broadcast: cfg.Group != nil,
		// TRL's accumulator is shared memory: in one process only.
		Accumulate: cfg.Group == nil && max(cfg.Workers, 1) > 1}
	if sc.Name == "" {
		sc.Name = "seq"
	}
	sc.Accumulate = sc.Accumulate && sc.Info().Accumulator
	if t.net != nil {
		sc.Layout = schemeLayout(t.net)
	}
	return sc
}

// CenterWorkers is the number of workers the configured scheme's center
// serves: every worker, or hybrid's groups (0 without a center).
func (t *Trainer) CenterWorkers() int {
	_, n := t.schemeConfig(t.start).UsesCenter()
	return n
}

// CenterOnly reports whether the configured scheme's workers talk only to
// a center (so a worker process needs a center and no group endpoint).
func (t *Trainer) CenterOnly() bool { return t.schemeConfig(t.start).CenterOnly() }

// GroupRank is this process's rank in a multi-process group (0 without
// one).
func (t *Trainer) GroupRank() int {
	if t.cfg.Group == nil {
		return 0
	}
	return t.cfg.Group.Rank
}

// Finish is the configured aligned-termination rule.
func (t *Trainer) Finish() center.Finish { return t.cfg.Finish }

// MaxIter is the iteration the run stops at.
func (t *Trainer) MaxIter() int { return t.cfg.MaxIter }

// SetCenter sets the center the workers talk to (Config.Center), for a
// worker process that can dial it only once the model is built.
func (t *Trainer) SetCenter(c center.Center) { t.cfg.Center = c }

// NewCenter makes the in-process center of the configured scheme, for a
// parameter server process to serve; nil if the scheme has none.
func (t *Trainer) NewCenter() (*center.Local, error) {
	return t.NewCenterRange(0, len(t.net.Params()))
}

// NewCenterRange makes the center of parameters [lo,hi) only: one shard
// of a parameter server split over several processes (ps.Sharded). Weed-
// out's solver step needs every parameter, so it cannot be sharded.
func (t *Trainer) NewCenterRange(lo, hi int) (*center.Local, error) {
	sc := t.schemeConfig(t.start)
	uses, n := sc.UsesCenter()
	if !uses {
		return nil, nil
	}
	cc := t.CenterConfig(sc, n)
	if lo != 0 || hi != len(cc.Weights) {
		if sc.Info().CenterSolver {
			return nil, errors.New("train: weedout's center applies a solver step to all parameters; it cannot be sharded")
		}
		cc.Weights = cc.Weights[lo:hi]
	}
	return center.NewLocal(cc)
}

// centerID is rank r's worker id at the center: its rank, or for hybrid
// its group.
func centerID(sc scheme.Config, r int) int { return sc.CenterID(r) }

// makeCenter returns the center the scheme's workers talk to: the
// configured one, or a new in-process one (returned as local too).
func (t *Trainer) makeCenter(sc scheme.Config) (center.Center, *center.Local, error) {
	uses, n := sc.UsesCenter()
	if !uses {
		return nil, nil, nil
	}
	if t.cfg.Center != nil {
		return t.cfg.Center, nil, nil
	}
	if t.cfg.Group != nil {
		return nil, nil, fmt.Errorf("train: %s over a multi-process group needs a center (a parameter server)", sc.Name)
	}
	lc, err := center.NewLocal(t.CenterConfig(sc, n))
	if err != nil {
		return nil, nil, fmt.Errorf("train: %w", err)
	}
	return lc, lc, nil
}

// CenterConfig is the configuration of the center for scheme sc with n
// workers, starting from rank 0's weights; a parameter server process
// builds its center from it.
func (t *Trainer) CenterConfig(sc scheme.Config, n int) center.Config {
	cc := center.Config{Workers: n, Weights: t.net.Params(), Finish: t.cfg.Finish, MaxIter: t.cfg.MaxIter,
		StartIter: sc.StartIter, Deadline: t.cfg.RoundDeadline, MaxUpdateNorm: t.cfg.MaxUpdateNorm}
	if out := t.cfg.Out; out != nil {
		// A refused update names its worker in the center's log: the
		// run's output here, the server's in a parameter server process.
		cc.Log = func(err error) { fmt.Fprintf(out, "%v\n", err) }
	}
	switch sc.Info().Policy {
	case scheme.RoundRobin:
		cc.Policy, cc.Interval = center.RoundRobin, sc.Interval
	case scheme.Hogwild:
		cc.Policy = center.Hogwild
	}
	// ssp with s = 0 is BSP: reads at the global clock, whatever the timing.
	cc.ClockedReads = sc.ClockedReads()
	if sc.Info().CenterSolver {
		// The center applies each round's mean gradient with a solver of
		// its own, as a synchronous parameter server does.
		sv, err := solver.New(t.cfg.Solver, len(t.net.Params()), Segments(t.net.Blocks()))
		if err == nil {
			sv.SetThreads(t.cfg.Threads)
			cc.Update = func(w, g []float32, iter int) { sv.Step(iter, w, g) }
		}
	}
	return cc
}

// modelWeights returns how to fetch the weights a scheme trains when
// they are not rank 0's own (the center), or nil.
func (t *Trainer) modelWeights(sc scheme.Config, cen center.Center, nodes []*node.Rank) func(context.Context, []float32) error {
	if uses, _ := sc.UsesCenter(); uses {
		return func(ctx context.Context, dst []float32) error { return cen.Pull(ctx, center.Observer, dst) }
	}
	if !sc.Info().OwnCenter {
		return nil
	}
	if sc.Variant == 1 {
		m := t.rank(sc.Workers)
		if m == nil {
			return nil
		}
		return func(_ context.Context, dst []float32) error { copy(dst, m.net.Params()); return nil }
	}
	if t.ranks[0].rank != 0 {
		return nil
	}
	return func(_ context.Context, dst []float32) error {
		if aux := nodes[0].Aux; aux != nil {
			copy(dst, aux)
		}
		return nil
	}
}

// metricsHook wraps next so that rank r also writes a metrics line after
// each iteration: the differences of its cumulative accounts.
func (t *Trainer) metricsHook(r int, n *node.Rank, comp *netComputer, next func(int, float64) error) func(int, float64) error {
	var last [numPhases]time.Duration
	var lastStats node.Stats
	lastT := time.Now()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return func(iter int, loss float64) error {
		now := time.Now()
		m := IterMetrics{Rank: r, Iter: iter, Loss: loss, WallMS: ms(now.Sub(lastT))}
		var cur [numPhases]time.Duration
		for i := range cur {
			cur[i] = comp.phases.Total(i)
		}
		m.DataMS, m.ForwardMS, m.BackMS = ms(cur[PhaseData]-last[PhaseData]), ms(cur[PhaseForward]-last[PhaseForward]), ms(cur[PhaseBackward]-last[PhaseBackward])
		st := n.Stats
		m.CommMS = ms(st.Phase[node.PhaseComm] - lastStats.Phase[node.PhaseComm])
		m.UpdateMS = ms(st.Phase[node.PhaseUpdate] - lastStats.Phase[node.PhaseUpdate])
		m.WaitMS = ms(st.Phase[node.PhaseWait] - lastStats.Phase[node.PhaseWait])
		m.CommBusy = ms(st.CommBusy - lastStats.CommBusy)
		last, lastStats, lastT = cur, st, now
		line, err := json.Marshal(m)
		if err != nil {
			return err
		}
		t.metricsMu.Lock()
		_, err = t.cfg.Metrics.Write(append(line, '\n'))
		t.metricsMu.Unlock()
		if err != nil {
			return fmt.Errorf("writing metrics: %w", err)
		}
		if next != nil {
			return next(iter, loss)
		}
		return nil
	}
}

// chain runs hooks in order, stopping at the first error.
func chain(hooks []func(int, float64) error) func(int, float64) error {
	if len(hooks) == 0 {
		return nil
	}
	return func(iter int, loss float64) error {
		for _, h := range hooks {
			if err := h(iter, loss); err != nil {
				return err
			}
		}
		return nil
	}
}

// firstError picks the error to report: the first rank's real error, not
// the cancellations it caused in the others.
func firstError(ctx context.Context, errs []error) error {
	var cancelled error
	for r, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			cancelled = err
			continue
		}
		if len(errs) > 1 {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		return err
	}
	return cancelled
}

func (t *Trainer) algo(a scheme.Algo) collective.Algorithm {
	if t.cfg.Algo != collective.Auto {
		return t.cfg.Algo
	}
	switch a {
	case scheme.AlgoTree:
		return collective.Tree
	case scheme.AlgoRing:
		return collective.Ring
	}
	return collective.Auto
}

func schemeLayout(net *model.Net) scheme.Layout {
	l := scheme.Layout{N: len(net.Params())}
	for _, b := range net.Blocks() {
		l.Blocks = append(l.Blocks, scheme.Range{Lo: b.Off, Hi: b.Off + b.Len()})
	}
	return l
}

// interrupted writes the snapshot of iteration iter after a run ended
// early with cause, and returns cause saying where it is. The model is
// fetched from the center (within 10 s, ctx's cancellation aside) when
// the scheme has one; if it cannot be, rank 0's replica is kept instead.
func (t *Trainer) interrupted(ctx context.Context, res *Result, iter int, cause error, withModel func(context.Context, func() error) error) error {
	if t.cfg.SnapshotPrefix == "" || iter == t.start || t.rank(t.updater) == nil {
		return cause
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var p string
	note := ""
	err := withModel(fctx, func() (err error) {
		p, err = t.snapshot(iter)
		return err
	})
	if err != nil && !errors.Is(err, ErrDiverged) && p == "" {
		if p, err = t.snapshot(iter); err == nil {
			note = "; rank 0's replica: the center could not be reached"
		}
	}
	if err != nil {
		return errors.Join(cause, err)
	}
	res.Snapshots = append(res.Snapshots, p)
	return fmt.Errorf("%w (snapshot of iteration %d written to %s%s; continue with --resume %s)", cause, iter, p, note, p)
}

func fill(ctx context.Context, net *model.Net, f Feed) error {
	tops := make([]*tensor.Blob, len(f.Tops))
	for i, name := range f.Tops {
		tops[i] = net.Input(name)
	}
	return f.Source.Fill(ctx, tops)
}

// SnapshotPath is where the snapshot of iteration iter goes.
func SnapshotPath(prefix string, iter int) string {
	return fmt.Sprintf("%s_iter_%d.dsgdsnap", prefix, iter)
}

func (t *Trainer) snapshot(iter int) (string, error) {
	if t.cfg.SnapshotFormat == FormatCaffe {
		return t.snapshotCaffe(iter)
	}
	u := t.rank(t.updater)
	var sb bytes.Buffer
	if err := u.solver.WriteState(&sb); err != nil {
		return "", fmt.Errorf("train: snapshot: solver state: %w", err)
	}
	if msg := insane(u.net); msg != "" {
		return "", fmt.Errorf("train: %w: no snapshot of iteration %d: %s (the last good snapshot, if any, is kept; lower base_lr or check lr_policy)", ErrDiverged, iter, msg)
	}
	path := SnapshotPath(t.cfg.SnapshotPrefix, iter)
	err := checkpoint.Write(path, checkpoint.State{Iter: iter, Layout: t.layout, Params: u.net.Params(), Solver: sb.Bytes(), Run: t.cfg.Run})
	if err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	return path, nil
}

// insane names the first weight of net that is non-finite or larger in
// magnitude than MaxSnapshotWeight, or returns "".
func insane(net *model.Net) string {
	p := net.Params()
	for _, b := range net.Blocks() {
		for i, v := range p[b.Off : b.Off+b.Len()] {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > MaxSnapshotWeight {
				return fmt.Sprintf("layer %q: weight %s[%d] is %g (beyond %g)", b.Layer, b.Name, i, v, MaxSnapshotWeight)
			}
		}
	}
	return ""
}

// Test runs the TEST net over TestIter batches and averages each scalar
// output (accuracy, loss).
func (t *Trainer) Test(ctx context.Context, iter int) (TestResult, error) {
	tr := TestResult{Iter: iter}
	if t.test == nil {
		return tr, nil
	}
	outs := t.test.Outputs()
	sums := make([]float64, len(outs))
	n := max(t.cfg.TestIter, 1)
	for i := 0; i < n; i++ {
		for _, f := range t.cfg.TestFeeds {
			if err := fill(ctx, t.test, f); err != nil {
				return tr, fmt.Errorf("train: test at iteration %d: %w", iter, err)
			}
		}
		t.test.Forward()
		for j, o := range outs {
			if o.Count() == 1 {
				sums[j] += float64(o.Data[0])
			}
		}
	}
	for j, o := range outs {
		if o.Count() == 1 {
			tr.Outputs = append(tr.Outputs, NamedValue{o.Name, sums[j] / float64(n)})
		}
	}
	for k, net := range t.extra {
		et := t.cfg.ExtraTests[k]
		outs := net.Outputs()
		sums := make([]float64, len(outs))
		n := max(et.Iter, 1)
		for range n {
			for _, f := range et.Feeds {
				if err := fill(ctx, net, f); err != nil {
					return tr, fmt.Errorf("train: test net %d at iteration %d: %w", k+1, iter, err)
				}
			}
			net.Forward()
			for j, o := range outs {
				if o.Count() == 1 {
					sums[j] += float64(o.Data[0])
				}
			}
		}
		for j, o := range outs {
			if o.Count() == 1 {
				tr.Outputs = append(tr.Outputs, NamedValue{fmt.Sprintf("net%d/%s", k+1, o.Name), sums[j] / float64(n)})
			}
		}
	}
	return tr, nil
}

// buildExtraTests builds the further test nets, sharing the weights of
// net; they run only beside the first test net.
func (t *Trainer) buildExtraTests(net *model.Net) error {
	t.extra = nil
	if t.test == nil {
		return nil
	}
	for k, et := range t.cfg.ExtraTests {
		tn, err := model.Build(et.Spec, et.Shapes, model.Options{Phase: layers.Test, Threads: t.cfg.Threads, Seed: t.cfg.Seed, ShareWith: net})
		if err != nil {
			return fmt.Errorf("train: TEST net %d: %w", k+1, err)
		}
		if err := checkFeeds(tn, et.Feeds, fmt.Sprintf("TEST net %d", k+1)); err != nil {
			return err
		}
		t.extra = append(t.extra, tn)
	}
	return nil
}

func (r TestResult) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "iter %d test:", r.Iter)
	for _, o := range r.Outputs {
		fmt.Fprintf(&b, "  %s %.4f", o.Name, o.Value)
	}
	return b.String()
}
