package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// sleepyComputer takes d per compute unless its context ends first, and
// counts the computes cut short.
type sleepyComputer struct {
	fixedComputer
	d       time.Duration
	aborted atomic.Int32
}

func (c *sleepyComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	select {
	case <-time.After(c.d):
	case <-ctx.Done():
		c.aborted.Add(1)
		return 0, ctx.Err()
	}
	return c.fixedComputer.Compute(ctx, ready)
}

// TestWeedoutRestartsStraggler: SpeeDO 3.4 drops a straggler's stale
// update and restarts it from fresh weights, aborting its compute. A
// worker whose compute takes 2 s, against rounds that close 50 ms after
// the fast workers hand in, is restarted every round: the run takes a few
// rounds' time, not the straggler's, no fast worker's gradient is
// dropped, and every worker ends on the center's weights.
func TestWeedoutRestartsStraggler(t *testing.T) {
	const workers, iters = 3, 5
	update := func(w, g []float32, _ int) {
		for i := range w {
			w[i] -= lr * g[i]
		}
	}
	cen, err := center.NewLocal(center.Config{Workers: workers, Weights: w0, Update: update, Deadline: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	slow := &sleepyComputer{d: 2 * time.Second}
	start := time.Now()
	ranks := runRanksWith(t, scheme.Config{Name: "weedout", Workers: workers, MaxIter: iters}, cen, 0, func(r int, grads []float32) Computer {
		if r == 2 {
			slow.fixedComputer = fixedComputer{grads: grads, rank: r}
			return slow
		}
		return &fixedComputer{grads: grads, rank: r}
	})
	took := time.Since(start)
	st := cen.Stats()
	t.Logf("%v; center %+v; straggler aborted %d computes", took, st, slow.aborted.Load())
	if took > time.Second {
		t.Errorf("the run took %v: the straggler's compute was not aborted", took)
	}
	if slow.aborted.Load() == 0 {
		t.Error("the straggler's compute was never aborted")
	}
	if st.Rounds != iters || st.Dropped != iters {
		t.Errorf("%d rounds, %d gradients dropped; want %d and %d (the straggler's only)", st.Rounds, st.Dropped, iters, iters)
	}
	// The fast workers' gradients made every round: the center moved by
	// their mean each time.
	want := vec(w0)
	for k := 0; k < iters; k++ {
		g0, g1 := grad(0, k), grad(1, k)
		for i := range want {
			want[i] -= lr * (g0[i] + g1[i]) / 2
		}
	}
	checkNear(t, "center", cen.Weights(), want)
	for _, rk := range ranks {
		checkNear(t, "worker weights", rk.Params, want)
	}
}
