package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/protocol/scheme"
)

// TestTimeoutNamesStalledRank: a rank whose allreduce partner stalls (a
// frozen process: here a rank that never runs) times out with an error
// naming the stalled rank, not the action's peer field (0 for a
// collective).
func TestTimeoutNamesStalledRank(t *testing.T) {
	for _, name := range []string{"sync-ring", "sync-tree"} {
		t.Run(name, func(t *testing.T) {
			const n = 8
			layout := scheme.Layout{N: n, Blocks: []scheme.Range{{Lo: 0, Hi: n}}}
			schemes, err := scheme.New(scheme.Config{Name: name, Workers: 2, MaxIter: 3, Pack: true, Layout: layout})
			if err != nil {
				t.Fatal(err)
			}
			eps := transport.NewInproc(2)
			params, grads := make([]float32, n), make([]float32, n)
			rk := &Rank{Scheme: schemes[0], Ep: eps[0], Params: params, Grads: grads, Timeout: 200 * time.Millisecond,
				Computer: &fakeComputer{grads: grads, blocks: [][2]int{{0, n}}, value: 1}, Update: func(int) {}}
			// Rank 1 never runs: it is frozen.
			err = rk.Run(context.Background())
			if err == nil {
				t.Fatal("rank 0 finished without its partner")
			}
			if !strings.Contains(err.Error(), "no answer from rank 1") {
				t.Fatalf("error %q does not name the stalled rank 1", err)
			}
		})
	}
}
