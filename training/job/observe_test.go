package job

import (
	"io"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/training/prom"
	"dsgd/training/train"
)

// TestObserve: a scheme with outer steps measures its busiest step over
// a group's endpoint, no other run does, and a Prometheus run takes the
// iterations', tests' and metrics' hooks, the step's measure still
// called under it.
func TestObserve(t *testing.T) {
	j, err := Load(Options{Model: "lenet", Seed: -1, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	trainer := func(name string) *train.Trainer {
		cfg := j.Config()
		cfg.Name, cfg.Workers, cfg.Out, cfg.SnapshotPrefix, cfg.MaxIter = name, 1, io.Discard, "", 1
		if err := j.Open(&cfg, 0); err != nil {
			t.Fatal(err)
		}
		tr, err := train.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	diloco, ring := trainer("diloco"), trainer("sync-ring")
	ep := transport.NewInproc(1)[0]
	defer ep.Close()

	var deps train.Deps
	if Observe(diloco, &deps, nil) != nil || deps.OnIter != nil {
		t.Errorf("without an endpoint: a peak step measured, or OnIter set")
	}
	deps = train.Deps{Endpoint: ep}
	if Observe(ring, &deps, nil) != nil || deps.OnIter != nil {
		t.Errorf("sync-ring has no outer step, but its peak step is measured")
	}
	called := 0
	deps = train.Deps{Endpoint: ep, OnIter: func(int, float64, time.Duration) { called++ }}
	peak := Observe(diloco, &deps, prom.New())
	if peak == nil || deps.OnIter == nil || deps.OnTest == nil || deps.OnIterMetrics == nil {
		t.Fatalf("diloco over an endpoint with Prometheus: peak %v, hooks %v %v %v", peak, deps.OnIter != nil, deps.OnTest != nil, deps.OnIterMetrics != nil)
	}
	deps.OnIter(1, 0.5, time.Millisecond)
	if called != 1 {
		t.Errorf("the caller's OnIter ran %d times, want 1", called)
	}
}
