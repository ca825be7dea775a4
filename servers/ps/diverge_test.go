package ps

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/node"
)

// divergingComputer gives fixed gradients, and NaN from call nanAt on
// (nanAt < 0: never): a worker whose training has diverged.
type divergingComputer struct {
	grads []float32
	calls int
	nanAt int
}

func (c *divergingComputer) Compute(ctx context.Context, _ func(lo, hi int)) (float64, error) {
	for i := range c.grads {
		c.grads[i] = 0.01 * float32(i%3-1)
		if c.nanAt >= 0 && c.calls >= c.nanAt {
			c.grads[i] = float32(math.NaN())
		}
	}
	c.calls++
	return 1, nil
}

// TestDivergingWorkerOverTCP: three ssp workers (real scheme ranks, each
// with its own connection to a parameter server) and worker 2 diverges
// at its third iteration. The center refuses its push, its run ends with
// an error naming it, the server's log names it, and workers 0 and 1
// train on to the end, with finite center weights, although ssp would
// otherwise wait for worker 2 forever.
func TestDivergingWorkerOverTCP(t *testing.T) {
	const n, workers, iters = 7, 3, 12
	log := &logged{}
	l, err := center.NewLocal(center.Config{Workers: workers, Weights: weights(n, 0), Log: log.log})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, l, ServerConfig{Timeout: 5 * time.Second})
	sc := scheme.Config{Name: "ssp", Workers: workers, MaxIter: iters, Staleness: 1, Interval: 1,
		Layout: scheme.Layout{N: n, Blocks: []scheme.Range{{Lo: 0, Hi: n}}}}
	ranks, err := scheme.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		cl := dial(t, srv.Addr(), ClientConfig{Timeout: 5 * time.Second})
		params, grads := weights(n, 0), make([]float32, n)
		nanAt := -1
		if w == 2 {
			nanAt = 2
		}
		rk := &node.Rank{Scheme: ranks[w], Params: params, Grads: grads, Center: cl, CenterID: w,
			Computer: &divergingComputer{grads: grads, nanAt: nanAt},
			Update: func(int) {
				for i := range params {
					params[i] -= 0.1 * grads[i]
				}
			}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = rk.Run(ctx)
			cl.Close() // as the worker's process exits
		}()
	}
	wg.Wait()
	want := "center refused worker 2's update: non-finite value NaN"
	if errs[2] == nil || !strings.Contains(errs[2].Error(), want) {
		t.Fatalf("worker 2: %v, want an error with %q", errs[2], want)
	}
	t.Logf("worker 2: %v", errs[2])
	for w := range 2 {
		if errs[w] != nil {
			t.Fatalf("worker %d did not train on: %v", w, errs[w])
		}
	}
	if c := l.Clocks(); c[0] != iters || c[1] != iters {
		t.Errorf("clocks %v, want workers 0 and 1 at %d", c, iters)
	}
	for i, v := range l.Weights() {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("center weight %d is %v", i, v)
		}
	}
	found := false
	for _, e := range log.all() {
		found = found || strings.Contains(e, want)
	}
	if !found {
		t.Errorf("server log %q does not name worker 2's refused update", log.all())
	}
}
