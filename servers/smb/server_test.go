package smb

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"dsgd/comm/rpc"
	"dsgd/comm/wire"
)

// startServer serves a fresh store on a loopback port until the test ends.
func startServer(t testing.TB, store *Store, cfg Config) *Server {
	t.Helper()
	srv, err := Listen("", store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

func dialTest(t testing.TB, addr string, cfg Config) *Client {
	t.Helper()
	cl, err := Dial(context.Background(), addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func TestClient(t *testing.T) {
	buffersSuite(t, func(t *testing.T) Buffers {
		cfg := Config{Token: "tok", Timeout: 5 * time.Second, WaitSlice: 20 * time.Millisecond}
		srv := startServer(t, NewStore(0), cfg)
		return dialTest(t, srv.Addr(), cfg)
	})
}

// TestClientSmallFrames makes every read and write span several requests.
func TestClientSmallFrames(t *testing.T) {
	cfg := Config{Token: "tok", MaxFrame: requestOverhead + 64, Timeout: 5 * time.Second}
	srv := startServer(t, NewStore(0), cfg)
	cl := dialTest(t, srv.Addr(), cfg)
	if cl.chunk != 16 {
		t.Fatalf("chunk of %d values, want 16", cl.chunk)
	}
	ctx := context.Background()
	const n = 100
	mustCreate(t, cl, "big", n)
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i) + 0.5
	}
	if err := cl.Write(ctx, "big", 0, src); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := cl.Read(ctx, "big", 0, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, src) {
		t.Fatalf("read back %v, want %v", got, src)
	}
	// A long write that ends out of bounds writes none of its parts.
	bad := make([]float32, 50)
	for i := range bad {
		bad[i] = -1
	}
	err := cl.Write(ctx, "big", 60, bad)
	if !errors.Is(err, ErrBounds) || !strings.Contains(err.Error(), "50 values at offset 60") {
		t.Fatalf("out-of-bounds long write: %v", err)
	}
	if err := cl.Read(ctx, "big", 0, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, src) {
		t.Fatalf("after a refused write: %v, want %v", got, src)
	}
	// A long read past the end says so with the whole read's extent.
	if err := cl.Read(ctx, "big", 10, make([]float32, 91)); !errors.Is(err, ErrBounds) || !strings.Contains(err.Error(), "91 values at offset 10") {
		t.Fatalf("out-of-bounds long read: %v", err)
	}
}

func TestControlBits(t *testing.T) {
	cfg := Config{Token: "tok", Timeout: 5 * time.Second}
	srv := startServer(t, NewStore(0), cfg)
	cl := dialTest(t, srv.Addr(), cfg)
	ctx := context.Background()
	vals := []int64{0, -1, 1, math.MaxInt64, math.MinInt64, 0x7fc00001_7f800001, -0x0040_0000_0000_0001, 0xffffffff, 1 << 32}
	if _, err := cl.CreateControl(ctx, len(vals)); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteControl(ctx, 0, vals); err != nil {
		t.Fatal(err)
	}
	got := make([]int64, len(vals))
	if _, err := cl.ReadControl(ctx, 0, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, vals) {
		t.Fatalf("control slots came back %x, want %x", got, vals)
	}
	if _, err := srv.store.ReadControl(ctx, 0, got); err != nil || !slices.Equal(got, vals) {
		t.Fatalf("the store holds %x, %v; want %x", got, err, vals)
	}
}

func TestWrongToken(t *testing.T) {
	srv := startServer(t, NewStore(0), Config{Token: "right"})
	_, err := Dial(context.Background(), srv.Addr(), Config{Token: "wrong"})
	if !errors.Is(err, rpc.ErrRefused) {
		t.Fatalf("Dial with a wrong token: %v, want ErrRefused", err)
	}
}

// TestServerSurvivesBadClients: garbage, a client that vanishes
// mid-message and a cancelled wait leave the server serving others.
func TestServerSurvivesBadClients(t *testing.T) {
	cfg := Config{Token: "tok", Timeout: 2 * time.Second}
	srv := startServer(t, NewStore(0), cfg)
	ctx := context.Background()

	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	c.Close()

	// A client that says hello, announces a big request and vanishes
	// halfway through it.
	c, err = net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Hello{Version: rpc.Version, Token: "tok"}.AppendBinary(make([]byte, wire.HeaderSize))
	if err != nil {
		t.Fatal(err)
	}
	wire.PutHeader(b, wire.Header{Kind: wire.KindControl, Len: uint64(len(b) - wire.HeaderSize)})
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	var hdr [wire.HeaderSize]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil { // the Welcome's header
		t.Fatal(err)
	}
	wire.PutHeader(hdr[:], wire.Header{Kind: wire.KindBytes, Tag: opWrite, Len: 1 << 20, Seq: 1})
	c.Write(hdr[:])
	c.Write(make([]byte, 100))
	c.Close()

	cl := dialTest(t, srv.Addr(), cfg)
	mustCreate(t, cl, "k", 4)
	pc, err := cl.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = cl.Wait(wctx, "k", 0) // cancelled mid-call: that connection is dropped
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its deadline: %v", err)
	}
	pc.c.Close()
	cl.put(pc, errors.New("closed"))

	other := dialTest(t, srv.Addr(), cfg)
	if err := other.Write(ctx, "k", 0, []float32{1, 2, 3, 4}); err != nil {
		t.Fatalf("after bad clients: %v", err)
	}
	// The first client's pool redials.
	got := make([]float32, 4)
	if err := cl.Read(ctx, "k", 0, got); err != nil || got[3] != 4 {
		t.Fatalf("Read after a dropped connection = %v, %v", got, err)
	}
}

// TestClientAllocs: steady-state reads, writes and accumulates over a
// warm client allocate only what the rpc layer does.
func TestClientAllocs(t *testing.T) {
	cfg := Config{Token: "tok", Timeout: 5 * time.Second}
	srv := startServer(t, NewStore(0), cfg)
	cl := dialTest(t, srv.Addr(), cfg)
	ctx := context.Background()
	mustCreate(t, cl, "g", 1024)
	buf := make([]float32, 1024)
	allocs := testing.AllocsPerRun(50, func() {
		if err := cl.Write(ctx, "g", 0, buf); err != nil {
			t.Fatal(err)
		}
		if err := cl.Read(ctx, "g", 0, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Errorf("%v allocations per write+read, want at most 4", allocs)
	}
}
