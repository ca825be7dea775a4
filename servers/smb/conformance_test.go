package smb

import (
	"io"
	"sync"
	"testing"

	"dsgd/protocol/center"
	"dsgd/servers/centertest"
)

// TestConformance runs SEASGD's adapter through the center suite over a
// local Store and over a server's Client, one adapter per worker (a
// process each, as ShmCaffe runs). The server has no update logic, so
// the elastic exchange, round-robin turns and weed-out rounds are
// skipped (Elastic and Round are refused: TestCenterRefusesElasticAndRound).
// Over a Client, closing the connection must fail every later call; a
// Store has no connection to close.
func TestConformance(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			var mu sync.Mutex
			conns := map[center.Center]io.Closer{}
			f := centertest.Features{}
			if be.name == "client" {
				f.Close = func(c center.Center) error {
					mu.Lock()
					defer mu.Unlock()
					return conns[c].Close()
				}
			}
			centertest.Run(t, func(t *testing.T, cfg centertest.Config) center.Center {
				b, _ := be.new(t)
				p := &centertest.PerWorker{}
				for range cfg.Workers {
					p.Conns = append(p.Conns, newCenter(t, b, CenterConfig{Workers: cfg.Workers, N: len(cfg.Weights),
						Weights: cfg.Weights, Finish: cfg.Finish, MaxIter: cfg.MaxIter}))
				}
				if cl, ok := b.(io.Closer); ok {
					mu.Lock()
					conns[p] = cl
					mu.Unlock()
				}
				return p
			}, f)
		})
	}
}
