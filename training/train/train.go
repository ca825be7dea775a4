package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"dsgd/caffe/caffemodel"
	"dsgd/comm/collective"
	"dsgd/comm/transport"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/engine/tensor/exact"
	"dsgd/protocol/scheme"
	"dsgd/training/checkpoint"
	"dsgd/training/metrics"
	"dsgd/training/node"
)

// Trainer runs a Config. Build it with New, run it with Run.
type Trainer struct {
	// origin is rank 0's TRAIN net, solver and initial weights, what a
	// Start holds alone.
	origin
	test  *model.Net   // rank 0's
	extra []*model.Net // rank 0's further test nets (Config.ExtraTests)
	// ranks holds every rank's model and solver (rank 0 first; a
	// parameter server last).
	ranks []*rankState
	// gpu holds the GPUs the nets run on (Config.GPUs) and their nets'
	// executors.
	gpu     gpuState
	updater int // the rank whose solver state a snapshot records
	// sink writes Config.Metrics (nil without it); clog writes
	// Config.CaffeLog on rank 0 (nil without it, or on another rank).
	sink *metricsSink
	clog *metrics.Glog
	// elasticTest and elasticExtra are the test nets New built, which
	// each elastic generation's rank 0 takes.
	elasticTest  *model.Net
	elasticExtra []*model.Net
	// deps are Run's dependencies.
	deps Deps
	// testShapes holds each test net's NetShapes (nil: its feeds do
	// not reshape), made by its first Test.
	testShapes map[*model.Net]*NetShapes
}

// rankState is one rank's model, solver and data.
type rankState struct {
	rank   int
	net    *model.Net
	solver *solver.Solver
	feeds  []Feed
	comp   *netComputer
	// exactBuf, with Config.Exact, is the buffer of digits the rank's
	// scheme reduces (its computer's sum, or a server's); shared memory
	// when the host's ranks share it.
	exactBuf []float32
}

// New builds the nets and the solver, loads the snapshot to resume from,
// and checks that snapshots can be written, so that a bad path fails now
// and not after hours of training.
func New(cfg Config) (*Trainer, error) {
	o, err := newOrigin(cfg)
	if err != nil {
		return nil, err
	}
	t := &Trainer{origin: o}
	cfg = t.cfg
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
	if err := t.newSolver(); err != nil {
		return nil, err
	}
	// Any worker of an elastic group may become rank 0, which tests.
	t.elasticTest, t.elasticExtra = t.test, t.extra
	if err := t.buildRanks(); err != nil {
		return nil, err
	}
	if cfg.Metrics != nil {
		t.sink = newMetricsSink(t)
	}
	if cfg.CaffeLog != nil && t.ranks[0].rank == 0 && t.ranks[0].comp != nil {
		t.clog = metrics.NewGlog(cfg.CaffeLog)
		t.ranks[0].comp.keepOutputs = true
	}
	switch f := cfg.SnapshotFormat; {
	case f != "" && f != FormatDsgd && f != FormatCaffe && f != FormatHDF5:
		return nil, fmt.Errorf("train: snapshot format %q: want %s, %s or %s", f, FormatDsgd, FormatCaffe, FormatHDF5)
	case f == FormatHDF5 && cfg.SnapshotPrefix != "" && caffemodel.HDF5Error() != nil:
		return nil, fmt.Errorf("train: snapshot_format HDF5: %w", caffemodel.HDF5Error())
	}
	if err := t.initWeights(t.ranks); err != nil {
		return nil, err
	}
	if cfg.SnapshotPrefix != "" {
		if err := checkWritable(cfg.SnapshotPrefix); err != nil {
			return nil, err
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

// resume copies the dsgd snapshot at path into the weights and solver
// states of ranks and starts from its iteration.
func (o *origin) resume(ranks []*rankState, path string) error {
	st, err := checkpoint.Read(path)
	if err != nil {
		return fmt.Errorf("train: Config.Resume: %w", err)
	}
	if st.Layout != o.layout || len(st.Params) != len(o.net.Params()) {
		return fmt.Errorf("train: Config.Resume %s: the snapshot was taken from a different net (%d parameters, layout %016x; this net has %d, layout %016x)", path, len(st.Params), st.Layout, len(o.net.Params()), o.layout)
	}
	for _, r := range ranks {
		if err := r.solver.ReadState(bytes.NewReader(st.Solver)); err != nil {
			return fmt.Errorf("train: Config.Resume %s: solver state: %w", path, err)
		}
		copy(r.net.Params(), st.Params)
	}
	if msg := insane(o.net); msg != "" {
		return fmt.Errorf("train: Config.Resume %s: %w: %s; not weights to continue or test from", path, ErrDiverged, msg)
	}
	o.start = st.Iter
	return nil
}

// GlobalBatch is the number of training images one iteration consumes,
// all workers together.
func (t *Trainer) GlobalBatch() int { return t.batch * max(t.cfg.Workers, 1) }

// StartIter is the iteration the trainer starts from: that of the
// snapshot it resumed, else 0.
func (o *origin) StartIter() int { return o.start }

// LayoutHash identifies the model's parameter layout; ranks of a group
// must agree on it.
func (o *origin) LayoutHash() uint64 { return o.layout }

// Net is the TRAIN net.
func (o *origin) Net() *model.Net { return o.net }

// buildRanks builds the nets and solvers of the ranks this process runs
// (all of them in-process; one with an Endpoint): the same spec and seed,
// so the same initial weights everywhere.
func (t *Trainer) buildRanks() error {
	cfg := t.cfg
	if err := t.gpuRefusal(); err != nil {
		return err
	}
	t.gpu.closeNets()
	workers := max(cfg.Workers, 1)
	sc := t.schemeConfig(0)
	nranks := sc.Ranks()
	local := make([]int, nranks)
	for r := range local {
		local[r] = r
	}
	threads := rankThreads(cfg)
	if g := cfg.Group; g != nil {
		if g.Size != nranks {
			return fmt.Errorf("train: scheme %s with %d workers runs on %d ranks, but the group has %d", cfg.Name, workers, nranks, g.Size)
		}
		if g.Rank < 0 || g.Rank >= g.Size {
			return fmt.Errorf("train: rank %d out of range [0,%d)", g.Rank, g.Size)
		}
		local = []int{g.Rank}
	} else if workers > 1 && len(cfg.WorkerFeeds) != workers-1 {
		return fmt.Errorf("train: %d workers need %d worker feeds, got %d", workers, workers-1, len(cfg.WorkerFeeds))
	}
	t.updater = 0
	if sc.Info().ServerUpdates {
		t.updater = nranks - 1
	}
	if err := CompressRefusal(cfg); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	hogwild := sc.Info().SharedWeights
	if hogwild && cfg.Group != nil {
		return errors.New("train: hogwild shares weights in memory; it runs in one process only (no Config.Group)")
	}
	if local[0] != 0 {
		t.test, t.extra = nil, nil // only rank 0 tests
	}
	// Every local rank builds a net of its own: refuse now, with the
	// figure, when they will not fit together.
	if lim := tensor.MemoryLimit(); lim > 0 && len(local) > 1 {
		if need := float64(len(local)) * t.net.Bytes(); need > float64(lim) {
			return fmt.Errorf("train: %d ranks in this process need %s (%s each), more than the %s this machine has; use fewer workers, a smaller batch, or a multi-process group (Config.Group) across machines",
				len(local), tensor.HumanBytes(need), tensor.HumanBytes(t.net.Bytes()), tensor.HumanBytes(float64(lim)))
		}
	}
	for i, r := range local {
		// The first local rank's is the net the origin built, with its
		// threads (rankThreads).
		net, sv := t.net, t.solver
		if i > 0 {
			var err error
			opt := model.Options{Phase: layers.Train, Threads: threads, Seed: cfg.Seed}
			if hogwild {
				// Hogwild: every worker updates rank 0's weights, with
				// no lock, from gradients of its own.
				opt.ShareWith, opt.OwnGrads = t.ranks[0].net, true
			}
			net, err = model.Build(cfg.Train, cfg.TrainShapes, opt)
			if err != nil {
				return fmt.Errorf("train: TRAIN net of rank %d: %w", r, err)
			}
			if sv, err = solver.New(cfg.Solver, len(net.Params()), Segments(net.Blocks())); err != nil {
				return fmt.Errorf("train: %w", err)
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
			rs.comp.shapes = NewNetShapes(net, cfg.Train, cfg.TrainShapes, model.Options{Phase: layers.Train, Threads: net.Pool().Threads(), Seed: cfg.Seed}, rs.feeds, fmt.Sprintf("rank %d's TRAIN", r))
			rs.comp.iterSize = max(cfg.IterSize, 1)
			if cfg.Exact {
				rs.comp.exact = newExactSum(net, nil, t.exactDirect())
				rs.exactBuf = rs.comp.exact.buf
				rs.comp.rank, rs.comp.world = r, workers
				// Batches of varying shapes run serially, on the net of
				// each one's shape (NetShapes).
				if n := min(net.Pool().Threads(), rs.comp.iterSize); n > 1 && !serialAtoms && rs.comp.shapes == nil && atomParallel(cfg.Train) && int64(len(net.Params()))*12*int64(n) < 2<<30 {
					// The atoms run side by side, one thread each: faster
					// than one after another on all the threads, and the
					// bits of a one-thread worker's atoms (the layers sum a
					// batch's weight gradients per thread's chunk).
					var err error
					if rs.comp.replicas, err = newAtomReplicas(rs.comp, cfg.Train, cfg.TrainShapes, cfg.Seed, n); err != nil {
						return fmt.Errorf("train: TRAIN net replica: %w", err)
					}
				}
			}
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
		if rs.comp != nil {
			if err := t.onGPU(net, i, r); err != nil {
				return err
			}
		}
		t.ranks = append(t.ranks, rs)
	}
	return t.testsOnGPU()
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

// Run trains from the start (or resumed) iteration to MaxIter under the
// configured scheme, with the dependencies d (the group's endpoint, a
// center, hooks). When ctx is cancelled it writes a snapshot of the
// last completed iteration and returns ctx's error with the partial
// result. An elastic run (Config.Elastic) goes through as many
// generations as its group takes. A Trainer runs once.
func (t *Trainer) Run(ctx context.Context, d Deps) (*Result, error) {
	t.deps = d
	defer t.gpu.release()
	if t.cfg.Resume != "" && t.start > t.cfg.MaxIter {
		// Caffe's Solve steps no iteration then; here it is more likely
		// a mistake (docs/caffe-conformance.md). A trainer that only
		// tests the snapshot (dsgd test) never runs.
		return &Result{Start: t.start, Scheme: t.cfg.Name}, fmt.Errorf("train: Config.Resume %s is at iteration %d, past the run's last, %d (the solver's max_iter, or --iters): nothing to train; give a larger max_iter or --iters", t.cfg.Resume, t.start, t.cfg.MaxIter)
	}
	if t.cfg.Elastic {
		if d.Elastic == nil {
			return &Result{Start: t.start, Scheme: t.cfg.Name}, errors.New("train: Config.Elastic needs Deps.Elastic: the group's membership and the feeds of each generation")
		}
		return t.runElastic(ctx)
	}
	return t.runGeneration(ctx, d.Endpoint)
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
		m := IterMetrics{Kind: "train", Time: metricsTime(now), Rank: r, Iter: iter, LR: t.solver.LR(iter), Loss: loss, WallMS: ms(now.Sub(lastT))}
		m.Images, m.Epoch = t.images(iter + 1)
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
		if t.deps.OnIterMetrics != nil {
			t.deps.OnIterMetrics(m)
		}
		if t.sink != nil {
			if err := t.sink.train(m); err != nil {
				return err
			}
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

func (t *Trainer) algo(a scheme.Algo) collective.Algorithm { return node.Algorithm(t.cfg.Algo, a) }

func schemeLayout(net *model.Net) scheme.Layout {
	l := scheme.Layout{N: len(net.Params())}
	for _, b := range net.Blocks() {
		l.Blocks = append(l.Blocks, scheme.Range{Lo: b.Off, Hi: b.Off + b.Len()})
	}
	return l
}

// shareGrads moves the gradients of this process's rank into memory its
// transport shares with the ranks on its host, where it has any
// (collective.Executor.Buffer: a host group, which then reduces them in
// place instead of copying them through its slots). Every rank calls it
// at the same point. It returns a line for the log: where the gradients
// are, or why they could not be shared.
func (t *Trainer) shareGrads(ctx context.Context, ep transport.Endpoint) (string, error) {
	net := t.ranks[0].net
	ex := collective.NewExecutor(ep)
	defer ex.Close()
	n := len(net.Grads())
	exactDigits := t.cfg.Exact && !t.exactDirect()
	if exactDigits {
		n *= exact.Limbs
	}
	buf, err := ex.Buffer(ctx, n)
	if err != nil {
		return "", fmt.Errorf("train: the gradients' shared buffer: %w", err)
	}
	if ok, why := ex.Shared(buf); !ok {
		if why != nil {
			return fmt.Sprintf("gradients in process memory, not shared with the host's other ranks: %v", why), nil
		}
		return "", nil
	}
	if exactDigits {
		rs := t.ranks[0]
		rs.exactBuf = buf
		if rs.comp != nil && rs.comp.exact != nil {
			rs.comp.exact.buf = buf
		}
	} else if err := net.UseGrads(buf); err != nil {
		return "", err
	}
	return "gradients in shared memory: the ranks on this host reduce them in place", nil
}
