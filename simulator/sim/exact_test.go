package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
	"dsgd/engine/tensor"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/node"
)

// The tests in this file run a scheme twice on the same numbers: through
// real ranks (node.Rank over transport.NewInproc, with a center.Local)
// and through the simulator with Exact, and compare the final weights
// bit for bit.

// exactModel has three layers with parameters and one without, so that
// unpacked transfers and overlap's per-layer allreduces have several
// blocks of different sizes.
var exactModel = Model{Name: "small", AddRate: 1e9, Update: 100 * time.Microsecond, Layers: []Layer{
	{Name: "conv", Forward: time.Millisecond, Backward: 2 * time.Millisecond, Params: 7},
	{Name: "relu", Forward: 100 * time.Microsecond, Backward: 100 * time.Microsecond},
	{Name: "fc1", Forward: time.Millisecond, Backward: 3 * time.Millisecond, Params: 12},
	{Name: "fc2", Forward: 500 * time.Microsecond, Backward: time.Millisecond, Params: 5},
}}

func exactInit(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = 0.5 - 0.13*float32(i%7) + 0.07*float32(i%3)
	}
	return w
}

// exactGrad is a gradient that depends on the weights, the rank and the
// call, so that every scheme's weights take a path of their own.
func exactGrad(rank, call int, params, grads []float32) float64 {
	n := len(params)
	loss := 0.0
	for i := range grads {
		grads[i] = 0.3*params[i] - 0.1*params[(i+1)%n] + 0.05*float32(rank+1) - 0.02*float32(call) + 0.01*float32(i)
		loss += float64(params[i] * params[i])
	}
	return loss
}

// momentum returns a solver update with per-rank momentum state
// (v = μv − η·g; w += v).
func momentum(ranks, n int) func(rank, iter int, params, grads []float32) {
	vs := make([][]float32, ranks)
	for i := range vs {
		vs[i] = make([]float32, n)
	}
	return func(rank, iter int, params, grads []float32) {
		v := vs[rank]
		lr := 0.1 / float32(1+iter)
		for i := range params {
			v[i] = 0.9*v[i] - lr*grads[i]
			params[i] += v[i]
		}
	}
}

// centerSGD is a weed-out center's update.
func centerSGD(w, g []float32, iter int) {
	for i := range w {
		w[i] -= 0.2 * g[i]
	}
}

// exactComputer is node's side of exactGrad: it computes every gradient,
// then reports the blocks final in backward order, as the simulator does.
type exactComputer struct {
	rank, calls   int
	params, grads []float32
	blocks        []scheme.Range
}

func (c *exactComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	loss := exactGrad(c.rank, c.calls, c.params, c.grads)
	c.calls++
	if ready != nil {
		for i := len(c.blocks) - 1; i >= 0; i-- {
			ready(c.blocks[i].Lo, c.blocks[i].Hi)
		}
	}
	return loss, nil
}

// realRun runs sc through node.Rank with the trainer's algorithm choice
// and returns every rank's weights and the center's (nil for none).
func realRun(t *testing.T, sc scheme.Config, m Model, iters int) ([][]float32, []float32) {
	t.Helper()
	sc.Layout = m.Layout()
	sc.MaxIter = iters
	n := sc.Layout.N
	init := exactInit(n)
	schemes, err := scheme.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	var cen *center.Local
	uses, nc := sc.UsesCenter()
	if uses {
		pol := center.FCFS
		switch sc.Name {
		case "easgd-rr":
			pol = center.RoundRobin
		case "hogwild-easgd":
			pol = center.Hogwild
		}
		cen, err = center.NewLocal(center.Config{Workers: nc, Weights: init, Policy: pol, Update: centerSGD, MaxIter: iters})
		if err != nil {
			t.Fatal(err)
		}
	}
	upd := momentum(len(schemes), n)
	eps := transport.NewInproc(len(schemes))
	ranks := make([]*node.Rank, len(schemes))
	for r := range ranks {
		params, grads := append([]float32(nil), init...), make([]float32, n)
		if sc.Name == "hogwild" && r > 0 {
			params = ranks[0].Params
		}
		rk := &node.Rank{Scheme: schemes[r], Ep: eps[r], Params: params, Grads: grads, CenterID: r, Timeout: 10 * time.Second,
			Algo: func(a scheme.Algo) collective.Algorithm {
				switch a {
				case scheme.AlgoTree:
					return collective.Tree
				case scheme.AlgoRing:
					return collective.Ring
				}
				return collective.Auto
			}}
		rk.Update = func(iter int) { upd(r, iter, params, grads) }
		if uses {
			rk.Center = cen
			if sc.Name == "hybrid" {
				rk.CenterID = r / (sc.Workers / sc.Groups)
			}
		}
		if r < sc.Workers {
			rk.Computer = &exactComputer{rank: r, params: params, grads: grads, blocks: sc.Layout.Blocks}
		}
		ranks[r] = rk
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := node.RunAll(ctx, ranks)
	for _, ep := range eps {
		ep.Close()
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s: real rank %d: %v", sc.Name, r, err)
		}
	}
	out := make([][]float32, len(ranks))
	for r, rk := range ranks {
		out[r] = rk.Params
	}
	if cen != nil {
		return out, cen.Weights()
	}
	return out, nil
}

// exactRun runs sc through the simulator with Exact.
func exactRun(t *testing.T, cfg Config) *Weights {
	t.Helper()
	n := cfg.Model.Params()
	cfg.Exact = &Exact{Init: exactInit(n), Grad: exactGrad, Update: momentum(cfg.Scheme.Ranks(), n), CenterUpdate: centerSGD}
	res := run(t, cfg)
	if res.Weights == nil {
		t.Fatalf("%s: exact run returned no weights", cfg.Scheme.Name)
	}
	return res.Weights
}

// sameBits reports the first element where a and b differ in their bits.
func sameBits(a, b []float32) (int, bool) {
	i := tensor.FirstDiff(a, b)
	return i, i == len(a)
}

type exactCase struct {
	sc scheme.Config
	// replicas: every worker ends with the same weights.
	replicas bool
}

func (c exactCase) String() string {
	s := fmt.Sprintf("%s/%d", c.sc.Name, c.sc.Workers)
	if c.sc.Variant > 0 {
		s += fmt.Sprintf("/v%d", c.sc.Variant)
	}
	if c.sc.Pack {
		s += "/pack"
	}
	if c.sc.Groups > 0 {
		s += fmt.Sprintf("/g%d", c.sc.Groups)
	}
	if c.sc.Fragments > 0 {
		s += fmt.Sprintf("/P%d/tau%d/bits%d", c.sc.Fragments, c.sc.Overlap, c.sc.OuterBits)
	}
	return s
}

// exactCases are the runs whose result does not depend on how the ranks
// interleave in real time: every synchronous scheme, and asynchronous
// ones where the center's order is fixed (one worker; easgd-rr's turns;
// hybrid with one group, whose root is the center's only worker; a
// weed-out round of two, whose sum a+b is b+a in floating point too).
func exactCases() []exactCase {
	var cs []exactCase
	for _, name := range []string{"sync-ps", "sync-tree", "sync-ring", "overlap"} {
		for p := 1; p <= 4; p++ {
			cs = append(cs, exactCase{sc: scheme.Config{Name: name, Workers: p, Pack: p%2 == 0}, replicas: true})
		}
	}
	for v := 1; v <= 3; v++ {
		for _, p := range []int{1, 2, 3, 4} {
			cs = append(cs, exactCase{sc: scheme.Config{Name: "sync-easgd", Workers: p, Variant: v, Alpha: 0.2}})
		}
	}
	for _, tc := range []scheme.Config{
		{Name: "easgd-rr", Workers: 1, Alpha: 0.3},
		{Name: "easgd-rr", Workers: 2, Alpha: 0.3},
		{Name: "easgd-rr", Workers: 3, Alpha: 0.3},
		{Name: "easgd-rr", Workers: 1, Alpha: 0.3, Interval: 2},
		{Name: "seasgd", Workers: 1, Alpha: 0.3},
		{Name: "seasgd", Workers: 1, Alpha: 0.3, Interval: 2},
		{Name: "async", Workers: 1, Interval: 2},
		{Name: "ssp", Workers: 1, Interval: 1},
		{Name: "easgd", Workers: 1, Alpha: 0.25},
		{Name: "measgd", Workers: 1, Alpha: 0.25},
		{Name: "hogwild-easgd", Workers: 1, Alpha: 0.25},
		{Name: "hogwild", Workers: 1},
		{Name: "weedout", Workers: 2},
		{Name: "hybrid", Workers: 4, Groups: 1, Alpha: 0.2, Interval: 2},
	} {
		cs = append(cs, exactCase{sc: tc})
	}
	for p := 1; p <= 3; p++ {
		cs = append(cs,
			exactCase{sc: scheme.Config{Name: "local-sgd", Workers: p, Interval: 2, Pack: p == 2}, replicas: true},
			exactCase{sc: scheme.Config{Name: "diloco", Workers: p, Interval: 2, Alpha: 0.7, OuterMomentum: 0.9, Pack: p == 2}, replicas: true})
	}
	for p := 1; p <= 4; p++ {
		cs = append(cs,
			exactCase{sc: scheme.Config{Name: "streaming-diloco", Workers: p, Interval: 3, Fragments: 3, Overlap: 0, Alpha: 0.7, OuterMomentum: 0.9, Pack: p == 2}, replicas: true},
			exactCase{sc: scheme.Config{Name: "streaming-diloco", Workers: p, Interval: 4, Fragments: 2, Overlap: 1, Mix: 0.5, OuterBits: 4, Alpha: 0.7, OuterMomentum: 0.9}, replicas: true},
			exactCase{sc: scheme.Config{Name: "streaming-diloco", Workers: p, Interval: 3, Fragments: 3, Overlap: 0, OuterBits: 8 << (p % 2), Alpha: 0.7, OuterMomentum: 0.9}, replicas: true})
	}
	return cs
}

// TestDiLoCoAlgorithm1: diloco's weights, through real ranks, are those
// of DiLoCo's Algorithm 1 (Douillard et al. 2023) computed here directly
// in float64 from the same gradients and inner solver: H inner steps per
// worker from the global weights θ, the mean pseudo-gradient Δ = θ − θ_i,
// and θ ← θ − lr·(Δ + μ·b) with b = μ·b + Δ (Nesterov, μ = 0.9); a last
// outer step for a run that ends between two.
func TestDiLoCoAlgorithm1(t *testing.T) {
	const workers, h, iters, lr, mu = 2, 3, 8, 0.7, 0.9
	sc := scheme.Config{Name: "diloco", Workers: workers, Interval: h, Alpha: lr, OuterMomentum: mu}
	got, _ := realRun(t, sc, exactModel, iters)
	n := exactModel.Params()
	theta := make([]float64, n)
	for i, v := range exactInit(n) {
		theta[i] = float64(v)
	}
	b := make([]float64, n)
	upd := momentum(workers, n)
	local := make([][]float32, workers)
	for r := range local {
		local[r] = exactInit(n)
	}
	grads := make([]float32, n)
	outer := func() {
		delta := make([]float64, n)
		for r := range local {
			for i := range delta {
				delta[i] += (theta[i] - float64(local[r][i])) / workers
			}
		}
		for i := range theta {
			b[i] = mu*b[i] + delta[i]
			theta[i] -= lr * (delta[i] + mu*b[i])
		}
		for r := range local {
			for i := range theta {
				local[r][i] = float32(theta[i])
			}
		}
	}
	for it := range iters {
		for r := range local {
			exactGrad(r, it, local[r], grads)
			upd(r, it, local[r], grads)
		}
		if (it+1)%h == 0 {
			outer()
		}
	}
	if iters%h != 0 {
		outer()
	}
	moved := false
	for r := range got {
		for i := range theta {
			if d := math.Abs(float64(got[r][i]) - theta[i]); d > 1e-5*(1+math.Abs(theta[i])) {
				t.Fatalf("rank %d, weight %d: %v, Algorithm 1 gives %v", r, i, got[r][i], theta[i])
			}
			moved = moved || float64(exactInit(n)[i]) != theta[i]
		}
	}
	if !moved {
		t.Fatal("the weights never moved: the comparison proves nothing")
	}
}

// TestExactMatchesNode: for every case, the simulator's weights on every
// rank, and the center's, are bitwise those of real ranks.
func TestExactMatchesNode(t *testing.T) {
	const iters = 5
	init := exactInit(exactModel.Params())
	for _, tc := range exactCases() {
		t.Run(tc.String(), func(t *testing.T) {
			want, wantCenter := realRun(t, tc.sc, exactModel, iters)
			got := exactRun(t, Config{Scheme: tc.sc, Model: exactModel, Network: Presets["qdr-ib"], Iters: iters})
			if len(got.Params) != len(want) {
				t.Fatalf("%d ranks' weights, want %d", len(got.Params), len(want))
			}
			for r := range want {
				if i, ok := sameBits(got.Params[r], want[r]); !ok {
					t.Errorf("rank %d: simulated weights differ from node's at %d:\n sim  %v\n node %v", r, i, got.Params[r], want[r])
				}
			}
			if i, ok := sameBits(got.Center, wantCenter); !ok {
				t.Errorf("center differs at %d:\n sim  %v\n node %v", i, got.Center, wantCenter)
			}
			// The comparison can fail: the weights moved.
			if _, same := sameBits(got.Params[0], init); same {
				t.Error("worker 0's weights never moved")
			}
			if tc.replicas {
				for r := 1; r < len(got.Params); r++ {
					if i, ok := sameBits(got.Params[r], got.Params[0]); !ok {
						t.Errorf("rank %d's replica differs from rank 0's at %d", r, i)
					}
				}
			}
		})
	}
}

// TestExactKeepsTime: carrying the data changes no time: a run with
// Exact measures what the same run without it does, for every scheme.
func TestExactKeepsTime(t *testing.T) {
	for _, name := range scheme.Names() {
		for _, w := range []int{1, 4} {
			if name == "seq" && w != 1 {
				continue
			}
			sc := scheme.Config{Name: name, Workers: w, Interval: 2, Staleness: 1, Alpha: 0.1, Variant: 1 + w%3, Groups: min(w, 2)}
			cfg := Config{Scheme: sc, Model: exactModel, Network: Presets["10gbe"], Iters: 6,
				Straggle: &Straggler{Rank: -1, Prob: 0.3, Delay: 2 * time.Millisecond}, Seed: 3}
			plain := run(t, cfg)
			n := exactModel.Params()
			cfg.Exact = &Exact{Init: exactInit(n), Grad: exactGrad, Update: momentum(sc.Ranks(), n), CenterUpdate: centerSGD}
			ex := run(t, cfg)
			if ex.Weights == nil || len(ex.Weights.Params) != sc.Ranks() {
				t.Fatalf("%s/%d: weights %+v", name, w, ex.Weights)
			}
			ex.Weights = nil
			if ex != plain {
				t.Errorf("%s/%d: exact run %+v, plain %+v", name, w, ex, plain)
			}
		}
	}
}

// TestExactSyncIndependentOfTiming: a synchronous scheme's weights do not
// depend on the network or on stragglers; nor do ssp's with staleness 0,
// which is BSP.
func TestExactSyncIndependentOfTiming(t *testing.T) {
	for _, name := range []string{"sync-ps", "sync-ring", "overlap", "sync-easgd", "ssp"} {
		sc := scheme.Config{Name: name, Workers: 3, Variant: 3, Alpha: 0.2}
		a := exactRun(t, Config{Scheme: sc, Model: exactModel, Network: Presets["fdr-ib"], Iters: 4})
		b := exactRun(t, Config{Scheme: sc, Model: exactModel, Network: Presets["10gbe"], Iters: 4,
			Straggle: &Straggler{Rank: 1, Delay: 5 * time.Millisecond}})
		for r := range a.Params {
			if i, ok := sameBits(a.Params[r], b.Params[r]); !ok {
				t.Errorf("%s: rank %d's weights depend on the timing (element %d)", name, r, i)
			}
		}
	}
}

// TestNoBuffersWithoutExact: without Exact no rank holds a buffer and the
// result carries no weights.
func TestNoBuffersWithoutExact(t *testing.T) {
	for _, name := range []string{"sync-ps", "sync-ring", "easgd", "weedout", "sync-easgd"} {
		sm, err := newSim(Config{Scheme: scheme.Config{Name: name, Workers: 4, Alpha: 0.1, Variant: 1}, Model: exactModel, Iters: 3})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sm.run()
		if err != nil {
			t.Fatal(err)
		}
		if res.Weights != nil || sm.ex != nil {
			t.Errorf("%s: weights %+v without Exact", name, res.Weights)
		}
		for _, d := range sm.drivers {
			for b, buf := range d.bufs {
				if buf != nil {
					t.Errorf("%s: rank %d holds %v without Exact", name, d.rank, scheme.Buffer(b))
				}
			}
		}
	}
}

func TestExactErrors(t *testing.T) {
	n := exactModel.Params()
	good := func() *Exact {
		return &Exact{Init: exactInit(n), Grad: exactGrad, Update: momentum(65, n), CenterUpdate: centerSGD}
	}
	tests := []struct {
		name    string
		workers int
		scheme  string
		mod     func(*Exact)
		want    string
	}{
		{"too many ranks", MaxExactRanks, "sync-ps", func(*Exact) {}, "at most 64 ranks"},
		{"short init", 2, "sync-tree", func(e *Exact) { e.Init = e.Init[1:] }, "initial weights"},
		{"no grad", 2, "sync-tree", func(e *Exact) { e.Grad = nil }, "Grad and Update"},
		{"no update", 2, "sync-tree", func(e *Exact) { e.Update = nil }, "Grad and Update"},
		{"weedout without center update", 2, "weedout", func(e *Exact) { e.CenterUpdate = nil }, "CenterUpdate"},
	}
	for _, tc := range tests {
		e := good()
		tc.mod(e)
		_, err := Run(Config{Scheme: scheme.Config{Name: tc.scheme, Workers: tc.workers}, Model: exactModel, Exact: e})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	// The limit itself is allowed.
	if _, err := Run(Config{Scheme: scheme.Config{Name: "sync-tree", Workers: MaxExactRanks}, Model: exactModel, Iters: 2, Exact: good()}); err != nil {
		t.Errorf("%d ranks: %v", MaxExactRanks, err)
	}
}

// scriptRank is a hand-written scheme rank: it issues start on Start and
// finishes once it has seen want answers (ComputeDone or Done).
type scriptRank struct {
	start []scheme.Action
	want  int
	seen  int
}

func (s *scriptRank) Step(ev scheme.Event) []scheme.Action {
	if ev.Kind == scheme.Start {
		return s.start
	}
	if ev.Kind == scheme.ComputeDone || ev.Kind == scheme.Done {
		s.seen++
	}
	if s.seen == s.want {
		return []scheme.Action{{Op: scheme.Finish}}
	}
	return nil
}

// TestExactSendSnapshot: a send carries the data as it was when it
// started, though the compute issued right after it overwrites the
// buffer long before the message arrives.
func TestExactSendSnapshot(t *testing.T) {
	n := exactModel.Params()
	sm, err := newSim(Config{Scheme: scheme.Config{Name: "sync-tree", Workers: 2}, Model: exactModel,
		Network: Network{Alpha: 1, Beta: 1e-3}, Iters: 1,
		Exact: &Exact{Init: exactInit(n), Grad: exactGrad, Update: momentum(2, n)}})
	if err != nil {
		t.Fatal(err)
	}
	all := func(b scheme.Buffer) scheme.Range { return scheme.Range{Buf: b, Hi: n} }
	sm.drivers[0].sch = &scriptRank{want: 2, start: []scheme.Action{
		{Op: scheme.Copy, R: all(scheme.Grads), Src: all(scheme.Params)},
		{Op: scheme.Send, ID: 1, R: all(scheme.Grads), Peer: 1, Tag: 5},
		{Op: scheme.Compute},
	}}
	sm.drivers[1].sch = &scriptRank{want: 1, start: []scheme.Action{{Op: scheme.Recv, ID: 1, R: all(scheme.Aux), Peer: 0, Tag: 5}}}
	if _, err := sm.run(); err != nil && !strings.Contains(err.Error(), "warm-up") {
		t.Fatal(err)
	}
	got := sm.drivers[1].bufs[scheme.Aux]
	if i, ok := sameBits(got, exactInit(n)); !ok {
		t.Errorf("received %v (differs at %d), want the weights copied before the send %v", got, i, exactInit(n))
	}
	if _, ok := sameBits(sm.drivers[0].bufs[scheme.Grads], exactInit(n)); ok {
		t.Error("the compute did not overwrite the sent buffer: the test proves nothing")
	}
}
