package ps

import (
	"context"
	"strings"
	"testing"
	"time"

	"dsgd/comm/rpc"
	"dsgd/protocol/center"
)

// TestDuplicateRankRefused: ranks 0, 1, 1, 2 against a server of 3
// workers: the second rank 1 is refused with an error naming the rank
// and the live holder's address, the server goes on serving the others,
// and once the holder's connection has closed the same rank is accepted
// as a rejoin.
func TestDuplicateRankRefused(t *testing.T) {
	ctx := context.Background()
	srv, log := serve(t, newLocal(t, 3, weights(5, 0)), ServerConfig{Workers: 3})
	cfg := ClientConfig{Workers: 3}
	c0, c1, dup, c2 := dial(t, srv.Addr(), cfg), dial(t, srv.Addr(), cfg), dial(t, srv.Addr(), cfg), dial(t, srv.Addr(), cfg)
	for _, j := range []struct {
		c *Client
		w int
	}{{c0, 0}, {c1, 1}} {
		if _, err := j.c.Join(ctx, j.w); err != nil {
			t.Fatal(err)
		}
	}
	_, err := dup.Join(ctx, 1)
	if err == nil {
		t.Fatal("a second rank 1 joined while the first is live")
	}
	for _, want := range []string{"rank 1 is already held", c1.LocalAddr(), dup.LocalAddr()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if l := log.all(); len(l) == 0 || !strings.Contains(l[len(l)-1], "rank 1 is already held") {
		t.Errorf("the server's log %q does not report the duplicate", l)
	}
	// The server serves on: the refused client's connection too.
	if _, err := c2.Join(ctx, 2); err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, 5)
	for w, c := range []*Client{c0, c1, c2} {
		if err := c.Push(ctx, w, []float32{1, 1, 1, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dup.Pull(ctx, 1, buf); err != nil {
		t.Fatalf("the refused client cannot pull any more: %v", err)
	}
	// The holder dies: the same rank now rejoins, with its count.
	if _, err := c1.Clock(ctx, 1, 4, -1); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	iter, err := dup.Join(ctx, 1)
	if err != nil || iter != 5 {
		t.Fatalf("rejoin after the holder died: iter %d, %v; want 5", iter, err)
	}
}

// TestWorkerCountMismatch: a worker of a job of another size is refused,
// and the error names both sizes.
func TestWorkerCountMismatch(t *testing.T) {
	srv, _ := serve(t, newLocal(t, 3, weights(5, 0)), ServerConfig{Workers: 3})
	c := dial(t, srv.Addr(), ClientConfig{Workers: 4})
	_, err := c.Join(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), "job of 4 workers") || !strings.Contains(err.Error(), "serves 3") {
		t.Fatalf("join of a 4-worker job to a 3-worker server: %v", err)
	}
	// A client that says nothing is not checked.
	c = dial(t, srv.Addr(), ClientConfig{})
	if _, err := c.Join(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

// TestRunSettingsMismatch: a worker whose run settings differ from the
// server's job is refused at Join, naming the setting and both values;
// one with the same settings (in any order) joins.
func TestRunSettingsMismatch(t *testing.T) {
	srv, _ := serve(t, newLocal(t, 2, weights(5, 0)), ServerConfig{Run: "--seed=1\nbase_lr=0.01\n--staleness=3\n"})
	c := dial(t, srv.Addr(), ClientConfig{Run: "--seed=1\nbase_lr=50\n--staleness=3\n"})
	_, err := c.Join(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), "runs with base_lr 50, but this server's job has 0.01") {
		t.Fatalf("join with base_lr 50: %v", err)
	}
	c = dial(t, srv.Addr(), ClientConfig{Run: "--staleness=3\n--seed=1\nbase_lr=0.01\n"})
	if _, err := c.Join(context.Background(), 1); err != nil {
		t.Fatalf("join with the same settings: %v", err)
	}
}

// TestSilentWorkerDropped: a worker that stops calling (a frozen
// process: here a bare rpc client that sends no heartbeats) is made to
// leave the center after the silence deadline, so the SSP wait of a
// healthy worker ends; the healthy worker, idle for several deadlines
// between calls, is kept alive by its heartbeats; and the frozen worker,
// once it calls again, rejoins at its count and holds SSP back again.
func TestSilentWorkerDropped(t *testing.T) {
	ctx := context.Background()
	const silence = 300 * time.Millisecond
	rec := &leaveRecorder{Local: newLocal(t, 2, weights(3, 0))}
	srv, log := serve(t, rec, ServerConfig{Silence: silence})
	c0 := dial(t, srv.Addr(), ClientConfig{})
	frozen, err := rpc.Dial(ctx, srv.Addr(), rpc.Config{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()
	call := func(op uint32, ints ...int64) error {
		req := rpc.Request{Op: op}
		copy(req.Ints[:], ints)
		var resp rpc.Response
		return frozen.Call(ctx, &req, &resp)
	}
	if _, err := c0.Join(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := call(opJoin, 1); err != nil {
		t.Fatal(err)
	}
	// Worker 0 idles for several deadlines: its heartbeats keep it in.
	time.Sleep(4 * silence)
	for _, l := range log.all() {
		if strings.Contains(l, "worker 0") {
			t.Fatalf("the heartbeating worker was dropped: %s", l)
		}
	}
	// Worker 1 has been silent all along: it left, with an error.
	waitFor(t, "worker 1 dropped", func() bool { return len(rec.got()) == 1 })
	if got := rec.got(); got[0] != "1:err" {
		t.Fatalf("leaves %v, want [1:err]", got)
	}
	if l := log.all(); len(l) == 0 || !strings.Contains(l[0], "worker 1") || !strings.Contains(l[0], "silent for") {
		t.Fatalf("log %q does not name the silent worker", l)
	}
	// So worker 0 runs ahead of it under staleness 0 without waiting.
	for it := range 3 {
		if _, err := c0.Clock(ctx, 0, it, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Worker 1 wakes: its call rejoins it at its count (0), and worker
	// 0's next SSP wait holds for it again.
	if err := call(opPull, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rejoin's log", func() bool {
		l := log.all()
		return strings.Contains(l[len(l)-1], "rejoined at iteration 0")
	})
	done := clockAsync(c0, 0, 3, 0)
	notDone(t, "worker 0's SSP wait for the woken worker", done)
	for it := range 4 {
		if err := call(opClock, 1, int64(it), -1); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, "worker 0's SSP wait after worker 1 caught up", done)
}

// TestObserverPullAfterCancelledCall: a call cut short by its context
// (Ctrl-C during an SSP wait) leaves the client's connection unusable;
// an observer's pull, the snapshot of the center that follows, still
// gets the center's weights over a fresh connection, while a worker's
// pull reports the broken connection.
func TestObserverPullAfterCancelledCall(t *testing.T) {
	w0 := weights(6, 1)
	srv, _ := serve(t, newLocal(t, 2, w0), ServerConfig{})
	c := dial(t, srv.Addr(), ClientConfig{})
	if _, err := c.Join(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Clock(ctx, 0, 5, 0) // waits for worker 1, which never comes
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled wait returned no error")
	}
	buf := make([]float32, 6)
	if err := c.Pull(context.Background(), 0, buf); err == nil {
		t.Fatal("a worker's pull over the broken connection succeeded; the test shows nothing")
	}
	if err := c.Pull(context.Background(), center.Observer, buf); err != nil {
		t.Fatalf("observer's pull after a cancelled call: %v", err)
	}
	for i := range buf {
		if buf[i] != w0[i] {
			t.Fatalf("observer pulled %v, want the center %v", buf, w0)
		}
	}
}

// TestPullFinalWaitsForEveryWorker: the final model is the center once no
// worker is present: PullFinal answers only after the last worker has
// left, with that worker's last push in it.
func TestPullFinalWaitsForEveryWorker(t *testing.T) {
	ctx := context.Background()
	w0 := weights(5, 0)
	srv, _ := serve(t, newLocal(t, 2, w0), ServerConfig{})
	a, b, obs := dial(t, srv.Addr(), ClientConfig{}), dial(t, srv.Addr(), ClientConfig{}), dial(t, srv.Addr(), ClientConfig{})
	for w, c := range []*Client{a, b} {
		if _, err := c.Join(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Leave(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 5)
	done := make(chan error, 1)
	go func() { done <- obs.PullFinal(ctx, got) }()
	select {
	case err := <-done:
		t.Fatalf("PullFinal answered (%v) while worker 1 was still present", err)
	case <-time.After(100 * time.Millisecond):
	}
	delta := []float32{1, 1, 1, 1, 1}
	if err := b.Push(ctx, 1, delta); err != nil {
		t.Fatal(err)
	}
	if err := b.Leave(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != w0[i]+1 {
			t.Fatalf("final weights %v, want the initial %v plus worker 1's last push", got, w0)
		}
	}
}
