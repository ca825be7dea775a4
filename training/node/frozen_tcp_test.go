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
func TestFrozenRankNamedOverTCP(t *testing.T) {
	for _, tc := range []struct {
		scheme string
		n      int // floats in the model
	}{
		{"sync-ring", 1 << 10},
		{"sync-ring", 1 << 20}, // messages larger than the socket buffers: sends stall too
		{"sync-tree", 1 << 20},
	} {
		t.Run(tc.scheme+"/"+strconv.Itoa(tc.n), func(t *testing.T) {
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
				if r == 1 {
					rk.Computer = &frozenComputer{fakeComputer: fc, freezeAt: 5, frozen: frozen}
				} else {
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
			<-frozen
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
