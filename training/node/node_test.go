package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/protocol/scheme"
)

// fakeComputer writes rank+1 into every gradient and reports each block.
type fakeComputer struct {
	grads  []float32
	blocks [][2]int
	value  float32
	fail   int // fail on this call (1-based); 0: never
	calls  int
}

func (c *fakeComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	c.calls++
	if c.calls == c.fail {
		return 0, errors.New("injected failure")
	}
	for i := len(c.blocks) - 1; i >= 0; i-- {
		b := c.blocks[i]
		for j := b[0]; j < b[1]; j++ {
			c.grads[j] = c.value
		}
		if ready != nil {
			ready(b[0], b[1])
		}
	}
	return float64(c.value), nil
}

func group(t *testing.T, name string, workers, iters int, failRank int) ([]*Rank, []error) {
	t.Helper()
	const n = 10
	blocks := [][2]int{{0, 6}, {6, 8}, {8, 10}}
	layout := scheme.Layout{N: n}
	for _, b := range blocks {
		layout.Blocks = append(layout.Blocks, scheme.Range{Lo: b[0], Hi: b[1]})
	}
	cfg := scheme.Config{Name: name, Workers: workers, MaxIter: iters, Pack: true, Layout: layout}
	schemes, err := scheme.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eps := transport.NewInproc(len(schemes))
	ranks := make([]*Rank, len(schemes))
	for r := range ranks {
		params, grads := make([]float32, n), make([]float32, n)
		rk := &Rank{Scheme: schemes[r], Ep: eps[r], Params: params, Grads: grads, Timeout: 5 * time.Second}
		rk.Update = func(int) {
			for i := range params {
				params[i] -= grads[i]
			}
		}
		if r < workers {
			c := &fakeComputer{grads: grads, blocks: blocks, value: float32(r + 1)}
			if r == failRank {
				c.fail = 2
			}
			rk.Computer = c
		}
		ranks[r] = rk
	}
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for r, rk := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = rk.Run(context.Background())
			if errs[r] != nil {
				eps[r].Close() // as the trainer does: a failed rank leaves the group
			}
		}()
	}
	wg.Wait()
	return ranks, errs
}

func TestSchemesAverage(t *testing.T) {
	for _, name := range []string{"sync-tree", "sync-ring", "sync-ps", "overlap"} {
		t.Run(name, func(t *testing.T) {
			ranks, errs := group(t, name, 3, 4, -1)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			// Mean gradient (1+2+3)/3 = 2 per iteration, 4 iterations.
			for r, rk := range ranks {
				for i, v := range rk.Params {
					if v != -8 {
						t.Fatalf("rank %d param %d = %v, want -8", r, i, v)
					}
				}
			}
			if ranks[0].Stats.Iters != 4 {
				t.Fatalf("rank 0 counted %d iterations", ranks[0].Stats.Iters)
			}
		})
	}
}

// A worker that fails makes every rank stop with an error, and none hangs.
func TestFailureStopsEveryRank(t *testing.T) {
	for _, name := range []string{"sync-tree", "sync-ps", "overlap"} {
		t.Run(name, func(t *testing.T) {
			done := make(chan []error)
			go func() {
				_, errs := group(t, name, 3, 10, 1)
				done <- errs
			}()
			select {
			case errs := <-done:
				if errs[1] == nil || !strings.Contains(errs[1].Error(), "injected") {
					t.Fatalf("failing rank returned %v", errs[1])
				}
				for r, err := range errs {
					if err == nil {
						t.Errorf("rank %d finished without error after rank 1 failed", r)
					}
				}
			case <-time.After(20 * time.Second):
				t.Fatal("ranks hung after a worker failed")
			}
		})
	}
}
