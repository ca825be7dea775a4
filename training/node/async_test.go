package node

import (
	"context"
	"math"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// The tests in this file drive real schemes (scheme.New) through real
// ranks against a center.Local, with gradients fixed in advance, and
// compare the weights with the papers' update rules evaluated by hand
// (in float64) on the same numbers.

const (
	dim = 4
	lr  = 0.1
	tol = 1e-6
)

var w0 = []float32{0.5, -1, 2, 0.25}

// grad is the gradient worker r computes in its k-th call: fixed, known
// numbers, different for every worker and call.
func grad(r, k int) []float64 {
	g := make([]float64, dim)
	for i := range g {
		g[i] = 0.1*float64(i+1)*float64(r+1) - 0.07*float64(k) + 0.03*float64(i*i) - 0.2
	}
	return g
}

// fixedComputer writes grad(rank, k) into Grads on its k-th call.
type fixedComputer struct {
	grads []float32
	rank  int
	calls int
}

func (c *fixedComputer) Compute(ctx context.Context, _ func(lo, hi int)) (float64, error) {
	for i, v := range grad(c.rank, c.calls) {
		c.grads[i] = float32(v)
	}
	c.calls++
	return 1, nil
}

// runRanks drives every rank of sc with a center (nil for none) and an
// in-process transport, updating with momentum SGD (v = μv − η·g; w += v;
// plain SGD w −= η·g when mu is 0), and returns the ranks.
func runRanks(t *testing.T, sc scheme.Config, cen center.Center, mu float32) []*Rank {
	t.Helper()
	return runRanksWith(t, sc, cen, mu, func(r int, grads []float32) Computer { return &fixedComputer{grads: grads, rank: r} })
}

// runRanksWith is runRanks with worker r's computer made by comp.
func runRanksWith(t *testing.T, sc scheme.Config, cen center.Center, mu float32, comp func(r int, grads []float32) Computer) []*Rank {
	t.Helper()
	sc.Layout = scheme.Layout{N: dim, Blocks: []scheme.Range{{Lo: 0, Hi: dim}}}
	sc.Pack = true
	schemes, err := scheme.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	eps := transport.NewInproc(len(schemes))
	ranks := make([]*Rank, len(schemes))
	for r := range ranks {
		params, grads, v := append([]float32(nil), w0...), make([]float32, dim), make([]float32, dim)
		rk := &Rank{Scheme: schemes[r], Ep: eps[r], Params: params, Grads: grads, Center: cen, CenterID: r, Timeout: 5 * time.Second}
		rk.Update = func(int) {
			for i := range params {
				v[i] = mu*v[i] - lr*grads[i]
				params[i] += v[i]
			}
		}
		if r < sc.Workers {
			rk.Computer = comp(r, grads)
		}
		ranks[r] = rk
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := RunAll(ctx, ranks)
	for _, ep := range eps {
		ep.Close()
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return ranks
}

func newCenter(t *testing.T, workers int, p center.Policy) *center.Local {
	t.Helper()
	l, err := center.NewLocal(center.Config{Workers: workers, Weights: w0, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func vec(w []float32) []float64 {
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = float64(v)
	}
	return out
}

func checkNear(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol {
			t.Fatalf("%s = %v, want %v (element %d off by %.3g)", what, got, want, i, math.Abs(float64(got[i])-want[i]))
		}
	}
}

// sgd returns w − η·Σ_k g(r, k) for k < iters: plain SGD.
func sgd(r, iters int) []float64 {
	w := vec(w0)
	for k := 0; k < iters; k++ {
		for i, g := range grad(r, k) {
			w[i] -= lr * g
		}
	}
	return w
}

// easgdStep applies SC17 Eq. 1 and 2 for one worker's exchange: with
// ρ = α/η,
//
//	x ← x − η(g + ρ(x − c))        (1)
//	c ← c + ηρ(x − c)              (2, one worker's term)
//
// both from the x and c before the step.
func easgdStep(x, c, g []float64, alpha float64) {
	rho := alpha / lr
	for i := range x {
		d := x[i] - c[i]
		x[i] -= lr * (g[i] + rho*d)
		c[i] += lr * rho * d
	}
}

func TestEASGDMatchesEq1And2(t *testing.T) {
	const iters, alpha = 4, 0.3
	for _, name := range []string{"easgd", "hogwild-easgd", "easgd-rr"} {
		t.Run(name, func(t *testing.T) {
			p := map[string]center.Policy{"easgd": center.FCFS, "hogwild-easgd": center.Hogwild, "easgd-rr": center.RoundRobin}[name]
			cen := newCenter(t, 1, p)
			ranks := runRanks(t, scheme.Config{Name: name, Workers: 1, MaxIter: iters, Alpha: alpha}, cen, 0)
			x, c := vec(w0), vec(w0)
			for k := 0; k < iters; k++ {
				easgdStep(x, c, grad(0, k), alpha)
			}
			checkNear(t, "worker weights", ranks[0].Params, x)
			checkNear(t, "center", cen.Weights(), c)
			// The test can fail: the elastic term moved the weights off
			// plain SGD's.
			if far(x, sgd(0, iters)) < 1e-3 {
				t.Fatal("EASGD's weights equal plain SGD's: alpha had no effect")
			}
		})
	}
}

func far(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestEASGDRoundRobinTwoWorkers: under the round-robin policy the
// exchanges go worker 0, worker 1, worker 0, … (SC17 Alg. 1), so two
// workers have a result fixed by Eq. 1–2 applied in that order.
func TestEASGDRoundRobinTwoWorkers(t *testing.T) {
	const iters, alpha = 3, 0.25
	for rep := 0; rep < 5; rep++ {
		cen := newCenter(t, 2, center.RoundRobin)
		ranks := runRanks(t, scheme.Config{Name: "easgd-rr", Workers: 2, MaxIter: iters, Alpha: alpha}, cen, 0)
		xs, c := [][]float64{vec(w0), vec(w0)}, vec(w0)
		for k := 0; k < iters; k++ {
			for r := range xs {
				easgdStep(xs[r], c, grad(r, k), alpha)
			}
		}
		for r := range xs {
			checkNear(t, "worker weights", ranks[r].Params, xs[r])
		}
		checkNear(t, "center", cen.Weights(), c)
	}
}

// TestEASGDZeroAlphaIsSGD: with ρ = 0 (α = 0) Eq. 1 is plain SGD and the
// center never moves.
func TestEASGDZeroAlphaIsSGD(t *testing.T) {
	const iters = 5
	cen := newCenter(t, 1, center.FCFS)
	ranks := runRanks(t, scheme.Config{Name: "easgd", Workers: 1, MaxIter: iters, Alpha: 0}, cen, 0)
	checkNear(t, "worker weights", ranks[0].Params, sgd(0, iters))
	checkNear(t, "center", cen.Weights(), vec(w0))
}

// TestMEASGDMatchesEq5And6: the worker's momentum rule (Eq. 5) and update
// with the elastic term (Eq. 6); the center follows Eq. 2.
func TestMEASGDMatchesEq5And6(t *testing.T) {
	const iters, alpha, mu = 4, 0.2, 0.9
	cen := newCenter(t, 1, center.FCFS)
	ranks := runRanks(t, scheme.Config{Name: "measgd", Workers: 1, MaxIter: iters, Alpha: alpha}, cen, mu)
	x, c, v := vec(w0), vec(w0), make([]float64, dim)
	rho := alpha / lr
	for k := 0; k < iters; k++ {
		g := grad(0, k)
		for i := range x {
			d := x[i] - c[i]
			v[i] = mu*v[i] - lr*g[i]      // (5)
			x[i] = x[i] + v[i] - lr*rho*d // (6)
			c[i] = c[i] + lr*rho*d        // (2)
		}
	}
	checkNear(t, "worker weights", ranks[0].Params, x)
	checkNear(t, "center", cen.Weights(), c)
}

// TestSEASGDMatchesEq5To7: ShmCaffe's SEASGD, one worker. Each iteration
// first exchanges with the global weights W_g and then takes the SGD step
// (Eq. 2) on the moved weights:
//
//	ΔW_x  = α(W'_x − W_g)    (5)
//	W''_x = W'_x − ΔW_x      (6)
//	W'_g  = W_g + ΔW_x       (7)
//
// where W'_x are the weights after the previous iteration's SGD step.
// These are Eq. 3–4 (W”_x = W'_x − α(W_x − W_g), W'_g = W_g + α(W_x −
// W_g)) with the local weights W_x in the elastic difference read after
// the gradient step, W_x := W'_x, instead of before it: the two
// formulations give the same numbers once that substitution is made,
// which the test checks before comparing both with the scheme.
func TestSEASGDMatchesEq5To7(t *testing.T) {
	const iters, alpha = 4, 0.2
	cen := newCenter(t, 1, center.FCFS)
	ranks := runRanks(t, scheme.Config{Name: "seasgd", Workers: 1, MaxIter: iters, Alpha: alpha}, cen, 0)

	// Eq. 5–7 followed by the SGD step.
	x, wg := vec(w0), vec(w0)
	// Eq. 2–4 with W_x := W'_x.
	x2, wg2 := vec(w0), vec(w0)
	for k := 0; k < iters; k++ {
		g := grad(0, k)
		for i := range x {
			dw := alpha * (x[i] - wg[i]) // (5)
			x[i] -= dw                   // (6)
			wg[i] += dw                  // (7)
			x[i] -= lr * g[i]            // (2) of the next iteration

			wx := x2[i]                         // W_x read after the gradient step
			wpx := x2[i]                        // W'_x
			x2[i] = wpx - alpha*(wx-wg2[i])     // (3)
			wg2[i] = wg2[i] + alpha*(wx-wg2[i]) // (4)
			x2[i] -= lr * g[i]                  // (2)
		}
	}
	if far(x, x2) > 1e-12 || far(wg, wg2) > 1e-12 {
		t.Fatalf("Eq. 5–7 %v %v and Eq. 2–4 %v %v differ", x, wg, x2, wg2)
	}
	checkNear(t, "worker weights", ranks[0].Params, x)
	checkNear(t, "global weights", cen.Weights(), wg)
	if far(wg, vec(w0)) < 1e-3 {
		t.Fatal("the global weights never moved")
	}
}

// phantom wraps a center and, after every push of worker 0, pushes extra
// into the center as a second worker would between worker 0's pull and
// its next push.
type phantom struct {
	center.Center
	extra []float32
}

func (p *phantom) Push(ctx context.Context, w int, delta []float32) error {
	if err := p.Center.Push(ctx, w, delta); err != nil {
		return err
	}
	return p.Center.Push(ctx, w, p.extra)
}

// TestAsyncDownpourMerge: SpeeDO's async SGD with interval S: the worker
// takes S local SGD steps, pushes the change of its weights since its
// last pull (Downpour's merge: c ← c + (x − x_pulled)), and continues from
// the center, which by then holds another worker's push too.
func TestAsyncDownpourMerge(t *testing.T) {
	for _, name := range []string{"async", "ssp"} {
		for _, S := range []int{1, 2, 3} {
			const iters = 5
			extra := []float32{0.01, -0.02, 0.03, 0.5}
			cen := newCenter(t, 1, center.FCFS)
			ranks := runRanks(t, scheme.Config{Name: name, Workers: 1, MaxIter: iters, Interval: S, Staleness: 1}, &phantom{Center: cen, extra: extra}, 0)
			c := vec(w0)
			x, pulled := vec(w0), vec(w0)
			for k := 0; k < iters; k++ {
				for i, g := range grad(0, k) {
					x[i] -= lr * g
				}
				if (k+1)%S == 0 {
					for i := range c {
						c[i] += x[i] - pulled[i] + float64(extra[i])
					}
					copy(x, c)
					copy(pulled, c)
				}
			}
			checkNear(t, name+" worker weights", ranks[0].Params, x)
			checkNear(t, name+" center", cen.Weights(), c)
		}
	}
}

// TestSyncEASGDVariants: sync-easgd's three implementations give the same
// weights, bit for bit, and they are Eq. 1–2 with both workers' terms
// from the same center: c ← c + ηρ Σ_i (x_i − c).
func TestSyncEASGDVariants(t *testing.T) {
	const iters, alpha, workers = 4, 0.3, 2
	xs := [][]float64{vec(w0), vec(w0)}
	c := vec(w0)
	for k := 0; k < iters; k++ {
		next := vec(w0)
		copy(next, c)
		for r := range xs {
			// Every worker's term uses the center before the step.
			cr := append([]float64(nil), c...)
			easgdStep(xs[r], cr, grad(r, k), alpha)
			for i := range next {
				next[i] += cr[i] - c[i]
			}
		}
		c = next
	}
	var first [][]float32
	for v := 1; v <= 3; v++ {
		ranks := runRanks(t, scheme.Config{Name: "sync-easgd", Workers: workers, MaxIter: iters, Alpha: alpha, Variant: v}, nil, 0)
		cen := ranks[0].Aux
		if v == 1 {
			cen = ranks[workers].Params
		}
		got := [][]float32{ranks[0].Params, ranks[1].Params, cen}
		for r := 0; r < workers; r++ {
			checkNear(t, "worker weights", got[r], xs[r])
		}
		checkNear(t, "center", cen, c)
		if first == nil {
			first = got
			continue
		}
		for j := range got {
			for i := range got[j] {
				if got[j][i] != first[j][i] {
					t.Fatalf("variant %d: buffer %d = %v, variant 1 has %v", v, j, got[j], first[j])
				}
			}
		}
	}
}
