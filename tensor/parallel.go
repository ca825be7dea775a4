package tensor

import "sync"

// ParallelFor splits [0, n) into at most threads contiguous chunks and runs
// fn(lo, hi, worker) on each, worker in [0, threads). It returns when every
// chunk is done. With threads <= 1 or n <= 1 it runs fn inline, so callers
// pay nothing for parallelism they did not ask for.
func ParallelFor(n, threads int, fn func(lo, hi, worker int)) {
	if threads > n {
		threads = n
	}
	if threads <= 1 {
		if n > 0 {
			fn(0, n, 0)
		}
		return
	}
	var wg sync.WaitGroup
	chunk, rem := n/threads, n%threads
	lo := 0
	for w := 0; w < threads; w++ {
		hi := lo + chunk
		if w < rem {
			hi++
		}
		if w == threads-1 {
			fn(lo, hi, w) // the caller's goroutine takes the last chunk
			break
		}
		wg.Add(1)
		go func(lo, hi, w int) {
			defer wg.Done()
			fn(lo, hi, w)
		}(lo, hi, w)
		lo = hi
	}
	wg.Wait()
}
