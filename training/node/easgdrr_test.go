package node

import (
	"context"
	"sync/atomic"
	"testing"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// overlapComputer counts the computes running at once across workers. A
// compute ends only once every other worker computes too, waits in Pull
// for its turn, or has left (the watch): if a second compute can run
// meanwhile, it does, where a sleep would only give it a chance to.
type overlapComputer struct {
	fixedComputer
	running, most *atomic.Int32
	watch         *watch
}

func (c *overlapComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	c.watch.computing(c.rank, true)
	defer c.watch.computing(c.rank, false)
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	if err := c.watch.waitOthers(ctx, c.rank, true, scheme.Pull); err != nil {
		return 0, err
	}
	return c.fixedComputer.Compute(ctx, ready)
}

// TestEASGDRoundRobinOneAtATime: Original EASGD (SC17 Alg. 1) runs one
// worker at a time, also with τ > 1: a turn spans the worker's τ local
// steps and its exchange. With τ = 2 several workers computed inside one
// turn.
func TestEASGDRoundRobinOneAtATime(t *testing.T) {
	const workers, iters, tau, alpha = 3, 4, 2, 0.25
	cen, err := center.NewLocal(center.Config{Workers: workers, Weights: w0, Policy: center.RoundRobin, Interval: tau})
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int32
	wc := newWatch(cen, workers)
	sc := scheme.Config{Name: "easgd-rr", Workers: workers, MaxIter: iters, Alpha: alpha, Interval: tau}
	ranks := runRanksWith(t, sc, wc, 0, func(r int, grads []float32) Computer {
		return &overlapComputer{fixedComputer: fixedComputer{grads: grads, rank: r}, running: &running, most: &most, watch: wc}
	})
	if m := most.Load(); m != 1 {
		t.Fatalf("%d workers computed at once under round-robin, want 1", m)
	}
	// Alg. 1 in turn order: each worker takes τ steps, the last with the
	// elastic term against the center read when its turn began.
	xs := make([][]float64, workers)
	for r := range xs {
		xs[r] = vec(w0)
	}
	c := vec(w0)
	for k0 := 0; k0 < iters; k0 += tau {
		for r := range xs {
			for k := k0; k < k0+tau; k++ {
				if k == k0+tau-1 {
					easgdStep(xs[r], c, grad(r, k), alpha)
					continue
				}
				for i, g := range grad(r, k) {
					xs[r][i] -= lr * g
				}
			}
		}
	}
	for r := range xs {
		checkNear(t, "worker weights", ranks[r].Params, xs[r])
	}
	checkNear(t, "center", cen.Weights(), c)
}
