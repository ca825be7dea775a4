package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/transporttest"
	"dsgd/comm/wire"
)

// testTimeout is the Config.Timeout of the test groups: every failure
// must show within it.
const testTimeout = 5 * time.Second

// reserve opens the rendezvous listener of a test group (Reserved), so
// a test group needs no guess at a free port.
func reserve(t testing.TB) *Reserved {
	t.Helper()
	r, err := Reserve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// connectAll runs Connect for every config, each in its own goroutine,
// and returns the endpoints and errors by index.
func connectAll(ctx context.Context, cfgs []Config) ([]transport.Endpoint, []error) {
	eps := make([]transport.Endpoint, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { eps[i], errs[i] = Connect(ctx, cfg) })
	}
	wg.Wait()
	return eps, errs
}

// groupConfigs returns the configs of a loopback group of size ranks.
func groupConfigs(t testing.TB, size int, compress Compress) []Config {
	s := reserve(t)
	cfgs := make([]Config, size)
	for r := range cfgs {
		cfgs[r] = Config{Rank: r, Size: size, Rendezvous: s.Addr(), Token: "test-token", ModelHash: 0xabc, Timeout: testTimeout, Compress: compress, Stream: s}
	}
	return cfgs
}

// newGroup connects a loopback group and closes it when the test ends.
func newGroup(t testing.TB, size int, compress Compress) []transport.Endpoint {
	t.Helper()
	return newGroupShm(t, size, compress, ShmAuto)
}

// newGroupShm is newGroup with shared memory on (ShmAuto: every pair is
// on this host) or off.
func newGroupShm(t testing.TB, size int, compress Compress, mode Shm) []transport.Endpoint {
	t.Helper()
	cfgs := groupConfigs(t, size, compress)
	for i := range cfgs {
		cfgs[i].Shm = mode
	}
	eps, errs := connectAll(context.Background(), cfgs)
	t.Cleanup(func() {
		for _, ep := range eps {
			if ep != nil {
				ep.Close()
			}
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return eps
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return newGroup(t, size, CompressNone)
	})
}

func TestConformanceFP16(t *testing.T) {
	transporttest.RunOptions(t, func(t *testing.T, size int) []transport.Endpoint {
		return newGroup(t, size, CompressFP16)
	}, transporttest.Options{FloatBytes: 2})
}

// TestFP16Rounding sends values that half precision cannot hold: each
// arrives rounded to the nearest half, across several staging chunks.
func TestFP16Rounding(t *testing.T) {
	eps := newGroup(t, 2, CompressFP16)
	n := 3*f16Chunk/2 + 17
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(math.Sin(float64(i))) * float32(1+i%70000)
	}
	src[0], src[1], src[2], src[3] = 1e-8, 70000, float32(math.Inf(-1)), 0.1
	errc := make(chan error, 1)
	go func() { errc <- eps[0].Send(context.Background(), 1, 3, src) }()
	dst := make([]float32, n)
	if err := eps[1].Recv(context.Background(), 0, 3, dst); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i := range src {
		want := wire.F16ToF32(wire.F32ToF16(src[i]))
		if math.Float32bits(dst[i]) != math.Float32bits(want) {
			t.Fatalf("value %d: %g arrived as %g, want %g", i, src[i], dst[i], want)
		}
	}
	if dst[1] != float32(math.Inf(1)) || dst[3] != 0.0999755859375 {
		t.Fatalf("70000 -> %g, 0.1 -> %g", dst[1], dst[3])
	}
	if got, want := eps[0].Stats().BytesSent, int64(2*n); got != want {
		t.Fatalf("BytesSent %d, want %d", got, want)
	}
}

// TestMixedCompression: a receiver takes whatever form the sender chose.
func TestMixedCompression(t *testing.T) {
	cfgs := groupConfigs(t, 2, CompressNone)
	cfgs[1].Compress = CompressFP16
	eps, errs := connectAll(context.Background(), cfgs)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
	ctx := context.Background()
	for from := range 2 {
		go eps[from].Send(ctx, 1-from, 0, []float32{0.5, 1.5, 0.1})
		buf := make([]float32, 3)
		if err := eps[1-from].Recv(ctx, from, 0, buf); err != nil {
			t.Fatal(err)
		}
		want := float32(0.1)
		if from == 1 {
			want = 0.0999755859375
		}
		if buf[0] != 0.5 || buf[1] != 1.5 || buf[2] != want {
			t.Fatalf("from rank %d: %v", from, buf)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg Config
		msg string
	}{
		{Config{Size: 0}, "group size 0"},
		{Config{Rank: 2, Size: 2, Rendezvous: "h:1"}, "rank 2 out of range [0,2)"},
		{Config{Rank: 0, Size: 2, Rendezvous: "nohost"}, `rendezvous address "nohost"`},
		{Config{Size: 1, Timeout: -1}, "negative timeout"},
		{Config{Size: 1, MaxFrame: -1}, "negative MaxFrame"},
		{Config{Size: 1, Compress: 9}, "unknown compression"},
	}
	for _, tc := range tests {
		err := tc.cfg.validate()
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want an error containing %q", tc.cfg, err, tc.msg)
		}
	}
	c := Config{Size: 1}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.Listen != DefaultListen || c.Timeout != DefaultTimeout || c.MaxFrame != DefaultMaxFrame || c.Stream == nil {
		t.Fatalf("defaults not filled: %+v", c)
	}
}

func TestParseCompress(t *testing.T) {
	for s, want := range map[string]Compress{"": CompressNone, "none": CompressNone, "fp16": CompressFP16} {
		got, err := ParseCompress(s)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v", s, got, err)
		}
		if s != "" && got.String() != s {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	if _, err := ParseCompress("fp8"); err == nil {
		t.Error("fp8 accepted")
	}
}

func TestSizeOne(t *testing.T) {
	ep, err := Connect(context.Background(), Config{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Rank() != 0 || ep.Size() != 1 {
		t.Fatalf("rank %d size %d", ep.Rank(), ep.Size())
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRendezvousHostLate starts every rank but 0 first: they keep dialing
// until rank 0 is up.
func TestRendezvousHostLate(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	eps := make([]transport.Endpoint, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := 1; r < 3; r++ {
		wg.Go(func() { eps[r], errs[r] = Connect(context.Background(), cfgs[r]) })
	}
	time.Sleep(150 * time.Millisecond)
	eps[0], errs[0] = Connect(context.Background(), cfgs[0])
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
}

func TestAdvertised(t *testing.T) {
	seen := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 999}
	for listen, want := range map[string]string{
		"0.0.0.0:4000":   "10.1.2.3:4000",
		"[::]:4000":      "10.1.2.3:4000",
		":4000":          "10.1.2.3:4000",
		"127.0.0.1:4000": "127.0.0.1:4000",
		"myhost:4000":    "myhost:4000",
	} {
		if got := advertised(listen, seen); got != want {
			t.Errorf("advertised(%q) = %q, want %q", listen, got, want)
		}
	}
}

// TestListenAllInterfaces listens on 0.0.0.0: the advertised addresses
// must still be dialable.
func TestListenAllInterfaces(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	for r := range cfgs {
		cfgs[r].Listen = "0.0.0.0:0"
	}
	eps, errs := connectAll(context.Background(), cfgs)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
}

func TestNoAllocs(t *testing.T) {
	for _, compress := range []Compress{CompressNone, CompressFP16} {
		eps := newGroup(t, 2, compress)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		buf := make([]float32, 100000)
		go func() {
			rbuf := make([]float32, len(buf))
			for eps[1].Recv(ctx, 0, 1, rbuf) == nil {
			}
		}()
		allocs := testing.AllocsPerRun(50, func() {
			if err := eps[0].Send(ctx, 1, 1, buf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per Send", compress, allocs)
		}
		// And the receiving side.
		go func() {
			for eps[1].Send(ctx, 0, 2, buf) == nil {
			}
		}()
		rbuf := make([]float32, len(buf))
		allocs = testing.AllocsPerRun(50, func() {
			if err := eps[0].Recv(ctx, 1, 2, rbuf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per Recv", compress, allocs)
		}
	}
}

func TestSendOverMaxFrame(t *testing.T) {
	cfgs := groupConfigs(t, 2, CompressNone)
	for r := range cfgs {
		cfgs[r].MaxFrame = 1000
	}
	eps, errs := connectAll(context.Background(), cfgs)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
	err := eps[0].Send(context.Background(), 1, 0, make([]float32, 251))
	if err == nil || !strings.Contains(err.Error(), "exceeds Config.MaxFrame of 1000 bytes") {
		t.Fatalf("oversized Send: %v", err)
	}
	// The stream is intact.
	go eps[0].Send(context.Background(), 1, 0, make([]float32, 250))
	if err := eps[1].Recv(context.Background(), 0, 0, make([]float32, 250)); err != nil {
		t.Fatal(err)
	}
}

// TestCancelledRecvKeepsStream: a Recv cancelled before anything arrived
// leaves the connection usable.
func TestCancelledRecvKeepsStream(t *testing.T) {
	eps := newGroup(t, 2, CompressNone)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := eps[1].Recv(ctx, 0, 0, make([]float32, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv: %v", err)
	}
	go eps[0].Send(context.Background(), 1, 4, []float32{42})
	buf := make([]float32, 1)
	if err := eps[1].Recv(context.Background(), 0, 4, buf); err != nil || buf[0] != 42 {
		t.Fatalf("Recv after a cancelled one: %v, %v", buf, err)
	}
}

// TestCancelMidMessageBreaksStream: a Recv or Send cancelled halfway
// through a message closes the connection, so the peer fails fast too,
// and later calls report the stream unusable.
func TestCancelMidMessageBreaksStream(t *testing.T) {
	t.Run("Recv", func(t *testing.T) {
		e, peer := pipeEndpoint(t, Config{})
		go peer.Write(append(wire.AppendHeader(nil, wire.Header{Kind: wire.KindFloat32, Len: 4000}), make([]byte, 100)...))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := e.Recv(ctx, 1, 0, make([]float32, 1000)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled Recv: %v", err)
		}
		wantPeerError(t, "next Recv", e.Recv(context.Background(), 1, 0, nil), 1, "unusable after an earlier failure: receive interrupted mid-message: context deadline exceeded")
		peer.SetWriteDeadline(time.Now().Add(testTimeout))
		if _, err := peer.Write(make([]byte, 100)); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("peer's write after the cancel: %v", err)
		}
	})
	t.Run("Send", func(t *testing.T) {
		e, peer := pipeEndpoint(t, Config{})
		go io.ReadFull(peer, make([]byte, wire.HeaderSize+100))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := e.Send(ctx, 1, 0, make([]float32, 1000)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled Send: %v", err)
		}
		wantPeerError(t, "next Send", e.Send(context.Background(), 1, 0, nil), 1, "unusable after an earlier failure: send interrupted mid-message")
		peer.SetReadDeadline(time.Now().Add(testTimeout))
		if _, err := io.ReadAll(peer); err != nil {
			t.Fatalf("peer's read after the cancel: %v (want the end of the stream)", err)
		}
	})
}

// TestConcurrentCallsPanic: two Sends to one peer at once would interleave
// frames; the contract forbids it and the endpoint panics instead.
func TestConcurrentCallsPanic(t *testing.T) {
	eps := newGroup(t, 2, CompressNone)
	ctx := context.Background()
	go eps[0].Send(ctx, 1, 0, make([]float32, 16<<20)) // blocks: nobody reads
	time.Sleep(50 * time.Millisecond)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "two concurrent Send calls with rank 1") {
			t.Errorf("second Send: recovered %v", r)
		}
	}()
	eps[0].Send(ctx, 1, 0, nil)
}

// TestConformanceNoShm runs the suite with shared memory off: every pair
// talks over TCP although all ranks share this host.
func TestConformanceNoShm(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return newGroupShm(t, size, CompressNone, ShmOff)
	})
}

// TestConformanceFP16NoShm: fp16 over TCP between ranks of one host.
func TestConformanceFP16NoShm(t *testing.T) {
	transporttest.RunOptions(t, func(t *testing.T, size int) []transport.Endpoint {
		return newGroupShm(t, size, CompressFP16, ShmOff)
	}, transporttest.Options{FloatBytes: 2})
}

// TestHeard: transport.Hearer reports when the last bytes from a peer came
// in: never before the first message, then between the send and the end
// of the receive; a receive that times out on a silent peer leaves it
// unchanged (node's probe counts the peer's own timeout from it).
func TestHeard(t *testing.T) {
	for _, mode := range []Shm{ShmOff, ShmAuto} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			eps := newGroupShm(t, 2, CompressNone, mode)
			h, ok := eps[1].(transport.Hearer)
			if !ok {
				t.Fatal("a tcp endpoint is not a transport.Hearer")
			}
			if got := h.Heard(0); !got.IsZero() {
				t.Fatalf("Heard before any message: %v, want the zero time", got)
			}
			before := time.Now()
			go eps[0].Send(context.Background(), 1, 4, []float32{42})
			if err := eps[1].Recv(context.Background(), 0, 4, make([]float32, 1)); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			heard := h.Heard(0)
			if heard.Before(before) || heard.After(after) {
				t.Fatalf("Heard %v, want within [%v, %v]", heard, before, after)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := eps[1].Recv(ctx, 0, 5, make([]float32, 1)); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Recv from a silent peer: %v", err)
			}
			if got := h.Heard(0); !got.Equal(heard) {
				t.Fatalf("Heard after a silent timeout: %v, want %v", got, heard)
			}
		})
	}
}
