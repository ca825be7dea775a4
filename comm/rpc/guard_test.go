package rpc

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dsgd/comm/wire"
)

// emfileListener fails Accept with EMFILE while fail is set, as a server
// out of file descriptors does.
type emfileListener struct {
	net.Listener
	fail  atomic.Bool
	tries atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.fail.Load() {
		l.tries.Add(1)
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestServeSurvivesEMFILE: running out of file descriptors pauses the
// accept loop (logged once) and the server serves again once they free.
func TestServeSurvivesEMFILE(t *testing.T) {
	log := newErrLog()
	srv, err := Listen("127.0.0.1:0", Config{Token: testToken, ErrorLog: log.log}, handler)
	if err != nil {
		t.Fatal(err)
	}
	el := &emfileListener{Listener: srv.ln}
	el.fail.Store(true)
	srv.ln = el
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Serve ended on EMFILE: %v", err)
	default:
	}
	if err := log.wait(t); err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Errorf("logged %v, want the accept error", err)
	}
	if n := el.tries.Load(); n < 3 || n > 60 {
		t.Errorf("%d accept attempts in 200 ms: want a back-off, neither a give-up nor a spin", n)
	}
	el.fail.Store(false)
	cl := dial(t, srv.Addr(), Config{})
	echo(t, cl, 10, "", &Response{})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestHelloBounded: a stranger announcing a large hello frame is refused
// before anything is allocated for it.
func TestHelloBounded(t *testing.T) {
	srv, log := startServer(t, Config{})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(wire.AppendHeader(nil, wire.Header{Kind: wire.KindControl, Len: 200 << 10}))
	if err := log.wait(t); err == nil || !strings.Contains(err.Error(), "hello") {
		t.Fatalf("logged %v, want the oversized hello refused", err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stayed open after an oversized hello")
	}
}

// TestPendingBounded: strangers that connect and say nothing cannot crowd
// out a real client: past MaxPending the oldest is closed.
func TestPendingBounded(t *testing.T) {
	srv, _ := startServer(t, Config{MaxPending: 8})
	var idle []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	cl := dial(t, srv.Addr(), Config{})
	echo(t, cl, 10, "", &Response{})
	open := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
	}
	if open > 8 {
		t.Errorf("%d silent connections still open, want at most MaxPending 8", open)
	}
}

// TestTokenNeededOffLoopback: a server that would listen on every
// interface refuses to start without a token.
func TestTokenNeededOffLoopback(t *testing.T) {
	if _, err := Listen("0.0.0.0:0", Config{}, handler); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("Listen on 0.0.0.0 without a token: %v, want a refusal naming the token", err)
	}
	srv, err := Listen("127.0.0.1:0", Config{}, handler)
	if err != nil {
		t.Fatalf("Listen on loopback without a token: %v", err)
	}
	srv.Close()
	srv, err = Listen("0.0.0.0:0", Config{Token: "t"}, handler)
	if err != nil {
		t.Fatalf("Listen on 0.0.0.0 with a token: %v", err)
	}
	srv.Close()
}
