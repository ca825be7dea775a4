package sim

import (
	"math"
	"testing"
	"time"

	"dsgd/protocol/scheme"
)

// TestStreamingP1IsDiLoCo: streaming-diloco with one fragment, no
// overlap and float32 pseudo-gradients is diloco bit for bit, through
// real ranks (node.Rank over the in-process transport) and through the
// simulator, whether the run ends on an outer step or between two.
func TestStreamingP1IsDiLoCo(t *testing.T) {
	tests := []struct {
		workers, h, iters int
		pack              bool
	}{
		{2, 2, 6, false},
		{3, 3, 8, false},
		{4, 2, 7, true},
		{4, 3, 9, false},
	}
	for _, tc := range tests {
		d := scheme.Config{Name: "diloco", Workers: tc.workers, Interval: tc.h, Alpha: 0.7, OuterMomentum: 0.9, Pack: tc.pack}
		s := d
		s.Name, s.Fragments, s.Overlap, s.OuterBits, s.Mix = "streaming-diloco", 1, 0, 32, 0.5
		want, _ := realRun(t, d, exactModel, tc.iters)
		got, _ := realRun(t, s, exactModel, tc.iters)
		simmed := exactRun(t, Config{Scheme: s, Model: exactModel, Network: Presets["10gbe"], Iters: tc.iters})
		for r := range want {
			if i, ok := sameBits(got[r], want[r]); !ok {
				t.Errorf("%d workers, H=%d, %d iterations: rank %d differs from diloco at %d: %v, want %v", tc.workers, tc.h, tc.iters, r, i, got[r][i], want[r][i])
			}
			if i, ok := sameBits(simmed.Params[r], want[r]); !ok {
				t.Errorf("%d workers, H=%d: simulated rank %d differs from diloco at %d", tc.workers, tc.h, r, i)
			}
		}
		if _, same := sameBits(want[0], exactInit(exactModel.Params())); same {
			t.Fatal("the weights never moved: the comparison proves nothing")
		}
	}
}

// TestStreamingDiLoCoAlgorithm: streaming-diloco's weights, through real
// ranks, are those of Streaming DiLoCo (Douillard et al. 2025) computed
// here in float64 from the same gradients and inner solver: fragment p
// of exactModel's blocks (7, 12, 5 weights) synchronises after the
// iterations it with (it+1) mod H = (p+1)·H/P mod H; its pseudo-gradient
// Δ_p = θ_p − θ_p,i averaged over the workers takes an outer Nesterov
// step on θ_p and p's own momentum; the result lands τ steps later as
// θ_p,i ← m·θ_p,i + (1−m)·θ_p (τ > 0) or θ_p,i ← θ_p (τ = 0); at the end
// the fragment in flight lands and every fragment that moved since it
// last equalled θ_p synchronises once more, with replacement.
func TestStreamingDiLoCoAlgorithm(t *testing.T) {
	const lr, mu = 0.7, 0.9
	tests := []struct {
		name                    string
		workers, p, h, tau, its int
		mix                     float64
		bounds                  []int
	}{
		{"P3 H3 tau0", 2, 3, 3, 0, 8, 0.5, []int{0, 7, 19, 24}},
		// One iteration: fragment 0's sync, then the two others' at the
		// end, one after the other.
		{"1 worker, 1 iteration", 1, 3, 3, 0, 1, 0.5, []int{0, 7, 19, 24}},
		{"P3 H6 tau1", 3, 3, 6, 1, 13, 0.5, []int{0, 7, 19, 24}},
		{"P2 H4 tau1 mix0.3", 2, 2, 4, 1, 10, 0.3, []int{0, 7, 24}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := scheme.Config{Name: "streaming-diloco", Workers: tc.workers, Interval: tc.h, Fragments: tc.p, Overlap: tc.tau,
				Mix: float32(tc.mix), Alpha: lr, OuterMomentum: mu}
			got, _ := realRun(t, sc, exactModel, tc.its)
			n := exactModel.Params()
			theta := make([]float64, n)
			for i, v := range exactInit(n) {
				theta[i] = float64(v)
			}
			b := make([]float64, n)
			upd := momentum(tc.workers, n)
			local := make([][]float32, tc.workers)
			for r := range local {
				local[r] = exactInit(n)
			}
			grads := make([]float32, n)
			frag := func(p int) (int, int) { return tc.bounds[p], tc.bounds[p+1] }
			outer := func(p int) {
				lo, hi := frag(p)
				for i := lo; i < hi; i++ {
					delta := 0.0
					for r := range local {
						delta += (theta[i] - float64(local[r][i])) / float64(tc.workers)
					}
					b[i] = mu*b[i] + delta
					theta[i] -= lr * (delta + mu*b[i])
				}
			}
			landFrag := func(p int, replace bool) {
				lo, hi := frag(p)
				for r := range local {
					for i := lo; i < hi; i++ {
						if replace {
							local[r][i] = float32(theta[i])
						} else {
							local[r][i] = float32(tc.mix*float64(local[r][i]) + (1-tc.mix)*theta[i])
						}
					}
				}
			}
			dirty := make([]bool, tc.p)
			inflight, landAt := -1, 0
			for it := range tc.its {
				for r := range local {
					exactGrad(r, it, local[r], grads)
					upd(r, it, local[r], grads)
				}
				for p := range dirty {
					dirty[p] = true
				}
				if inflight >= 0 && it == landAt {
					landFrag(inflight, false)
					inflight = -1
				}
				for p := range tc.p {
					if (it+1)%tc.h == (p+1)*tc.h/tc.p%tc.h {
						outer(p) // the pseudo-gradient of the weights now
						if tc.tau == 0 {
							landFrag(p, true)
							dirty[p] = false
						} else {
							inflight, landAt = p, it+tc.tau
						}
					}
				}
			}
			if inflight >= 0 {
				landFrag(inflight, tc.tau == 0)
			}
			for p := range dirty {
				if dirty[p] {
					outer(p)
					landFrag(p, true)
				}
			}
			moved := false
			for r := range got {
				for i := range theta {
					if d := math.Abs(float64(got[r][i]) - theta[i]); d > 1e-5*(1+math.Abs(theta[i])) {
						t.Fatalf("rank %d, weight %d: %v, the algorithm gives %v", r, i, got[r][i], theta[i])
					}
					moved = moved || float64(exactInit(n)[i]) != theta[i]
				}
			}
			if !moved {
				t.Fatal("the weights never moved: the comparison proves nothing")
			}
		})
	}
}

// TestStreamingTraffic: in virtual time, streaming-diloco's fragments
// move diloco's bytes at 32 bits (but for the last syncs of a run) and
// an eighth of them at 4 bits, and an
// overlap of one inner step hides the exchange behind compute, so less
// communication is exposed than with none.
func TestStreamingTraffic(t *testing.T) {
	m := Layered(4<<20, 20*time.Millisecond, 8)
	net := Presets["10gbe"]
	res := func(sc scheme.Config) Result {
		sc.Workers, sc.Interval, sc.Alpha, sc.OuterMomentum = 4, 8, 0.7, 0.9
		return run(t, Config{Scheme: sc, Model: m, Network: net, Iters: 32})
	}
	dl := res(scheme.Config{Name: "diloco"})
	s32 := res(scheme.Config{Name: "streaming-diloco", Fragments: 4})
	s4 := res(scheme.Config{Name: "streaming-diloco", Fragments: 4, OuterBits: 4})
	s4o := res(scheme.Config{Name: "streaming-diloco", Fragments: 4, OuterBits: 4, Overlap: 1, Mix: 0.5})
	t.Logf("bytes/iter: diloco %d, P=4 32-bit %d, 4-bit %d; exposed comm: 4-bit tau 0 %v, tau 1 %v", dl.Bytes, s32.Bytes, s4.Bytes, s4.Comm, s4o.Comm)
	// 32 iterations are 4 cycles: diloco syncs the model 4 times, P = 4
	// fragments 16 times a quarter of it, and 3 more at the end (those
	// that stepped since their last sync), so the replicas end equal.
	if r := float64(s32.Bytes) / float64(dl.Bytes); math.Abs(r-19.0/16) > 0.01 {
		t.Errorf("P=4 at 32 bits moves %d bytes per iteration, diloco %d: want 19/16 of it", s32.Bytes, dl.Bytes)
	}
	if r := float64(s32.Bytes) / float64(s4.Bytes); r < 7.5 || r > 8.01 {
		t.Errorf("4 bits moves %d bytes per iteration, 32 bits %d: want about an eighth", s4.Bytes, s32.Bytes)
	}
	// With an overlap the last fragment in flight lands mixed, so all 4
	// sync at the end.
	if r := float64(s4o.Bytes) / float64(s4.Bytes); math.Abs(r-20.0/19) > 0.01 {
		t.Errorf("the overlap moves %d bytes, without %d: want 20/19 of it", s4o.Bytes, s4.Bytes)
	}
	if !(s4o.Comm < s4.Comm/2) {
		t.Errorf("an overlap of one step exposes %v of communication per iteration, none %v: want it mostly hidden", s4o.Comm, s4.Comm)
	}
}

// TestStreamingQuantisedMean: with lr 1 and no momentum one outer step
// makes the global weights the workers' mean; through the quantised ring
// (3 and 4 workers, 16, 8 and 4 bits) every replica gets the same bits,
// and the mean is the float64 one within what requantising each hop's
// partial sum allows: the sum of every message's error bound, over the
// workers.
func TestStreamingQuantisedMean(t *testing.T) {
	n := exactModel.Params()
	init := exactInit(n)
	off := func(rank, i int) float32 {
		return 0.3*float32(rank+1)*float32(i%5-2) - 0.01*float32(i*(rank+2)%7) + 0.001*float32(rank)
	}
	for _, workers := range []int{3, 4} {
		for _, bits := range []int{16, 8, 4} {
			sc := scheme.Config{Name: "streaming-diloco", Workers: workers, Interval: 1, Fragments: 1, OuterBits: bits, Alpha: 1, OuterMomentum: 0, MaxIter: 1}
			ex := &Exact{Init: init,
				Grad: func(rank, call int, params, grads []float32) float64 { return 0 },
				Update: func(rank, iter int, params, grads []float32) {
					for i := range params {
						params[i] = init[i] + off(rank, i)
					}
				}}
			res := run(t, Config{Scheme: sc, Model: exactModel, Network: Presets["10gbe"], Iters: 1, Exact: ex})
			got := res.Weights.Params
			// The pseudo-gradients are Δ_r = -off(r, ·); a message carries
			// at most the sum of all |Δ|.
			var most float64
			for i := range n {
				s := 0.0
				for r := range workers {
					s += math.Abs(float64(off(r, i)))
				}
				most = max(most, s)
			}
			// Each of a chunk's n-1 partial sums and its total is rounded
			// once, each by at most the format's bound for values up to
			// most (4 bits: a third of the value, or most/128): n
			// roundings of the sum, so one of the mean.
			per := map[int]float64{16: most / 256, 8: most / 254, 4: most/3 + most/128}[bits]
			bound := per * 1.0001
			worst := 0.0
			for i := range n {
				mean := 0.0
				for r := range workers {
					mean += float64(init[i]+off(r, i)) / float64(workers)
				}
				e := math.Abs(float64(got[0][i]) - mean)
				if e > bound {
					t.Errorf("%d workers, %d bits: weight %d is %v, the mean %v (error %g > %g)", workers, bits, i, got[0][i], mean, e, bound)
				}
				worst = max(worst, e)
			}
			if worst == 0 {
				t.Errorf("%d workers, %d bits: the mean is exact: nothing was quantised", workers, bits)
			}
			for r := 1; r < workers; r++ {
				if i, ok := sameBits(got[r], got[0]); !ok {
					t.Errorf("%d workers, %d bits: rank %d differs from rank 0 at %d", workers, bits, r, i)
				}
			}
		}
	}
}
