package faulty_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/faulty"
	"dsgd/comm/transport/transporttest"
)

// The wrappers with no rule set are a conforming transport.
func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return faulty.New(transport.NewInproc(size)).Endpoints()
	})
}

func isCut(err error, rank int) bool {
	var pe *transport.PeerError
	return errors.As(err, &pe) && pe.Rank == rank && errors.Is(err, faulty.ErrCut)
}

func recvTag(ep transport.Endpoint, from int, tag uint32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return ep.Recv(ctx, from, tag, make([]float32, 2))
}

func TestDrop(t *testing.T) {
	nw := faulty.New(transport.NewInproc(3))
	eps := nw.Endpoints()
	nw.Drop(1, 0, faulty.Nth(1))
	nw.Drop(2, 0, faulty.Tag(7))
	ctx := context.Background()
	go func() {
		for tag := range uint32(3) {
			if err := eps[1].Send(ctx, 0, tag, []float32{1, 2}); err != nil {
				t.Error(err)
			}
		}
		eps[2].Send(ctx, 0, 7, []float32{1, 2})
		eps[2].Send(ctx, 0, 8, []float32{1, 2})
	}()
	for _, tag := range []uint32{0, 2} {
		if err := recvTag(eps[0], 1, tag, 5*time.Second); err != nil {
			t.Fatalf("tag %d: %v", tag, err)
		}
	}
	if err := recvTag(eps[0], 2, 8, 5*time.Second); err != nil {
		t.Fatalf("2->0: %v", err)
	}
	// Nothing more comes: the drop is seen as a timeout.
	if err := recvTag(eps[0], 1, 1, 30*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv of a dropped message: %v", err)
	}
	if d := nw.Dropped(1, 0); d != 1 {
		t.Errorf("Dropped(1, 0) = %d", d)
	}
	if d := nw.Dropped(2, 0); d != 1 {
		t.Errorf("Dropped(2, 0) = %d", d)
	}
}

func TestDropRandomIsSeeded(t *testing.T) {
	count := func() int64 {
		nw := faulty.New(transport.NewInproc(2))
		nw.Drop(0, 1, faulty.Random(0.5, rand.New(rand.NewPCG(7, 7))))
		eps := nw.Endpoints()
		for range 100 {
			// Sends that are not dropped block: bound them.
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			eps[0].Send(ctx, 1, 0, nil)
			cancel()
		}
		return nw.Dropped(0, 1)
	}
	a, b := count(), count()
	if a != b || a < 30 || a > 70 {
		t.Fatalf("dropped %d then %d of 100 with p=0.5 and the same seed", a, b)
	}
}

func TestDelay(t *testing.T) {
	nw := faulty.New(transport.NewInproc(2))
	eps := nw.Endpoints()
	nw.Delay(0, 1, 40*time.Millisecond)
	go recvTag(eps[1], 0, 0, 5*time.Second)
	start := time.Now()
	if err := eps[0].Send(context.Background(), 1, 0, []float32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("delayed Send took %v", d)
	}
	// The delay honours ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := eps[0].Send(ctx, 1, 0, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send cancelled during its delay: %v", err)
	}
}

func TestCut(t *testing.T) {
	nw := faulty.New(transport.NewInproc(3))
	eps := nw.Endpoints()
	nw.Cut(1, 0, 2)
	ctx := context.Background()
	sent := make(chan error, 3)
	go func() {
		for tag := range uint32(3) {
			sent <- eps[1].Send(ctx, 0, tag, []float32{1, 2})
		}
	}()
	for tag := range uint32(2) {
		if err := recvTag(eps[0], 1, tag, 5*time.Second); err != nil {
			t.Fatalf("message %d before the cut: %v", tag, err)
		}
		if err := <-sent; err != nil {
			t.Fatalf("Send %d before the cut: %v", tag, err)
		}
	}
	if err := <-sent; !isCut(err, 0) {
		t.Fatalf("Send after the cut: %v", err)
	}
	if err := recvTag(eps[0], 1, 2, 5*time.Second); !isCut(err, 1) {
		t.Fatalf("Recv after the cut: %v", err)
	}
	// Both ways.
	if err := eps[0].Send(ctx, 1, 0, nil); !isCut(err, 1) {
		t.Fatalf("Send the other way: %v", err)
	}
	if err := recvTag(eps[1], 0, 0, 5*time.Second); !isCut(err, 0) {
		t.Fatalf("Recv the other way: %v", err)
	}
	// Other pairs are unaffected.
	go eps[2].Send(ctx, 0, 5, []float32{1, 2})
	if err := recvTag(eps[0], 2, 5, 5*time.Second); err != nil {
		t.Fatalf("2->0 after the 1-0 cut: %v", err)
	}
}

// TestCutUnblocksReceiver checks that a Recv waiting when the link is cut
// fails at once.
func TestCutUnblocksReceiver(t *testing.T) {
	nw := faulty.New(transport.NewInproc(2))
	eps := nw.Endpoints()
	nw.Cut(0, 1, 0)
	errc := make(chan error, 1)
	go func() { errc <- recvTag(eps[1], 0, 0, 10*time.Second) }()
	time.Sleep(10 * time.Millisecond)
	if err := eps[0].Send(context.Background(), 1, 0, []float32{1, 2}); !isCut(err, 1) {
		t.Fatalf("Send: %v", err)
	}
	select {
	case err := <-errc:
		if !isCut(err, 0) {
			t.Fatalf("blocked Recv: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked Recv not released by the cut")
	}
}

func TestConnCorruptAfter(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := faulty.WrapConn(a)
	c.CorruptAfter(4, rand.New(rand.NewPCG(1, 1)))
	go func() {
		c.Write([]byte("abcdefgh"))
		c.Write([]byte("ij"))
		c.Close()
	}()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	want := []byte("abcd")
	for range 6 {
		want = append(want, byte(rng.Uint32()))
	}
	if string(got) != string(want) {
		t.Fatalf("read % x, want % x", got, want)
	}
}

func TestConnBreakAfter(t *testing.T) {
	a, b := net.Pipe()
	c := faulty.WrapConn(a)
	go func() {
		if n, err := c.Write([]byte("ab")); n != 2 || err != nil {
			t.Errorf("write before arming: %d, %v", n, err)
		}
		c.BreakAfter(3)
		if n, err := c.Write([]byte("cdefg")); n != 3 || !errors.Is(err, faulty.ErrBroken) {
			t.Errorf("breaking write: %d, %v", n, err)
		}
	}()
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "abcde" {
		t.Fatalf("read %q, %v", got, err)
	}
}

type tcpLayer struct{}

func (tcpLayer) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
func (tcpLayer) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func TestStreamWrapsConns(t *testing.T) {
	s := &faulty.Stream{Inner: tcpLayer{}}
	ln, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	d, err := s.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := <-accepted
	defer a.Close()
	conns := s.Conns()
	if len(conns) != 2 || net.Conn(conns[0]) != d && net.Conn(conns[1]) != d {
		t.Fatalf("Conns() = %v", conns)
	}
	d.(*faulty.Conn).BreakAfter(1)
	if _, err := d.Write([]byte("xy")); !errors.Is(err, faulty.ErrBroken) {
		t.Fatalf("write through a broken stream conn: %v", err)
	}
	if b, _ := io.ReadAll(a); string(b) != "x" {
		t.Fatalf("peer read %q", b)
	}
}
