//go:build !race

// The tests in this file do not run under the race detector: hogwild and
// hogwild-easgd update shared weights with no lock (the races are the
// algorithm), and the Fashion-MNIST convergence test is too slow there.

package train

import (
	"context"
	"testing"
	"time"

	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
)

// TestHogwildSchemesRun: hogwild and hogwild-easgd train 4 workers for 30
// iterations without error and with finite losses and weights.
func TestHogwildSchemesRun(t *testing.T) {
	const workers, iters = 4, 30
	for _, run := range schemeRuns(racy) {
		t.Run(run.label, func(t *testing.T) {
			res, losses := runAsync(t, run.cfg(workers, iters))
			checkRun(t, res, losses, iters)
		})
	}
}

// datasetSource serves a data set's images scaled to [0,1]: worker r of n
// at its i-th call reads images (i·n + r)·b … +b, wrapping around.
type datasetSource struct {
	ds            *data.Dataset
	batch         int
	rank, workers int
	iter          int
}

func (s *datasetSource) Fill(_ context.Context, tops []*tensor.Blob) error {
	per := s.ds.ImageSize()
	for j := 0; j < s.batch; j++ {
		k := ((s.iter*s.workers+s.rank)*s.batch + j) % s.ds.N
		for i, p := range s.ds.Image(k) {
			tops[0].Data[j*per+i] = float32(p) / 255
		}
		tops[1].Data[j] = float32(s.ds.Labels[k])
	}
	s.iter++
	return nil
}

// fashionMLP is a small net for 28x28 images: ip 32 -> relu -> ip 10.
func fashionMLP(withAccuracy bool) model.Spec {
	xavier := layers.Filler{Type: layers.FillXavier}
	s := model.Spec{
		Name:   "fashion-mlp",
		Inputs: []string{"data", "label"},
		Layers: []model.LayerSpec{
			{Name: "ip1", Bottom: []string{"data"}, Top: []string{"ip1"}, Config: &layers.InnerProductConfig{NumOutput: 32, BiasTerm: true, Axis: 1, WeightFiller: xavier}},
			{Name: "relu1", Bottom: []string{"ip1"}, Top: []string{"ip1"}, Config: &layers.ReLUConfig{}},
			{Name: "ip2", Bottom: []string{"ip1"}, Top: []string{"ip2"}, Config: &layers.InnerProductConfig{NumOutput: 10, BiasTerm: true, Axis: 1, WeightFiller: xavier}},
			{Name: "loss", Bottom: []string{"ip2", "label"}, Top: []string{"loss"}, Config: &layers.SoftmaxWithLossConfig{Axis: 1}},
		},
	}
	if withAccuracy {
		s.Layers = append(s.Layers, model.LayerSpec{Name: "accuracy", Bottom: []string{"ip2", "label"}, Top: []string{"accuracy"}, Config: &layers.AccuracyConfig{TopK: 1, Axis: 1}})
	}
	return s
}

// TestSchemesConvergeOnFashionMNIST: every scheme but seq trains a small
// MLP on Fashion-MNIST with 4 workers to the test accuracy threshold,
// measured on the model the scheme trains (the center for the elastic and
// asynchronous schemes).
func TestSchemesConvergeOnFashionMNIST(t *testing.T) {
	if testing.Short() {
		t.Skip("trains every scheme on Fashion-MNIST")
	}
	trainSet, err := data.Open("fashion-mnist", data.Train)
	if err != nil {
		t.Skipf("Fashion-MNIST is not installed under %s: %v", data.DefaultRoot, err)
	}
	testSet, err := data.Open("fashion-mnist", data.Test)
	if err != nil {
		t.Fatal(err)
	}
	const (
		workers, iters, batch = 4, 800, 16
		testBatch, testIters  = 100, 20
		threshold             = 0.75
	)
	start := time.Now()
	for _, run := range schemeRuns(func(string) bool { return true }) {
		t.Run(run.label, func(t *testing.T) {
			cfg := run.cfg(workers, iters)
			shapes := map[string]tensor.Shape{"data": {batch, 1, 28, 28}, "label": {batch}}
			feeds := func(r int) []Feed {
				return []Feed{{Tops: []string{"data", "label"}, Source: &datasetSource{ds: trainSet, batch: batch, rank: r, workers: workers}}}
			}
			cfg.Train, cfg.Test = fashionMLP(false), fashionMLP(true)
			cfg.TrainShapes, cfg.TestShapes = shapes, map[string]tensor.Shape{"data": {testBatch, 1, 28, 28}, "label": {testBatch}}
			cfg.TrainFeeds, cfg.WorkerFeeds = feeds(0), nil
			for r := 1; r < workers; r++ {
				cfg.WorkerFeeds = append(cfg.WorkerFeeds, feeds(r))
			}
			cfg.TestFeeds = []Feed{{Tops: []string{"data", "label"}, Source: &datasetSource{ds: testSet, batch: testBatch, workers: 1}}}
			cfg.TestIter, cfg.TestInterval = testIters, 0
			mom := cfg.Solver.Momentum
			cfg.Solver = solver.Config{Type: "SGD", BaseLR: 0.05, Momentum: mom, WeightDecay: 5e-4, LRPolicy: "fixed"}
			switch cfg.Name {
			case "async", "ssp", "hogwild":
				// Every worker's steps land in the same weights (the
				// center, or hogwild's shared ones): 4 workers step 4
				// times as far as one.
				cfg.Solver.BaseLR /= workers
			}
			if mom == 0 {
				// Plain SGD, as EASGD's Eq. 1 has it: a larger rate
				// stands in for momentum 0.9's longer steps.
				cfg.Solver.BaseLR = 0.2
			}
			res, losses := runAsync(t, cfg)
			checkRun(t, res, losses, iters)
			acc, ok := res.Final().Get("accuracy")
			if !ok {
				t.Fatalf("final test has no accuracy: %+v", res.Final())
			}
			t.Logf("test accuracy %.3f after %d iterations of %d workers (%v)", acc, iters, workers, res.Wall.Round(time.Millisecond))
			if acc < threshold {
				t.Errorf("test accuracy %.3f, want >= %.2f", acc, threshold)
			}
		})
	}
	t.Logf("all schemes in %v", time.Since(start).Round(time.Millisecond))
}

// TestHogwildSharesWeights: hogwild's workers update one set of weights
// (rank 0's), each from gradients of its own: the sharing is the scheme,
// and a worker that trained on a copy would still pass
// TestHogwildSchemesRun.
func TestHogwildSharesWeights(t *testing.T) {
	const workers = 3
	tr, err := New(asyncConfig("hogwild", workers, 2))
	if err != nil {
		t.Fatal(err)
	}
	p0, g0 := tr.ranks[0].net.Params(), tr.ranks[0].net.Grads()
	for i, rs := range tr.ranks[1:] {
		p, g := rs.net.Params(), rs.net.Grads()
		if &p[0] != &p0[0] || len(p) != len(p0) {
			t.Errorf("worker %d trains its own weights, not rank 0's", i+1)
		}
		if &g[0] == &g0[0] {
			t.Errorf("worker %d writes its gradients over rank 0's", i+1)
		}
	}
	before := append([]float32(nil), p0...)
	if _, err := tr.Run(context.Background(), Deps{}); err != nil {
		t.Fatal(err)
	}
	// Every worker's writes are in the one set of weights: each worker's
	// view is rank 0's, and it moved.
	for i, rs := range tr.ranks {
		if p := rs.net.Params(); &p[0] != &p0[0] {
			t.Errorf("after the run worker %d holds weights of its own", i)
		}
	}
	moved := false
	for i := range before {
		moved = moved || before[i] != p0[i]
	}
	if !moved {
		t.Error("the shared weights never moved")
	}
}
