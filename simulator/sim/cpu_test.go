package sim

import (
	"math"
	"testing"
	"time"

	"dsgd/protocol/scheme"
)

// TestCoresShareCompute: with Cores, computes running at once share the
// processors. Enough cores change nothing; k synchronous workers on c < k
// cores each compute k/c times as long; a worker computing alone (the
// others waiting) runs at full speed.
func TestCoresShareCompute(t *testing.T) {
	model := Layered(40000, 12*time.Millisecond, 4)
	base := func(name string, workers int, cores float64) Result {
		return run(t, Config{Scheme: scheme.Config{Name: name, Workers: workers}, Model: model, Network: Presets["10gbe"], Iters: 12, Cores: cores})
	}
	near := func(a, b time.Duration) bool { return math.Abs(float64(a-b)) <= 1e-6*float64(max(a, b))+1 }
	for _, name := range []string{"sync-ring", "sync-tree", "sync-ps", "overlap", "async", "easgd"} {
		own, plenty := base(name, 4, 0), base(name, 4, 4)
		if !near(own.Iter, plenty.Iter) || !near(own.Compute, plenty.Compute) {
			t.Errorf("%s: 4 cores for 4 workers changed the run: %v/%v against %v/%v", name, plenty.Iter, plenty.Compute, own.Iter, own.Compute)
		}
	}
	for _, name := range []string{"sync-ring", "sync-tree", "overlap"} {
		own, half := base(name, 4, 0), base(name, 4, 2)
		// Within 1 %: a tree's results reach the ranks microseconds
		// apart, and a compute that starts first runs alone meanwhile.
		if got, want := half.Compute, 2*own.Compute; math.Abs(float64(got-want)) > 0.01*float64(want) {
			t.Errorf("%s: 4 workers in lockstep on 2 cores compute %v, want twice %v", name, got, own.Compute)
		}
	}
	// easgd-rr runs one worker at a time: sharing costs it nothing.
	own, one := base("easgd-rr", 3, 0), base("easgd-rr", 3, 1)
	if !near(own.Compute, one.Compute) {
		t.Errorf("easgd-rr: one worker at a time on 1 core computes %v, want %v as on its own", one.Compute, own.Compute)
	}
	if _, err := Run(Config{Scheme: scheme.Config{Name: "sync-ring", Workers: 2}, Model: model, Cores: -1}); err == nil {
		t.Error("negative cores accepted")
	}
}
