package train

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// The iter_size tests of Caffe's test_gradient_based_solver.cpp
// (…LeastSquaresUpdateWithEverythingAccum and …AccumShare, issue 22):
// Caffe's CheckAccumulation trains its least-squares net (see
// engine/solver/caffe_port_test.go) for 4 iterations with batch 4, then with
// iter_size 2 and batch 2, and expects the same weights within 1e-2
// relative. Here both runs go through the trainer, which owns iter_size.

// lsqSource reads the 8 rows of the least-squares data set in order,
// batch rows at a time, as Caffe's HDF5Data layer does.
type lsqSource struct {
	data, targets []float32
	batch, row    int
}

func (s *lsqSource) Fill(_ context.Context, tops []*tensor.Blob) error {
	const dim = 300
	for j := range s.batch {
		r := s.row % 8
		copy(tops[0].Data[j*dim:(j+1)*dim], s.data[r*dim:(r+1)*dim])
		tops[1].Data[j] = s.targets[r]
		s.row++
	}
	return nil
}

func lsqSpecTrain(share bool) model.Spec {
	g := layers.Filler{Type: layers.FillGaussian, Std: 1}
	ip := func(name, bottom, top string) model.LayerSpec {
		return model.LayerSpec{Name: name, Bottom: []string{bottom}, Top: []string{top},
			Params: []model.ParamSpec{{Name: "weights", LRMult: 1, DecayMult: 1}, {Name: "bias", LRMult: 1, DecayMult: 1}},
			Config: &layers.InnerProductConfig{NumOutput: 1, BiasTerm: true, Axis: 1, WeightFiller: g, BiasFiller: g}}
	}
	loss := model.LayerSpec{Name: "loss", Bottom: []string{"innerprod", "targets"}, Top: []string{"loss"}, Config: &layers.EuclideanLossConfig{}}
	s := model.Spec{Name: "TestNetwork", Inputs: []string{"data", "targets"}}
	if !share {
		s.Layers = []model.LayerSpec{ip("innerprod", "data", "innerprod"), loss}
		return s
	}
	s.Layers = []model.LayerSpec{
		{Name: "slice", Bottom: []string{"data"}, Top: []string{"data1", "data2"}, Config: &layers.SliceConfig{Axis: 0}},
		ip("innerprod", "data1", "innerprod1"),
		ip("innerprod2", "data2", "innerprod2"),
		{Name: "concat", Bottom: []string{"innerprod1", "innerprod2"}, Top: []string{"innerprod"}, Config: &layers.ConcatConfig{Axis: 0}},
		loss,
	}
	return s
}

func runLsq(t *testing.T, cfg solver.Config, share bool, iters, iterSize int) []float32 {
	t.Helper()
	r := rand.New(rand.NewPCG(1701, 1701))
	data, targets := make([]float32, 8*300), make([]float32, 8)
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	for i := range targets {
		targets[i] = float32(r.NormFloat64())
	}
	b := 4 / iterSize
	tr, err := New(Config{
		Train: lsqSpecTrain(share), TrainShapes: map[string]tensor.Shape{"data": {b, 3, 10, 10}, "targets": {b, 1}},
		TrainFeeds: []Feed{{Tops: []string{"data", "targets"}, Source: &lsqSource{data: data, targets: targets, batch: b}}},
		Solver:     cfg, IterSize: iterSize, Config: scheme.Config{MaxIter: iters}, Seed: 1701, Out: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), res.Params...)
}

func TestCaffePortGradientBasedSolverAccum(t *testing.T) {
	for _, c := range []struct {
		name        string
		typ         string
		lr, wd, mom float64
		share       bool
	}{
		{"SGDSolverTest.TestLeastSquaresUpdateWithEverythingAccum", "SGD", 0.01, 0.5, 0.9, false},
		{"SGDSolverTest.TestLeastSquaresUpdateWithEverythingAccumShare", "SGD", 0.01, 0.5, 0.9, true},
		{"AdaGradSolverTest.TestLeastSquaresUpdateWithEverythingAccum", "AdaGrad", 0.01, 0.5, 0, false},
		{"AdaGradSolverTest.TestLeastSquaresUpdateWithEverythingAccumShare", "AdaGrad", 0.01, 0.5, 0, true},
		{"NesterovSolverTest.TestLeastSquaresUpdateWithEverythingAccum", "Nesterov", 0.01, 0.5, 0.9, false},
		{"NesterovSolverTest.TestLeastSquaresUpdateWithEverythingAccumShare", "Nesterov", 0.01, 0.5, 0.9, true},
		{"AdaDeltaSolverTest.TestLeastSquaresUpdateWithEverythingAccum", "AdaDelta", 0.1, 0.1, 0.95, false},
		{"AdaDeltaSolverTest.TestLeastSquaresUpdateWithEverythingAccumShare", "AdaDelta", 0.1, 0.1, 0.95, true},
		{"AdamSolverTest.TestLeastSquaresUpdateWithEverythingAccum", "Adam", 0.01, 0.5, 0.9, false},
		{"AdamSolverTest.TestLeastSquaresUpdateWithEverythingAccumShare", "Adam", 0.01, 0.5, 0.9, true},
		{"RMSPropSolverTest.TestLeastSquaresUpdateWithEverythingAccum", "RMSProp", 0.01, 0.5, 0, false},
		{"RMSPropSolverTest.TestLeastSquaresUpdateWithEverythingAccumShare", "RMSProp", 0.01, 0.5, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := solver.Config{Type: c.typ, BaseLR: c.lr, WeightDecay: c.wd, Momentum: c.mom, LRPolicy: "fixed",
				Delta: 1e-8, Momentum2: 0.999, RMSDecay: 0.95}
			want := runLsq(t, cfg, c.share, 4, 1)
			got := runLsq(t, cfg, c.share, 4, 2)
			if len(got) != len(want) {
				t.Fatalf("%d params, want %d", len(got), len(want))
			}
			for i := range want {
				e, a := float64(want[i]), float64(got[i])
				if math.Abs(e-a) > math.Max(1e-7, 1e-2*math.Min(math.Abs(e), math.Abs(a))) {
					t.Errorf("param %d: %.8g with iter_size 2, %.8g without", i, a, e)
				}
			}
		})
	}
}
