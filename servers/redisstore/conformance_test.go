package redisstore

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"

	"dsgd/protocol/center"
	"dsgd/servers/centertest"
	"dsgd/servers/ps"
)

// TestConformance runs SpeeDO's path through the center suite: a
// parameter server in blob store mode over a redis-server of its own
// per case (every weight transfer through Redis, control on the rpc
// connection), a ps.Client per worker with a Store of its own.
func TestConformance(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not installed, so the Redis-backed center cannot be run through the suite (apt-get install -y redis-server): %v", err)
	}
	const token = "tok"
	closeAll := func(c center.Center) error {
		var errs []error
		for _, cl := range c.(*centertest.PerWorker).Conns {
			errs = append(errs, cl.(io.Closer).Close())
		}
		return errors.Join(errs...)
	}
	centertest.Run(t, func(t *testing.T, cfg centertest.Config) center.Center {
		srv := startRedis(t)
		l, err := center.NewLocal(center.Config{Workers: cfg.Workers, Weights: cfg.Weights, Policy: cfg.Policy,
			Interval: cfg.Interval, Finish: cfg.Finish, MaxIter: cfg.MaxIter, Update: cfg.Update})
		if err != nil {
			t.Fatal(err)
		}
		psrv, err := ps.Listen("127.0.0.1:0", l, ps.ServerConfig{Token: token, Store: NewStore(dialTest(t, srv, Config{}))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- psrv.Serve(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
		p := &centertest.PerWorker{}
		for range cfg.Workers {
			cl, err := ps.Dial(context.Background(), psrv.Addr(), ps.ClientConfig{Token: token, Store: NewStore(dialTest(t, srv, Config{}))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cl.Close() })
			p.Conns = append(p.Conns, cl)
		}
		return p
	}, centertest.Features{Elastic: true, RoundRobin: true, Rounds: true, Close: closeAll})
}
