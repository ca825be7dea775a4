package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ParallelFor splits [0, n) into at most threads contiguous chunks and runs
// fn(lo, hi, worker) on each, worker in [0, threads). It returns when every
// chunk is done. With threads <= 1 or n <= 1 it runs fn inline, so callers
// pay nothing for parallelism they did not ask for.
//
// ParallelFor starts a goroutine per extra chunk on every call; code that
// runs many short loops (a net's layers) should hold a Pool instead, which
// splits the work the same way.
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
	var pv panicked
	for w := 0; w < threads-1; w++ {
		lo, hi := Chunk(n, threads, w)
		wg.Add(1)
		go func(lo, hi, w int) {
			defer wg.Done()
			defer pv.catch()
			fn(lo, hi, w)
		}(lo, hi, w)
	}
	// The caller's goroutine takes the last chunk; if it panics, the
	// other chunks still end before the panic goes on.
	done := false
	defer func() {
		if !done {
			wg.Wait()
		}
	}()
	lo, hi := Chunk(n, threads, threads-1)
	fn(lo, hi, threads-1)
	done = true
	wg.Wait()
	pv.rethrow()
}

// panicked holds the first panic of a parallel loop's other goroutines,
// for the caller to raise again: a panic on a worker goroutine would
// otherwise end the process, where one on the caller's can be recovered
// (model.Net turns a layer's into an error naming the layer).
type panicked struct {
	mu  sync.Mutex
	val any
	set bool
}

// catch records a panic of the goroutine it is deferred in, if any (it
// must be the deferred call itself, for recover to see the panic).
func (p *panicked) catch() {
	if v := recover(); v != nil {
		p.record(v)
	}
}

// record keeps v if it is the loop's first panic.
func (p *panicked) record(v any) {
	p.mu.Lock()
	if !p.set {
		p.val, p.set = v, true
	}
	p.mu.Unlock()
}

// take returns the recorded panic, if any, and clears it.
func (p *panicked) take() (v any, set bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, set = p.val, p.set
	p.val, p.set = nil, false
	return v, set
}

// rethrow raises the recorded panic, if any, on the calling goroutine and
// clears it.
func (p *panicked) rethrow() {
	if v, set := p.take(); set {
		panic(v)
	}
}

// Chunk returns chunk w of [0, n) cut into threads contiguous chunks whose
// sizes differ by at most one, the larger ones first: how ParallelFor and
// Pool.For share out a loop, for callers that plan around the split.
func Chunk(n, threads, w int) (lo, hi int) {
	size, rem := n/threads, n%threads
	lo = w*size + min(w, rem)
	hi = lo + size
	if w < rem {
		hi++
	}
	return lo, hi
}

// Pool is a fixed set of worker goroutines that run the chunks of parallel
// loops, so that a loop costs a channel send and a WaitGroup signal per
// extra chunk instead of starting a goroutine and allocating. A pool of t
// threads has t−1 workers; the goroutine calling For runs the last chunk
// itself.
//
// For splits work exactly as ParallelFor does, chunk w always running with
// worker index w, so results that depend only on the chunking are the same
// with or without a pool. For does not allocate: the workers receive fn
// itself, so a method value bound once (l.forwardFn = l.forward) costs
// nothing per call.
//
// Lifetime: between loops the workers poll for the next one for up to
// 200 µs when the wait policy allows it (WaitPolicy: by default when no
// other process wants the cores), then park on channels and use no CPU;
// the caller likewise polls for the workers' chunks before it blocks.
// Close stops them; a Pool that becomes unreachable without Close is closed
// by a runtime cleanup, so holders that have no natural end (a net) may
// simply drop it. A nil *Pool is valid and behaves as ParallelFor.
//
// For may be called from several goroutines; calls that find the workers
// busy (a concurrent or nested For) run all their chunks in order on the
// calling goroutine, which gives the same results and never deadlocks.
type Pool struct {
	s *poolState
}

// poolState is what the workers share. It is separate from Pool so that
// the workers do not keep the Pool reachable and its cleanup can run.
type poolState struct {
	threads int
	// mu is held by the For whose chunks the workers are running, and by
	// close.
	mu     sync.Mutex
	closed bool            // guarded by mu
	tasks  []chan poolTask // one per worker; closed by close
	wg     sync.WaitGroup  // the chunks handed to workers and not yet done
	// left counts the chunks of the current For not yet done, for the
	// caller to poll before it blocks on wg.
	left atomic.Int32
	// pv is the first panic of the current For's workers, raised again
	// on its caller.
	pv panicked
}

// poolTask is one chunk for a worker.
type poolTask struct {
	fn     func(lo, hi, worker int)
	lo, hi int
	worker int
}

// NewPool returns a pool for loops split across threads goroutines (the
// caller plus threads−1 workers, started now). threads < 1 means 1: no
// workers, every loop runs inline.
func NewPool(threads int) *Pool {
	s := &poolState{threads: max(threads, 1)}
	s.tasks = make([]chan poolTask, s.threads-1)
	for i := range s.tasks {
		ch := make(chan poolTask, 1)
		s.tasks[i] = ch
		go s.work(ch)
	}
	p := &Pool{s: s}
	runtime.AddCleanup(p, (*poolState).close, s)
	return p
}

// work runs the tasks sent on ch until it is closed.
func (s *poolState) work(ch chan poolTask) {
	for {
		var t poolTask
		ok, got := false, false
		if spinAllowed() {
			start := time.Now()
		poll:
			for i := 1; ; i++ {
				select {
				case t, ok = <-ch:
					got = true
					break poll
				default:
				}
				runtime.Gosched()
				if i%32 == 0 && time.Since(start) > spinWindow {
					break
				}
			}
		}
		if !got {
			t, ok = <-ch
		}
		if !ok {
			return
		}
		s.run(t)
	}
}

// run runs one task, recording a panic for the For's caller (which raises
// it again) rather than ending the process, and counts the task done.
func (s *poolState) run(t poolTask) {
	defer func() {
		if v := recover(); v != nil {
			s.pv.record(v)
		}
		s.left.Add(-1)
		s.wg.Done()
	}()
	t.fn(t.lo, t.hi, t.worker)
}

// close stops the workers, once; later loops run inline.
func (s *poolState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, ch := range s.tasks {
		close(ch)
	}
}

// Threads is the number of goroutines the pool's loops use, at least 1; 0
// for a nil pool.
func (p *Pool) Threads() int {
	if p == nil {
		return 0
	}
	return p.s.threads
}

// Close stops the workers. Loops started after Close still run, inline on
// the caller's goroutine. Close is idempotent and safe to call on a nil
// pool.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.s.close()
}

// For splits [0, n) into min(threads, p.Threads(), n) contiguous chunks, as
// ParallelFor does, and runs fn(lo, hi, worker) on each, worker in
// [0, chunks); the calling goroutine runs the last chunk. It returns when
// every chunk is done. On a nil pool it is ParallelFor(n, threads, fn).
func (p *Pool) For(n, threads int, fn func(lo, hi, worker int)) {
	if p == nil {
		ParallelFor(n, threads, fn)
		return
	}
	s := p.s
	threads = min(threads, s.threads, n)
	if threads <= 1 {
		if n > 0 {
			fn(0, n, 0)
		}
		return
	}
	if !s.mu.TryLock() {
		s.serial(n, threads, fn)
		return
	}
	if s.closed {
		s.mu.Unlock()
		s.serial(n, threads, fn)
		return
	}
	s.wg.Add(threads - 1)
	s.left.Store(int32(threads - 1))
	for w := 0; w < threads-1; w++ {
		lo, hi := Chunk(n, threads, w)
		s.tasks[w] <- poolTask{fn: fn, lo: lo, hi: hi, worker: w}
	}
	// If the caller's own chunk panics, the workers' chunks still end and
	// the pool is released before the panic goes on.
	done := false
	defer func() {
		if !done {
			s.wg.Wait()
			s.pv.take() // a worker's panic is dropped: the caller's goes on
			s.mu.Unlock()
		}
	}()
	lo, hi := Chunk(n, threads, threads-1)
	fn(lo, hi, threads-1)
	done = true
	if s.left.Load() != 0 && spinAllowed() {
		start := time.Now()
		for i := 1; s.left.Load() != 0; i++ {
			runtime.Gosched()
			if i%32 == 0 && time.Since(start) > spinWindow {
				break
			}
		}
	}
	s.wg.Wait()
	v, failed := s.pv.take()
	s.mu.Unlock()
	if failed {
		panic(v)
	}
}

// serial runs the chunks of a For in order on the calling goroutine.
func (s *poolState) serial(n, threads int, fn func(lo, hi, worker int)) {
	for w := 0; w < threads; w++ {
		lo, hi := Chunk(n, threads, w)
		fn(lo, hi, w)
	}
}
