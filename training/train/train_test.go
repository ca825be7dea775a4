package train

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// mlp is a small net for the synthetic 1x8x8 data: ip 32 -> relu -> ip 4.
func mlp(withAccuracy bool) model.Spec {
	xavier := layers.Filler{Type: layers.FillXavier}
	s := model.Spec{
		Name:   "mlp",
		Inputs: []string{"data", "label"},
		Layers: []model.LayerSpec{
			{Name: "ip1", Bottom: []string{"data"}, Top: []string{"ip1"}, Config: &layers.InnerProductConfig{NumOutput: 32, BiasTerm: true, Axis: 1, WeightFiller: xavier}},
			{Name: "relu1", Bottom: []string{"ip1"}, Top: []string{"ip1"}, Config: &layers.ReLUConfig{}},
			{Name: "ip2", Bottom: []string{"ip1"}, Top: []string{"ip2"}, Config: &layers.InnerProductConfig{NumOutput: 4, BiasTerm: true, Axis: 1, WeightFiller: xavier},
				Params: []model.ParamSpec{{LRMult: 1, DecayMult: 1}, {LRMult: 2, DecayMult: 0}}},
			{Name: "loss", Bottom: []string{"ip2", "label"}, Top: []string{"loss"}, Config: &layers.SoftmaxWithLossConfig{Axis: 1}},
		},
	}
	if withAccuracy {
		s.Layers = append(s.Layers, model.LayerSpec{Name: "accuracy", Bottom: []string{"ip2", "label"}, Top: []string{"accuracy"}, Config: &layers.AccuracyConfig{TopK: 1, Axis: 1}})
	}
	return s
}

// testConfig returns a run over synthetic data; its loaders are closed at
// the end of the test.
func testConfig(t *testing.T, iters int) Config {
	t.Helper()
	open := func(split data.Split, shuffle bool) *data.Loader {
		ds, err := data.Synthetic(data.SyntheticConfig{N: 512, C: 1, H: 8, W: 8, Classes: 4, Seed: 7, Split: split})
		if err != nil {
			t.Fatal(err)
		}
		l, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 16, Train: split == data.Train, Shuffle: shuffle, Seed: 3, Transform: data.TransformConfig{Scale: 1.0 / 256}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	shapes := map[string]tensor.Shape{"data": {16, 1, 8, 8}, "label": {16}}
	return Config{
		Train:        mlp(false),
		Test:         mlp(true),
		TrainShapes:  shapes,
		TestShapes:   shapes,
		TrainFeeds:   []Feed{{Tops: []string{"data", "label"}, Source: Loader{L: open(data.Train, true), Name: "train"}}},
		TestFeeds:    []Feed{{Tops: []string{"data", "label"}, Source: Loader{L: open(data.Test, false), Name: "test"}}},
		Solver:       solver.Config{Type: "SGD", BaseLR: 0.05, Momentum: 0.9, WeightDecay: 5e-4, LRPolicy: "inv", Gamma: 1e-4, Power: 0.75},
		Config:       scheme.Config{MaxIter: iters},
		TestInterval: 100,
		TestIter:     8,
		Seed:         1,
		Threads:      2,
	}
}

func TestTrainConverges(t *testing.T) {
	cfg := testConfig(t, 300)
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iters != 300 || res.Phases.Iters() != 300 {
		t.Fatalf("ran %d iterations (%d timed), want 300", res.Iters, res.Phases.Iters())
	}
	acc, ok := res.Final().Get("accuracy")
	if !ok {
		t.Fatalf("final test has no accuracy: %+v", res.Final())
	}
	if acc < 0.9 {
		t.Fatalf("accuracy %.3f after 300 iterations on separable synthetic data, want >= 0.9", acc)
	}
	// Test passes at 100 and 200 (not 0: TestInitialization is off), and the final one.
	if len(res.Tests) != 3 || res.Tests[0].Iter != 100 || res.Final().Iter != 300 {
		t.Fatalf("test passes at %v", res.Tests)
	}
	if res.Phases.Total(PhaseForward) <= 0 || res.Phases.Total(PhaseBackward) <= 0 || res.Phases.Total(PhaseUpdate) <= 0 {
		t.Fatal("a phase timer stayed at zero")
	}
}

func TestResumeMatchesUninterrupted(t *testing.T) {
	dir := t.TempDir()
	// Without shuffling the data order depends only on the iteration, so a
	// resumed run sees the same batches as an uninterrupted one.
	full := testConfig(t, 60)
	full.TrainFeeds = noShuffle(t)
	full.Test = model.Spec{}
	tr, err := New(full)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}

	first := full
	first.TrainFeeds = noShuffle(t)
	first.MaxIter = 30
	first.SnapshotPrefix = filepath.Join(dir, "snap")
	tr, err = New(first)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	snap := SnapshotPath(first.SnapshotPrefix, 30)
	if len(res.Snapshots) != 1 || res.Snapshots[0] != snap {
		t.Fatalf("snapshots %v, want [%s]", res.Snapshots, snap)
	}

	second := full
	second.TrainFeeds = skipBatches(t, 30)
	second.Resume = snap
	tr, err = New(second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Start != 30 || got.Iters != 30 {
		t.Fatalf("resumed run: start %d, %d iterations; want 30, 30", got.Start, got.Iters)
	}
	for i := range want.Params {
		if want.Params[i] != got.Params[i] {
			t.Fatalf("param %d: resumed %v, uninterrupted %v", i, got.Params[i], want.Params[i])
		}
	}
}

func noShuffle(t *testing.T) []Feed { return skipBatches(t, 0) }

func skipBatches(t *testing.T, n int) []Feed {
	ds, err := data.Synthetic(data.SyntheticConfig{N: 512, C: 1, H: 8, W: 8, Classes: 4, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	l, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 16, Seed: 3, Transform: data.TransformConfig{Scale: 1.0 / 256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := 0; i < n; i++ {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		l.Release(b)
	}
	return []Feed{{Tops: []string{"data", "label"}, Source: Loader{L: l, Name: "train"}}}
}

func TestResumeRejectsOtherNet(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, 5)
	cfg.SnapshotPrefix = filepath.Join(dir, "s")
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), Deps{}); err != nil {
		t.Fatal(err)
	}
	other := testConfig(t, 10)
	other.Train.Layers[0].Config = &layers.InnerProductConfig{NumOutput: 16, BiasTerm: true, Axis: 1}
	other.Test = model.Spec{}
	other.Resume = SnapshotPath(cfg.SnapshotPrefix, 5)
	if _, err := New(other); err == nil || !strings.Contains(err.Error(), "different net") {
		t.Fatalf("resume into another net: got %v", err)
	}
}

// TestResumePastMaxIter: running from a snapshot taken after the run's
// last iteration is refused by Run, naming the snapshot, its iteration and
// the last (New accepts it: dsgd test builds such a trainer to test the
// snapshot); resuming at the last iteration trains none and succeeds.
func TestResumePastMaxIter(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, 5)
	cfg.SnapshotPrefix = filepath.Join(dir, "s")
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), Deps{}); err != nil {
		t.Fatal(err)
	}
	snap := SnapshotPath(cfg.SnapshotPrefix, 5)
	past := testConfig(t, 3)
	past.Resume = snap
	tr, err = New(past)
	if err != nil {
		t.Fatalf("a trainer that only tests the snapshot: %v", err)
	}
	if _, err := tr.Run(context.Background(), Deps{}); err == nil || !strings.Contains(err.Error(), snap+" is at iteration 5, past the run's last, 3") {
		t.Fatalf("resume past max_iter: got %v", err)
	}
	at := testConfig(t, 5)
	at.Resume = snap
	tr, err = New(at)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{})
	if err != nil || res.Iters != 0 || res.Start != 5 {
		t.Fatalf("resume at max_iter: %d iterations from %d, %v; want none from 5", res.Iters, res.Start, err)
	}
}

func TestNaNLossStops(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, 200)
	cfg.Solver.BaseLR = 1e30 // diverges at once
	cfg.Snapshot = 1
	cfg.SnapshotPrefix = filepath.Join(dir, "s")
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background(), Deps{})
	if err == nil {
		t.Fatal("training with base_lr 1e30 succeeded")
	}
	// The weights explode at once: the first snapshot refuses them
	// (before the loss turns NaN), naming the layer.
	for _, want := range []string{"iteration", "diverged", "layer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Every snapshot left behind is complete and loadable.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestUnwritableSnapshotFailsEarly(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, 10)
	cfg.SnapshotPrefix = filepath.Join(blocker, "sub", "snap") // a file stands where a directory must be
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), "snapshot_prefix") {
		t.Fatalf("got %v, want a snapshot_prefix error", err)
	}
}

func TestCancelWritesSnapshot(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, 1_000_000)
	cfg.Test = model.Spec{}
	cfg.SnapshotPrefix = filepath.Join(dir, "s")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	onIter := func(int, float64, time.Duration) {
		if n++; n == 7 {
			cancel()
		}
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(ctx, Deps{OnIter: onIter})
	if err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("got %v, want a cancellation error that says how to resume", err)
	}
	if len(res.Snapshots) != 1 || res.Snapshots[0] != SnapshotPath(cfg.SnapshotPrefix, 7) {
		t.Fatalf("snapshots %v", res.Snapshots)
	}
}

func TestLossIsFiniteAndDecreases(t *testing.T) {
	cfg := testConfig(t, 200)
	cfg.Test = model.Spec{}
	var losses []float64
	onIter := func(_ int, loss float64, _ time.Duration) { losses = append(losses, loss) }
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), Deps{OnIter: onIter}); err != nil {
		t.Fatal(err)
	}
	mean := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			if math.IsNaN(v) {
				t.Fatal("NaN loss")
			}
			s += v
		}
		return s / float64(len(x))
	}
	if a, b := mean(losses[:20]), mean(losses[180:]); b > a/4 {
		t.Fatalf("loss went from %.3f to %.3f, want at least a 4x drop", a, b)
	}
}

// TestDisplayedLoss: the loss on each progress line is Caffe's smoothed
// loss, the mean of the last average_loss iterations' losses (the last
// iteration's when it is 1), not a moving average of its own.
func TestDisplayedLoss(t *testing.T) {
	for _, avg := range []int{1, 3} {
		cfg := testConfig(t, 12)
		cfg.TestInterval = 0
		cfg.Display, cfg.AverageLoss = 4, avg
		var out bytes.Buffer
		cfg.Out = &out
		var losses []float64
		onIter := func(_ int, loss float64, _ time.Duration) { losses = append(losses, loss) }
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Run(context.Background(), Deps{OnIter: onIter}); err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`iter +(\d+)/12  loss ([0-9.]+)`)
		lines := re.FindAllStringSubmatch(out.String(), -1)
		if len(lines) != 3 || len(losses) != 12 {
			t.Fatalf("average_loss %d: %d progress lines, %d losses:\n%s", avg, len(lines), len(losses), out.String())
		}
		for _, m := range lines {
			done, _ := strconv.Atoi(m[1])
			var want float64
			for _, l := range losses[done-avg : done] {
				want += l
			}
			want /= float64(avg)
			if m[2] != fmt.Sprintf("%.4f", want) {
				t.Errorf("average_loss %d, iteration %d: displayed loss %s, want %.4f (losses %v)", avg, done, m[2], want, losses[done-avg:done])
			}
		}
	}
}

// TestSnapshotRequested: a snapshot asked for during a run (Caffe's
// -sighup_effect snapshot) is taken where the updating rank next asks,
// between the periodic ones, and the run trains on to its last
// iteration; a run without a snapshot prefix says it writes none. Under
// sync-tree with two workers too, whose updating rank is rank 0.
func TestSnapshotRequested(t *testing.T) {
	for workers, cfg := range map[int]Config{1: testConfig(t, 8), 2: asyncConfig("sync-tree", 2, 8)} {
		dir := t.TempDir()
		cfg.SnapshotPrefix = filepath.Join(dir, "s")
		cfg.Snapshot = 4
		calls := 0
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Run(context.Background(), Deps{SnapshotRequested: func() bool {
			calls++
			return calls == 3 // after iteration 3
		}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Iters != 8 {
			t.Errorf("%d workers: %d iterations, want 8: a requested snapshot must not stop the run", workers, res.Iters)
		}
		want := []string{SnapshotPath(cfg.SnapshotPrefix, 3), SnapshotPath(cfg.SnapshotPrefix, 4), SnapshotPath(cfg.SnapshotPrefix, 8)}
		if !slices.Equal(res.Snapshots, want) {
			t.Errorf("%d workers: snapshots %q, want %q", workers, res.Snapshots, want)
		}
		if calls != 8 {
			t.Errorf("%d workers: asked %d times, want once per iteration (8)", workers, calls)
		}
	}

	var out bytes.Buffer
	cfg := testConfig(t, 3)
	cfg.Out = &out
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), Deps{SnapshotRequested: func() bool { return true }}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "a snapshot was asked for at iteration 1, but this run writes none") {
		t.Errorf("no note that the run writes no snapshot:\n%s", out.String())
	}
}
