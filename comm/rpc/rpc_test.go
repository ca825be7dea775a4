package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/wire"
)

const (
	opEcho  = 1 // Ints reversed, Floats[0] = sum(Data), Data doubled, Text upper-cased
	opFail  = 2 // returns an error
	opSleep = 3 // sleeps Ints[0] milliseconds
	opPanic = 4
)

func handler(ctx context.Context, req *Request, resp *Response) error {
	switch req.Op {
	case opEcho:
		for i, v := range req.Ints {
			resp.Ints[NumInts-1-i] = v
		}
		buf := resp.Buffer(len(req.Data))
		var s float64
		for i, v := range req.Data {
			s += float64(v)
			buf[i] = 2 * v
		}
		resp.Floats[0], resp.Floats[1] = s, req.Floats[0]
		resp.Text = strings.ToUpper(req.Text)
		resp.Data = buf
	case opFail:
		return fmt.Errorf("boom %d", req.Ints[0])
	case opSleep:
		select {
		case <-time.After(time.Duration(req.Ints[0]) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	case opPanic:
		panic("handler bug")
	default:
		return fmt.Errorf("unknown op %d", req.Op)
	}
	return nil
}

// errLog collects the errors a server reports.
type errLog struct {
	mu   sync.Mutex
	errs []error
	ch   chan error
}

func newErrLog() *errLog { return &errLog{ch: make(chan error, 100)} }

func (l *errLog) log(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
	l.ch <- err
}

// wait returns the next logged error, failing the test after 5 s.
func (l *errLog) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-l.ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no error logged by the server")
		return nil
	}
}

const testToken = "secret"

func startServer(t *testing.T, cfg Config) (*Server, *errLog) {
	t.Helper()
	log := newErrLog()
	cfg.ErrorLog = log.log
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	srv, err := Listen("127.0.0.1:0", cfg, handler)
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
	return srv, log
}

func dial(t *testing.T, addr string, cfg Config) *Client {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	cl, err := Dial(context.Background(), addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// echo calls opEcho with n floats and checks the answer.
func echo(t testing.TB, cl *Client, n int, text string, resp *Response) {
	req := Request{Op: opEcho, Ints: [NumInts]int64{1, -2, 3, 1 << 40}, Floats: [NumFloats]float64{0.5, 0}, Text: text, Data: make([]float32, n)}
	var want float64
	for i := range req.Data {
		req.Data[i] = float32(i%7) - 3
		want += float64(req.Data[i])
	}
	if err := cl.Call(context.Background(), &req, resp); err != nil {
		t.Fatal(err)
	}
	if resp.Ints != [NumInts]int64{1 << 40, 3, -2, 1} || resp.Floats != [NumFloats]float64{want, 0.5} || resp.Text != strings.ToUpper(text) {
		t.Fatalf("echo of %d floats: got ints %v floats %v text %q", n, resp.Ints, resp.Floats, resp.Text)
	}
	if len(resp.Data) != n {
		t.Fatalf("echo of %d floats: got %d", n, len(resp.Data))
	}
	for i, v := range resp.Data {
		if v != 2*req.Data[i] {
			t.Fatalf("echo: data[%d] = %v, want %v", i, v, 2*req.Data[i])
		}
	}
}

func TestRoundTrip(t *testing.T) {
	srv, _ := startServer(t, Config{})
	cl := dial(t, srv.Addr(), Config{})
	for _, tc := range []struct {
		n    int
		text string
	}{
		{0, ""}, {1, "key"}, {100, ""}, {smallPayload/4 + 1, "big"}, {100000, strings.Repeat("x", 1000)}, {3, ""},
	} {
		var resp Response
		echo(t, cl, tc.n, tc.text, &resp)
	}
}

func TestResponseBufferReused(t *testing.T) {
	srv, _ := startServer(t, Config{})
	cl := dial(t, srv.Addr(), Config{})
	dst := make([]float32, 64)
	resp := Response{Data: dst[:0]}
	echo(t, cl, 50, "", &resp)
	if &resp.Data[0] != &dst[0] {
		t.Fatal("the payload did not land in the caller's buffer")
	}
	echo(t, cl, 100, "", &resp) // too big: a new slice
	if len(resp.Data) != 100 {
		t.Fatalf("len %d", len(resp.Data))
	}
}

func TestConcurrentClients(t *testing.T) {
	srv, _ := startServer(t, Config{})
	shared := dial(t, srv.Addr(), Config{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := shared
			if g%2 == 0 {
				cl = dial(t, srv.Addr(), Config{})
			}
			var resp Response
			for i := range 30 {
				echo(t, cl, 10*g+i, fmt.Sprint("k", g), &resp)
			}
		}()
	}
	wg.Wait()
}

func TestWrongToken(t *testing.T) {
	srv, log := startServer(t, Config{})
	_, err := Dial(context.Background(), srv.Addr(), Config{Token: "guess"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "wrong token") || !strings.Contains(err.Error(), srv.Addr()) {
		t.Fatalf("Dial with a wrong token: %v", err)
	}
	if err := log.wait(t); !strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("server logged %v", err)
	}
	dial(t, srv.Addr(), Config{}) // the right token still works
}

func TestRemoteError(t *testing.T) {
	srv, _ := startServer(t, Config{})
	cl := dial(t, srv.Addr(), Config{})
	for _, tc := range []struct {
		op   uint32
		want string
	}{{opFail, "boom 7"}, {opPanic, "handler bug"}, {99, "unknown op 99"}} {
		err := cl.Call(context.Background(), &Request{Op: tc.op, Ints: [NumInts]int64{7}}, &Response{})
		var re *RemoteError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.Addr()) {
			t.Fatalf("op %d: %v", tc.op, err)
		}
	}
	echo(t, cl, 10, "", &Response{}) // still usable
}

// rawConn dials addr and says hello, for tests that send broken frames.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	deadline := time.Now().Add(5 * time.Second)
	if err := clientHello(c, Config{Token: testToken}, deadline); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBadFramesCloseOneConnection(t *testing.T) {
	header := func(kind wire.Kind, n uint64, seq uint64) []byte {
		return wire.AppendHeader(nil, wire.Header{Kind: kind, Tag: opEcho, Len: n, Seq: seq})
	}
	body := func(status byte, textLen uint32) []byte {
		b := make([]byte, fixedSize)
		b[0] = status
		b[4] = byte(textLen)
		b[5] = byte(textLen >> 8)
		b[6] = byte(textLen >> 16)
		b[7] = byte(textLen >> 24)
		return b
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
		want  string
		close bool // the client vanishes after sending
	}{
		{"oversize", header(wire.KindBytes, 1<<20, 1), "too large", false},
		{"garbage", []byte("GET / HTTP/1.1\r\n\r\nxxxxxxxxxxxxxx"), "magic", false},
		{"float kind", header(wire.KindFloat32, fixedSize, 1), "message was expected", false},
		{"bad seq", cat(header(wire.KindBytes, fixedSize, 5), body(0, 0)), "frame number 5", false},
		{"short body", header(wire.KindBytes, 8, 1), "shorter", false},
		{"text past end", cat(header(wire.KindBytes, fixedSize+4, 1), body(0, 8), make([]byte, 4)), "text of 8 bytes", false},
		{"odd payload", cat(header(wire.KindBytes, fixedSize+3, 1), body(0, 0), make([]byte, 3)), "whole number", false},
		{"response status", cat(header(wire.KindBytes, fixedSize, 1), body(statusOK, 0)), "status 1", false},
		{"vanish in header", header(wire.KindBytes, 4000, 1)[:10], "unexpected EOF", true},
		{"vanish in payload", cat(header(wire.KindBytes, fixedSize+4000, 1), body(0, 0), make([]byte, 100)), "unexpected EOF", true},
		{"stall in payload", cat(header(wire.KindBytes, fixedSize+4000, 1), body(0, 0), make([]byte, 100)), "timeout", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, log := startServer(t, Config{MaxFrame: 64 << 10, Timeout: 300 * time.Millisecond})
			good := dial(t, srv.Addr(), Config{})
			c := rawConn(t, srv.Addr())
			if _, err := c.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if tc.close {
				c.Close()
			}
			err := log.wait(t)
			if !strings.Contains(err.Error(), c.LocalAddr().String()) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("server logged %q; want the peer %s and %q", err, c.LocalAddr(), tc.want)
			}
			// The other client, and a new one, are still served.
			echo(t, good, 10, "", &Response{})
			echo(t, dial(t, srv.Addr(), Config{}), 10, "", &Response{})
		})
	}
}

func TestOversizeCall(t *testing.T) {
	srv, log := startServer(t, Config{MaxFrame: 64 << 10})
	small := dial(t, srv.Addr(), Config{MaxFrame: 64 << 10})
	// Refused by the client itself; the connection stays usable.
	err := small.Call(context.Background(), &Request{Op: opEcho, Data: make([]float32, 20000)}, &Response{})
	if err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("oversize request: %v", err)
	}
	echo(t, small, 10, "", &Response{})

	// A client with a bigger limit sends it: the server closes that
	// connection, and the client's next call fails.
	big := dial(t, srv.Addr(), Config{})
	if err := big.Call(context.Background(), &Request{Op: opEcho, Data: make([]float32, 20000)}, &Response{}); err == nil {
		t.Fatal("oversize request accepted")
	}
	if err := log.wait(t); !strings.Contains(err.Error(), "too large") {
		t.Fatalf("server logged %v", err)
	}
	if err := big.Call(context.Background(), &Request{Op: opEcho}, &Response{}); err == nil {
		t.Fatal("call on a connection the server closed succeeded")
	}
	echo(t, small, 10, "", &Response{})
}

// TestServerNeverAnswers checks the client's deadline against a server
// that says hello and then goes silent.
func TestServerNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		d := time.Now().Add(5 * time.Second)
		if _, err := readControl(c, 0, d, maxControl); err != nil {
			return
		}
		writeControl(c, wire.Welcome{}, 0, d)
		time.Sleep(3 * time.Second) // read the request, never answer
	}()
	timeout := 200 * time.Millisecond
	cl := dial(t, ln.Addr().String(), Config{Timeout: timeout})
	start := time.Now()
	err = cl.Call(context.Background(), &Request{Op: opEcho, Data: make([]float32, 10)}, &Response{})
	took := time.Since(start)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("call to a silent server: %v", err)
	}
	if took < timeout || took > timeout+time.Second {
		t.Fatalf("call gave up after %v, timeout %v", took, timeout)
	}
	if err2 := cl.Call(context.Background(), &Request{Op: opEcho}, &Response{}); err2 == nil {
		t.Fatal("a broken client made a call")
	}
}

// TestKeepAlive checks that a handler running for several timeouts is
// waited for, thanks to the server's keep-alives.
func TestKeepAlive(t *testing.T) {
	// The handler sleeps four timeouts; the timeout is long enough that a
	// loaded machine still delivers the keep-alives within it.
	timeout := 400 * time.Millisecond
	srv, _ := startServer(t, Config{Timeout: timeout})
	cl := dial(t, srv.Addr(), Config{Timeout: timeout})
	if err := cl.Call(context.Background(), &Request{Op: opSleep, Ints: [NumInts]int64{1600}}, &Response{}); err != nil {
		t.Fatal(err)
	}
	echo(t, cl, 5, "", &Response{})
}

func TestContextCancel(t *testing.T) {
	srv, _ := startServer(t, Config{})
	cl := dial(t, srv.Addr(), Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := cl.Call(ctx, &Request{Op: opSleep, Ints: [NumInts]int64{5000}}, &Response{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled call: %v after %v", err, time.Since(start))
	}
	if err := cl.Call(context.Background(), &Request{Op: opEcho}, &Response{}); err == nil {
		t.Fatal("call after a cancelled one succeeded on a possibly desynchronised connection")
	}
}

func TestListenAddress(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		want    string
		wantErr bool
	}{{":0", "127.0.0.1:", false}, {"", "127.0.0.1:", false}, {"127.0.0.1:0", "127.0.0.1:", false}, {"nonsense", "", true}} {
		srv, err := Listen(tc.addr, Config{}, handler)
		if tc.wantErr {
			if err == nil {
				srv.Close()
				t.Fatalf("Listen(%q) succeeded", tc.addr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(srv.Addr(), tc.want) {
			t.Errorf("Listen(%q) listens on %s", tc.addr, srv.Addr())
		}
		srv.Close()
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Timeout: -1}, {MaxFrame: 10}} {
		if _, err := Listen("", cfg, handler); err == nil {
			t.Errorf("Listen with %+v succeeded", cfg)
		}
		if _, err := Dial(context.Background(), "127.0.0.1:1", cfg); err == nil || !strings.HasPrefix(err.Error(), "rpc: ") {
			t.Errorf("Dial with %+v: %v", cfg, err)
		}
	}
}

func TestCloseEndsServe(t *testing.T) {
	srv, err := Listen("", Config{Token: testToken}, handler)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	cl := dial(t, srv.Addr(), Config{})
	echo(t, cl, 3, "", &Response{})
	// A handler blocked in a long wait does not hold Serve up.
	blocked := dial(t, srv.Addr(), Config{})
	go blocked.Call(context.Background(), &Request{Op: opSleep, Ints: [NumInts]int64{60000}}, &Response{})
	time.Sleep(50 * time.Millisecond)
	srv.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if err := cl.Call(context.Background(), &Request{Op: opEcho}, &Response{}); err == nil {
		t.Fatal("call to a closed server succeeded")
	}
}

func TestCallAllocs(t *testing.T) {
	srv, _ := startServer(t, Config{})
	cl := dial(t, srv.Addr(), Config{})
	req := Request{Op: opEcho, Text: "key", Data: make([]float32, 10000)}
	resp := Response{Data: make([]float32, 10000)}
	ctx := context.Background()
	call := func() {
		if err := cl.Call(ctx, &req, &resp); err != nil {
			t.Fatal(err)
		}
	}
	call()
	// The handler upper-cases the text (one allocation); the rest of the
	// round trip, on both ends, allocates nothing.
	if n := testing.AllocsPerRun(50, call); n > 2 {
		t.Fatalf("%v allocations per call", n)
	}
}

func BenchmarkCall(b *testing.B) {
	srv, err := Listen("", Config{Token: testToken}, handler)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()
	cl, err := Dial(context.Background(), srv.Addr(), Config{Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	req := Request{Op: opEcho, Data: make([]float32, 1<<16)}
	resp := Response{Data: make([]float32, 1<<16)}
	b.SetBytes(2 * 4 << 16)
	b.ReportAllocs()
	for b.Loop() {
		if err := cl.Call(context.Background(), &req, &resp); err != nil {
			b.Fatal(err)
		}
	}
}
