package train

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// TestAsyncWorkerFailureIsolated: under ssp in one process, worker 2's
// data source fails at its third iteration. The other workers train on
// to MaxIter (rank 0 reports every iteration), the run's weights are the
// center's, and the failure is reported, naming the worker, in the
// result and on the progress output.
func TestAsyncWorkerFailureIsolated(t *testing.T) {
	const b, iters, workers = 4, 30, 3
	images, labels := samples(96, 64, 4)
	feeds := func(rank int) []Feed {
		src := &sliceSource{images: images, labels: labels, per: 64, batch: b, rank: rank, workers: workers}
		if rank == 2 {
			src.failAt = 3
		}
		return []Feed{{Tops: []string{"data", "label"}, Source: src}}
	}
	var out bytes.Buffer
	var last int
	cfg := Config{
		Train: mlp(false), TrainShapes: map[string]tensor.Shape{"data": {b, 1, 8, 8}, "label": {b}}, TrainFeeds: feeds(0),
		Solver: solver.Config{Type: "SGD", BaseLR: 0.05, LRPolicy: "fixed"},
		Config: scheme.Config{MaxIter: iters, Name: "ssp", Staleness: 1, Workers: workers, Pack: true}, Seed: 11, Threads: workers,
		Out: &out,
	}
	onIter := func(iter int, _ float64, _ time.Duration) { last = iter }
	for r := 1; r < workers; r++ {
		cfg.WorkerFeeds = append(cfg.WorkerFeeds, feeds(r))
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tr.Run(ctx, Deps{OnIter: onIter})
	if err != nil {
		t.Fatalf("the run failed with its workers: %v", err)
	}
	if last != iters-1 || res.Iters != iters {
		t.Errorf("rank 0 stopped at iteration %d (%d run), want all %d", last, res.Iters, iters)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Error(), "worker 2") || !strings.Contains(res.Failed[0].Error(), "injected data failure") {
		t.Fatalf("failures %v, want worker 2's injected data failure", res.Failed)
	}
	if !strings.Contains(out.String(), "worker 2") || !strings.Contains(out.String(), "the other workers train on") {
		t.Errorf("the progress output does not report the failure:\n%s", out.String())
	}
}
