package ps

import (
	"context"
	"errors"
	"io"
	"testing"

	"dsgd/protocol/center"
	"dsgd/servers/centertest"
)

// localFor builds the center.Local a server of the suite serves.
func localFor(t *testing.T, cfg centertest.Config, w0 []float32) *center.Local {
	t.Helper()
	l, err := center.NewLocal(center.Config{Workers: cfg.Workers, Weights: w0, Policy: cfg.Policy,
		Interval: cfg.Interval, Finish: cfg.Finish, MaxIter: cfg.MaxIter, Update: cfg.Update})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// closeAll closes every connection of a PerWorker center.
func closeAll(c center.Center) error {
	var errs []error
	for _, cl := range c.(*centertest.PerWorker).Conns {
		errs = append(errs, cl.(io.Closer).Close())
	}
	return errors.Join(errs...)
}

var psFeatures = centertest.Features{Elastic: true, RoundRobin: true, Rounds: true, Close: closeAll}

// TestConformance runs the parameter server through the center suite:
// one server and a Client per worker, and the same over two shards
// (ps.Sharded of a Client per shard, per worker).
func TestConformance(t *testing.T) {
	t.Run("client", func(t *testing.T) {
		centertest.Run(t, func(t *testing.T, cfg centertest.Config) center.Center {
			srv, _ := serve(t, localFor(t, cfg, cfg.Weights), ServerConfig{})
			p := &centertest.PerWorker{}
			for range cfg.Workers {
				p.Conns = append(p.Conns, dial(t, srv.Addr(), ClientConfig{}))
			}
			return p
		}, psFeatures)
	})
	t.Run("sharded", func(t *testing.T) {
		centertest.Run(t, func(t *testing.T, cfg centertest.Config) center.Center {
			shards := min(2, len(cfg.Weights))
			bounds := EvenBounds(len(cfg.Weights), shards)
			var addrs []string
			for i := range shards {
				srv, _ := serve(t, localFor(t, cfg, cfg.Weights[bounds[i]:bounds[i+1]]), ServerConfig{})
				addrs = append(addrs, srv.Addr())
			}
			p := &centertest.PerWorker{}
			for range cfg.Workers {
				sh, err := DialSharded(context.Background(), addrs, ClientConfig{Token: token})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { sh.Close() })
				p.Conns = append(p.Conns, sh)
			}
			return p
		}, psFeatures)
	})
}
