package smb

import (
	"testing"

	"dsgd/protocol/center"
	"dsgd/servers/centertest"
)

// TestConformance runs SEASGD's adapter through the center suite over a
// local Store and over a server's Client, one adapter per worker (a
// process each, as ShmCaffe runs). The server has no update logic, so
// the elastic exchange, round-robin turns and weed-out rounds are
// skipped (Elastic and Round are refused: TestCenterRefusesElasticAndRound).
func TestConformance(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			centertest.Run(t, func(t *testing.T, cfg centertest.Config) center.Center {
				b, _ := be.new(t)
				p := &centertest.PerWorker{}
				for range cfg.Workers {
					p.Conns = append(p.Conns, newCenter(t, b, CenterConfig{Workers: cfg.Workers, N: len(cfg.Weights),
						Weights: cfg.Weights, Finish: cfg.Finish, MaxIter: cfg.MaxIter}))
				}
				return p
			}, centertest.Features{})
		})
	}
}
