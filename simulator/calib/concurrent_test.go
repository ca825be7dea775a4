package calib

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"dsgd/engine/model"
	"dsgd/engine/solver"
)

func TestJitter(t *testing.T) {
	ms := time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2))
	normal := func(n int, mean, sd time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = mean + time.Duration(rng.NormFloat64()*float64(sd))
		}
		return out
	}
	// Two normal copies with a common slowdown: the estimate is each
	// copy's own σ, not the common part's.
	const n = 20000
	a, b := normal(n, 10*ms, ms), normal(n, 10*ms, ms)
	common := normal(n, 0, 3*ms)
	for i := range a {
		a[i] += common[i]
		b[i] += common[i]
	}
	for _, tc := range []struct {
		name  string
		times [][]time.Duration
		want  time.Duration
		tol   float64 // relative
	}{
		{"one copy", [][]time.Duration{{ms, 2 * ms}}, 0, 0},
		{"no passes", [][]time.Duration{{}, {}}, 0, 0},
		{"identical", [][]time.Duration{{ms, 3 * ms}, {ms, 3 * ms}}, 0, 0},
		// |a-b| = 2 ms every pass: σ = √π/2 · 2 ms.
		{"constant gap", [][]time.Duration{{ms, 5 * ms}, {3 * ms, 3 * ms}}, time.Duration(math.Sqrt(math.Pi) * float64(ms)), 1e-6},
		// σ√2/√n relative error of the mean |a-b| is about 0.6% here.
		{"normal with common load", [][]time.Duration{a, b}, ms, 0.03},
		{"three copies", [][]time.Duration{normal(n, 5*ms, 2*ms), normal(n, 5*ms, 2*ms), normal(n, 5*ms, 2*ms)}, 2 * ms, 0.03},
	} {
		got := Jitter(tc.times)
		if math.Abs(float64(got-tc.want)) > tc.tol*float64(tc.want)+1 {
			t.Errorf("%s: Jitter = %v, want %v (±%.0f%%)", tc.name, got, tc.want, 100*tc.tol)
		}
	}
}

func TestJitterUnequalPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("copies with different pass counts did not panic")
		}
	}()
	Jitter([][]time.Duration{{1, 2}, {1}})
}

func TestConcurrent(t *testing.T) {
	sc := solver.Config{Type: "SGD", BaseLR: 0.01, Momentum: 0.9, LRPolicy: "fixed"}
	for _, copies := range []int{1, 2} {
		nets := make([]*model.Net, copies)
		for i := range nets {
			nets[i] = tinyNet(t)
		}
		m, err := Concurrent(context.Background(), nets, ModelOptions{Iters: 20, Warmup: 1, Solver: &sc, AddLen: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		if m.Name != "tiny" || len(m.Layers) != 4 || m.Params() != len(nets[0].Params()) {
			t.Fatalf("%d copies: model %q, %d layers, %d params; want tiny, 4, %d", copies, m.Name, len(m.Layers), m.Params(), len(nets[0].Params()))
		}
		if m.Layers[0].Params != 64*32+32 || m.Layers[0].Forward <= 0 || m.Layers[0].Backward <= 0 {
			t.Errorf("%d copies: layer 0 %+v", copies, m.Layers[0])
		}
		if m.Update <= 0 || m.AddRate <= 0 {
			t.Errorf("%d copies: update %v, add rate %g; want both positive", copies, m.Update, m.AddRate)
		}
		switch {
		case copies == 1 && m.Jitter != 0:
			t.Errorf("one copy: jitter %v, want 0", m.Jitter)
		case copies == 2 && m.Jitter <= 0:
			// Two wall-clock timings of 20 passes are never all equal.
			t.Errorf("two copies: jitter %v, want positive", m.Jitter)
		}
	}
}

func TestConcurrentErrors(t *testing.T) {
	if _, err := Concurrent(context.Background(), nil, ModelOptions{}); err == nil {
		t.Error("no nets accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Concurrent(ctx, []*model.Net{tinyNet(t), tinyNet(t)}, ModelOptions{Iters: 2}); err == nil {
		t.Error("a cancelled context did not stop the measurement")
	}
}
