package centertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"dsgd/protocol/center"
)

// Config is what a case asks of the center it opens: a subset of
// center.Config that every implementation can be built from.
type Config struct {
	// Workers is the number of workers, ids 0..Workers-1.
	Workers int
	// Weights are the initial center weights.
	Weights []float32
	// Policy serialises elastic exchanges; Interval is round-robin's τ.
	Policy   center.Policy
	Interval int
	// Finish and MaxIter are the aligned-termination rule.
	Finish  center.Finish
	MaxIter int
	// Update applies a closed round's mean gradients (weed-out).
	Update func(weights, grads []float32, iter int)
}

// Features says which parts of the contract an implementation offers;
// the cases that need a missing one are skipped with the reason.
type Features struct {
	// Elastic: Elastic performs the exchange (smb.Center refuses it).
	Elastic bool
	// RoundRobin: the RoundRobin policy is honoured.
	RoundRobin bool
	// Rounds: Round and Closed run weed-out rounds.
	Rounds bool
	// Close, when set, closes the center's connection; every operation
	// after it must fail.
	Close func(c center.Center) error
}

// Opener opens a fresh center for one case, with cfg; it arranges its
// own cleanup through t.
type Opener func(t *testing.T, cfg Config) center.Center

// halve is the weed-out update of the cases: w -= g/2 (exact in float32
// for the values used).
func halve(w, g []float32, _ int) {
	for i := range w {
		w[i] -= 0.5 * g[i]
	}
}

// Cases names the suite's cases, in the order Run runs them.
var Cases = []string{
	"PullInitial", "PushAdds", "PushFromEveryWorker", "JoinCountsFromClock",
	"ArgumentErrors", "StalenessZeroIsBSP", "StalenessBound", "LeaveReleases",
	"Unbounded", "FinishMaster", "FinishFirst", "Elastic", "RoundRobinTurns",
	"RoundMean", "ClosedAfterRound", "ErrorsAfterClose", "ConcurrentPushes",
	"ConcurrentSSP",
}

// Run runs every case against the centers open makes.
func Run(t *testing.T, open Opener, f Features) {
	cases := map[string]func(*testing.T, Opener, Features){
		"PullInitial":         pullInitial,
		"PushAdds":            pushAdds,
		"PushFromEveryWorker": pushFromEveryWorker,
		"JoinCountsFromClock": joinCountsFromClock,
		"ArgumentErrors":      argumentErrors,
		"StalenessZeroIsBSP":  stalenessZero,
		"StalenessBound":      stalenessBound,
		"LeaveReleases":       leaveReleases,
		"Unbounded":           unbounded,
		"FinishMaster":        finishMaster,
		"FinishFirst":         finishFirst,
		"Elastic":             elastic,
		"RoundRobinTurns":     roundRobin,
		"RoundMean":           roundMean,
		"ClosedAfterRound":    closedAfterRound,
		"ErrorsAfterClose":    errorsAfterClose,
		"ConcurrentPushes":    concurrentPushes,
		"ConcurrentSSP":       concurrentSSP,
	}
	for _, name := range Cases {
		t.Run(name, func(t *testing.T) { cases[name](t, open, f) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func join(t *testing.T, c center.Center, ws ...int) {
	t.Helper()
	for _, w := range ws {
		if _, err := c.Join(ctx(t), w); err != nil {
			t.Fatalf("Join(%d): %v", w, err)
		}
	}
}

func pull(t *testing.T, c center.Center, w, n int) []float32 {
	t.Helper()
	dst := make([]float32, n)
	if err := c.Pull(ctx(t), w, dst); err != nil {
		t.Fatalf("Pull(%d): %v", w, err)
	}
	return dst
}

func want(t *testing.T, what string, got, exp []float32) {
	t.Helper()
	if !slices.Equal(got, exp) {
		t.Fatalf("%s = %v, want %v", what, got, exp)
	}
}

func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// blockFor is how long a call must stay blocked to count as waiting.
const blockFor = 150 * time.Millisecond

func mustBlock(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (%v), want it to wait", what, err)
	case <-time.After(blockFor):
	}
}

func mustReturn(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits", what)
	}
}

func clock(c center.Center, w, iter, s int) <-chan error {
	return async(func() error {
		stop, err := c.Clock(context.Background(), w, iter, s)
		if err == nil && stop {
			err = errors.New("stop without a finish rule")
		}
		return err
	})
}

// PullInitial: a pull returns the initial weights, for a worker and an
// observer alike.
func pullInitial(t *testing.T, open Opener, _ Features) {
	w0 := []float32{1, -2, 0.5, 3}
	c := open(t, Config{Workers: 2, Weights: w0})
	join(t, c, 0, 1)
	want(t, "worker 1's pull", pull(t, c, 1, 4), w0)
	want(t, "worker 0's pull", pull(t, c, 0, 4), w0)
	want(t, "an observer's pull", pull(t, c, center.Observer, 4), w0)
}

// PushAdds: a push adds its delta into the center (SpeeDO 3.2, ShmCaffe
// Eq. 7); pushes accumulate.
func pushAdds(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 1, Weights: []float32{1, 2, 3}})
	join(t, c, 0)
	for _, d := range [][]float32{{0.5, -1, 2}, {0.25, 0, -4}} {
		if err := c.Push(ctx(t), 0, d); err != nil {
			t.Fatal(err)
		}
	}
	want(t, "pull after two pushes", pull(t, c, 0, 3), []float32{1.75, 1, 1})
}

// PushFromEveryWorker: every worker's pushes reach the one center.
func pushFromEveryWorker(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 3, Weights: []float32{0, 0}})
	join(t, c, 0, 1, 2)
	for w := range 3 {
		if err := c.Push(ctx(t), w, []float32{float32(w + 1), 1}); err != nil {
			t.Fatal(err)
		}
	}
	for w := range 3 {
		want(t, fmt.Sprintf("worker %d's pull", w), pull(t, c, w, 2), []float32{6, 3})
	}
}

// JoinCountsFromClock: Join returns the control area's count, which
// Clock(iter) sets to iter+1; a restarted worker continues from it, and
// a clock never goes back.
func joinCountsFromClock(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 2, Weights: []float32{0}})
	for w := range 2 {
		if it, err := c.Join(ctx(t), w); err != nil || it != 0 {
			t.Fatalf("Join(%d) = %d, %v; want 0", w, it, err)
		}
	}
	if _, err := c.Clock(ctx(t), 1, 9, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clock(ctx(t), 1, 4, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(ctx(t), 1, errors.New("killed")); err != nil {
		t.Fatal(err)
	}
	if it, err := c.Join(ctx(t), 1); err != nil || it != 10 {
		t.Fatalf("rejoin = %d, %v; want 10", it, err)
	}
}

// ArgumentErrors: an unknown worker or a length other than N fails.
func argumentErrors(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 2, Weights: []float32{1, 2}})
	join(t, c, 0, 1)
	cx := ctx(t)
	checks := []struct {
		what string
		err  error
	}{
		{"push by worker 2 of 2", c.Push(cx, 2, []float32{1, 1})},
		{"push of 3 values", c.Push(cx, 0, []float32{1, 1, 1})},
		{"pull into 1 value", c.Pull(cx, 0, make([]float32, 1))},
	}
	for _, k := range checks {
		if k.err == nil {
			t.Errorf("%s succeeded, want an error", k.what)
		}
	}
	want(t, "the center after refused calls", pull(t, c, 0, 2), []float32{1, 2})
}

// StalenessZeroIsBSP: with s = 0 a worker's Clock waits until every live
// worker has finished the same iteration (bulk synchronous).
func stalenessZero(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 3, Weights: []float32{0}})
	join(t, c, 0, 1, 2)
	ch0 := clock(c, 0, 0, 0)
	mustBlock(t, ch0, "worker 0's clock 0 before the others")
	ch1 := clock(c, 1, 0, 0)
	mustBlock(t, ch1, "worker 1's clock 0 before worker 2's")
	mustBlock(t, ch0, "worker 0's clock 0 before worker 2's")
	mustReturn(t, clock(c, 2, 0, 0), "the last worker's clock 0")
	mustReturn(t, ch0, "worker 0 once all finished iteration 0")
	mustReturn(t, ch1, "worker 1 once all finished iteration 0")
}

// StalenessBound: with s = 1 a worker runs one iteration ahead of the
// slowest and waits at two (SSP).
func stalenessBound(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 2, Weights: []float32{0}})
	join(t, c, 0, 1)
	mustReturn(t, clock(c, 0, 0, 1), "worker 0 one ahead")
	ch := clock(c, 0, 1, 1)
	mustBlock(t, ch, "worker 0 two ahead")
	mustReturn(t, clock(c, 1, 0, 1), "worker 1")
	mustReturn(t, ch, "worker 0 after worker 1 caught up")
	ch = clock(c, 0, 2, 1)
	mustBlock(t, ch, "worker 0 two ahead again")
	mustReturn(t, clock(c, 1, 1, 1), "worker 1 again")
	mustReturn(t, ch, "worker 0 after worker 1 caught up again")
}

// LeaveReleases: a worker that left no longer holds back SSP.
func leaveReleases(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 2, Weights: []float32{0}})
	join(t, c, 0, 1)
	ch := clock(c, 0, 3, 0)
	mustBlock(t, ch, "worker 0 ahead of worker 1")
	if err := c.Leave(ctx(t), 1, nil); err != nil {
		t.Fatal(err)
	}
	mustReturn(t, ch, "worker 0 after worker 1 left")
	mustReturn(t, clock(c, 0, 9, 0), "worker 0 alone")
}

// Unbounded: with s < 0 no Clock waits.
func unbounded(t *testing.T, open Opener, _ Features) {
	c := open(t, Config{Workers: 2, Weights: []float32{0}})
	join(t, c, 0, 1)
	mustReturn(t, clock(c, 0, 50, -1), "worker 0 far ahead without a bound")
}

type clk struct {
	w, iter int
	stop    bool
}

func finishCase(t *testing.T, open Opener, f center.Finish, clocks []clk) {
	c := open(t, Config{Workers: 3, Weights: []float32{0}, Finish: f, MaxIter: 4})
	join(t, c, 0, 1, 2)
	for i, k := range clocks {
		stop, err := c.Clock(ctx(t), k.w, k.iter, -1)
		if err != nil {
			t.Fatal(err)
		}
		if stop != k.stop {
			t.Fatalf("step %d: worker %d finished iteration %d: stop %v, want %v", i, k.w, k.iter, stop, k.stop)
		}
	}
}

// FinishMaster: every worker stops once worker 0 has run MaxIter
// iterations (ShmCaffe III.E).
func finishMaster(t *testing.T, open Opener, _ Features) {
	finishCase(t, open, center.FinishMaster, []clk{{1, 3, false}, {2, 7, false}, {0, 2, false}, {0, 3, true}, {1, 4, true}})
}

// FinishFirst: every worker stops once any has run MaxIter iterations.
func finishFirst(t *testing.T, open Opener, _ Features) {
	finishCase(t, open, center.FinishFirst, []clk{{0, 1, false}, {2, 2, false}, {2, 3, true}, {0, 2, true}})
}

// Elastic: the center becomes c + α(x − c) and x becomes x − α(x − c)
// (SC17 Eq. 1–2).
func elastic(t *testing.T, open Opener, f Features) {
	if !f.Elastic {
		t.Skip("the implementation has no elastic exchange")
	}
	c := open(t, Config{Workers: 1, Weights: []float32{1, 2, 3, -4}})
	join(t, c, 0)
	x := []float32{3, 0, 3, 4}
	if err := c.Elastic(ctx(t), 0, x, 0.25); err != nil {
		t.Fatal(err)
	}
	want(t, "x after the exchange", x, []float32{2.5, 0.5, 3, 2})
	want(t, "the center after the exchange", pull(t, c, 0, 4), []float32{1.5, 1.5, 3, -2})
}

// RoundRobinTurns: SC17 Alg. 1's turns; worker 1's turn (its Pull) waits
// for worker 0's, which ends with its Clock; then worker 0 waits for
// worker 1's.
func roundRobin(t *testing.T, open Opener, f Features) {
	if !f.RoundRobin {
		t.Skip("the implementation has no round-robin policy")
	}
	c := open(t, Config{Workers: 2, Weights: []float32{0}, Policy: center.RoundRobin, Interval: 1})
	join(t, c, 0, 1)
	c1 := []float32{-1}
	done1 := async(func() error { return c.Pull(context.Background(), 1, c1) })
	mustBlock(t, done1, "worker 1's pull before worker 0's turn")
	x := []float32{4}
	if err := c.Elastic(ctx(t), 0, x, 0.5); err != nil {
		t.Fatal(err)
	}
	mustBlock(t, done1, "worker 1's pull during worker 0's turn")
	// An observer never waits for a turn.
	want(t, "an observer's pull during worker 0's turn", pull(t, c, center.Observer, 1), []float32{2})
	mustReturn(t, clock(c, 0, 0, -1), "worker 0's clock")
	mustReturn(t, done1, "worker 1's pull after worker 0's turn")
	want(t, "worker 1's pull", c1, []float32{2})
	c0 := []float32{-1}
	done0 := async(func() error { return c.Pull(context.Background(), 0, c0) })
	mustBlock(t, done0, "worker 0's pull during worker 1's turn")
	mustReturn(t, clock(c, 1, 0, -1), "worker 1's clock")
	mustReturn(t, done0, "worker 0's pull after worker 1's turn")
	want(t, "worker 0's pull", c0, []float32{2})
}

type roundResult struct {
	next    int
	dropped bool
	err     error
}

// RoundMean: a weed-out round closes once every live worker's gradients
// are in and applies their mean; each is told the next round.
func roundMean(t *testing.T, open Opener, f Features) {
	if !f.Rounds {
		t.Skip("the implementation has no weed-out rounds")
	}
	c := open(t, Config{Workers: 3, Weights: []float32{10, 10}, Update: halve})
	join(t, c, 0, 1, 2)
	grads := [][]float32{{1, 0}, {2, 3}, {6, -3}}
	chs := make([]chan roundResult, 3)
	for w, g := range grads {
		chs[w] = make(chan roundResult, 1)
		go func() {
			next, dropped, err := c.Round(context.Background(), w, 0, g)
			chs[w] <- roundResult{next, dropped, err}
		}()
	}
	for w, ch := range chs {
		select {
		case r := <-ch:
			if r.err != nil || r.next != 1 || r.dropped {
				t.Fatalf("worker %d: %+v, want next 1, not dropped", w, r)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("worker %d's round never closed", w)
		}
	}
	// mean [3 0], halved: [10-1.5, 10].
	want(t, "the center after the round", pull(t, c, 0, 2), []float32{8.5, 10})
}

// ClosedAfterRound: Closed waits for its round to close and answers the
// next one; a closed round is answered at once; a round other than the
// open one fails.
func closedAfterRound(t *testing.T, open Opener, f Features) {
	if !f.Rounds {
		t.Skip("the implementation has no weed-out rounds")
	}
	c := open(t, Config{Workers: 2, Weights: []float32{0}, Update: halve})
	join(t, c, 0, 1)
	var next int
	closed := async(func() (err error) { next, err = c.Closed(context.Background(), 1, 0); return err })
	mustBlock(t, closed, "Closed(0) while round 0 is open")
	r0 := async(func() error { _, _, err := c.Round(context.Background(), 0, 0, []float32{2}); return err })
	mustBlock(t, r0, "worker 0's round before worker 1's gradients")
	if n, d, err := c.Round(ctx(t), 1, 0, []float32{4}); err != nil || n != 1 || d {
		t.Fatalf("worker 1's round = %d, %v, %v; want 1, false", n, d, err)
	}
	mustReturn(t, r0, "worker 0's round")
	mustReturn(t, closed, "Closed(0) after round 0 closed")
	if next != 1 {
		t.Fatalf("Closed(0) = %d, want 1", next)
	}
	if n, err := c.Closed(ctx(t), 0, 0); err != nil || n != 1 {
		t.Fatalf("Closed(0) again = %d, %v; want 1 at once", n, err)
	}
	if _, _, err := c.Round(ctx(t), 0, 7, []float32{1}); err == nil {
		t.Fatal("a gradient for round 7 while round 1 is open was accepted")
	}
	want(t, "the center after the round", pull(t, c, 0, 1), []float32{-1.5})
}

// ErrorsAfterClose: once the center's connection is closed every
// operation fails.
func errorsAfterClose(t *testing.T, open Opener, f Features) {
	if f.Close == nil {
		t.Skip("the implementation has no Close")
	}
	c := open(t, Config{Workers: 1, Weights: []float32{1}})
	join(t, c, 0)
	if err := f.Close(c); err != nil {
		t.Fatal(err)
	}
	cx := ctx(t)
	if err := c.Pull(cx, 0, make([]float32, 1)); err == nil {
		t.Error("Pull after Close succeeded")
	}
	if err := c.Push(cx, 0, []float32{1}); err == nil {
		t.Error("Push after Close succeeded")
	}
	if _, err := c.Clock(cx, 0, 0, -1); err == nil {
		t.Error("Clock after Close succeeded")
	}
	if _, err := c.Join(cx, 0); err == nil {
		t.Error("Join after Close succeeded")
	}
}

// ConcurrentPushes: several workers pushing at once lose no push.
func concurrentPushes(t *testing.T, open Opener, _ Features) {
	const workers, pushes, n = 4, 25, 8
	c := open(t, Config{Workers: workers, Weights: make([]float32, n)})
	join(t, c, 0, 1, 2, 3)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			d := make([]float32, n)
			buf := make([]float32, n)
			for i := range d {
				d[i] = float32(w + 1)
			}
			for range pushes {
				if err := c.Push(context.Background(), w, d); err != nil {
					errs <- err
					return
				}
				if err := c.Pull(context.Background(), w, buf); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	exp := make([]float32, n)
	for i := range exp {
		exp[i] = pushes * (1 + 2 + 3 + 4)
	}
	want(t, "the center after every push", pull(t, c, 0, n), exp)
}

// ConcurrentSSP: workers clocking at once under s = 1 all finish, and
// when a worker's Clock(it) returns every other worker has at least
// called Clock(it - s) (it is at most s iterations ahead of the slowest).
func concurrentSSP(t *testing.T, open Opener, _ Features) {
	const workers, iters, s = 3, 12, 1
	c := open(t, Config{Workers: workers, Weights: []float32{0}})
	join(t, c, 0, 1, 2)
	var mu sync.Mutex
	// called[v] is the iterations v has handed to Clock so far: an upper
	// bound on its count at the center.
	called := make([]int, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers*iters)
	for w := range workers {
		wg.Go(func() {
			for it := range iters {
				mu.Lock()
				called[w] = it + 1
				mu.Unlock()
				if _, err := c.Clock(context.Background(), w, it, s); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for v, n := range called {
					if n < it+1-s {
						errs <- fmt.Errorf("worker %d's Clock(%d) returned while worker %d had finished %d iterations (s = %d)", w, it, v, n, s)
					}
				}
				mu.Unlock()
			}
			if err := c.Leave(context.Background(), w, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !slices.Equal(called, []int{iters, iters, iters}) {
		t.Fatalf("workers finished %v iterations, want %d each", called, iters)
	}
}
