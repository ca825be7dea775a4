package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"dsgd/checkpoint"
	"dsgd/metrics"
	"dsgd/model"
	"dsgd/nn/layers"
	"dsgd/solver"
	"dsgd/tensor"
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
	// MaxIter is the iteration to stop at.
	MaxIter int
	// TestInterval runs the test net every TestInterval iterations (0:
	// only at the end), over TestIter batches.
	TestInterval, TestIter int
	// TestInitialization tests before the first iteration, as Caffe does.
	TestInitialization bool
	// Display prints progress every Display iterations (0: never).
	Display int
	// Snapshot writes a snapshot every Snapshot iterations (0: only at the
	// end) to SnapshotPrefix + "_iter_N.dsgdsnap". An empty prefix disables
	// snapshots.
	Snapshot       int
	SnapshotPrefix string
	// Resume, when set, is a snapshot to continue from.
	Resume string
	// Seed seeds the parameter fillers and every random layer.
	Seed uint64
	// Threads is how many goroutines the layers use.
	Threads int
	// Out receives progress and reports; TTY redraws the progress bar in
	// place.
	Out io.Writer
	TTY bool
	// OnIter, when set, is called after every training iteration with its
	// loss and its wall time (data, forward, backward and update).
	OnIter func(iter int, loss float64, d time.Duration)
}

// TestResult is the mean of each scalar net output over a test pass.
type TestResult struct {
	Iter    int
	Outputs []NamedValue
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
	Phases       *metrics.Phases
	// Tests holds every test pass, the last one at the end of training.
	Tests []TestResult
	// Snapshots lists the snapshot files written.
	Snapshots []string
	// Params are the final weights (a view of the net's buffer).
	Params []float32
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
	net, test *model.Net
	solver    *solver.Solver
	layout    uint64
	batch     int
	start     int
	out       io.Writer
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
	t.solver, err = solver.New(cfg.Solver, len(t.net.Params()), Segments(t.net.Blocks()))
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t.layout = Layout(t.net.Blocks())
	for _, name := range cfg.Train.Inputs {
		t.batch = max(t.batch, cfg.TrainShapes[name].Count()/max(1, cfg.TrainShapes[name].CountFrom(1)))
	}
	if cfg.Resume != "" {
		if err := t.resume(cfg.Resume); err != nil {
			return nil, err
		}
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

func (t *Trainer) resume(path string) error {
	st, err := checkpoint.Read(path)
	if err != nil {
		return fmt.Errorf("train: --resume: %w", err)
	}
	if st.Layout != t.layout || len(st.Params) != len(t.net.Params()) {
		return fmt.Errorf("train: --resume %s: the snapshot was taken from a different net (%d parameters, layout %016x; this net has %d, layout %016x)", path, len(st.Params), st.Layout, len(t.net.Params()), t.layout)
	}
	if err := t.solver.ReadState(bytes.NewReader(st.Solver)); err != nil {
		return fmt.Errorf("train: --resume %s: solver state: %w", path, err)
	}
	copy(t.net.Params(), st.Params)
	t.start = st.Iter
	return nil
}

// Net is the TRAIN net.
func (t *Trainer) Net() *model.Net { return t.net }

// Run trains from the start (or resumed) iteration to MaxIter. When ctx is
// cancelled it writes a snapshot of the last completed iteration and
// returns ctx's error with the partial result.
func (t *Trainer) Run(ctx context.Context) (*Result, error) {
	cfg := t.cfg
	res := &Result{Start: t.start, Phases: metrics.NewPhases(PhaseNames...), Params: t.net.Params()}
	prog := metrics.NewProgress(t.out, cfg.MaxIter, cfg.TTY)
	defer prog.Done()
	params, grads := t.net.Params(), t.net.Grads()
	ph := res.Phases
	var smooth float64
	var trainTime time.Duration
	begin := time.Now()
	lastDisplay, lastDisplayTime := t.start, time.Now()
	iter := t.start
	for ; iter < cfg.MaxIter; iter++ {
		if t.test != nil && cfg.TestInterval > 0 && iter%cfg.TestInterval == 0 && (iter > t.start || (iter == 0 && cfg.TestInitialization)) {
			tt := time.Now() // test time is not training time: keep it out of images/s
			tr, err := t.Test(ctx, iter)
			if err != nil {
				return res, err
			}
			res.Tests = append(res.Tests, tr)
			prog.Printf("%s\n", tr)
			lastDisplayTime = lastDisplayTime.Add(time.Since(tt))
		}
		if err := ctx.Err(); err != nil {
			return res, t.interrupted(res, iter, err)
		}
		t0 := time.Now()
		for _, f := range cfg.TrainFeeds {
			if err := fill(ctx, t.net, f); err != nil {
				if ctx.Err() != nil {
					return res, t.interrupted(res, iter, ctx.Err())
				}
				return res, fmt.Errorf("train: iteration %d: %w", iter, err)
			}
		}
		t1 := ph.Since(PhaseData, t0)
		loss := t.net.Forward()
		t2 := ph.Since(PhaseForward, t1)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			where := t.net.NonFinite()
			if where == "" {
				where = "the loss itself"
			}
			return res, fmt.Errorf("train: iteration %d: loss is %v; first non-finite value: %s (the last good snapshot, if any, is kept; lower base_lr or check the data)", iter, loss, where)
		}
		t.net.Backward()
		t3 := ph.Since(PhaseBackward, t2)
		t.solver.Step(iter, params, grads)
		t4 := ph.Since(PhaseUpdate, t3)
		trainTime += t4.Sub(t0)
		ph.Iter()
		if cfg.OnIter != nil {
			cfg.OnIter(iter, loss, t4.Sub(t0))
		}
		if iter == t.start {
			smooth = loss
		} else {
			smooth = 0.98*smooth + 0.02*loss
		}
		done := iter + 1
		if cfg.Display > 0 && (done%cfg.Display == 0 || done == cfg.MaxIter) {
			now := time.Now()
			ips := float64((done-lastDisplay)*t.batch) / now.Sub(lastDisplayTime).Seconds()
			lastDisplay, lastDisplayTime = done, now
			prog.Line(metrics.Status{Iter: done, Loss: smooth, LR: t.solver.LR(iter), ImagesSec: ips})
		}
		if cfg.SnapshotPrefix != "" && cfg.Snapshot > 0 && done%cfg.Snapshot == 0 && done < cfg.MaxIter {
			p, err := t.snapshot(done)
			if err != nil {
				return res, err
			}
			res.Snapshots = append(res.Snapshots, p)
			prog.Printf("snapshot %s\n", p)
		}
	}
	res.Iters = iter - t.start
	res.Wall = time.Since(begin)
	if trainTime > 0 {
		res.ImagesPerSec = float64(res.Iters*t.batch) / trainTime.Seconds()
	}
	if cfg.SnapshotPrefix != "" {
		p, err := t.snapshot(iter)
		if err != nil {
			return res, err
		}
		res.Snapshots = append(res.Snapshots, p)
	}
	if t.test != nil {
		tr, err := t.Test(ctx, iter)
		if err != nil {
			return res, err
		}
		res.Tests = append(res.Tests, tr)
	}
	res.Wall = time.Since(begin)
	return res, nil
}

func (t *Trainer) interrupted(res *Result, iter int, cause error) error {
	res.Iters = iter - t.start
	if t.cfg.SnapshotPrefix == "" || iter == t.start {
		return cause
	}
	p, err := t.snapshot(iter)
	if err != nil {
		return errors.Join(cause, err)
	}
	res.Snapshots = append(res.Snapshots, p)
	return fmt.Errorf("%w (snapshot of iteration %d written to %s; continue with --resume %s)", cause, iter, p, p)
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
	var sb bytes.Buffer
	if err := t.solver.WriteState(&sb); err != nil {
		return "", fmt.Errorf("train: snapshot: solver state: %w", err)
	}
	path := SnapshotPath(t.cfg.SnapshotPrefix, iter)
	err := checkpoint.Write(path, checkpoint.State{Iter: iter, Layout: t.layout, Params: t.net.Params(), Solver: sb.Bytes()})
	if err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	return path, nil
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
	return tr, nil
}

func (r TestResult) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "iter %d test:", r.Iter)
	for _, o := range r.Outputs {
		fmt.Fprintf(&b, "  %s %.4f", o.Name, o.Value)
	}
	return b.String()
}
