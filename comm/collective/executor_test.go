package collective

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dsgd/comm/transport"
)

// testTimeout bounds every group run; a hang fails the test instead of
// stalling it.
const testTimeout = 20 * time.Second

// runGroup runs f on every rank of an in-process group of p, each rank
// with its own Executor, and returns each rank's error. As a driver would,
// a rank that fails closes its Endpoint so that its peers fail fast.
func runGroup(t *testing.T, eps []transport.Endpoint, f func(ctx context.Context, r int, ex *Executor) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for r, ep := range eps {
		wg.Go(func() {
			ex := NewExecutor(ep)
			defer ex.Close()
			if errs[r] = f(ctx, r, ex); errs[r] != nil {
				ep.Close()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("group of %d timed out", len(eps))
	}
	return errs
}

// randomData returns p buffers of n floats in [-1,1) from seed.
func randomData(seed uint64, p, n int) [][]float32 {
	out := make([][]float32, p)
	for r := range out {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		out[r] = make([]float32, n)
		for i := range out[r] {
			out[r][i] = float32(rng.Float64()*2 - 1)
		}
	}
	return out
}

func clone(bufs [][]float32) [][]float32 {
	out := make([][]float32, len(bufs))
	for i, b := range bufs {
		out[i] = append([]float32(nil), b...)
	}
	return out
}

// sum64 is the float64 element-wise sum of bufs.
func sum64(bufs [][]float32) []float64 {
	out := make([]float64, len(bufs[0]))
	for _, b := range bufs {
		for i, v := range b {
			out[i] += float64(v)
		}
	}
	return out
}

// checkSum checks got against the float64 sum of p values in [-1,1).
func checkSum(t *testing.T, what string, got []float32, want []float64, p int) {
	t.Helper()
	tol := 1e-6 * float64(p)
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol) {
			t.Fatalf("%s: element %d = %v, want %v (off by %g)", what, i, got[i], want[i], d)
		}
	}
}

// checkSameBits checks that every buffer equals bufs[0] bit for bit.
func checkSameBits(t *testing.T, what string, bufs [][]float32) {
	t.Helper()
	for r := 1; r < len(bufs); r++ {
		for i := range bufs[0] {
			if math.Float32bits(bufs[r][i]) != math.Float32bits(bufs[0][i]) {
				t.Fatalf("%s: rank %d element %d = %v, rank 0 has %v", what, r, i, bufs[r][i], bufs[0][i])
			}
		}
	}
}

func checkNoErrors(t *testing.T, what string, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s: rank %d: %v", what, r, err)
		}
	}
}

var testAlgs = []Algorithm{Tree, Ring, RecursiveDoubling, Auto}

func TestAllreduce(t *testing.T) {
	for _, alg := range testAlgs {
		for _, p := range testSizes {
			for _, n := range testLens(p) {
				what := fmt.Sprintf("%v p=%d n=%d", alg, p, n)
				data := randomData(uint64(1000*p+n), p, n)
				want := sum64(data)
				var first [][]float32
				for run := range 2 {
					bufs := clone(data)
					eps := transport.NewInproc(p)
					errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
						return ex.Allreduce(ctx, bufs[r], alg)
					})
					checkNoErrors(t, what, errs)
					for r := range p {
						checkSum(t, fmt.Sprintf("%s rank %d", what, r), bufs[r], want, p)
						// The transport saw exactly what the schedule says.
						c := AllreduceSchedule(alg, r, p, n).Cost()
						st := eps[r].Stats()
						if st.BytesSent != c.BytesSent || st.BytesRecv != c.BytesRecv || st.MsgsSent != int64(c.MsgsSent) || st.MsgsRecv != int64(c.MsgsRecv) {
							t.Fatalf("%s rank %d: transport stats %+v, schedule cost %+v", what, r, st, c)
						}
					}
					checkSameBits(t, what, bufs)
					if run == 0 {
						first = bufs
					} else {
						checkSameBits(t, what+" second run vs first", [][]float32{first[0], bufs[0]})
					}
				}
			}
		}
	}
}

func TestSegmentedMatchesWhole(t *testing.T) {
	// Cutting transfers into segments changes the messages, not the
	// arithmetic: the result is bitwise the unsegmented one, and the
	// transport sees the segment count the schedule's Cost promises.
	for _, alg := range []Algorithm{Tree, Ring, RecursiveDoubling} {
		for _, p := range testSizes {
			for _, n := range testLens(p) {
				for _, seg := range []int{1, 7, 500} {
					if n/seg > 600 {
						continue // keep the message count, and the test, small
					}
					what := fmt.Sprintf("%v p=%d n=%d segment=%d", alg, p, n, seg)
					data := randomData(uint64(n+p), p, n)
					whole, cut := clone(data), clone(data)
					checkNoErrors(t, what, runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
						s := AllreduceSchedule(alg, r, p, n)
						s.Segment = 0
						return ex.Run(ctx, s, whole[r], 0)
					}))
					eps := transport.NewInproc(p)
					checkNoErrors(t, what, runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
						s := AllreduceSchedule(alg, r, p, n)
						s.Segment = seg
						return ex.Run(ctx, s, cut[r], 0)
					}))
					checkSameBits(t, what, append(whole, cut...))
					for r, ep := range eps {
						s := AllreduceSchedule(alg, r, p, n)
						s.Segment = seg
						c, st := s.Cost(), ep.Stats()
						if st.MsgsSent != int64(c.MsgsSent) || st.MsgsRecv != int64(c.MsgsRecv) || st.BytesSent != c.BytesSent {
							t.Fatalf("%s rank %d: transport stats %+v, schedule cost %+v", what, r, st, c)
						}
					}
				}
			}
		}
	}
}

func TestRingBytesFromStats(t *testing.T) {
	// Bandwidth optimality seen by the transport: about 2(p-1)/p·n floats
	// sent and received per rank (within one float per chunk boundary).
	for _, p := range []int{2, 3, 4, 5, 7, 8} {
		const n = 4097
		bufs := randomData(7, p, n)
		eps := transport.NewInproc(p)
		checkNoErrors(t, "ring", runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
			return ex.Allreduce(ctx, bufs[r], Ring)
		}))
		ideal := 8 * float64(p-1) / float64(p) * n
		for r, ep := range eps {
			st := ep.Stats()
			for _, b := range []int64{st.BytesSent, st.BytesRecv} {
				if math.Abs(float64(b)-ideal) > 8 {
					t.Errorf("p=%d rank %d: %d bytes, ideal %.0f", p, r, b, ideal)
				}
			}
			if st.MsgsSent != int64(2*(p-1)) {
				t.Errorf("p=%d rank %d: %d messages, want %d", p, r, st.MsgsSent, 2*(p-1))
			}
		}
	}
}

func TestReduceEveryRoot(t *testing.T) {
	for _, p := range testSizes {
		for _, n := range []int{0, 1, p + 1, 1000} {
			for root := range p {
				what := fmt.Sprintf("reduce p=%d n=%d root=%d", p, n, root)
				bufs := randomData(uint64(n), p, n)
				want := sum64(bufs)
				checkNoErrors(t, what, runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
					return ex.Reduce(ctx, root, bufs[r])
				}))
				checkSum(t, what, bufs[root], want, p)
			}
		}
	}
}

func TestBroadcastEveryRoot(t *testing.T) {
	for _, p := range testSizes {
		for _, n := range []int{0, 1, p + 1, 1000} {
			for root := range p {
				what := fmt.Sprintf("broadcast p=%d n=%d root=%d", p, n, root)
				bufs := randomData(uint64(n+root), p, n)
				src := append([]float32(nil), bufs[root]...)
				checkNoErrors(t, what, runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
					return ex.Broadcast(ctx, root, bufs[r])
				}))
				checkSameBits(t, what, append([][]float32{src}, bufs...))
			}
		}
	}
}

func TestReduceScatterAllgather(t *testing.T) {
	for _, p := range testSizes {
		for _, n := range testLens(p) {
			what := fmt.Sprintf("p=%d n=%d", p, n)
			data := randomData(uint64(n), p, n)
			want := sum64(data)

			ring := clone(data)
			checkNoErrors(t, what, runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
				return ex.Allreduce(ctx, ring[r], Ring)
			}))

			bufs := clone(data)
			checkNoErrors(t, what, runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
				if err := ex.ReduceScatter(ctx, bufs[r]); err != nil {
					return err
				}
				lo, hi := Chunk(r, p, n)
				checkSum(t, fmt.Sprintf("%s reduce-scatter rank %d", what, r), bufs[r][lo:hi], want[lo:hi], p)
				return ex.Allgather(ctx, bufs[r])
			}))
			// Reduce-scatter then allgather is the ring allreduce, bit for bit.
			checkSameBits(t, what, append([][]float32{ring[0]}, bufs...))
		}
	}
}

func TestAllgather(t *testing.T) {
	for _, p := range testSizes {
		for _, n := range testLens(p) {
			what := fmt.Sprintf("allgather p=%d n=%d", p, n)
			want := make([]float32, n)
			bufs := make([][]float32, p)
			for r := range p {
				bufs[r] = make([]float32, n)
				for i := range bufs[r] {
					bufs[r][i] = float32(math.NaN()) // overwritten unless chunk r
				}
				lo, hi := Chunk(r, p, n)
				for i := lo; i < hi; i++ {
					bufs[r][i] = float32(100*r + i)
					want[i] = bufs[r][i]
				}
			}
			checkNoErrors(t, what, runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
				return ex.Allgather(ctx, bufs[r])
			}))
			checkSameBits(t, what, append([][]float32{want}, bufs...))
		}
	}
}

func TestBarrier(t *testing.T) {
	for _, p := range testSizes {
		const rounds = 5
		var arrived [rounds]atomic.Int32
		errs := runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
			for k := range rounds {
				if r == k%p {
					time.Sleep(2 * time.Millisecond) // a late rank
				}
				arrived[k].Add(1)
				if err := ex.Barrier(ctx); err != nil {
					return err
				}
				if got := arrived[k].Load(); got != int32(p) {
					return fmt.Errorf("left barrier %d with %d of %d ranks arrived", k, got, p)
				}
			}
			return nil
		})
		checkNoErrors(t, fmt.Sprintf("barrier p=%d", p), errs)
	}
}

func TestPackageFunctions(t *testing.T) {
	const p, n = 5, 300
	data := randomData(3, p, n)
	want := sum64(data)
	bufs := clone(data)
	bc := make([][]float32, p)
	for r := range bc {
		bc[r] = make([]float32, 10)
	}
	bc[2][3] = 7
	red := clone(data)
	rs := clone(data)
	custom := clone(data)
	eps := transport.NewInproc(p)
	checkNoErrors(t, "package functions", runGroup(t, eps, func(ctx context.Context, r int, _ *Executor) error {
		ep := eps[r]
		if err := Allreduce(ctx, ep, bufs[r], Auto); err != nil {
			return err
		}
		if err := Broadcast(ctx, ep, 2, bc[r]); err != nil {
			return err
		}
		if err := Reduce(ctx, ep, 4, red[r]); err != nil {
			return err
		}
		if err := ReduceScatter(ctx, ep, rs[r]); err != nil {
			return err
		}
		if err := Allgather(ctx, ep, rs[r]); err != nil {
			return err
		}
		if err := Barrier(ctx, ep); err != nil {
			return err
		}
		s := RingAllreduce(r, p, n)
		return Run(ctx, ep, s, custom[r], make([]float32, s.Cost().ScratchLen), 42)
	}))
	for r := range p {
		checkSum(t, "Allreduce", bufs[r], want, p)
		checkSum(t, "ReduceScatter+Allgather", rs[r], want, p)
		checkSum(t, "Run", custom[r], want, p)
		if bc[r][3] != 7 {
			t.Errorf("Broadcast: rank %d has %v", r, bc[r])
		}
	}
	checkSum(t, "Reduce", red[4], want, p)
}

// faultyEndpoint fails its failAt-th Send (counting from 1) with errInjected,
// before sending anything.
type faultyEndpoint struct {
	transport.Endpoint
	failAt int
	sends  atomic.Int32
}

var errInjected = errors.New("injected fault")

func (f *faultyEndpoint) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	if int(f.sends.Add(1)) == f.failAt {
		return errInjected
	}
	return f.Endpoint.Send(ctx, to, tag, buf)
}

func TestPeerFailureEndsEveryRank(t *testing.T) {
	// A rank whose first send fails takes its contribution with it, so no
	// rank can finish: every rank must return an error, fast (the failing
	// rank closes its endpoint and the failure cascades), not at the
	// context's deadline.
	for _, alg := range []Algorithm{Tree, Ring, RecursiveDoubling} {
		for _, p := range []int{2, 3, 4, 5, 7, 8} {
			for bad := range p {
				what := fmt.Sprintf("%v p=%d failing rank %d", alg, p, bad)
				eps := transport.NewInproc(p)
				faulty := &faultyEndpoint{Endpoint: eps[bad], failAt: 1}
				eps[bad] = faulty
				bufs := randomData(1, p, 100)
				start := time.Now()
				errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
					return ex.Allreduce(ctx, bufs[r], alg)
				})
				if el := time.Since(start); el > testTimeout/2 {
					t.Errorf("%s: took %v", what, el)
				}
				for r, err := range errs {
					switch {
					case err == nil:
						t.Errorf("%s: rank %d succeeded", what, r)
					case errors.Is(err, context.DeadlineExceeded):
						t.Errorf("%s: rank %d waited for its deadline: %v", what, r, err)
					case r == bad && !errors.Is(err, errInjected):
						t.Errorf("%s: failing rank got %v", what, err)
					}
				}
			}
		}
	}
}

func TestCancelledContext(t *testing.T) {
	for _, alg := range []Algorithm{Tree, Ring, RecursiveDoubling} {
		for _, p := range []int{2, 3, 5, 8} {
			// Already cancelled: every rank returns at once.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			eps := transport.NewInproc(p)
			for r, ep := range eps {
				ex := NewExecutor(ep)
				if err := ex.Allreduce(ctx, make([]float32, 10), alg); !errors.Is(err, context.Canceled) {
					t.Errorf("%v p=%d rank %d: %v, want context.Canceled", alg, p, r, err)
				}
				// The failure is sticky.
				if err := ex.Allreduce(context.Background(), make([]float32, 10), alg); err == nil || !strings.Contains(err.Error(), "earlier failure") {
					t.Errorf("%v p=%d rank %d: reuse after failure gave %v", alg, p, r, err)
				}
				ex.Close()
			}

			// Rank p-1 never shows up and nobody closes anything: the others
			// are blocked in sends and receives (ring steps in both at once)
			// and must all return when their context times out.
			ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
			var wg sync.WaitGroup
			errs := make([]error, p-1)
			for r := range p - 1 {
				wg.Go(func() {
					ex := NewExecutor(eps[r])
					defer ex.Close()
					errs[r] = ex.Allreduce(ctx, make([]float32, 1000), alg)
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(testTimeout):
				t.Fatalf("%v p=%d: ranks still blocked after their context ended", alg, p)
			}
			cancel()
			for r, err := range errs {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%v p=%d rank %d: %v, want DeadlineExceeded", alg, p, r, err)
				}
			}
		}
	}
}

func TestTagMismatch(t *testing.T) {
	// Rank 0 runs the right schedule under another tag base: a
	// desynchronised peer. Every rank fails, and the error names a peer.
	for _, p := range []int{2, 3, 4} {
		eps := transport.NewInproc(p)
		bufs := randomData(1, p, 64)
		errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
			base := uint32(100)
			if r == 0 {
				base = 200
			}
			return ex.Run(ctx, RingAllreduce(r, p, 64), bufs[r], base)
		})
		var sawPeer bool
		for r, err := range errs {
			if err == nil {
				t.Errorf("p=%d rank %d succeeded", p, r)
			}
			var pe *transport.PeerError
			if errors.As(err, &pe) && strings.Contains(err.Error(), "tag") {
				sawPeer = true
			}
		}
		if !sawPeer {
			t.Errorf("p=%d: no rank reported a tag mismatch: %v", p, errs)
		}
	}
}

// nopEndpoint completes every send and receive at once, so that only the
// executor's own allocations are measured.
type nopEndpoint struct{ rank, size int }

func (e nopEndpoint) Rank() int { return e.rank }
func (e nopEndpoint) Size() int { return e.size }
func (e nopEndpoint) Send(context.Context, int, uint32, []float32) error {
	return nil
}
func (e nopEndpoint) Recv(context.Context, int, uint32, []float32) error {
	return nil
}
func (e nopEndpoint) SendBytes(context.Context, int, uint32, []byte) error { return nil }
func (e nopEndpoint) RecvBytes(context.Context, int, uint32, int) ([]byte, error) {
	return nil, nil
}
func (e nopEndpoint) Stats() transport.Stats { return transport.Stats{} }
func (e nopEndpoint) Close() error           { return nil }

func TestExecutorDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	ex := NewExecutor(nopEndpoint{rank: 1, size: 5})
	defer ex.Close()
	buf := make([]float32, 4097)
	for name, f := range map[string]func() error{
		"tree":      func() error { return ex.Allreduce(ctx, buf, Tree) },
		"ring":      func() error { return ex.Allreduce(ctx, buf, Ring) },
		"rd":        func() error { return ex.Allreduce(ctx, buf, RecursiveDoubling) },
		"broadcast": func() error { return ex.Broadcast(ctx, 3, buf) },
		"reduce":    func() error { return ex.Reduce(ctx, 0, buf) },
		"barrier":   func() error { return ex.Barrier(ctx) },
	} {
		var err error
		if a := testing.AllocsPerRun(50, func() { err = f() }); a != 0 {
			t.Errorf("%s: %v allocations per call", name, a)
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestExecutorPanics(t *testing.T) {
	ep := nopEndpoint{rank: 1, size: 4}
	for name, f := range map[string]func(ex *Executor){
		"short buffer": func(ex *Executor) { ex.Run(context.Background(), RingAllreduce(1, 4, 10), make([]float32, 9), 0) },
		"other rank":   func(ex *Executor) { ex.Run(context.Background(), RingAllreduce(2, 4, 10), make([]float32, 10), 0) },
		"other size":   func(ex *Executor) { ex.Run(context.Background(), RingAllreduce(1, 3, 10), make([]float32, 10), 0) },
		"invalid": func(ex *Executor) {
			ex.Run(context.Background(), Schedule{1, 4, 1, 0, []Step{{0, none, none, Copy}}}, make([]float32, 1), 0)
		},
		"bad root": func(ex *Executor) { ex.Broadcast(context.Background(), 4, nil) },
		"closed":   func(ex *Executor) { ex.Close(); ex.Barrier(context.Background()) },
		"scratch to Run": func(ex *Executor) {
			Run(context.Background(), ep, RingAllreduce(1, 4, 10), make([]float32, 10), nil, 0)
		},
	} {
		func() {
			ex := NewExecutor(ep)
			defer ex.Close()
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "collective: ") {
					t.Errorf("%s: recovered %v, want a collective: panic", name, r)
				}
			}()
			f(ex)
		}()
	}
}
