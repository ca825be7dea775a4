package center

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// blocked is how long a test waits to see that a call does not return;
// released how long it waits for a call that must return.
const (
	blocked  = 50 * time.Millisecond
	released = 5 * time.Second
)

func newLocal(t *testing.T, cfg Config) *Local {
	t.Helper()
	l, err := NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func join(t *testing.T, l *Local, workers ...int) {
	t.Helper()
	for _, w := range workers {
		if _, err := l.Join(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// async runs fn in a goroutine and returns a channel that receives its
// error when it returns.
func async(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// mustBlock fails if ch delivers within a short bounded wait.
func mustBlock(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (%v) but should wait", what, err)
	case <-time.After(blocked):
	}
}

// mustReturn waits for ch and returns what it delivered.
func mustReturn(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(released):
		t.Fatalf("%s still waits after %v", what, released)
		return nil
	}
}

func TestNewLocalErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Workers: 0, Weights: []float32{1}}, "0 workers"},
		{Config{Workers: 2}, "no initial weights"},
		{Config{Workers: 2, Weights: []float32{1}, Finish: FinishMaster}, "needs MaxIter"},
	}
	for _, c := range cases {
		if _, err := NewLocal(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestPullPush(t *testing.T) {
	w0 := []float32{1, 2, 3}
	l := newLocal(t, Config{Workers: 2, Weights: w0})
	w0[0] = 100 // NewLocal copied them
	ctx := context.Background()
	steps := []struct {
		w     int
		delta []float32
		want  []float32
	}{
		{0, nil, []float32{1, 2, 3}},
		{1, []float32{0.5, -1, 0}, []float32{1.5, 1, 3}},
		{0, []float32{-0.5, 0, 2}, []float32{1, 1, 5}},
	}
	for i, s := range steps {
		if s.delta != nil {
			if err := l.Push(ctx, s.w, s.delta); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, 3)
		if err := l.Pull(ctx, s.w, got); err != nil {
			t.Fatal(err)
		}
		if !near(got, s.want) {
			t.Fatalf("step %d: pulled %v, want %v", i, got, s.want)
		}
	}
	if st := l.Stats(); st.Pulls != 3 || st.Pushes != 2 {
		t.Fatalf("stats %+v, want 3 pulls and 2 pushes", st)
	}
}

// TestElasticFormula: the center becomes c + α(x − c) and x becomes
// x − α(x − c) (SC17 Eq. 1's elastic term and Eq. 2), whatever the policy.
func TestElasticFormula(t *testing.T) {
	for _, p := range []Policy{FCFS, RoundRobin, Hogwild} {
		for _, alpha := range []float32{0, 0.25, 0.9} {
			c0 := []float32{1, 2, 3, -4}
			x := []float32{3, 0, 3, 4}
			wantC, wantX := make([]float32, 4), make([]float32, 4)
			for i := range c0 {
				d := alpha * (x[i] - c0[i])
				wantC[i], wantX[i] = c0[i]+d, x[i]-d
			}
			l := newLocal(t, Config{Workers: 1, Weights: c0, Policy: p})
			join(t, l, 0)
			if err := l.Elastic(context.Background(), 0, x, alpha); err != nil {
				t.Fatal(err)
			}
			if !near(l.Weights(), wantC) || !near(x, wantX) {
				t.Errorf("%v alpha %g: center %v, x %v; want %v, %v", p, alpha, l.Weights(), x, wantC, wantX)
			}
			if st := l.Stats(); st.Exchanges != 1 {
				t.Errorf("%v: %d exchanges counted", p, st.Exchanges)
			}
		}
	}
}

// TestRoundRobinOrder: SC17 Alg. 1's turns. Worker 1's turn (its Pull)
// waits until worker 0's turn, which starts with its Pull, ends with its
// Clock; the center's weights go through the turns in rank order; a
// worker that has left is skipped; an observer never waits.
func TestRoundRobinOrder(t *testing.T) {
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, Policy: RoundRobin})
	join(t, l, 0, 1)
	ctx := context.Background()
	c0, c1 := []float32{0}, []float32{0}
	done1 := async(func() error { return l.Pull(ctx, 1, c1) })
	mustBlock(t, done1, "worker 1's pull before worker 0's turn")
	if err := l.Pull(ctx, 0, c0); err != nil {
		t.Fatal(err)
	}
	if err := l.Push(ctx, 0, []float32{2}); err != nil {
		t.Fatal(err)
	}
	mustBlock(t, done1, "worker 1's pull during worker 0's turn")
	obs := []float32{-1}
	if err := l.Pull(ctx, Observer, obs); err != nil || obs[0] != 2 {
		t.Fatalf("observer read %v, %v during worker 0's turn; want 2", obs, err)
	}
	if _, err := l.Clock(ctx, 0, 0, -1); err != nil {
		t.Fatal(err)
	}
	if err := mustReturn(t, done1, "worker 1's pull after worker 0's clock"); err != nil {
		t.Fatal(err)
	}
	if c1[0] != 2 {
		t.Fatalf("worker 1 pulled %v, want worker 0's push applied (2)", c1)
	}
	// Worker 0's next turn waits for worker 1's clock.
	done0 := async(func() error { return l.Pull(ctx, 0, c0) })
	mustBlock(t, done0, "worker 0's pull during worker 1's turn")
	if _, err := l.Clock(ctx, 1, 0, -1); err != nil {
		t.Fatal(err)
	}
	if err := mustReturn(t, done0, "worker 0's pull after worker 1's clock"); err != nil {
		t.Fatal(err)
	}
	// After worker 0 leaves (in its turn), worker 1 is served every turn.
	if err := l.Leave(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		done := async(func() error {
			if err := l.Pull(ctx, 1, c1); err != nil {
				return err
			}
			_, err := l.Clock(ctx, 1, 1+i, -1)
			return err
		})
		if err := mustReturn(t, done, "worker 1's turn after worker 0 left"); err != nil {
			t.Fatal(err)
		}
	}
}

type updateCall struct {
	grads []float32
	iter  int
}

// recorder is an Update rule (w -= g) that records its calls.
type recorder struct {
	mu    sync.Mutex
	calls []updateCall
}

func (r *recorder) update(w, g []float32, iter int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, updateCall{append([]float32(nil), g...), iter})
	for i := range w {
		w[i] -= g[i]
	}
}

func (r *recorder) get() []updateCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]updateCall(nil), r.calls...)
}

type roundResult struct {
	next    int
	dropped bool
	err     error
}

func round(l *Local, ctx context.Context, w, iter int, g []float32) <-chan roundResult {
	ch := make(chan roundResult, 1)
	go func() {
		next, dropped, err := l.Round(ctx, w, iter, g)
		ch <- roundResult{next, dropped, err}
	}()
	return ch
}

func waitRound(t *testing.T, ch <-chan roundResult) roundResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(released):
		t.Fatal("Round did not return")
		return roundResult{}
	}
}

// TestRoundMean: with every live worker in, the round closes once, the
// update sees the mean gradient and the round number, and everybody gets
// the next round.
func TestRoundMean(t *testing.T) {
	rec := &recorder{}
	l := newLocal(t, Config{Workers: 3, Weights: []float32{10, 10}, Update: rec.update, StartIter: 4})
	join(t, l, 0, 1, 2)
	ctx := context.Background()
	grads := [][]float32{{1, 0}, {2, 3}, {6, -3}}
	var chs []<-chan roundResult
	for w, g := range grads {
		chs = append(chs, round(l, ctx, w, 4, g))
	}
	for w, ch := range chs {
		r := waitRound(t, ch)
		if r.err != nil || r.next != 5 || r.dropped {
			t.Fatalf("worker %d: %+v, want next 5, not dropped", w, r)
		}
	}
	calls := rec.get()
	if len(calls) != 1 || calls[0].iter != 4 || !near(calls[0].grads, []float32{3, 0}) {
		t.Fatalf("update calls %+v, want one with mean [3 0] at iteration 4", calls)
	}
	if !near(l.Weights(), []float32{7, 10}) {
		t.Fatalf("center %v, want [7 10]", l.Weights())
	}
	if st := l.Stats(); st.Rounds != 1 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRoundDeadline: a round closes at the deadline with the gradients
// that arrived; a later one is dropped and its worker told the next round.
func TestRoundDeadline(t *testing.T) {
	rec := &recorder{}
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, Update: rec.update, Deadline: 20 * time.Millisecond})
	join(t, l, 0, 1)
	ctx := context.Background()
	r0 := waitRound(t, round(l, ctx, 0, 0, []float32{4}))
	if r0.err != nil || r0.next != 1 || r0.dropped {
		t.Fatalf("worker 0 in time: %+v", r0)
	}
	r1 := waitRound(t, round(l, ctx, 1, 0, []float32{100}))
	if r1.err != nil || r1.next != 1 || !r1.dropped {
		t.Fatalf("worker 1 late: %+v, want dropped with next 1", r1)
	}
	calls := rec.get()
	if len(calls) != 1 || !near(calls[0].grads, []float32{4}) {
		t.Fatalf("update calls %+v, want one with worker 0's gradient only", calls)
	}
	// Round 1 takes both again.
	a, b := round(l, ctx, 0, 1, []float32{1}), round(l, ctx, 1, 1, []float32{3})
	for _, ch := range []<-chan roundResult{a, b} {
		if r := waitRound(t, ch); r.err != nil || r.next != 2 || r.dropped {
			t.Fatalf("round 1: %+v", r)
		}
	}
	if calls := rec.get(); len(calls) != 2 || calls[1].iter != 1 || !near(calls[1].grads, []float32{2}) {
		t.Fatalf("round 1's update %+v, want mean [2] at iteration 1", calls)
	}
	if st := l.Stats(); st.Rounds != 2 || st.Dropped != 1 {
		t.Fatalf("stats %+v, want 2 rounds and 1 dropped", st)
	}
}

// TestRoundLeave: a worker that leaves no longer holds a round open.
func TestRoundLeave(t *testing.T) {
	rec := &recorder{}
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, Update: rec.update})
	join(t, l, 0, 1)
	ctx := context.Background()
	ch := round(l, ctx, 0, 0, []float32{2})
	select {
	case r := <-ch:
		t.Fatalf("round closed without worker 1: %+v", r)
	case <-time.After(blocked):
	}
	if err := l.Leave(ctx, 1, errors.New("killed")); err != nil {
		t.Fatal(err)
	}
	if r := waitRound(t, ch); r.err != nil || r.next != 1 || r.dropped {
		t.Fatalf("%+v", r)
	}
	if calls := rec.get(); len(calls) != 1 || !near(calls[0].grads, []float32{2}) {
		t.Fatalf("update calls %+v", calls)
	}
}

func TestRoundErrors(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}})
	join(t, l, 0, 1)
	if _, _, err := l.Round(ctx, 0, 0, []float32{1}); err == nil || !strings.Contains(err.Error(), "update rule") {
		t.Fatalf("round without an update rule: %v", err)
	}
	rec := &recorder{}
	l = newLocal(t, Config{Workers: 2, Weights: []float32{0}, Update: rec.update})
	join(t, l, 0, 1)
	if _, _, err := l.Round(ctx, 0, 3, []float32{1}); err == nil || !strings.Contains(err.Error(), "round 0 is open") {
		t.Fatalf("a round from the future: %v", err)
	}
	ch := round(l, ctx, 0, 0, []float32{1})
	mustBlockRound(t, ch)
	if _, _, err := l.Round(ctx, 0, 0, []float32{1}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a second hand-in: %v", err)
	}
	if r := waitRound(t, round(l, ctx, 1, 0, []float32{1})); r.err != nil {
		t.Fatal(r.err)
	}
	if r := waitRound(t, ch); r.err != nil || r.next != 1 {
		t.Fatalf("%+v", r)
	}
}

func mustBlockRound(t *testing.T, ch <-chan roundResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("round returned early: %+v", r)
	case <-time.After(blocked):
	}
}

// TestClockStaleness: with staleness s a worker more than s iterations
// ahead of the slowest live worker waits until it catches up, or leaves.
func TestClockStaleness(t *testing.T) {
	const s = 1
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}})
	join(t, l, 0, 1)
	ctx := context.Background()
	clock := func(w, iter int) <-chan error {
		return async(func() error {
			stop, err := l.Clock(ctx, w, iter, s)
			if stop {
				return errors.New("stop without a finish rule")
			}
			return err
		})
	}
	// Worker 0 finishes iteration 0: 1 ahead of worker 1, allowed.
	if err := mustReturn(t, clock(0, 0), "worker 0 one ahead"); err != nil {
		t.Fatal(err)
	}
	// Iteration 1: 2 ahead, it waits.
	ch := clock(0, 1)
	mustBlock(t, ch, "worker 0 two ahead")
	if got := l.Clocks(); got[0] != 2 || got[1] != 0 {
		t.Fatalf("clocks %v, want [2 0]", got)
	}
	// Worker 1 finishes iteration 0: worker 0 is 1 ahead again, released.
	if err := mustReturn(t, clock(1, 0), "worker 1"); err != nil {
		t.Fatal(err)
	}
	if err := mustReturn(t, ch, "worker 0 after worker 1 caught up"); err != nil {
		t.Fatal(err)
	}
	// Iteration 2 waits again, until worker 1 leaves.
	ch = clock(0, 2)
	mustBlock(t, ch, "worker 0 two ahead again")
	if err := l.Leave(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := mustReturn(t, ch, "worker 0 after worker 1 left"); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Waits != 2 {
		t.Fatalf("%d waits counted, want 2", st.Waits)
	}
	// Without a bound (s < 0) nobody waits.
	if _, err := l.Clock(ctx, 0, 50, -1); err != nil {
		t.Fatal(err)
	}
	// A clock never goes back.
	if _, err := l.Clock(ctx, 0, 10, -1); err != nil {
		t.Fatal(err)
	}
	if got := l.Clocks(); got[0] != 51 {
		t.Fatalf("clocks %v, want worker 0 at 51", got)
	}
}

// TestFinishRules: Clock reports stop by ShmCaffe's aligned-termination
// rules.
func TestFinishRules(t *testing.T) {
	type clk struct {
		w, iter int
		stop    bool
	}
	const maxIter = 4
	cases := []struct {
		finish Finish
		clocks []clk
	}{
		{FinishOwn, []clk{{1, 3, false}, {0, 3, false}, {0, 9, false}}},
		{FinishMaster, []clk{{1, 3, false}, {2, 7, false}, {0, 2, false}, {0, 3, true}, {1, 4, true}}},
		{FinishFirst, []clk{{0, 1, false}, {2, 2, false}, {2, 3, true}, {0, 2, true}}},
		// Mean of the counts reaches 4: the sum reaches 12.
		{FinishAverage, []clk{{0, 5, false}, {1, 3, false}, {2, 0, false}, {2, 1, true}}},
	}
	for _, c := range cases {
		t.Run(c.finish.String(), func(t *testing.T) {
			l := newLocal(t, Config{Workers: 3, Weights: []float32{0}, Finish: c.finish, MaxIter: maxIter})
			join(t, l, 0, 1, 2)
			for i, k := range c.clocks {
				stop, err := l.Clock(context.Background(), k.w, k.iter, -1)
				if err != nil {
					t.Fatal(err)
				}
				if stop != k.stop {
					t.Fatalf("step %d: worker %d finished iteration %d (clocks %v): stop %v, want %v", i, k.w, k.iter, l.Clocks(), stop, k.stop)
				}
			}
		})
	}
}

// TestStopReleasesStaleness: once the finish rule says stop, a worker
// waiting for a slower one is released with stop.
func TestStopReleasesStaleness(t *testing.T) {
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, Finish: FinishMaster, MaxIter: 3})
	join(t, l, 0, 1)
	ctx := context.Background()
	var stop bool
	ch := async(func() (err error) { stop, err = l.Clock(ctx, 1, 5, 0); return err })
	mustBlock(t, ch, "worker 1 ahead")
	if s, err := l.Clock(ctx, 0, 2, -1); err != nil || !s {
		t.Fatalf("master done: stop %v, %v", s, err)
	}
	if err := mustReturn(t, ch, "worker 1 after the master finished"); err != nil || !stop {
		t.Fatalf("worker 1: stop %v, %v", stop, err)
	}
}

func TestArgumentErrors(t *testing.T) {
	l := newLocal(t, Config{Workers: 2, Weights: []float32{1, 2}, Update: (&recorder{}).update})
	ctx := context.Background()
	short, ok := []float32{1}, []float32{1, 2}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"join -1", func() error { _, err := l.Join(ctx, -1); return err }(), "out of range"},
		{"join 2", func() error { _, err := l.Join(ctx, 2); return err }(), "out of range"},
		{"pull short", l.Pull(ctx, 0, short), "1 values, the center has 2"},
		{"pull id", l.Pull(ctx, 5, ok), "out of range"},
		{"push short", l.Push(ctx, 1, short), "1 values"},
		{"push long", l.Push(ctx, 1, []float32{1, 2, 3}), "3 values"},
		{"elastic short", l.Elastic(ctx, 0, short, 0.5), "1 values"},
		{"elastic id", l.Elastic(ctx, -1, ok, 0.5), "out of range"},
		{"round short", func() error { _, _, err := l.Round(ctx, 0, 0, short); return err }(), "1 values"},
		{"clock id", func() error { _, err := l.Clock(ctx, 3, 0, 0); return err }(), "out of range"},
		{"leave id", l.Leave(ctx, 2, nil), "out of range"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, c.err, c.want)
		}
	}
	if !near(l.Weights(), []float32{1, 2}) {
		t.Fatalf("a rejected call changed the center: %v", l.Weights())
	}
}

// TestCancelUnblocks: every wait ends with the context.
func TestCancelUnblocks(t *testing.T) {
	rec := &recorder{}
	cases := []struct {
		name string
		cfg  Config
		call func(ctx context.Context, l *Local) error
	}{
		{"clock", Config{}, func(ctx context.Context, l *Local) error { _, err := l.Clock(ctx, 0, 5, 0); return err }},
		{"round", Config{Update: rec.update}, func(ctx context.Context, l *Local) error { _, _, err := l.Round(ctx, 0, 0, []float32{1}); return err }},
		{"round-robin", Config{Policy: RoundRobin}, func(ctx context.Context, l *Local) error { return l.Elastic(ctx, 1, []float32{1}, 0.5) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Workers, cfg.Weights = 2, []float32{0}
			l := newLocal(t, cfg)
			join(t, l, 0, 1)
			ctx, cancel := context.WithCancel(context.Background())
			ch := async(func() error { return c.call(ctx, l) })
			mustBlock(t, ch, c.name)
			cancel()
			if err := mustReturn(t, ch, c.name+" after cancel"); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		})
	}
}

func TestJoinReturnsClock(t *testing.T) {
	l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, StartIter: 7})
	ctx := context.Background()
	if it, err := l.Join(ctx, 1); err != nil || it != 7 {
		t.Fatalf("join: %d, %v; want 7", it, err)
	}
	if _, err := l.Clock(ctx, 1, 9, -1); err != nil {
		t.Fatal(err)
	}
	// A restarted worker continues from its count.
	if err := l.Leave(ctx, 1, errors.New("killed")); err != nil {
		t.Fatal(err)
	}
	if it, err := l.Join(ctx, 1); err != nil || it != 10 {
		t.Fatalf("rejoin: %d, %v; want 10", it, err)
	}
}

func TestParseFinish(t *testing.T) {
	for _, f := range []Finish{FinishOwn, FinishMaster, FinishFirst, FinishAverage} {
		got, err := ParseFinish(f.String())
		if err != nil || got != f {
			t.Errorf("%v: %v, %v", f, got, err)
		}
	}
	if _, err := ParseFinish("last"); err == nil || !strings.Contains(err.Error(), "unknown finish rule") {
		t.Fatalf("got %v", err)
	}
}

// TestWaitsForWorkersNotYetJoined: at the start of a run a worker that
// has not joined yet is not gone: round-robin keeps its turn for it
// (SC17 Alg. 1 serves workers in rank order from the first exchange) and
// a weed-out round waits for it as for any live worker.
func TestWaitsForWorkersNotYetJoined(t *testing.T) {
	ctx := context.Background()
	t.Run("round-robin", func(t *testing.T) {
		l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, Policy: RoundRobin})
		join(t, l, 1)
		ch := async(func() error { return l.Pull(ctx, 1, []float32{0}) })
		mustBlock(t, ch, "worker 1's turn before worker 0 joined and had its turn")
		join(t, l, 0)
		if err := l.Pull(ctx, 0, []float32{0}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Clock(ctx, 0, 0, -1); err != nil {
			t.Fatal(err)
		}
		if err := mustReturn(t, ch, "worker 1's turn"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("round", func(t *testing.T) {
		rec := &recorder{}
		l := newLocal(t, Config{Workers: 2, Weights: []float32{0}, Update: rec.update})
		join(t, l, 0)
		ch := round(l, ctx, 0, 0, []float32{2})
		mustBlockRound(t, ch)
		join(t, l, 1)
		r1 := waitRound(t, round(l, ctx, 1, 0, []float32{4}))
		if r := waitRound(t, ch); r.err != nil || r.dropped || r1.err != nil || r1.dropped {
			t.Fatalf("worker 0 %+v, worker 1 %+v: want both in round 0", r, r1)
		}
		if calls := rec.get(); len(calls) != 1 || !near(calls[0].grads, []float32{3}) {
			t.Fatalf("update calls %+v, want one with mean [3]", calls)
		}
	})
}

// TestClockedReads: with ClockedReads a pull holds every push of the
// iterations the slowest live worker has clocked and none later, and an
// observer reads the same; once every worker has left it holds them all.
func TestClockedReads(t *testing.T) {
	ctx := context.Background()
	l, err := NewLocal(Config{Workers: 2, Weights: []float32{0}, ClockedReads: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Join(ctx, 0)
	l.Join(ctx, 1)
	pull := func(w int) float32 {
		t.Helper()
		dst := []float32{0}
		if err := l.Pull(ctx, w, dst); err != nil {
			t.Fatal(err)
		}
		return dst[0]
	}
	steps := []struct {
		do   func()
		want float32
	}{
		{func() { l.Push(ctx, 0, []float32{1}) }, 0},                 // iteration 0 of worker 0
		{func() { l.Clock(ctx, 0, 0, -1) }, 0},                       // worker 1 has not clocked 0
		{func() { l.Push(ctx, 0, []float32{10}) }, 0},                // iteration 1 of worker 0
		{func() { l.Push(ctx, 1, []float32{100}) }, 0},               // iteration 0 of worker 1
		{func() { l.Clock(ctx, 1, 0, -1) }, 101},                     // both clocked 0: 1 + 100, not 10
		{func() { l.Leave(ctx, 0, nil); l.Leave(ctx, 1, nil) }, 111}, // every push
	}
	for i, s := range steps {
		s.do()
		for _, w := range []int{0, 1, Observer} {
			if got := pull(w); got != s.want {
				t.Fatalf("step %d: worker %d pulled %v, want %v", i, w, got, s.want)
			}
		}
	}
	if l.Weights()[0] != 111 {
		t.Fatalf("current weights %v, want 111", l.Weights())
	}
}
