package ps

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/protocol/center"
)

// leaveRecorder is a center.Local that records every Leave as "w:nil" or
// "w:err".
type leaveRecorder struct {
	*center.Local
	mu     sync.Mutex
	leaves []string
}

func (r *leaveRecorder) Leave(ctx context.Context, w int, cause error) error {
	s := "nil"
	if cause != nil {
		s = "err"
	}
	r.mu.Lock()
	r.leaves = append(r.leaves, string(rune('0'+w))+":"+s)
	r.mu.Unlock()
	return r.Local.Leave(ctx, w, cause)
}

func (r *leaveRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.leaves)
}

// watching returns how many connections the server watches; it drops to
// the number still open once their departure hooks have run.
func (s *Server) watching() int {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	return s.owners.Watched()
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clockAsync runs c.Clock(w, iter, s) on its own goroutine.
func clockAsync(c *Client, w, iter, s int) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Clock(context.Background(), w, iter, s)
		done <- err
	}()
	return done
}

// notDone fails if the call has already returned; it cannot fail when
// the server behaves, only miss a misbehaviour.
func notDone(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned early: %v", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

func recv(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s still waits", what)
	}
}

// TestCrashedWorkerLeaves: a worker whose connection closes without a
// Leave stops holding back the SSP wait of the others, leaves the center
// with an error (the run is not finished), and joins again, with its
// iteration count, over a new connection.
func TestCrashedWorkerLeaves(t *testing.T) {
	ctx := context.Background()
	local := newLocal(t, 2, weights(7, 0))
	rec := &leaveRecorder{Local: local}
	srv, log := serve(t, rec, ServerConfig{})
	c0 := dial(t, srv.Addr(), ClientConfig{})
	c1 := dial(t, srv.Addr(), ClientConfig{})
	for w, c := range []*Client{c0, c1} {
		if _, err := c.Join(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	for it := range 3 {
		if _, err := c1.Clock(ctx, 1, it, -1); err != nil {
			t.Fatal(err)
		}
	}
	// Worker 0 at 6 with staleness 0 waits for worker 1, at 3.
	done := clockAsync(c0, 0, 5, 0)
	notDone(t, "worker 0's SSP wait", done)

	c1.Close() // worker 1 dies without a Leave
	recv(t, "worker 0's SSP wait after worker 1 died", done)
	waitFor(t, "the departure hook", func() bool { return srv.watching() == 1 })
	if got := rec.got(); !slices.Equal(got, []string{"1:err"}) {
		t.Fatalf("leaves %v, want [1:err]", got)
	}
	waitFor(t, "the departure log", func() bool { return len(log.all()) > 0 })
	if msg := log.all()[0]; !strings.Contains(msg, "worker 1's connection") || !strings.Contains(msg, "closed without a leave") {
		t.Errorf("log %q does not name the departure", msg)
	}
	select {
	case <-local.Finished():
		t.Fatal("the run counts as finished although worker 1 died")
	default:
	}

	// Worker 1 restarts: it continues its count and holds back SSP again.
	c1b := dial(t, srv.Addr(), ClientConfig{})
	iter, err := c1b.Join(ctx, 1)
	if err != nil || iter != 3 {
		t.Fatalf("rejoin: iter %d, %v; want 3", iter, err)
	}
	if err := c1b.Pull(ctx, 1, make([]float32, 7)); err != nil {
		t.Fatal(err)
	}
	done = clockAsync(c0, 0, 6, 0)
	notDone(t, "worker 0's SSP wait for the rejoined worker", done)
	for it := 3; it < 7; it++ {
		if _, err := c1b.Clock(ctx, 1, it, -1); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, "worker 0's SSP wait after worker 1 caught up", done)

	// Both finish in order: the run is finished, and closing the
	// connections afterwards makes nobody leave again.
	for w, c := range []*Client{c0, c1b} {
		if err := c.Leave(ctx, w, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-local.Finished():
	case <-time.After(20 * time.Second):
		t.Fatal("the run is not finished after every worker left")
	}
	c0.Close()
	c1b.Close()
	waitFor(t, "the departure hooks", func() bool { return srv.watching() == 0 })
	if got := rec.got(); !slices.Equal(got, []string{"1:err", "0:nil", "1:nil"}) {
		t.Fatalf("leaves %v, want [1:err 0:nil 1:nil]", got)
	}
}

// TestRejoinOutlivesOldConnection: a restarted worker that dials before
// the server has seen its old connection close waits for that close (the
// old one leaves with an error) and then joins; the new connection's
// worker stays live, and a worker of another connection is not touched.
func TestRejoinOutlivesOldConnection(t *testing.T) {
	ctx := context.Background()
	rec := &leaveRecorder{Local: newLocal(t, 3, weights(4, 0))}
	srv, _ := serve(t, rec, ServerConfig{})
	old := dial(t, srv.Addr(), ClientConfig{})
	other := dial(t, srv.Addr(), ClientConfig{})
	if _, err := old.Join(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Join(ctx, 2); err != nil {
		t.Fatal(err)
	}
	fresh := dial(t, srv.Addr(), ClientConfig{})
	joined := make(chan error, 1)
	go func() {
		_, err := fresh.Join(ctx, 1)
		joined <- err
	}()
	time.Sleep(50 * time.Millisecond)
	old.Close()
	recv(t, "the restarted worker's join", joined)
	waitFor(t, "the old connection's hook", func() bool { return srv.watching() == 2 })
	if got := rec.got(); !slices.Equal(got, []string{"1:err"}) {
		t.Fatalf("leaves %v, want [1:err]", got)
	}
	// Worker 1 is live again: with worker 0 finished, it alone holds
	// back worker 2's SSP wait, until its connection closes.
	if _, err := other.Join(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := other.Leave(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	done := clockAsync(other, 2, 2, 0)
	notDone(t, "worker 2's SSP wait for the rejoined worker 1", done)
	fresh.Close()
	recv(t, "worker 2's SSP wait after worker 1's connection closed", done)
	waitFor(t, "the fresh connection's hook", func() bool { return srv.watching() == 1 })
	if got := rec.got(); !slices.Equal(got, []string{"1:err", "0:nil", "1:err"}) {
		t.Fatalf("leaves %v, want [1:err 0:nil 1:err]", got)
	}
}

// TestServerCloseLeavesJoined: closing the server ends every connection,
// and Serve returns only after their workers have left.
func TestServerCloseLeavesJoined(t *testing.T) {
	ctx := context.Background()
	rec := &leaveRecorder{Local: newLocal(t, 2, weights(4, 0))}
	srv, err := Listen("", rec, ServerConfig{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	c := dial(t, srv.Addr(), ClientConfig{})
	if _, err := c.Join(ctx, 0); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); !slices.Equal(got, []string{"0:err"}) {
		t.Fatalf("leaves %v, want [0:err]", got)
	}
}
