package netguard

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// flakyListener fails its first n Accepts with err, then accepts from the
// real listener.
type flakyListener struct {
	net.Listener
	n   atomic.Int32
	err error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

func TestAcceptRetriesResourceErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"EMFILE", &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}},
		{"ENFILE", &net.OpError{Op: "accept", Net: "tcp", Err: syscall.ENFILE}},
		{"ECONNABORTED", &net.OpError{Op: "accept", Net: "tcp", Err: syscall.ECONNABORTED}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fl := &flakyListener{Listener: ln, err: tc.err}
			fl.n.Store(4)
			go func() {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err == nil {
					defer c.Close()
					time.Sleep(time.Second)
				}
			}()
			var logged []error
			c, err := Accept(fl, func(err error) { logged = append(logged, err) })
			if err != nil {
				t.Fatalf("Accept gave up on %v: %v", tc.err, err)
			}
			c.Close()
			if len(logged) != 1 || !errors.Is(logged[0], tc.err.(*net.OpError).Err) {
				t.Errorf("logged %v, want the error once per burst", logged)
			}
		})
	}
}

func TestAcceptEndsOnClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Accept(ln, nil)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not return after the listener closed")
	}
}

func TestPendingEvictsOldest(t *testing.T) {
	p := NewPending(3)
	var conns []net.Conn
	var peers []net.Conn
	for range 5 {
		a, b := net.Pipe()
		conns = append(conns, a)
		peers = append(peers, b)
		p.Add(a)
	}
	if p.Len() != 3 || p.Evicted() != 2 {
		t.Fatalf("Len %d Evicted %d, want 3 and 2", p.Len(), p.Evicted())
	}
	// The two oldest are closed: their peers read EOF at once.
	for i, b := range peers {
		b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := b.Read(make([]byte, 1))
		closed := err != nil && !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err)
		if want := i < 2; closed != want {
			t.Errorf("conn %d: closed %v (%v), want %v", i, closed, err, want)
		}
	}
	if p.Done(conns[0]) {
		t.Error("Done on an evicted connection reported it present")
	}
	if !p.Done(conns[4]) || p.Len() != 2 {
		t.Errorf("Done on a waiting connection: Len %d, want 2", p.Len())
	}
	for _, c := range append(conns, peers...) {
		c.Close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7077": true, "localhost:1": true, "[::1]:80": true, "127.8.9.1:0": true,
		"0.0.0.0:7077": false, ":7077": false, "10.0.0.1:1": false, "[::]:1": false, "example.com:1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
