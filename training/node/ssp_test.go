package node

import (
	"context"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// seeingComputer records the weights each of its computes ran on. When
// slow (a watch), it finishes its first compute only once every other
// worker waits in the center's Clock: they have gone as far as the clock
// lets them.
type seeingComputer struct {
	fixedComputer
	params []float32
	slow   *watch
	seen   [][]float32
}

func (c *seeingComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	c.seen = append(c.seen, append([]float32(nil), c.params...))
	if c.calls == 0 && c.slow != nil {
		if err := c.slow.waitOthers(ctx, c.rank, false, scheme.Clock); err != nil {
			return 0, err
		}
	}
	return c.fixedComputer.Compute(ctx, ready)
}

// TestSSPZeroIsBSP: with staleness 0, SSP is bulk-synchronous (SpeeDO
// 3.3, Petuum): a worker reads the center only after the clock admits it,
// so iteration k of every worker runs on w0 − η Σ_{j<k} Σ_r g(r, j), even
// when one worker is slow through its first compute. Pulling before the
// clock wait let the fast worker's second iteration run on weights
// without the slow worker's first update. The slow worker waits for the
// fast one to wait on it (an event), not for a time.
func TestSSPZeroIsBSP(t *testing.T) {
	const workers, iters = 2, 4
	cen, err := center.NewLocal(center.Config{Workers: workers, Weights: w0, ClockedReads: true})
	if err != nil {
		t.Fatal(err)
	}
	wc := newWatch(cen, workers)
	sc := scheme.Config{Name: "ssp", Workers: workers, MaxIter: iters, Interval: 1, Staleness: 0,
		Layout: scheme.Layout{N: dim, Blocks: []scheme.Range{{Lo: 0, Hi: dim}}}}
	schemes, err := scheme.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	eps := transport.NewInproc(workers)
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
	}()
	ranks := make([]*Rank, workers)
	comps := make([]*seeingComputer, workers)
	for r := range ranks {
		params, grads := append([]float32(nil), w0...), make([]float32, dim)
		comps[r] = &seeingComputer{fixedComputer: fixedComputer{grads: grads, rank: r}, params: params}
		if r == 1 {
			comps[r].slow = wc
		}
		ranks[r] = &Rank{Scheme: schemes[r], Ep: eps[r], Params: params, Grads: grads, Center: wc, CenterID: r, Computer: comps[r], Timeout: 5 * time.Second,
			Update: func(int) {
				for i := range params {
					params[i] -= lr * grads[i]
				}
			}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for r, err := range RunAll(ctx, ranks) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	bsp := vec(w0)
	for k := 0; k < iters; k++ {
		for r, c := range comps {
			if len(c.seen) != iters {
				t.Fatalf("worker %d computed %d times, want %d", r, len(c.seen), iters)
			}
			checkNear(t, "weights of an iteration", c.seen[k], bsp)
		}
		for r := 0; r < workers; r++ {
			for i, g := range grad(r, k) {
				bsp[i] -= lr * g
			}
		}
	}
	checkNear(t, "center", cen.Weights(), bsp)
}
