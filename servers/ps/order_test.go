package ps

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dsgd/protocol/center"
)

// orderPaths are the two ways a worker's weights travel: in the rpc
// messages, or through a blob store (SpeeDO's Redis; an in-memory store
// here). The center's ordering rules must hold on both (issue 27).
func orderPaths() []struct {
	name   string
	server func() ServerConfig
	client func(ServerConfig) ClientConfig
} {
	return []struct {
		name   string
		server func() ServerConfig
		client func(ServerConfig) ClientConfig
	}{
		{"direct", func() ServerConfig { return ServerConfig{} }, func(ServerConfig) ClientConfig { return ClientConfig{} }},
		{"store", func() ServerConfig { return ServerConfig{Store: newMemStore()} }, func(s ServerConfig) ClientConfig { return ClientConfig{Store: s.Store} }},
	}
}

func orderCenter(t *testing.T, cfg center.Config) *center.Local {
	t.Helper()
	cfg.Weights = weights(5, 0)
	l, err := center.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRoundRobinTurnsOnEveryPath: under easgd-rr's round robin a worker's
// pull waits for its turn, which starts once the previous worker has
// clocked, and sees that worker's push.
func TestRoundRobinTurnsOnEveryPath(t *testing.T) {
	for _, p := range orderPaths() {
		t.Run(p.name, func(t *testing.T) {
			ctx := context.Background()
			scfg := p.server()
			srv, _ := serve(t, orderCenter(t, center.Config{Workers: 2, Policy: center.RoundRobin, Interval: 1}), scfg)
			c0, c1 := dial(t, srv.Addr(), p.client(scfg)), dial(t, srv.Addr(), p.client(scfg))
			for w, c := range []*Client{c0, c1} {
				if _, err := c.Join(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			// Worker 1 asks first; it is worker 0's turn.
			got := make([]float32, 5)
			pulled := make(chan error, 1)
			go func() { pulled <- c1.Pull(ctx, 1, got) }()
			select {
			case err := <-pulled:
				t.Fatalf("worker 1's pull returned (%v) during worker 0's turn", err)
			case <-time.After(100 * time.Millisecond):
			}
			buf := make([]float32, 5)
			if err := c0.Pull(ctx, 0, buf); err != nil {
				t.Fatal(err)
			}
			if err := c0.Push(ctx, 0, []float32{1, 2, 3, 4, 5}); err != nil {
				t.Fatal(err)
			}
			if _, err := c0.Clock(ctx, 0, 0, -1); err != nil {
				t.Fatal(err)
			}
			if err := <-pulled; err != nil {
				t.Fatal(err)
			}
			w0 := weights(5, 0)
			for i := range got {
				if got[i] != w0[i]+float32(i+1) {
					t.Fatalf("worker 1 pulled %v, want the center after worker 0's push", got)
				}
			}
		})
	}
}

// TestBSPReadsOnEveryPath: ssp with staleness 0 is BSP: a pull after the
// clock sees every worker's push of that iteration, however the clocks
// and pushes interleave.
func TestBSPReadsOnEveryPath(t *testing.T) {
	for _, p := range orderPaths() {
		t.Run(p.name, func(t *testing.T) {
			ctx := context.Background()
			scfg := p.server()
			srv, _ := serve(t, orderCenter(t, center.Config{Workers: 2, ClockedReads: true}), scfg)
			c0, c1 := dial(t, srv.Addr(), p.client(scfg)), dial(t, srv.Addr(), p.client(scfg))
			for w, c := range []*Client{c0, c1} {
				if _, err := c.Join(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			for it := range 3 {
				// Worker 0 pushes, clocks (waiting for worker 1) and
				// pulls; worker 1 pushes and clocks meanwhile.
				errs := make(chan error, 2)
				got := make([]float32, 5)
				go func() {
					if err := c0.Push(ctx, 0, []float32{1, 1, 1, 1, 1}); err != nil {
						errs <- err
						return
					}
					if _, err := c0.Clock(ctx, 0, it, 0); err != nil {
						errs <- err
						return
					}
					errs <- c0.Pull(ctx, 0, got)
				}()
				go func() {
					time.Sleep(20 * time.Millisecond)
					if err := c1.Push(ctx, 1, []float32{10, 10, 10, 10, 10}); err != nil {
						errs <- err
						return
					}
					_, err := c1.Clock(ctx, 1, it, 0)
					errs <- err
				}()
				for range 2 {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
				w0 := weights(5, 0)
				want := fmt.Sprint(w0[0] + 11*float32(it+1))
				if fmt.Sprint(got[0]) != want {
					t.Fatalf("iteration %d: worker 0 pulled %v, want every push so far (first value %s)", it, got, want)
				}
			}
		})
	}
}
