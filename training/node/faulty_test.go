package node

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/faulty"
	"dsgd/protocol/scheme"
)

// TestSyncSchemesOverFaultyLinks drives three ranks of each synchronous
// scheme through the faulty transport: rank 1's links failing mid-run (a
// crashed process: cut) or turning slower than the timeout (a stalled
// one: delay) ends every rank's Run with an error within a few timeouts,
// never a hang. Rank 0, which exchanges with rank 1, names rank 1 alone;
// rank 2, which waits on rank 0's result, names rank 0 (which left the
// group: in process no abort carries the root cause; over TCP the abort
// frame does, TestFrozenRankNamedOverTCP) or rank 1. (A message lost on a
// link that stays up is not among the faults: TCP and MPI do not lose
// messages, and the collectives do not number them.)
func TestSyncSchemesOverFaultyLinks(t *testing.T) {
	const size, n, timeout = 3, 64, 500 * time.Millisecond
	for _, name := range []string{"sync-ring", "sync-tree", "overlap"} {
		for _, fault := range []string{"cut", "slow"} {
			t.Run(name+"/"+fault, func(t *testing.T) {
				layout := scheme.Layout{N: n, Blocks: []scheme.Range{{Lo: 0, Hi: 40}, {Lo: 40, Hi: n}}}
				schemes, err := scheme.New(scheme.Config{Name: name, Workers: size, MaxIter: 1 << 30, Pack: true, Layout: layout})
				if err != nil {
					t.Fatal(err)
				}
				nw := faulty.New(transport.NewInproc(size))
				// Some iterations' messages get through, then rank 1's
				// links fail, or rank 1 becomes too slow to answer.
				for _, peer := range []int{0, 2} {
					switch fault {
					case "cut":
						nw.Cut(1, peer, 10)
						nw.Cut(peer, 1, 10)
					case "slow":
						nw.Delay(1, peer, 4*timeout)
					}
				}
				eps := nw.Endpoints()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errs := make([]error, size)
				var wg sync.WaitGroup
				t0 := time.Now()
				for r := range size {
					grads := make([]float32, n)
					rk := &Rank{Scheme: schemes[r], Ep: eps[r], Params: make([]float32, n), Grads: grads, Timeout: timeout, Update: func(int) {},
						Computer: &fakeComputer{grads: grads, blocks: [][2]int{{0, 40}, {40, n}}, value: float32(r + 1)}}
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[r] = rk.Run(ctx)
						eps[r].Close() // as the trainer does: a failed rank leaves the group
					}()
				}
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(20 * timeout):
					cancel()
					<-done
					t.Fatalf("ranks still running %v after the fault (timeout %v): %v", 20*timeout, timeout, errs)
				}
				if took := time.Since(t0); took > 4*timeout {
					t.Errorf("the ranks took %v to stop (timeout %v)", took, timeout)
				}
				for r, err := range errs {
					if err == nil {
						t.Errorf("rank %d: Run returned nil after rank 1's links failed", r)
						continue
					}
					if errors.Is(err, context.Canceled) {
						t.Errorf("rank %d ended only when cancelled: %v", r, err)
					}
					msg := err.Error()
					switch {
					case r == 0 && (!strings.Contains(msg, "rank 1") || strings.Contains(msg, "rank 2")):
						t.Errorf("rank 0: %q: want an error naming rank 1 alone", msg)
					case r == 2 && !strings.Contains(msg, "rank 0") && !strings.Contains(msg, "rank 1"):
						t.Errorf("rank 2: %q: want an error naming rank 0 or rank 1", msg)
					}
				}
			})
		}
	}
}
