package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// stuckComputer is a straggler slower than any round: its compute never
// ends before its context does. It tells the rounds' deadlines when it
// starts one, and counts the computes cut short.
type stuckComputer struct {
	fixedComputer
	deadlines *deadlines
	aborted   atomic.Int32
}

func (c *stuckComputer) Compute(ctx context.Context, _ func(lo, hi int)) (float64, error) {
	c.deadlines.straggling()
	<-ctx.Done()
	c.aborted.Add(1)
	return 0, ctx.Err()
}

// TestWeedoutRestartsStraggler: SpeeDO 3.4 drops a straggler's stale
// update and restarts it from fresh weights, aborting its compute. A
// worker whose compute never ends on its own, against rounds that close
// at their deadline once the fast workers have handed in (the test
// closes them on that event, not on the wall clock: deadlines), is
// restarted every round: the run ends in a few rounds, no fast worker's
// gradient is dropped, and every worker ends on the center's weights.
func TestWeedoutRestartsStraggler(t *testing.T) {
	const workers, iters = 3, 5
	update := func(w, g []float32, _ int) {
		for i := range w {
			w[i] -= lr * g[i]
		}
	}
	cfg := center.Config{Workers: workers, Weights: w0, Update: update, Deadline: 50 * time.Millisecond}
	dl := newDeadlines(workers - 1)
	dl.hooks(&cfg)
	cen, err := center.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slow := &stuckComputer{deadlines: dl}
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
