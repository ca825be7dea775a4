package rpc

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// lateCancel is a client connection on which a call's context ends
// inside the read that brings the answer, and the cancellation's forced
// deadline (SetDeadline in the past, from its own goroutine) is held back
// until the connection's next write, or 100 ms: the schedule of a loaded
// machine, made certain.
type lateCancel struct {
	net.Conn
	cancel  context.CancelFunc // ends the armed call's context in its answer's read
	fired   bool               // cancel was called and its deadline not yet seen applied
	entered chan struct{}      // the forced deadline is being set
	release chan struct{}
	applied chan struct{} // closed once it is set
}

func (c *lateCancel) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.cancel != nil {
		c.cancel()
		c.cancel, c.fired = nil, true
	}
	return n, err
}

func (c *lateCancel) SetDeadline(t time.Time) error {
	if t.Before(time.Unix(2, 0)) {
		c.entered <- struct{}{}
		select {
		case <-c.release:
		case <-time.After(100 * time.Millisecond):
		}
		err := c.Conn.SetDeadline(t)
		close(c.applied)
		return err
	}
	return c.Conn.SetDeadline(t)
}

func (c *lateCancel) Write(p []byte) (int, error) {
	if c.fired {
		c.fired = false
		select {
		case <-c.applied: // the call waited for its cancellation
		case <-c.entered: // it did not: the deadline lands now
			c.release <- struct{}{}
			<-c.applied
		}
	}
	return c.Conn.Write(p)
}

// TestDeadlineAtTheAnswer: a call whose context ends just as its answer
// is read must not leave its forced deadline to the next call. Before
// the fix, Call returned while the cancellation's goroutine had still to
// set the connection's deadline in the past; the next call (with no
// deadline of its own) then failed with a bare "i/o timeout", which smb's
// TestCenterSSP hit under load (its polls end their contexts as the
// server answers).
func TestDeadlineAtTheAnswer(t *testing.T) {
	srv, _ := startServer(t, Config{})
	cl := dial(t, srv.Addr(), Config{})
	lc := &lateCancel{Conn: cl.c, entered: make(chan struct{}, 1), release: make(chan struct{}, 1), applied: make(chan struct{})}
	cl.c, cl.rd.r = lc, bufio.NewReaderSize(lc, 64<<10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lc.cancel = cancel
	req := Request{Op: opEcho, Ints: [NumInts]int64{7}}
	var resp Response
	if err := cl.Call(ctx, &req, &resp); err != nil || resp.Ints[NumInts-1] != 7 {
		t.Fatalf("call answered as its context ended: %v, %v", resp.Ints, err)
	}
	if lc.cancel != nil {
		t.Fatal("the context was not ended in the answer's read")
	}
	if err := cl.Call(context.Background(), &req, &resp); err != nil {
		t.Fatalf("the next call, without a deadline: %v", err)
	}
	echo(t, cl, 5, "after", &resp)
}
