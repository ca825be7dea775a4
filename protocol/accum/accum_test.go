package accum

import (
	"context"
	"sync"
	"testing"
)

// TestSumAcrossIterations: every worker gathers the sum of all workers'
// blocks, iteration after iteration, with workers an iteration apart.
func TestSumAcrossIterations(t *testing.T) {
	const workers, n, iters = 4, 6, 5
	s, err := New(workers, n)
	if err != nil {
		t.Fatal(err)
	}
	blocks := [][2]int{{4, 6}, {0, 4}} // backward order
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := make([]float32, n)
			for it := 0; it < iters; it++ {
				for i := range g {
					g[i] = float32((w + 1) * (it + 1) * (i + 1))
				}
				for _, b := range blocks {
					if err := s.Add(ctx, it, b[0], g[b[0]:b[1]]); err != nil {
						errs <- err
						return
					}
				}
				for _, b := range blocks {
					if err := s.Gather(ctx, it, b[0], g[b[0]:b[1]]); err != nil {
						errs <- err
						return
					}
				}
				for i, v := range g {
					if want := float32(10 * (it + 1) * (i + 1)); v != want {
						t.Errorf("worker %d iteration %d: sum[%d] = %v, want %v", w, it, i, v, want)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := New(0, 3); err == nil {
		t.Error("New with no workers")
	}
	s, _ := New(1, 4)
	if err := s.Add(ctx, 0, 3, make([]float32, 2)); err == nil {
		t.Error("a block past the end was accepted")
	}
	if err := s.Add(ctx, 0, 0, make([]float32, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, 0, 0, make([]float32, 2)); err == nil {
		t.Error("a block added more times than there are workers")
	}
	if err := s.Add(ctx, 2, 0, make([]float32, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, 0, 0, make([]float32, 3)); err == nil {
		t.Error("an old iteration was accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Gather(cctx, 1, 0, make([]float32, 2)); err != context.Canceled {
		t.Errorf("gather of an incomplete block with a cancelled context: %v", err)
	}
}
