package centertest_test

import (
	"testing"

	"dsgd/protocol/center"
	"dsgd/servers/centertest"
)

// TestLocal runs the in-process center through the suite.
func TestLocal(t *testing.T) {
	centertest.Run(t, func(t *testing.T, cfg centertest.Config) center.Center {
		l, err := center.NewLocal(center.Config{Workers: cfg.Workers, Weights: cfg.Weights, Policy: cfg.Policy,
			Interval: cfg.Interval, Finish: cfg.Finish, MaxIter: cfg.MaxIter, Update: cfg.Update})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}, centertest.Features{Elastic: true, RoundRobin: true, Rounds: true})
}
