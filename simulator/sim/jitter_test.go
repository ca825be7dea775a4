package sim

import (
	"math"
	"testing"
	"time"

	"dsgd/protocol/scheme"
)

// TestJitterWaitsForTheSlowest: with compute jitter σ, a synchronous
// scheme's iteration on an infinitely fast network is the slower of the
// two workers' computes, whose mean exceeds the jitter-free compute by
// σ/√π for two independent normals; seq has no one to wait for, so its
// mean stays the compute. The means are over n iterations: max(a,b) has
// standard deviation σ·√(1−1/π) ≈ 0.83σ, so with n = 4000 the mean's
// standard error is 0.013σ and the tolerance 0.06σ is over 4 standard
// errors (the draws are seeded, so the test is deterministic anyway);
// σ/C = 0.1 makes the truncation at zero negligible.
func TestJitterWaitsForTheSlowest(t *testing.T) {
	const (
		n       = 4000
		compute = 10 * time.Millisecond
		sigma   = time.Millisecond
	)
	tol := 0.06 * secs(sigma)
	for _, tc := range []struct {
		name    string
		workers int
		gain    float64 // expected mean iteration minus compute, in σ
	}{
		{"seq", 1, 0},
		{"sync-tree", 2, 1 / math.Sqrt(math.Pi)},
		{"sync-ring", 2, 1 / math.Sqrt(math.Pi)},
		{"sync-ps", 2, 1 / math.Sqrt(math.Pi)},
		{"overlap", 2, 1 / math.Sqrt(math.Pi)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Uniform(100_000, compute)
			base := Config{Scheme: scheme.Config{Name: tc.name, Workers: tc.workers, Pack: true}, Model: m, Iters: n, Seed: 7}
			still := run(t, base)
			if still.Iter != compute {
				t.Fatalf("without jitter: iteration %v, want the compute %v", still.Iter, compute)
			}
			cfg := base
			cfg.Model.Jitter = sigma
			res := run(t, cfg)
			gain := secs(res.Iter) - secs(still.Iter)
			if want := tc.gain * secs(sigma); math.Abs(gain-want) > tol {
				t.Errorf("jitter %v: iteration %v, %.4f ms over the jitter-free %v; want %.4f ms ± %.4f", sigma, res.Iter, gain*1e3, still.Iter, want*1e3, tol*1e3)
			}
			// Worker 0's own compute keeps its mean.
			if d := math.Abs(secs(res.Compute) - secs(compute)); d > tol {
				t.Errorf("jitter %v: mean compute %v, want %v ± %.4f ms", sigma, res.Compute, compute, tol*1e3)
			}
			if again := run(t, cfg); again != res {
				t.Errorf("same seed, different results: %+v and %+v", res, again)
			}
		})
	}
}

// TestJitterKeepsStragglerDraws: a straggler's draws come first from
// the rank's stream, so adding jitter leaves the straggled iterations
// as they were (the delay shows in the compute whatever the jitter).
func TestJitterKeepsStragglerDraws(t *testing.T) {
	m := Uniform(1000, 10*time.Millisecond)
	cfg := Config{Scheme: scheme.Config{Name: "seq", Workers: 1}, Model: m, Iters: 400, Warmup: -1, Seed: 3,
		Straggle: &Straggler{Rank: -1, Prob: 0.3, Delay: 5 * time.Millisecond}}
	var events []TraceEvent
	cfg.Trace = func(ev TraceEvent) {
		if ev.Name == "straggle" {
			events = append(events, ev)
		}
	}
	run(t, cfg)
	plain := len(events)
	if plain < 80 || plain > 160 {
		t.Fatalf("%d straggles in 400 iterations at p = 0.3", plain)
	}
	events = nil
	cfg.Model.Jitter = time.Millisecond
	run(t, cfg)
	if len(events) != plain {
		t.Errorf("with jitter %d straggles, without %d: the straggler draws changed", len(events), plain)
	}
}

func TestJitterNegative(t *testing.T) {
	m := Uniform(1000, time.Millisecond)
	m.Jitter = -time.Microsecond
	if _, err := Run(Config{Scheme: scheme.Config{Name: "seq", Workers: 1}, Model: m}); err == nil {
		t.Error("negative jitter accepted")
	}
}

// TestLayered: a layered model splits the parameters and the times into
// equal layers whose sums are exactly the whole's, and overlap hides
// backward's reduction behind the layers still computing.
func TestLayered(t *testing.T) {
	m := Layered(1001, 30*time.Millisecond+1, 4)
	var p int
	var f, b time.Duration
	for _, l := range m.Layers {
		p, f, b = p+l.Params, f+l.Forward, b+l.Backward
	}
	if p != 1001 || f+b != 30*time.Millisecond+1 || len(m.Layers) != 4 || m.Layers[0].Params != 251 {
		t.Fatalf("layers %+v: params %d, time %v", m.Layers, p, f+b)
	}
	if u := Uniform(7, time.Millisecond); len(u.Layers) != 1 || u.Layers[0].Name != "all" || u.Params() != 7 {
		t.Fatalf("Uniform = %+v", u)
	}
	// On fdr-ib the 40 MB reduce in 32 ms, inside backward's 67 ms: all
	// but the last layer's hide.
	big := Layered(10_000_000, 100*time.Millisecond, 10)
	nw := Presets["fdr-ib"]
	tree, err := Run(Config{Scheme: scheme.Config{Name: "sync-tree", Workers: 4}, Model: big, Network: nw})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := Run(Config{Scheme: scheme.Config{Name: "overlap", Workers: 4}, Model: big, Network: nw})
	if err != nil {
		t.Fatal(err)
	}
	if ov.Comm+ov.Wait >= (tree.Comm+tree.Wait)/4 {
		t.Errorf("overlap exposes %v, sync-tree %v: want overlap to hide most of it", ov.Comm+ov.Wait, tree.Comm+tree.Wait)
	}
}
