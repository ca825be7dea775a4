package elastic

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// start serves a coordinator on loopback for the test.
func start(t *testing.T, cfg Config) *Coordinator {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = "tok"
	}
	c, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func dial(t *testing.T, c *Coordinator) *Client {
	t.Helper()
	cl, err := Dial(context.Background(), c.Addr(), "tok", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

type placed struct {
	p   Place
	err error
}

// nextAll calls Next on every client at once (client i offering address
// "a<i>" and asking for rank prefer[i]) and returns their results.
func nextAll(clients []*Client, done []int, prefer []int) []placed {
	out := make([]placed, len(clients))
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := -1
			if prefer != nil {
				p = prefer[i]
			}
			out[i].p, out[i].err = cl.next(context.Background(), done[i], p, false, fmt.Sprintf("a%d:1", i), "")
		}()
	}
	wg.Wait()
	return out
}

// TestCoordinatorGenerations walks a group through its life: the first
// generation in the launcher's order, a joiner let in at an iteration
// every member agrees on, a member lost (rank 0 of the next generation is
// the one that completed the most), a member that finishes, and the end
// when too few are left.
func TestCoordinatorGenerations(t *testing.T) {
	var logMu sync.Mutex
	var log []string
	c := start(t, Config{Min: 2, Max: 3, Want: 2, Timeout: 5 * time.Second, Logf: func(f string, a ...any) {
		logMu.Lock()
		log = append(log, fmt.Sprintf(f, a...))
		logMu.Unlock()
	}})
	a, b := dial(t, c), dial(t, c)
	// The first generation: b asks for rank 0, a for rank 1.
	got := nextAll([]*Client{a, b}, []int{0, 0}, []int{1, 0})
	for i, g := range got {
		if g.err != nil {
			t.Fatalf("client %d: %v", i, g.err)
		}
	}
	if got[1].p.Rank != 0 || got[0].p.Rank != 1 || got[0].p.Size != 2 || got[0].p.Gen != 1 || got[0].p.Rendezvous != "a1:1" {
		t.Fatalf("first generation: %+v", got)
	}
	// Nothing changes: no member is told to stop.
	for _, cl := range []*Client{a, b} {
		if stop, err := cl.Check(context.Background(), 5); err != nil || stop {
			t.Fatalf("check at 5 with no joiner: %v, %v", stop, err)
		}
	}
	// A joiner waits; the first member to ask about iteration 7 fixes
	// the answer, the other gets the same.
	j := dial(t, c)
	joined := make(chan placed, 1)
	go func() {
		p, err := j.Next(context.Background(), 0, "j:1", "")
		joined <- placed{p, err}
	}()
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.joiners() == 1 })
	for _, cl := range []*Client{b, a} {
		if stop, err := cl.Check(context.Background(), 7); err != nil || !stop {
			t.Fatalf("check at 7 with a joiner waiting: %v, %v", stop, err)
		}
	}
	// b completed 7 iterations, a 7: b (rank 0) stays rank 0.
	got = nextAll([]*Client{a, b}, []int{7, 7}, nil)
	jp := <-joined
	if jp.err != nil || got[0].err != nil || got[1].err != nil {
		t.Fatalf("second generation: %+v %+v", got, jp)
	}
	if got[1].p.Rank != 0 || got[0].p.Rank != 1 || jp.p.Rank != 2 || jp.p.Size != 3 || jp.p.Done != 7 || jp.p.Gen != 2 {
		t.Fatalf("second generation: a %+v b %+v joiner %+v", got[0].p, got[1].p, jp.p)
	}
	// b dies: the next check says stop; a completed 12, j 11: a is the
	// new rank 0 and the generation starts at 12.
	b.Close()
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.broken })
	if stop, err := j.Check(context.Background(), 12); err != nil || !stop {
		t.Fatalf("check after a member died: %v, %v", stop, err)
	}
	got = nextAll([]*Client{j, a}, []int{11, 12}, nil)
	if got[0].err != nil || got[1].err != nil || got[1].p.Rank != 0 || got[0].p.Rank != 1 || got[0].p.Done != 12 || got[0].p.Size != 2 {
		t.Fatalf("third generation: j %+v a %+v", got[0], got[1])
	}
	// a leaves having finished: that is no loss.
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close()
	time.Sleep(50 * time.Millisecond)
	c.mu.Lock()
	broken := c.broken
	c.mu.Unlock()
	if broken {
		t.Fatal("a member that left after finishing broke the generation")
	}
	// j alone is fewer than the minimum: its Next fails, saying so.
	if _, err := j.Next(context.Background(), 20, "j:1", "test"); err == nil || !strings.Contains(err.Error(), "fewer than the minimum 2") {
		t.Fatalf("a group below its minimum: %v", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if s := strings.Join(log, "\n"); !strings.Contains(s, "generation 2: 3 workers (2 kept, 1 joined), from iteration 7") || !strings.Contains(s, "rank 0 of generation 2 is gone") {
		t.Fatalf("log:\n%s", s)
	}
}

// TestCoordinatorFrozenMember: a member that neither calls Next nor goes
// away (a stopped process) is left out once Timeout has passed.
func TestCoordinatorFrozenMember(t *testing.T) {
	c := start(t, Config{Min: 2, Max: 3, Want: 3, Timeout: 300 * time.Millisecond})
	cl := []*Client{dial(t, c), dial(t, c), dial(t, c)}
	for i, g := range nextAll(cl, []int{0, 0, 0}, []int{0, 1, 2}) {
		if g.err != nil {
			t.Fatalf("client %d: %v", i, g.err)
		}
	}
	t0 := time.Now()
	got := nextAll(cl[:2], []int{4, 4}, nil)
	if waited := time.Since(t0); waited < 250*time.Millisecond {
		t.Fatalf("formed after %v, before the frozen member's timeout", waited)
	}
	if got[0].err != nil || got[1].err != nil || got[0].p.Size != 2 || got[0].p.Rank != 0 || got[1].p.Rank != 1 {
		t.Fatalf("without the frozen member: %+v", got)
	}
	// Woken, the frozen member finds its generation gone and joins as a
	// newcomer at the next check.
	if stop, err := cl[2].Check(context.Background(), 5); err != nil || !stop {
		t.Fatalf("the frozen member's check: %v, %v", stop, err)
	}
}

// TestCoordinatorFirstGeneration: the first generation waits for Want
// workers, then, after Timeout, forms with at least Min, or fails.
func TestCoordinatorFirstGeneration(t *testing.T) {
	for _, tc := range []struct {
		name    string
		min     int
		come    int
		wantErr string
	}{
		{"late but enough", 2, 2, ""},
		{"too few", 3, 2, "only 2 of the 4 workers came"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, Config{Min: tc.min, Max: 4, Want: 4, Timeout: 200 * time.Millisecond})
			var cl []*Client
			for range tc.come {
				cl = append(cl, dial(t, c))
			}
			got := nextAll(cl, make([]int, tc.come), nil)
			for _, g := range got {
				switch {
				case tc.wantErr == "" && (g.err != nil || g.p.Size != tc.come):
					t.Fatalf("got %+v", g)
				case tc.wantErr != "" && (g.err == nil || !strings.Contains(g.err.Error(), tc.wantErr)):
					t.Fatalf("got %+v, want an error with %q", g, tc.wantErr)
				}
			}
		})
	}
}

// TestCoordinatorRefuses: bad configurations, a wrong token, and a
// malformed Next.
func TestCoordinatorRefuses(t *testing.T) {
	for _, cfg := range []Config{
		{Min: 0, Max: 2, Want: 1, Timeout: time.Second},
		{Min: 3, Max: 2, Want: 2, Timeout: time.Second},
		{Min: 1, Max: 2, Want: 3, Timeout: time.Second},
		{Min: 1, Max: 2, Want: 2},
	} {
		if _, err := Listen("127.0.0.1:0", cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	c := start(t, Config{Min: 1, Max: 2, Want: 1, Timeout: time.Second})
	if _, err := Dial(context.Background(), c.Addr(), "wrong", time.Second); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	cl := dial(t, c)
	if _, err := cl.Next(context.Background(), 0, "", ""); err == nil || !strings.Contains(err.Error(), "address") {
		t.Fatalf("a Next without an address: %v", err)
	}
	if _, err := cl.Next(context.Background(), 0, strings.Repeat("x", maxAddr+1), ""); err == nil {
		t.Fatal("an oversized Next was accepted")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}

// TestCoordinatorServer: a group with a server (sync-ps) keeps it as the
// last rank of every generation and starts each from its iterations;
// Min and Max count the workers; the server's loss ends the run.
func TestCoordinatorServer(t *testing.T) {
	c := start(t, Config{Min: 1, Max: 2, Want: 2, Server: true, Timeout: 5 * time.Second})
	w0, w1, srv := dial(t, c), dial(t, c), dial(t, c)
	nextAs := func(cls []*Client, done []int, server []bool) []placed {
		out := make([]placed, len(cls))
		var wg sync.WaitGroup
		for i, cl := range cls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i].p, out[i].err = cl.next(context.Background(), done[i], -1, server[i], fmt.Sprintf("a%d:1", i), "")
			}()
		}
		wg.Wait()
		return out
	}
	got := nextAs([]*Client{srv, w0, w1}, []int{0, 0, 0}, []bool{true, false, false})
	for i, g := range got {
		if g.err != nil {
			t.Fatalf("member %d: %v", i, g.err)
		}
	}
	if got[0].p.Rank != 2 || got[0].p.Size != 3 || got[1].p.Source != 2 {
		t.Fatalf("first generation: %+v", got)
	}
	// w1 dies; the server (6 updates done) and w0 (5) re-form: the server
	// stays last and is the source.
	w1.Close()
	got = nextAs([]*Client{srv, w0}, []int{6, 5}, []bool{true, false})
	if got[0].err != nil || got[1].err != nil || got[0].p.Rank != 1 || got[1].p.Rank != 0 || got[1].p.Source != 1 || got[1].p.Done != 6 || got[1].p.Size != 2 {
		t.Fatalf("second generation: %+v", got)
	}
	// A second server is refused.
	if _, err := dial(t, c).next(context.Background(), 0, -1, true, "x:1", ""); err == nil || !strings.Contains(err.Error(), "second server") {
		t.Fatalf("a second server: %v", err)
	}
	// The server dies: the worker's Next fails, naming it.
	srv.Close()
	if _, err := w0.Next(context.Background(), 9, "a1:1", ""); err == nil || !strings.Contains(err.Error(), "server") {
		t.Fatalf("after the server died: %v", err)
	}
	// A group without a server refuses one.
	c2 := start(t, Config{Min: 1, Max: 2, Want: 1, Timeout: time.Second})
	if _, err := dial(t, c2).next(context.Background(), 0, -1, true, "x:1", ""); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Fatalf("a server in a group without one: %v", err)
	}
}
