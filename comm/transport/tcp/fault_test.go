package tcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/faulty"
	"dsgd/comm/wire"
)

// wantPeerError fails the test unless err is a PeerError naming rank whose
// message contains fragment.
func wantPeerError(t *testing.T, what string, err error, rank int, fragment string) {
	t.Helper()
	var pe *transport.PeerError
	if !errors.As(err, &pe) || pe.Rank != rank || !strings.Contains(err.Error(), fragment) {
		t.Fatalf("%s: %v (%T), want a PeerError naming rank %d containing %q", what, err, err, rank, fragment)
	}
}

// recvWithin runs a Recv of n floats from rank from and fails the test if
// it is still blocked after d.
func recvWithin(t *testing.T, ep transport.Endpoint, from, n int, d time.Duration) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- ep.Recv(context.Background(), from, 0, make([]float32, n)) }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		t.Fatalf("Recv on rank %d from rank %d still blocked after %v", ep.Rank(), from, d)
		return nil
	}
}

const (
	helperEnv    = "DSGD_TCP_TEST_HELPER_RENDEZVOUS"
	helperShmEnv = "DSGD_TCP_TEST_HELPER_SHM"
	helperDirEnv = "DSGD_TCP_TEST_HELPER_SHMDIR"
	// helperIdleEnv set: the helper joins and then idles instead of
	// sending (TestHostGroupPeerKilled).
	helperIdleEnv = "DSGD_TCP_TEST_HELPER_IDLE"
)

// TestHelperRank is not a test: it is rank 2 of TestPeerProcessKilled,
// run in a child process. It joins the group and starts sending a message
// larger than the socket buffers to rank 0, which does not read: the
// parent kills it mid-message.
func TestHelperRank(t *testing.T) {
	addr := os.Getenv(helperEnv)
	if addr == "" {
		t.Skip("the child process of TestPeerProcessKilled")
	}
	mode, err := ParseShm(os.Getenv(helperShmEnv))
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(3)
	}
	ep, err := Connect(context.Background(), Config{Rank: 2, Size: 3, Rendezvous: addr, Token: "test-token", ModelHash: 0xabc, Timeout: testTimeout, Shm: mode, ShmDir: os.Getenv(helperDirEnv)})
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(3)
	}
	fmt.Println("sending")
	if os.Getenv(helperIdleEnv) != "" {
		time.Sleep(time.Minute)
		os.Exit(4)
	}
	err = ep.Send(context.Background(), 0, 0, make([]float32, 64<<20/4))
	fmt.Println("sent:", err)
	os.Exit(4)
}

// TestPeerProcessKilled kills a rank's process in the middle of a
// message: the ranks that talk to it get a PeerError naming it at once.
func TestPeerProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	for _, mode := range []Shm{ShmAuto, ShmOff} {
		t.Run("shm="+mode.String(), func(t *testing.T) { testPeerProcessKilled(t, mode) })
	}
}

// testPeerProcessKilled is TestPeerProcessKilled with shared memory on
// (every pair of the group on this host uses it) or off.
func testPeerProcessKilled(t *testing.T, mode Shm) {
	cfgs := groupConfigs(t, 3, CompressNone)
	dir := t.TempDir() // the group's segments, to check none is left
	for i := range cfgs {
		cfgs[i].Shm, cfgs[i].ShmDir = mode, dir
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRank$")
	cmd.Env = append(os.Environ(), helperEnv+"="+cfgs[0].Rendezvous, helperShmEnv+"="+mode.String(), helperDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	eps, errs := connectAll(context.Background(), cfgs[:2])
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "sending" {
		t.Fatalf("helper said %q", lines.Text())
	}
	wantKind := "tcp"
	if mode == ShmAuto {
		wantKind = "shm"
	}
	if ls := transport.Links(eps[0]); len(ls) != 1 || ls[0].Kind != wantKind || ls[0].Peers != 2 {
		t.Fatalf("rank 0's links: %+v, want 2 peers over %s", ls, wantKind)
	}
	// Rank 1 waits on rank 2 while it dies.
	errc := make(chan error, 1)
	go func() { errc <- eps[1].Recv(context.Background(), 2, 0, make([]float32, 4)) }()
	time.Sleep(100 * time.Millisecond) // the helper fills the socket buffers
	cmd.Process.Kill()
	cmd.Wait()
	start := time.Now()
	err = recvWithin(t, eps[0], 2, 64<<20/4, testTimeout)
	var pe *transport.PeerError
	if !errors.As(err, &pe) || pe.Rank != 2 || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("rank 0: %v", err)
	}
	select {
	case err := <-errc:
		wantPeerError(t, "rank 1", err, 2, "connection closed")
	case <-time.After(testTimeout):
		t.Fatal("rank 1 still blocked on the dead rank 2")
	}
	// Seen from the closed connection, not from a deadline: every read
	// deadline here is testTimeout (a bound loose enough for a loaded
	// machine; the error kinds above say which path reported it).
	if d := time.Since(start); d >= testTimeout {
		t.Errorf("failures seen after %v, no sooner than a deadline", d)
	}
	t.Logf("rank 0: %v", err)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in the segment directory after kill -9: %v", len(left), left[0].Name())
	}
	// Ranks 0 and 1 still talk.
	go eps[0].Send(context.Background(), 1, 1, []float32{1})
	if err := eps[1].Recv(context.Background(), 0, 1, make([]float32, 1)); err != nil {
		t.Fatalf("0->1 after rank 2 died: %v", err)
	}
}

// faultyGroup connects a group of two in which rank 1's connections are
// *faulty.Conns, and returns rank 1's connection to rank 0.
func faultyGroup(t *testing.T) ([]transport.Endpoint, *faulty.Conn) {
	t.Helper()
	cfgs := groupConfigs(t, 2, CompressNone)
	cfgs[1].Stream = &faulty.Stream{Inner: cfgs[1].Stream}
	cfgs[0].Shm, cfgs[1].Shm = ShmOff, ShmOff // the faults are on the TCP stream
	eps, errs := connectAll(context.Background(), cfgs)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { eps[r].Close() })
	}
	return eps, eps[1].(*endpoint).peers[0].conn.(*faulty.Conn)
}

// TestConnectionBrokenMidMessage breaks a connection 1 MiB into an 8 MiB
// message: both sides get a PeerError.
func TestConnectionBrokenMidMessage(t *testing.T) {
	eps, conn := faultyGroup(t)
	conn.BreakAfter(1 << 20)
	sendErr := make(chan error, 1)
	go func() { sendErr <- eps[1].Send(context.Background(), 0, 0, make([]float32, 2<<20)) }()
	err := recvWithin(t, eps[0], 1, 2<<20, testTimeout)
	wantPeerError(t, "receiver", err, 1, "connection closed mid-message, after")
	wantPeerError(t, "sender", <-sendErr, 0, "connection broken")
	// Both sides stay failed.
	wantPeerError(t, "second Recv", eps[0].Recv(context.Background(), 1, 0, nil), 1, "unusable")
	wantPeerError(t, "second Send", eps[1].Send(context.Background(), 0, 0, nil), 0, "unusable")
}

// TestGarbageOnTheWire turns rank 1's output into garbage at the start of
// its second message: the first arrives, the second is a malformed frame.
func TestGarbageOnTheWire(t *testing.T) {
	eps, conn := faultyGroup(t)
	conn.CorruptAfter(wire.HeaderSize+4*10, rand.New(rand.NewPCG(3, 4)))
	go func() {
		eps[1].Send(context.Background(), 0, 0, make([]float32, 10))
		eps[1].Send(context.Background(), 0, 0, make([]float32, 1000))
	}()
	if err := recvWithin(t, eps[0], 1, 10, testTimeout); err != nil {
		t.Fatalf("first message: %v", err)
	}
	err := recvWithin(t, eps[0], 1, 1000, testTimeout)
	wantPeerError(t, "garbage", err, 1, "malformed frame")
}

// pipeEndpoint returns rank 0 of a group of two whose connection to rank
// 1 is a net.Pipe, and the pipe's other end, where the test plays rank 1.
func pipeEndpoint(t testing.TB, cfg Config) (*endpoint, net.Conn) {
	t.Helper()
	cfg.Rank, cfg.Size, cfg.Rendezvous, cfg.Token = 0, 2, "pipe:0", "test-token"
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	e := newEndpoint(&cfg, []net.Conn{nil, a})
	t.Cleanup(func() { e.Close(); b.Close() })
	return e, b
}

// TestHugeAnnouncedFrame has a peer announce a 100 GB payload: the
// receiver refuses it before allocating anything of that size.
func TestHugeAnnouncedFrame(t *testing.T) {
	for _, kind := range []wire.Kind{wire.KindBytes, wire.KindFloat32} {
		e, peer := pipeEndpoint(t, Config{})
		go peer.Write(wire.AppendHeader(nil, wire.Header{Kind: kind, Tag: 1, Len: 100e9}))
		buf := make([]float32, 4)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var err error
		if kind == wire.KindBytes {
			_, err = e.RecvBytes(context.Background(), 1, 1, 1<<62)
		} else {
			err = e.Recv(context.Background(), 1, 1, buf)
		}
		runtime.ReadMemStats(&after)
		wantPeerError(t, kind.String(), err, 1, "frame too large: 100000000000-byte "+kind.String()+" payload announced, limit 1073741824 (Config.MaxFrame)")
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%v: allocated %d bytes while refusing", kind, grew)
		}
	}
}

// TestPeerSilent: a peer that sends nothing for Timeout is reported, and
// one that stalls mid-message too.
func TestPeerSilent(t *testing.T) {
	e, peer := pipeEndpoint(t, Config{Timeout: 50 * time.Millisecond})
	err := recvWithin(t, e, 1, 4, testTimeout)
	wantPeerError(t, "silent peer", err, 1, "receive timed out: no progress for 50ms (Config.Timeout)")
	go func() {
		peer.Write(wire.AppendHeader(nil, wire.Header{Kind: wire.KindFloat32, Len: 16}))
		peer.Write(make([]byte, 5))
	}()
	err = recvWithin(t, e, 1, 4, testTimeout)
	wantPeerError(t, "stalled peer", err, 1, "receive timed out")
	wantPeerError(t, "after the stall", e.Recv(context.Background(), 1, 0, nil), 1, "unusable")
}

// TestMalformedFrames feeds hand-made bad streams to a Recv.
func TestMalformedFrames(t *testing.T) {
	hdr := func(h wire.Header) []byte { return wire.AppendHeader(nil, h) }
	tests := []struct {
		name   string
		stream []byte
		msg    string
	}{
		{"Magic", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "malformed frame: bad magic"},
		{"Kind", append(hdr(wire.Header{Kind: wire.KindFloat32, Len: 16})[:3], 77, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "unknown kind 77"},
		{"Seq", hdr(wire.Header{Kind: wire.KindFloat32, Len: 16, Seq: 5}), "sequence number 5, want 0"},
		{"Control", append(hdr(wire.Header{Kind: wire.KindControl, Len: 16}), make([]byte, 16)...), "control frame in the data stream"},
		{"Abort", func() []byte {
			msg, _ := wire.Reject{Reason: "rank 1: out of memory"}.AppendBinary(nil)
			return append(hdr(wire.Header{Kind: wire.KindControl, Len: uint64(len(msg))}), msg...)
		}(), "aborted: rank 1: out of memory"},
		{"HugeControl", hdr(wire.Header{Kind: wire.KindControl, Len: 1 << 30}), "control frame of"},
		{"Ragged", hdr(wire.Header{Kind: wire.KindFloat32, Len: 15}), "not a whole number"},
		{"Truncated", append(hdr(wire.Header{Kind: wire.KindFloat32, Len: 16}), 1, 2, 3), "connection closed mid-message, after 3 of 16"},
		{"ShortHeader", []byte("dg\x01"), "connection closed mid-message"},
		{"Empty", nil, "connection closed by the peer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, peer := pipeEndpoint(t, Config{})
			go func() { peer.Write(tc.stream); peer.Close() }()
			err := recvWithin(t, e, 1, 4, testTimeout)
			wantPeerError(t, tc.name, err, 1, tc.msg)
		})
	}
}

// FuzzRecv feeds arbitrary bytes to the frame reader over a net.Pipe and
// receives up to three messages: it must never panic or hang, and what it
// accepts must be what the bytes say.
func FuzzRecv(f *testing.F) {
	frame := func(h wire.Header, payload []byte) []byte { return append(wire.AppendHeader(nil, h), payload...) }
	f.Add(frame(wire.Header{Kind: wire.KindFloat32, Tag: 1, Len: 8}, []byte{0, 0, 128, 63, 0, 0, 0, 64}), uint8(0), uint16(2))
	f.Add(frame(wire.Header{Kind: wire.KindFloat16, Tag: 1, Len: 4}, []byte{0, 60, 0, 64}), uint8(0), uint16(2))
	f.Add(frame(wire.Header{Kind: wire.KindBytes, Tag: 1, Len: 3}, []byte("abc")), uint8(1), uint16(0))
	f.Add(append(frame(wire.Header{Kind: wire.KindBytes, Tag: 1, Len: 1}, []byte("a")), frame(wire.Header{Kind: wire.KindBytes, Tag: 1, Len: 1, Seq: 1}, []byte("b"))...), uint8(7), uint16(0))
	f.Add(frame(wire.Header{Kind: wire.KindBytes, Tag: 1, Len: 1 << 40}, nil), uint8(1), uint16(0))
	f.Add([]byte("dg"), uint8(0), uint16(1))
	f.Fuzz(func(t *testing.T, stream []byte, which uint8, n uint16) {
		e, peer := pipeEndpoint(t, Config{Timeout: 2 * time.Second, MaxFrame: 1 << 20})
		go func() { peer.Write(stream); peer.Close() }()
		off := 0 // where the next frame starts in stream
		for i := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var err error
			var got []byte
			wantLen := 0
			if which>>i&1 == 1 {
				got, err = e.RecvBytes(ctx, 1, 1, 1<<16)
				wantLen = len(got)
			} else {
				buf := make([]float32, n)
				err = e.Recv(ctx, 1, 1, buf)
				got = floatBytes(buf)
				wantLen = 4 * int(n)
			}
			hung := ctx.Err() != nil
			cancel()
			if hung {
				t.Fatalf("call %d hung: %v", i, err)
			}
			if err != nil {
				var pe *transport.PeerError
				if !errors.As(err, &pe) || pe.Rank != 1 {
					t.Fatalf("call %d: %v is not a PeerError naming rank 1", i, err)
				}
				return
			}
			h, herr := wire.ParseHeader(stream[off:], 1<<20)
			if herr != nil {
				t.Fatalf("call %d accepted a frame the codec rejects: %v", i, herr)
			}
			payload := stream[off+wire.HeaderSize : off+wire.HeaderSize+int(h.Len)]
			off += wire.HeaderSize + int(h.Len)
			if h.Kind == wire.KindFloat16 {
				want := make([]float32, len(payload)/2)
				wire.DecodeF16(want, payload)
				payload = floatBytes(want)
			}
			if len(got) != wantLen || string(got) != string(payload) {
				t.Fatalf("call %d: received % x, the stream held % x", i, got, payload)
			}
		}
	})
}

// TestFuzzSeedsDecode checks that an fp16 seed of FuzzRecv (1.0, 2.0)
// really is received, so the fuzz target's success checks run.
func TestFuzzSeedsDecode(t *testing.T) {
	e, peer := pipeEndpoint(t, Config{})
	go peer.Write(append(wire.AppendHeader(nil, wire.Header{Kind: wire.KindFloat16, Tag: 1, Len: 4}), 0, 60, 0, 64))
	buf := make([]float32, 2)
	if err := e.Recv(context.Background(), 1, 1, buf); err != nil || buf[0] != 1 || buf[1] != 2 {
		t.Fatalf("%v %v", buf, err)
	}
}

// TestFaultyCutOverTCP runs a faulty.Net cut over TCP, where Sends return
// before the receiver reads: the messages sent before the cut still
// arrive, then the link fails both ways.
func TestFaultyCutOverTCP(t *testing.T) {
	nw := faulty.New(newGroup(t, 2, CompressNone))
	eps := nw.Endpoints()
	nw.Cut(1, 0, 2)
	ctx := context.Background()
	for i := range 2 {
		if err := eps[1].Send(ctx, 0, uint32(i), []float32{float32(i)}); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if err := eps[1].Send(ctx, 0, 2, []float32{2}); !errors.Is(err, faulty.ErrCut) {
		t.Fatalf("Send after the cut: %v", err)
	}
	for i := range 2 {
		buf := make([]float32, 1)
		if err := eps[0].Recv(ctx, 1, uint32(i), buf); err != nil || buf[0] != float32(i) {
			t.Fatalf("Recv %d: %v, %v", i, buf, err)
		}
	}
	wantPeerError(t, "Recv after the cut", recvWithin(t, eps[0], 1, 1, testTimeout), 1, "link cut")
	wantPeerError(t, "Send back", eps[0].Send(ctx, 1, 0, nil), 1, "link cut")
}
