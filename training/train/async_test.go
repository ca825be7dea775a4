package train

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// asyncConfig is a run of scheme name with the given workers over the
// synthetic samples of schemes_test.go, with the asynchronous schemes'
// settings the command defaults to: alpha 0.9/workers (0.9/groups for
// hybrid, with 2 groups), no momentum for EASGD's plain-SGD rules.
func asyncConfig(name string, workers, iters int) Config {
	const b = 4
	images, labels := samples(96, 64, 4)
	feeds := func(rank int) []Feed {
		return []Feed{{Tops: []string{"data", "label"}, Source: &sliceSource{images: images, labels: labels, per: 64, batch: b, rank: rank, workers: workers}}}
	}
	cfg := Config{
		Train: mlp(false), TrainShapes: map[string]tensor.Shape{"data": {b, 1, 8, 8}, "label": {b}}, TrainFeeds: feeds(0),
		Solver: solver.Config{Type: "SGD", BaseLR: 0.1, Momentum: 0.9, WeightDecay: 1e-3, LRPolicy: "inv", Gamma: 1e-2, Power: 0.75},
		Seed:   11, Threads: workers,
		Config: scheme.Config{MaxIter: iters, Name: name, Workers: workers, Pack: true,
			Interval: 1, Staleness: 2, Variant: 3, Groups: 2,
			Alpha: 0.9 / float32(workers)},
	}
	for r := 1; r < workers; r++ {
		cfg.WorkerFeeds = append(cfg.WorkerFeeds, feeds(r))
	}
	switch name {
	case "hybrid":
		cfg.Alpha = 0.9 / float32(cfg.Groups)
	case "easgd", "easgd-rr", "hogwild-easgd":
		cfg.Solver.Momentum = 0
	}
	return cfg
}

// runAsync runs cfg and returns the result and rank 0's losses.
func runAsync(t *testing.T, cfg Config) (*Result, []float64) {
	t.Helper()
	return runAsyncWith(t, cfg, Deps{})
}

// runAsyncWith is runAsync with the run's dependencies d (its OnIter
// replaced by the collector of rank 0's losses).
func runAsyncWith(t *testing.T, cfg Config, d Deps) (*Result, []float64) {
	t.Helper()
	var losses []float64
	d.OnIter = func(_ int, loss float64, _ time.Duration) { losses = append(losses, loss) }
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tr.Run(ctx, d)
	if err != nil {
		t.Fatalf("%s with %d workers: %v", cfg.Name, cfg.Workers, err)
	}
	return res, losses
}

// schemeRuns lists every scheme but seq as it runs with 4 workers:
// sync-easgd in each variant, async also with an interval of 2.
func schemeRuns(include func(string) bool) []struct {
	label string
	cfg   func(workers, iters int) Config
} {
	var out []struct {
		label string
		cfg   func(workers, iters int) Config
	}
	add := func(label, name string, mod func(*Config)) {
		if !include(name) {
			return
		}
		out = append(out, struct {
			label string
			cfg   func(workers, iters int) Config
		}{label, func(workers, iters int) Config {
			c := asyncConfig(name, workers, iters)
			if mod != nil {
				mod(&c)
			}
			return c
		}})
	}
	for _, name := range scheme.Names() {
		switch name {
		case "seq":
		case "sync-easgd":
			for v := 1; v <= 3; v++ {
				add(fmt.Sprintf("%s/variant=%d", name, v), name, func(c *Config) { c.Variant = v })
			}
		case "async":
			add(name, name, nil)
			add(name+"/interval=2", name, func(c *Config) { c.Interval = 2 })
		case "streaming-diloco":
			add(name, name, nil)
			add(name+"/P=2,tau=1,bits=4", name, func(c *Config) {
				c.Interval, c.Fragments, c.Overlap, c.Mix, c.OuterBits = 4, 2, 1, 0.5, 4
			})
		default:
			add(name, name, nil)
		}
	}
	return out
}

func racy(name string) bool { return name == "hogwild" || name == "hogwild-easgd" }

// checkRun asserts that a run finished its iterations with finite losses
// and weights.
func checkRun(t *testing.T, res *Result, losses []float64, iters int) {
	t.Helper()
	if res.Iters != iters || len(losses) != iters {
		t.Fatalf("ran %d iterations (%d losses seen), want %d", res.Iters, len(losses), iters)
	}
	for i, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			t.Fatalf("iteration %d: loss %v", i, l)
		}
	}
	for i, w := range res.Params {
		if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
			t.Fatalf("final weight %d is %v", i, w)
		}
	}
}

// TestEverySchemeRuns: every scheme except seq (and hogwild's two, whose
// races are the algorithm: hogwild_test.go) trains 4 workers for 30
// iterations without error and with finite losses and weights.
func TestEverySchemeRuns(t *testing.T) {
	const workers, iters = 4, 30
	for _, run := range schemeRuns(func(n string) bool { return !racy(n) }) {
		t.Run(run.label, func(t *testing.T) {
			res, losses := runAsync(t, run.cfg(workers, iters))
			checkRun(t, res, losses, iters)
		})
	}
}

// TestSyncEASGDDeterministic: sync-easgd gives bitwise the same weights
// run after run, and its three implementations agree to float tolerance.
func TestSyncEASGDDeterministic(t *testing.T) {
	const workers, iters = 3, 12
	cfg := asyncConfigVariant(1, workers, iters)
	start := func() []float32 {
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), tr.Net().Params()...)
	}()
	var byVariant [][]float32
	for v := 1; v <= 3; v++ {
		a, _ := runAsync(t, asyncConfigVariant(v, workers, iters))
		first := append([]float32(nil), a.Params...)
		b, _ := runAsync(t, asyncConfigVariant(v, workers, iters))
		if !slices.Equal(first, b.Params) {
			t.Fatalf("variant %d: two runs with the same seed ended with different weights", v)
		}
		byVariant = append(byVariant, first)
	}
	moved := 0.0
	for i := range start {
		moved = math.Max(moved, math.Abs(float64(byVariant[0][i]-start[i])))
	}
	if moved < 1e-3 {
		t.Fatalf("the center moved by at most %.3g: nothing was trained", moved)
	}
	for v := 1; v < 3; v++ {
		worst := 0.0
		for i := range byVariant[0] {
			worst = math.Max(worst, math.Abs(float64(byVariant[v][i]-byVariant[0][i])))
		}
		if worst > 1e-5 {
			t.Errorf("variant %d differs from variant 1 by %.3g", v+1, worst)
		}
	}
}

func asyncConfigVariant(v, workers, iters int) Config {
	cfg := asyncConfig("sync-easgd", workers, iters)
	cfg.Variant = v
	return cfg
}

// gapCenter wraps the in-process center and records, after each Clock
// returns for worker w at iteration it, the gap (it+1) − min(count of the
// workers that have not finished): what SSP bounds by s.
type gapCenter struct {
	*center.Local
	mu       sync.Mutex
	finished []bool
	maxGap   int
	clocks   int
}

func (g *gapCenter) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	stop, err := g.Local.Clock(ctx, w, iter, s)
	if err != nil {
		return stop, err
	}
	counts := g.Local.Clocks()
	g.mu.Lock()
	defer g.mu.Unlock()
	low := -1
	for i, c := range counts {
		if !g.finished[i] && (low < 0 || c < low) {
			low = c
		}
	}
	g.maxGap = max(g.maxGap, iter+1-low)
	g.clocks++
	return stop, nil
}

func (g *gapCenter) Leave(ctx context.Context, w int, cause error) error {
	g.mu.Lock()
	g.finished[w] = true
	g.mu.Unlock()
	return g.Local.Leave(ctx, w, cause)
}

// TestSSPBoundsStaleness: under a straggler, ssp never lets a worker get
// more than s iterations ahead of the slowest, as the control area's
// counts show after every Clock, and the bound did make workers wait.
func TestSSPBoundsStaleness(t *testing.T) {
	const workers, iters, s = 3, 40, 2
	cfg := asyncConfig("ssp", workers, iters)
	cfg.Staleness = s
	cfg.Straggle = &Straggler{Rank: 2, Delay: 3 * time.Millisecond}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	local, err := center.NewLocal(tr.CenterConfig(tr.schemeConfig(0), workers))
	if err != nil {
		t.Fatal(err)
	}
	gc := &gapCenter{Local: local, finished: make([]bool, workers)}
	res, err := tr.Run(context.Background(), Deps{Center: gc})
	if err != nil {
		t.Fatal(err)
	}
	if gc.clocks != workers*iters {
		t.Fatalf("%d clock calls, want %d", gc.clocks, workers*iters)
	}
	if res.Straggled == 0 {
		t.Fatal("the straggler was never delayed")
	}
	st := local.Stats()
	t.Logf("max gap %d, %d waits, %d straggled iterations", gc.maxGap, st.Waits, res.Straggled)
	if gc.maxGap > s {
		t.Fatalf("a worker ran %d iterations ahead of the slowest, staleness bound %d", gc.maxGap, s)
	}
	if st.Waits == 0 {
		t.Fatal("no worker ever waited for the straggler: the bound was not exercised")
	}
	if got := local.Clocks(); !slices.Equal(got, []int{iters, iters, iters}) {
		t.Fatalf("final counts %v", got)
	}
}

// TestWeedoutDropsStragglers: with a round deadline far below the
// straggler's delay, its gradients miss rounds and are dropped, and the
// run still finishes.
func TestWeedoutDropsStragglers(t *testing.T) {
	const workers, iters = 3, 30
	cfg := asyncConfig("weedout", workers, iters)
	cfg.Straggle = &Straggler{Rank: 2, Delay: 20 * time.Millisecond}
	cfg.RoundDeadline = 5 * time.Millisecond
	res, losses := runAsync(t, cfg)
	checkRun(t, res, losses, iters)
	t.Logf("center: %+v", res.Center)
	if res.Center.Dropped == 0 {
		t.Fatalf("no gradients dropped: %+v", res.Center)
	}
	if res.Center.Rounds < iters {
		t.Fatalf("%d rounds closed, want at least %d", res.Center.Rounds, iters)
	}
}

// TestWeedoutCountsRounds: when rank 0 is the straggler, its gradients miss
// rounds, yet the run's iteration count is the center's rounds (issue 27:
// "done: 19 iterations" after 20 rounds).
func TestWeedoutCountsRounds(t *testing.T) {
	const workers, iters = 3, 12
	cfg := asyncConfig("weedout", workers, iters)
	cfg.Straggle = &Straggler{Rank: 0, Delay: 20 * time.Millisecond}
	cfg.RoundDeadline = 5 * time.Millisecond
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Center.Dropped == 0 {
		t.Skipf("rank 0 missed no round (a slow machine?): %+v", res.Center)
	}
	if res.Iters != iters {
		t.Fatalf("the run reports %d iterations; the center closed %d rounds, want %d", res.Iters, res.Center.Rounds, iters)
	}
}

// TestHybridFinishFirst: hybrid with aligned termination (ShmCaffe III.E
// for HSGD): the group roots clock at the center and tell their groups;
// with --finish first, a straggling group's ranks stop with the others
// when the fast group finishes, every rank of a group on the same
// iteration (no rank left waiting in its group's allreduce).
func TestHybridFinishFirst(t *testing.T) {
	const workers, iters = 4, 12
	cfg := asyncConfig("hybrid", workers, iters)
	cfg.Finish = center.FinishFirst
	cfg.Straggle = &Straggler{Rank: 2, Delay: 15 * time.Millisecond} // group 1's first rank
	var mu sync.Mutex
	seen := map[int]int{} // rank -> iterations done
	onMetrics := func(m IterMetrics) {
		mu.Lock()
		seen[m.Rank] = max(seen[m.Rank], m.Iter+1)
		mu.Unlock()
	}
	res, _ := runAsyncWith(t, cfg, Deps{OnIterMetrics: onMetrics})
	if res.Iters > iters {
		t.Fatalf("rank 0 ran %d iterations, past the %d of the first to finish", res.Iters, iters)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[2] != seen[3] || seen[0] != seen[1] {
		t.Fatalf("the ranks of a group stopped on different iterations: %v", seen)
	}
	if seen[2] >= iters {
		t.Fatalf("the straggling group ran its %d iterations (%v): it did not stop with the first group", iters, seen)
	}
	t.Logf("iterations per rank: %v", seen)
}
