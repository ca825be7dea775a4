package node

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/tcp"
	"dsgd/protocol/scheme"
)

// frozenComputer computes like fakeComputer until its call freezeAt, then
// blocks until ctx ends: a process stopped with SIGSTOP, whose sockets
// the kernel still fills but which reads and writes nothing.
type frozenComputer struct {
	fakeComputer
	freezeAt int
	frozen   chan struct{}
}

func (c *frozenComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	if c.calls+1 == c.freezeAt {
		close(c.frozen)
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return c.fakeComputer.Compute(ctx, ready)
}

// lateComputer computes like fakeComputer, but its call lateAt first
// sleeps late: a healthy rank that starts the collective of the iteration
// late (a straggler, a descheduled process), so that its own timeout comes
// well after that of a rank already waiting on it.
type lateComputer struct {
	fakeComputer
	lateAt int
	late   time.Duration
}

func (c *lateComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	if c.calls+1 == c.lateAt {
		time.Sleep(c.late)
	}
	return c.fakeComputer.Compute(ctx, ready)
}

// tcpEndpoints connects size ranks over loopback TCP without shared
// memory.
func tcpEndpoints(t *testing.T, size int, timeout time.Duration) []transport.Endpoint {
	t.Helper()
	rdv, err := tcp.Reserve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdv.Close() })
	eps := make([]transport.Endpoint, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			eps[r], errs[r] = tcp.Connect(ctx, tcp.Config{Rank: r, Size: size, Rendezvous: rdv.Addr(), Stream: rdv, Token: "t", Timeout: timeout, Shm: tcp.ShmOff})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { eps[r].Close() })
	}
	return eps
}

// TestFrozenRankNamedOverTCP is issue 23's frozen rank: of three ranks
// over TCP (no shared memory), rank 1 freezes mid-training. Rank 0 waits
// on rank 2, which waits on rank 1; both healthy ranks must name rank 1,
// never each other.
//
// The late cases make it deterministic that rank 0 times out well before
// rank 2 does: rank 2 starts the iteration's collective 0.7 of the timeout
// after rank 0 (rank 0 then waits on it, rank 2 on rank 1), so rank 2's
// word that it waits on rank 1 comes 0.7 of the timeout after rank 0's
// own timeout, past the half timeout rank 0 used to wait for it (issue 23
// item 3's residue: rank 0 then named rank 2).
func TestFrozenRankNamedOverTCP(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		n      int // floats in the model
		late   int // how late rank 2 starts the frozen iteration, in tenths of the timeout
	}{
		{"sync-ring", 1 << 10, 0},
		{"sync-ring", 1 << 20, 0}, // messages larger than the socket buffers: sends stall too
		{"sync-tree", 1 << 20, 0},
		{"sync-ring", 1 << 10, 7},
		{"sync-ring", 1 << 20, 7},
	} {
		name := tc.scheme + "/" + strconv.Itoa(tc.n)
		if tc.late > 0 {
			name += "/late"
		}
		t.Run(name, func(t *testing.T) {
			const size, timeout = 3, time.Second
			layout := scheme.Layout{N: tc.n, Blocks: []scheme.Range{{Lo: 0, Hi: tc.n}}}
			schemes, err := scheme.New(scheme.Config{Name: tc.scheme, Workers: size, MaxIter: 1 << 30, Pack: true, Layout: layout})
			if err != nil {
				t.Fatal(err)
			}
			eps := tcpEndpoints(t, size, timeout)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			frozen := make(chan struct{})
			errs := make([]error, size)
			healthy := make(chan struct{}, size)
			var wg sync.WaitGroup
			for r := range size {
				grads := make([]float32, tc.n)
				fc := fakeComputer{grads: grads, blocks: [][2]int{{0, tc.n}}, value: float32(r + 1)}
				rk := &Rank{Scheme: schemes[r], Ep: eps[r], Params: make([]float32, tc.n), Grads: grads, Timeout: timeout, Update: func(int) {}}
				switch {
				case r == 1:
					rk.Computer = &frozenComputer{fakeComputer: fc, freezeAt: 5, frozen: frozen}
				case r == 2 && tc.late > 0:
					rk.Computer = &lateComputer{fakeComputer: fc, lateAt: 5, late: time.Duration(tc.late) * timeout / 10}
				default:
					rk.Computer = &fc
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = rk.Run(ctx)
					if r != 1 {
						eps[r].Close() // as the trainer does: a failed rank leaves the group
						healthy <- struct{}{}
					}
				}()
			}
			ended := make(chan struct{})
			go func() { wg.Wait(); close(ended) }()
			select {
			case <-frozen:
			case <-ended:
				// Rank 1 failed before its freeze (a rank timed out
				// on an honest step: a machine too loaded for this
				// timeout): report it rather than wait forever.
				t.Fatalf("the ranks stopped before rank 1 froze: %v", errs)
			}
			t0 := time.Now()
			deadline := time.After(10 * timeout)
		wait:
			for range size - 1 {
				select {
				case <-healthy:
				case <-deadline:
					break wait
				}
			}
			cancel()
			wg.Wait()
			t.Logf("rank 0: %v\nrank 2: %v", errs[0], errs[2])
			if d := time.Since(t0); d > 3*timeout {
				t.Errorf("the healthy ranks took %v to give up (timeout %v)", d, timeout)
			}
			for _, r := range []int{0, 2} {
				msg := ""
				if errs[r] != nil {
					msg = errs[r].Error()
				}
				if !strings.Contains(msg, "rank 1") || strings.Contains(msg, "from rank 0") || strings.Contains(msg, "from rank 2") {
					t.Errorf("rank %d: %q: want an error naming the frozen rank 1 alone", r, msg)
				}
			}
		})
	}
}
