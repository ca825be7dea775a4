package smb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dsgd/protocol/center"
)

// backends gives each Center test a local Store and a Client of a server.
var backends = []struct {
	name string
	new  func(t *testing.T) (Buffers, *Store)
}{
	{"store", func(*testing.T) (Buffers, *Store) { s := NewStore(0); return s, s }},
	{"client", func(t *testing.T) (Buffers, *Store) {
		cfg := Config{Token: "t", Timeout: 5 * time.Second, WaitSlice: 20 * time.Millisecond}
		s := NewStore(0)
		srv := startServer(t, s, cfg)
		return dialTest(t, srv.Addr(), cfg), s
	}},
}

func newCenter(t *testing.T, b Buffers, cfg CenterConfig) *Center {
	t.Helper()
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	c, err := NewCenter(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCenterPullPush(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			b, store := be.new(t)
			w0 := []float32{1, 2, 3}
			// Two adapters (two processes) over one server.
			c0 := newCenter(t, b, CenterConfig{Workers: 2, N: 3, Weights: w0})
			c1 := newCenter(t, b, CenterConfig{Workers: 2, N: 3, Weights: []float32{9, 9, 9}})
			for w, c := range []*Center{c0, c1} {
				if it, err := c.Join(ctx, w); err != nil || it != 0 {
					t.Fatalf("Join(%d) = %d, %v", w, it, err)
				}
			}
			got := make([]float32, 3)
			if err := c1.Pull(ctx, 1, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, w0) {
				t.Fatalf("worker 1 pulled %v, want the creator's initial %v", got, w0)
			}
			// SEASGD: worker x with local weights W'x pushes ΔWx = α(W'x − Wg)
			// (Eq. 5); Wg becomes Wg + ΔWx (Eq. 7) = Eq. 4.
			const alpha = 0.5
			local := []float32{3, 2, 1}
			delta := make([]float32, 3)
			for i := range delta {
				delta[i] = alpha * (local[i] - got[i])
			}
			if err := c0.Push(ctx, 0, delta); err != nil {
				t.Fatal(err)
			}
			if err := c1.Push(ctx, 1, []float32{10, 20, 30}); err != nil {
				t.Fatal(err)
			}
			want := []float32{1 + 1 + 10, 2 + 0 + 20, 3 - 1 + 30}
			if err := c0.Pull(ctx, 0, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after two pushes W_g = %v, want %v", got, want)
			}
			// The layout of Fig. 5.
			d := make([]float32, 3)
			if err := store.Read(ctx, "dW_1", 0, d); err != nil || !slices.Equal(d, []float32{10, 20, 30}) {
				t.Errorf("dW_1 = %v, %v", d, err)
			}
		})
	}
}

func TestCenterRefusesElasticAndRound(t *testing.T) {
	c := newCenter(t, NewStore(0), CenterConfig{Workers: 1, N: 1})
	errs := []error{
		c.Elastic(context.Background(), 0, []float32{1}, 0.1),
	}
	_, _, err := c.Round(context.Background(), 0, 0, []float32{1})
	errs = append(errs, err)
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "no update logic") || !strings.Contains(err.Error(), "III.C") || !strings.Contains(err.Error(), "easgd") {
			t.Errorf("error %v should say the server has no update logic and name the schemes", err)
		}
	}
}

func TestCenterConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  CenterConfig
		want string
	}{
		{CenterConfig{Workers: 0, N: 1}, "0 workers"},
		{CenterConfig{Workers: 1, N: 0}, "0 weights"},
		{CenterConfig{Workers: 1, N: 2, Weights: []float32{1}}, "1 initial weights"},
		{CenterConfig{Workers: 1, N: 1, Finish: center.FinishMaster}, "master needs a max iteration"},
	}
	for _, tc := range tests {
		if _, err := NewCenter(NewStore(0), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCenter(%+v) = %v, want an error mentioning %q", tc.cfg, err, tc.want)
		}
	}
}

func TestCenterFinish(t *testing.T) {
	tests := []struct {
		finish center.Finish
		counts []int64 // control slots before worker 1 clocks iteration 5
		stop   bool
	}{
		{center.FinishOwn, []int64{100, 0, 100}, false},
		{center.FinishMaster, []int64{10, 0, 3}, true},
		{center.FinishMaster, []int64{9, 0, 30}, false},
		{center.FinishMaster, []int64{-11, 0, 3}, true}, // master left after 10
		{center.FinishFirst, []int64{1, 0, 10}, true},
		{center.FinishFirst, []int64{9, 0, 9}, false},
		{center.FinishAverage, []int64{11, 0, 13}, true},  // (11+6+13)/3 = 10
		{center.FinishAverage, []int64{11, 0, 12}, false}, // 29/3 < 10
		{center.FinishAverage, []int64{-14, 0, 12}, true}, // a left worker's count counts
	}
	for _, tc := range tests {
		ctx := context.Background()
		s := NewStore(0)
		c := newCenter(t, s, CenterConfig{Workers: 3, N: 1, Finish: tc.finish, MaxIter: 10})
		for _, w := range []int{0, 1} { // worker 0 creates W_g
			if _, err := c.Join(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.WriteControl(ctx, 0, tc.counts[:1]); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteControl(ctx, 2, tc.counts[2:]); err != nil {
			t.Fatal(err)
		}
		stop, err := c.Clock(ctx, 1, 5, -1)
		if err != nil || stop != tc.stop {
			t.Errorf("%s with slots %v: Clock = %v, %v; want %v", tc.finish, tc.counts, stop, err, tc.stop)
		}
		slot := make([]int64, 1)
		if _, err := s.ReadControl(ctx, 1, slot); err != nil || slot[0] != 6 {
			t.Errorf("worker 1's slot = %v, %v; want 6 (iterations done)", slot, err)
		}
	}
}

func TestCenterSSP(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			b, _ := be.new(t)
			c := newCenter(t, b, CenterConfig{Workers: 2, N: 2})
			for w := range 2 {
				if _, err := c.Join(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			// Within the bound: no wait.
			if stop, err := c.Clock(ctx, 0, 1, 2); err != nil || stop {
				t.Fatalf("Clock within the bound = %v, %v", stop, err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := c.Clock(ctx, 0, 3, 2) // 4 done − 0 > 2: waits
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("Clock 3 ahead of the slowest returned (%v) without waiting", err)
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Clock(ctx, 1, 0, 2); err != nil { // 4 − 1 > 2: still waits
				t.Fatal(err)
			}
			select {
			case err := <-done:
				t.Fatalf("Clock returned (%v) while 3 ahead", err)
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Clock(ctx, 1, 1, 2); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Clock still waiting with the slowest 2 behind")
			}
			// A worker that leaves no longer holds the others back.
			go func() {
				_, err := c.Clock(ctx, 0, 10, 2)
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			if err := c.Leave(ctx, 1, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Clock still waiting for a worker that left")
			}
			// It rejoins where it left.
			if it, err := c.Join(ctx, 1); err != nil || it != 2 {
				t.Fatalf("rejoin = %d, %v; want 2", it, err)
			}
			// A cancelled wait returns the context's error.
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if _, err := c.Clock(cctx, 0, 20, 2); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Clock past its deadline: %v", err)
			}
		})
	}
}

func TestCenterJoin(t *testing.T) {
	ctx := context.Background()
	s := NewStore(0)
	cfg := CenterConfig{Workers: 3, N: 2, Weights: []float32{4, 5}}
	c := newCenter(t, s, cfg)
	// W_g exists but its creator has not written it yet: Join waits.
	if _, err := s.CreateControl(ctx, 5); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, KeyGlobal, 2)
	done := make(chan error, 1)
	go func() {
		_, err := c.Join(ctx, 2)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Join returned (%v) before W_g was initialised", err)
	case <-time.After(60 * time.Millisecond):
	}
	if err := s.WriteControl(ctx, 3, []int64{1}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Every worker continues its own count, as center.Local's do; a
	// worker that left rejoins at its own.
	if err := s.WriteControl(ctx, 0, []int64{7, -1 - 4, 9}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		w, want int
		slots   []int64
	}{
		{1, 4, []int64{7, 4, 9}},
		{0, 7, []int64{7, 4, 9}},
	}
	for _, tc := range tests {
		it, err := c.Join(ctx, tc.w)
		if err != nil || it != tc.want {
			t.Errorf("Join(%d) = %d, %v; want %d", tc.w, it, err, tc.want)
		}
		got := make([]int64, 3)
		if _, err := s.ReadControl(ctx, 0, got); err != nil || !slices.Equal(got, tc.slots) {
			t.Errorf("after Join(%d) slots %v, want %v", tc.w, got, tc.slots)
		}
	}
	if err := s.WriteControl(ctx, 2, []int64{0}); err != nil {
		t.Fatal(err)
	}
	if it, err := c.Join(ctx, 2); err != nil || it != 0 {
		t.Errorf("fresh Join(2) = %d, %v; want its own count 0, not another worker's", it, err)
	}
	// A server whose W_g has another size is refused with its name.
	c2 := newCenter(t, s, CenterConfig{Workers: 3, N: 5})
	if _, err := c2.Join(ctx, 0); !errors.Is(err, ErrSize) || !strings.Contains(err.Error(), KeyGlobal) {
		t.Errorf("Join with another size: %v", err)
	}
}

func TestCenterNoAlloc(t *testing.T) {
	ctx := context.Background()
	c := newCenter(t, NewStore(0), CenterConfig{Workers: 2, N: 64})
	for w := range 2 {
		if _, err := c.Join(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]float32, 64)
	iter := 0
	allocs := testing.AllocsPerRun(100, func() {
		iter++
		_ = c.Pull(ctx, 0, buf)
		_ = c.Push(ctx, 0, buf)
		_, _ = c.Clock(ctx, 0, iter, -1)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per pull+push+clock, want 0", allocs)
	}
}

// TestCenterCountsAsLocal: the adapter counts iterations as center.Local
// does (the control slot holds the iterations done), so a finish rule
// stops a run after the same number of iterations over TCP and in
// process, and a worker that rejoins continues at the next iteration
// instead of repeating one.
func TestCenterCountsAsLocal(t *testing.T) {
	ctx := context.Background()
	const maxIter = 10
	for _, finish := range []center.Finish{center.FinishMaster, center.FinishFirst, center.FinishAverage} {
		l, err := center.NewLocal(center.Config{Workers: 1, Weights: []float32{0}, Finish: finish, MaxIter: maxIter})
		if err != nil {
			t.Fatal(err)
		}
		m := newCenter(t, NewStore(0), CenterConfig{Workers: 1, N: 1, Finish: finish, MaxIter: maxIter})
		for _, c := range []center.Center{l, m} {
			// Three iterations, a restart, and on to the finish rule.
			it, err := c.Join(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for ; it < 3; it++ {
				if _, err := c.Clock(ctx, 0, it, -1); err != nil {
					t.Fatal(err)
				}
				ran++
			}
			if err := c.Leave(ctx, 0, errors.New("killed")); err != nil {
				t.Fatal(err)
			}
			if it, err = c.Join(ctx, 0); err != nil || it != 3 {
				t.Fatalf("%T %s: rejoin at %d, %v; want 3, the next iteration", c, finish, it, err)
			}
			for ; ; it++ {
				stop, err := c.Clock(ctx, 0, it, -1)
				if err != nil {
					t.Fatal(err)
				}
				ran++
				if stop {
					break
				}
			}
			if ran != maxIter {
				t.Errorf("%T %s: ran %d iterations, want %d", c, finish, ran, maxIter)
			}
		}
	}
}

// TestCenterRankZeroAllocatesAndReleases: worker 0 creates W_g with its
// weights and the others attach to it, whoever comes first (the first to
// join created it); a leaving worker frees its increment buffer, and
// after worker 0's Release the last worker to leave frees the rest
// (ShmCaffe III.B; nothing was ever freed).
func TestCenterRankZeroAllocatesAndReleases(t *testing.T) {
	ctx := context.Background()
	s := NewStore(0)
	mine := func(v float32) *Center {
		return newCenter(t, s, CenterConfig{Workers: 2, N: 2, Weights: []float32{v, v}})
	}
	c0, c1 := mine(0.5), mine(7) // worker 1's process built other weights
	joined := make(chan error, 1)
	go func() {
		_, err := c1.Join(ctx, 1)
		joined <- err
	}()
	select {
	case err := <-joined:
		t.Fatalf("worker 1 joined (%v) before worker 0 created W_g", err)
	case <-time.After(60 * time.Millisecond):
	}
	if _, err := c0.Join(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 2)
	if err := c1.Pull(ctx, 1, got); err != nil || got[0] != 0.5 {
		t.Fatalf("W_g = %v, %v; want worker 0's weights 0.5", got, err)
	}
	if err := c1.Leave(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Attach(ctx, KeyDeltaPrefix+"1"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("dW_1 after worker 1 left: %v, want it freed", err)
	}
	// Worker 1 rejoins and is still at work when worker 0 releases: the
	// buffers stay until it leaves.
	if _, err := c1.Join(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := c0.Leave(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := c0.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c1.Pull(ctx, 1, got); err != nil {
		t.Fatalf("W_g gone while worker 1 works: %v", err)
	}
	if err := c1.Leave(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	n, bytes := len(s.bufs), s.bytes
	s.mu.RUnlock()
	if n != 0 || bytes != 0 {
		t.Errorf("after Release the store holds %d buffers, %d bytes; want none", n, bytes)
	}
}
