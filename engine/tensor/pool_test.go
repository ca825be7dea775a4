package tensor

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// span is one chunk a loop ran.
type span struct{ lo, hi, worker int }

// record runs a loop through run and returns its chunks sorted by worker.
func record(run func(fn func(lo, hi, w int))) []span {
	var mu sync.Mutex
	var got []span
	run(func(lo, hi, w int) {
		mu.Lock()
		got = append(got, span{lo, hi, w})
		mu.Unlock()
	})
	slices.SortFunc(got, func(a, b span) int { return a.worker - b.worker })
	return got
}

func TestPoolForSplitsLikeParallelFor(t *testing.T) {
	for _, c := range []struct{ n, threads, pool int }{
		{0, 2, 2}, {1, 4, 4}, {10, 1, 4}, {10, 3, 3}, {7, 7, 7}, {5, 9, 9},
		{1000, 2, 2}, {11, 4, 4}, {11, 4, 2}, {3, 2, 1}, {64, 8, 8},
	} {
		pool := NewPool(c.pool)
		eff := min(c.threads, c.pool)
		want := record(func(fn func(lo, hi, w int)) { ParallelFor(c.n, eff, fn) })
		got := record(func(fn func(lo, hi, w int)) { pool.For(c.n, c.threads, fn) })
		if !slices.Equal(got, want) {
			t.Errorf("n=%d threads=%d pool=%d: chunks %v, ParallelFor gives %v", c.n, c.threads, c.pool, got, want)
		}
		// Chunks are contiguous, in worker order, cover [0, n) once, and
		// differ in size by at most one.
		next := 0
		for i, s := range got {
			if s.worker != i || s.lo != next || s.hi <= s.lo {
				t.Errorf("n=%d threads=%d pool=%d: chunk %d is %v after %d", c.n, c.threads, c.pool, i, s, next)
			}
			if d := (s.hi - s.lo) - (got[0].hi - got[0].lo); d > 0 || d < -1 {
				t.Errorf("n=%d threads=%d pool=%d: unbalanced chunks %v", c.n, c.threads, c.pool, got)
			}
			next = s.hi
		}
		if next != c.n {
			t.Errorf("n=%d threads=%d pool=%d: chunks end at %d", c.n, c.threads, c.pool, next)
		}
		pool.Close()
	}
}

func TestPoolNilIsParallelFor(t *testing.T) {
	var p *Pool
	if p.Threads() != 0 {
		t.Fatalf("nil pool Threads = %d", p.Threads())
	}
	p.Close() // must not panic
	want := record(func(fn func(lo, hi, w int)) { ParallelFor(10, 3, fn) })
	got := record(func(fn func(lo, hi, w int)) { p.For(10, 3, fn) })
	if !slices.Equal(got, want) {
		t.Fatalf("nil pool chunks %v, want %v", got, want)
	}
}

func TestPoolClosedRunsInline(t *testing.T) {
	p := NewPool(3)
	p.Close()
	p.Close() // idempotent
	caller := goid()
	got := record(func(fn func(lo, hi, w int)) {
		p.For(9, 3, func(lo, hi, w int) {
			if goid() != caller {
				t.Errorf("chunk %d ran off the calling goroutine after Close", w)
			}
			fn(lo, hi, w)
		})
	})
	want := []span{{0, 3, 0}, {3, 6, 1}, {6, 9, 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("closed pool chunks %v, want %v", got, want)
	}
}

// goid returns an identifier of the calling goroutine: the address of a
// per-goroutine marker is not available, so it uses the stack trace header.
func goid() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	for i, c := range buf {
		if c == '[' {
			return string(buf[:i])
		}
	}
	return string(buf)
}

func TestPoolNestedAndConcurrent(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	const outer, inner = 6, 10
	var mu sync.Mutex
	seen := map[[2]int]int{}
	// Nested: a chunk's own For finds the workers busy and runs inline.
	p.For(outer, 2, func(lo, hi, _ int) {
		for o := lo; o < hi; o++ {
			p.For(inner, 2, func(ilo, ihi, _ int) {
				mu.Lock()
				for i := ilo; i < ihi; i++ {
					seen[[2]int{o, i}]++
				}
				mu.Unlock()
			})
		}
	})
	// Concurrent: several goroutines share the pool.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				p.For(inner, 2, func(ilo, ihi, _ int) {
					mu.Lock()
					for i := ilo; i < ihi; i++ {
						seen[[2]int{outer + g, i}]++
					}
					mu.Unlock()
				})
			}
		}()
	}
	wg.Wait()
	for o := 0; o < outer+4; o++ {
		want := 1
		if o >= outer {
			want = 50
		}
		for i := 0; i < inner; i++ {
			if got := seen[[2]int{o, i}]; got != want {
				t.Fatalf("(%d, %d) visited %d times, want %d", o, i, got, want)
			}
		}
	}
}

// summer is a loop body bound once as a method value, as layers do.
type summer struct {
	x    []float32
	part []float32
	fn   func(lo, hi, w int)
}

func (s *summer) sum(lo, hi, w int) {
	var acc float32
	for _, v := range s.x[lo:hi] {
		acc += v
	}
	s.part[w] = acc
}

func TestPoolForDoesNotAllocate(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	s := &summer{x: make([]float32, 1000), part: make([]float32, 2)}
	for i := range s.x {
		s.x[i] = 1
	}
	s.fn = s.sum
	allocs := testing.AllocsPerRun(200, func() { p.For(len(s.x), 2, s.fn) })
	if allocs != 0 {
		t.Fatalf("Pool.For allocates %v times per call", allocs)
	}
	if s.part[0] != 500 || s.part[1] != 500 {
		t.Fatalf("partial sums %v, want [500 500]", s.part)
	}
}

// waitGoroutines waits up to a few seconds for the goroutine count to drop
// to at most n, running the collector so cleanups run.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines remain, want at most %d", runtime.NumGoroutine(), n)
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// settledGoroutines waits until goroutines left by earlier tests (pools
// dropped there and closed by their cleanups) have exited: the count holds
// still across several GCs.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for i, still := 0, 0; i < 400 && still < 5; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			still++
		} else {
			n, still = m, 0
		}
	}
	return n
}

func TestPoolWorkersStop(t *testing.T) {
	before := settledGoroutines()
	p := NewPool(4)
	if got := runtime.NumGoroutine(); got < before+3 {
		t.Fatalf("NewPool(4) started %d goroutines, want 3", got-before)
	}
	p.Close()
	waitGoroutines(t, before)

	// A dropped pool is closed by its cleanup.
	func() {
		q := NewPool(4)
		q.For(8, 4, func(lo, hi, w int) {})
	}()
	waitGoroutines(t, before)
}

func BenchmarkLoopStart(b *testing.B) {
	s := &summer{x: make([]float32, 2048), part: make([]float32, 2)}
	s.fn = s.sum
	b.Run("ParallelFor", func(b *testing.B) {
		for b.Loop() {
			ParallelFor(len(s.x), 2, s.fn)
		}
	})
	b.Run("Pool", func(b *testing.B) {
		p := NewPool(2)
		defer p.Close()
		for b.Loop() {
			p.For(len(s.x), 2, s.fn)
		}
	})
}

// spinWork burns about n float adds on the calling goroutine.
func spinWork(x []float32, n int) float32 {
	var acc float32
	for i := 0; i < n; i++ {
		acc += x[i&(len(x)-1)]
	}
	return acc
}

// BenchmarkLoopInNet times loops separated by serial work, as a net's
// layers are: the workers have gone idle when each loop starts.
func BenchmarkLoopInNet(b *testing.B) {
	s := &summer{x: make([]float32, 1<<16), part: make([]float32, 2)}
	s.fn = s.sum
	for _, gap := range []int{0, 20000, 200000} {
		b.Run(fmt.Sprintf("ParallelFor/gap%d", gap), func(b *testing.B) {
			for b.Loop() {
				sink += spinWork(s.x, gap)
				ParallelFor(len(s.x), 2, s.fn)
			}
		})
		b.Run(fmt.Sprintf("Pool/gap%d", gap), func(b *testing.B) {
			p := NewPool(2)
			defer p.Close()
			for b.Loop() {
				sink += spinWork(s.x, gap)
				p.For(len(s.x), 2, s.fn)
			}
		})
		b.Run(fmt.Sprintf("Serial/gap%d", gap), func(b *testing.B) {
			for b.Loop() {
				sink += spinWork(s.x, gap)
				s.sum(0, len(s.x), 0)
			}
		})
	}
}

var sink float32

func ExamplePool() {
	p := NewPool(2) // one worker goroutine plus the caller
	defer p.Close()
	x := make([]float32, 1000)
	for i := range x {
		x[i] = 1
	}
	partial := make([]float32, p.Threads())
	p.For(len(x), 2, func(lo, hi, worker int) {
		for _, v := range x[lo:hi] {
			partial[worker] += v
		}
	})
	fmt.Println(partial)
	// Output: [500 500]
}

// TestPoolWaitPolicies runs the split and reuse checks under each wait
// policy: polling changes when the workers pick up chunks, never which.
func TestPoolWaitPolicies(t *testing.T) {
	defer SetWaitPolicy(CurrentWaitPolicy())
	for _, p := range []WaitPolicy{WaitActive, WaitPassive, WaitAuto} {
		SetWaitPolicy(p)
		pool := NewPool(3)
		for _, n := range []int{0, 1, 2, 3, 10, 1000} {
			want := record(func(fn func(lo, hi, w int)) { ParallelFor(n, 3, fn) })
			for rep := 0; rep < 3; rep++ {
				got := record(func(fn func(lo, hi, w int)) { pool.For(n, 3, fn) })
				if !slices.Equal(got, want) {
					t.Errorf("%v: n=%d: chunks %v, want %v", p, n, got, want)
				}
				// A gap longer than the polling window makes the next
				// loop find the workers parked.
				if rep == 1 {
					time.Sleep(2 * spinWindow)
				}
			}
		}
		pool.Close()
	}
}

func TestParseWaitPolicy(t *testing.T) {
	for _, c := range []struct {
		in   string
		want WaitPolicy
		err  bool
	}{
		{"auto", WaitAuto, false}, {"", WaitAuto, false}, {"ACTIVE", WaitActive, false},
		{" passive ", WaitPassive, false}, {"spin", WaitAuto, true}, {"1", WaitAuto, true},
	} {
		got, err := ParseWaitPolicy(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseWaitPolicy(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
		if err == nil {
			if back, _ := ParseWaitPolicy(got.String()); back != got {
				t.Errorf("%v does not read back: %v", got, back)
			}
		}
	}
}

func TestWaitPolicyNote(t *testing.T) {
	defer SetWaitPolicy(CurrentWaitPolicy())
	for p, want := range map[WaitPolicy]string{WaitActive: "policy active", WaitPassive: "policy passive", WaitAuto: "policy auto: "} {
		SetWaitPolicy(p)
		if got := WaitPolicyNote(); !strings.Contains(got, want) {
			t.Errorf("%v: note %q lacks %q", p, got, want)
		}
	}
}

// TestPanicReachesCaller: a panic in any chunk of a parallel loop, the
// caller's or another goroutine's, is raised on the caller, where it can
// be recovered, after every other chunk has ended; the pool serves the
// next loop on all its threads.
func TestPanicReachesCaller(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	for _, tc := range []struct {
		name string
		loop func(fn func(lo, hi, w int))
	}{
		{"Pool.For", func(fn func(lo, hi, w int)) { p.For(8, 4, fn) }},
		{"ParallelFor", func(fn func(lo, hi, w int)) { ParallelFor(8, 4, fn) }},
	} {
		for bad := range 4 { // worker 3 is the caller's chunk
			var ended atomic.Int32
			got := func() (v any) {
				defer func() { v = recover() }()
				tc.loop(func(lo, hi, w int) {
					if w == bad {
						panic(fmt.Sprintf("chunk %d", w))
					}
					time.Sleep(2 * time.Millisecond)
					ended.Add(1)
				})
				return nil
			}()
			if want := fmt.Sprintf("chunk %d", bad); got != want {
				t.Errorf("%s, chunk %d panics: recovered %v, want %q", tc.name, bad, got, want)
			}
			if n := ended.Load(); n != 3 {
				t.Errorf("%s, chunk %d panics: %d other chunks had ended when the panic arrived, want 3", tc.name, bad, n)
			}
		}
	}
	var seen [4]atomic.Bool
	p.For(4, 4, func(lo, hi, w int) { seen[w].Store(true) })
	for w := range seen {
		if !seen[w].Load() {
			t.Errorf("after the panics, chunk %d of a loop did not run", w)
		}
	}
}
