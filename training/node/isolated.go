package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// RunAllIsolated is RunAll for ranks that do not depend on each other,
// the workers of an asynchronous scheme that meet only at a center: when
// rank i fails and isolate(i, err) says so, the failure stays with that
// rank. It leaves its center with the error, so that it no longer holds
// back the others (SSP's bound, round-robin turns, weed-out rounds), and
// the others run on. Any other failure cancels every rank, as RunAll.
// isolate is called on the failing rank's goroutine; nil isolates
// nothing. A failure after ctx ended is never isolated.
func RunAllIsolated(ctx context.Context, ranks []*Rank, isolate func(i int, err error) bool) []error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.Run(ctx)
			errs[i] = err
			if err == nil {
				return
			}
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) && isolate != nil && r.Center != nil && isolate(i, err) {
				if lerr := r.Center.Leave(ctx, r.CenterID, err); lerr != nil {
					errs[i] = fmt.Errorf("%w; leaving the center: %w", err, lerr)
					cancel()
				}
				return
			}
			cancel()
		}()
	}
	wg.Wait()
	return errs
}
