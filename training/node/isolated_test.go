package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// failingComputer is a fixedComputer that fails on call fail (1-based).
type failingComputer struct {
	fixedComputer
	fail int
}

func (c *failingComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	if c.calls+1 == c.fail {
		return 0, errors.New("injected failure")
	}
	return c.fixedComputer.Compute(ctx, ready)
}

// TestRunAllIsolated: under ssp with staleness 0, worker 1 fails at its
// third iteration. Isolated, it leaves the center, so the others are not
// held back by it, and they run every iteration; with RunAll the failure
// cancels them.
func TestRunAllIsolated(t *testing.T) {
	const iters = 12
	run := func(isolated bool) ([]*Rank, []error) {
		sc := scheme.Config{Name: "ssp", Workers: 3, MaxIter: iters, Staleness: 0}
		sc.Layout = scheme.Layout{N: dim, Blocks: []scheme.Range{{Lo: 0, Hi: dim}}}
		sc.Pack = true
		schemes, err := scheme.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		cen := newCenter(t, 3, center.FCFS)
		ranks := make([]*Rank, len(schemes))
		for r := range ranks {
			params, grads := append([]float32(nil), w0...), make([]float32, dim)
			rk := &Rank{Scheme: schemes[r], Params: params, Grads: grads, Center: cen, CenterID: r, Timeout: 5 * time.Second}
			rk.Update = func(int) {
				for i := range params {
					params[i] -= lr * grads[i]
				}
			}
			c := &failingComputer{fixedComputer: fixedComputer{grads: grads, rank: r}}
			if r == 1 {
				c.fail = 3
			}
			rk.Computer = c
			ranks[r] = rk
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var isolate func(int, error) bool
		if isolated {
			isolate = func(i int, err error) bool { return i != 0 }
		}
		return ranks, RunAllIsolated(ctx, ranks, isolate)
	}

	ranks, errs := run(true)
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "injected failure") {
		t.Fatalf("worker 1: %v, want its injected failure", errs[1])
	}
	for _, r := range []int{0, 2} {
		if errs[r] != nil {
			t.Fatalf("worker %d failed beside the isolated worker 1: %v", r, errs[r])
		}
		if got := ranks[r].Stats.Iters; got != iters {
			t.Errorf("worker %d ran %d iterations, want %d", r, got, iters)
		}
	}

	ranks, errs = run(false)
	if errs[1] == nil {
		t.Fatal("worker 1 did not fail")
	}
	if errs[0] == nil && errs[2] == nil && ranks[0].Stats.Iters == iters && ranks[2].Stats.Iters == iters {
		t.Fatal("without isolation the others ran on; the test shows nothing")
	}
}
