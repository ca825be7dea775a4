package train

import (
	"context"
	"fmt"
	"math"
	"testing"

	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// runIterSize trains like runScheme with Caffe's iter_size k: each worker
// computes k batches of b per iteration.
func runIterSize(t *testing.T, name string, workers, b, k, iters int) []float32 {
	w, _ := runIterSizeFills(t, name, workers, b, k, iters)
	return w
}

// runIterSizeFills is runIterSize that also returns how many batches
// worker 0 read.
func runIterSizeFills(t *testing.T, name string, workers, b, k, iters int) ([]float32, int) {
	t.Helper()
	images, labels := samples(96, 64, 4)
	shapes := map[string]tensor.Shape{"data": {b, 1, 8, 8}, "label": {b}}
	var src0 *sliceSource
	feeds := func(rank int) []Feed {
		src := &sliceSource{images: images, labels: labels, per: 64, batch: b, rank: rank, workers: workers}
		if rank == 0 {
			src0 = src
		}
		return []Feed{{Tops: []string{"data", "label"}, Source: src}}
	}
	cfg := Config{
		Train: mlp(false), TrainShapes: shapes, TrainFeeds: feeds(0),
		Solver:   solver.Config{Type: "SGD", BaseLR: 0.1, Momentum: 0.9, WeightDecay: 1e-3, LRPolicy: "inv", Gamma: 1e-2, Power: 0.75},
		IterSize: k, Seed: 11, Threads: workers,
		Config: scheme.Config{MaxIter: iters, Name: name, Workers: workers, Pack: true,
			Interval: 1, Alpha: 0.5, Variant: 2, Groups: 1}, // for the elastic schemes; the others ignore them
	}
	for r := 1; r < workers; r++ {
		cfg.WorkerFeeds = append(cfg.WorkerFeeds, feeds(r))
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iters != iters {
		t.Fatalf("ran %d iterations, want %d", res.Iters, iters)
	}
	return append([]float32(nil), res.Params...), src0.iter
}

// TestIterSizeIsALargerBatch: iter_size k with batch b gives the weights
// of batch k·b, alone and under the synchronous schemes (whose N workers
// then stand for batch N·k·b); so gradients are accumulated, averaged and
// reported ready only once they are final.
func TestIterSizeIsALargerBatch(t *testing.T) {
	const b, iters = 4, 8
	for _, tc := range []struct {
		scheme     string
		workers, k int
	}{
		{"seq", 1, 2}, {"seq", 1, 3}, {"sync-ring", 2, 2}, {"overlap", 2, 3}, {"sync-ps", 2, 2},
	} {
		t.Run(fmt.Sprintf("%s/N=%d/k=%d", tc.scheme, tc.workers, tc.k), func(t *testing.T) {
			_, want := runScheme(t, "seq", 1, tc.workers*tc.k*b, iters, true, 0)
			got := runIterSize(t, tc.scheme, tc.workers, b, tc.k, iters)
			worst := 0.0
			for i := range want {
				d := math.Abs(float64(got[i]-want[i])) / math.Max(1e-2, math.Abs(float64(want[i])))
				worst = math.Max(worst, d)
			}
			if worst > 1e-4 {
				t.Fatalf("weights differ from batch %d: worst relative difference %.3g", tc.workers*tc.k*b, worst)
			}
			// And the test can fail: iter_size 1 is a smaller batch.
			if tc.scheme == "seq" && tc.k == 2 {
				other := runIterSize(t, "seq", 1, b, 1, iters)
				same := true
				for i := range want {
					same = same && math.Abs(float64(other[i]-want[i])) <= 1e-4*math.Max(1e-2, math.Abs(float64(want[i])))
				}
				if same {
					t.Fatal("batch b and batch 2b gave the same weights: the comparison cannot fail")
				}
			}
		})
	}
}

// TestIterSizeEveryScheme: every scheme runs with iter_size 2, each worker
// consuming two batches per iteration, and ends with finite weights that
// moved from their start.
func TestIterSizeEveryScheme(t *testing.T) {
	images, labels := samples(96, 64, 4)
	first, err := New(Config{
		Train: mlp(false), TrainShapes: map[string]tensor.Shape{"data": {4, 1, 8, 8}, "label": {4}},
		TrainFeeds: []Feed{{Tops: []string{"data", "label"}, Source: &sliceSource{images: images, labels: labels, per: 64, batch: 4, workers: 1}}},
		Solver:     solver.Config{Type: "SGD", BaseLR: 0.1, LRPolicy: "fixed"}, Config: scheme.Config{MaxIter: 1}, Seed: 11,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := append([]float32(nil), first.net.Params()...)
	// hogwild and hogwild-easgd (lock-free by design) are added by
	// itersize_norace_test.go outside the race detector.
	for _, name := range append([]string{"async", "ssp", "weedout", "easgd-rr", "easgd", "measgd",
		"sync-easgd", "seasgd", "hybrid", "sync-tree"}, lockFreeSchemes...) {
		t.Run(name, func(t *testing.T) {
			got, fills := runIterSizeFills(t, name, 2, 4, 2, 4)
			if fills != 2*4 {
				t.Errorf("worker 0 read %d batches in 4 iterations of iter_size 2, want 8", fills)
			}
			moved := false
			for i, v := range got {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("weight %d is %v", i, v)
				}
				moved = moved || v != start[i]
			}
			if !moved {
				t.Fatal("no weight changed")
			}
		})
	}
}
