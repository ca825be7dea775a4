package solver_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
)

// The ports of Caffe's test_gradient_based_solver.cpp (issue 22): each
// solver minimises Caffe's least-squares problem, an InnerProduct of one
// output (gaussian weights and bias) under a EuclideanLoss, on the 8
// gaussian rows of 3×10×10 values and 8 gaussian targets that Caffe's
// generate_sample_data.py writes to solver_data.h5 (drawn here with Go's
// generator), read 4 rows a batch, in order, as its HDF5Data layer does.
// TestLeastSquaresUpdate runs the solver for k iterations, computes the
// next update in closed form from the net's weights, the solver's history
// and the next batch, and compares it with the solver's (k+1)-th update.
// The iter_size (…Accum) tests are in package train, which owns iter_size.

const (
	lsqRows = 8
	lsqNum  = 4
	lsqDim  = 3 * 10 * 10
)

// lsqData is the solver_data.h5 stand-in.
func lsqData() (data, targets []float32) {
	r := rand.New(rand.NewPCG(1701, 1701))
	data, targets = make([]float32, lsqRows*lsqDim), make([]float32, lsqRows)
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	for i := range targets {
		targets[i] = float32(r.NormFloat64())
	}
	return data, targets
}

// lsqSpec is the test's net; with share, the batch is sliced in two
// halves that two InnerProducts sharing "weights" and "bias" map, and a
// Concat joins them again.
func lsqSpec(share bool) model.Spec {
	g := layers.Filler{Type: layers.FillGaussian, Std: 1}
	ip := func(name, bottom, top string) model.LayerSpec {
		return model.LayerSpec{Name: name, Bottom: []string{bottom}, Top: []string{top},
			Params: []model.ParamSpec{{Name: "weights", LRMult: 1, DecayMult: 1}, {Name: "bias", LRMult: 1, DecayMult: 1}},
			Config: &layers.InnerProductConfig{NumOutput: 1, BiasTerm: true, Axis: 1, WeightFiller: g, BiasFiller: g}}
	}
	loss := model.LayerSpec{Name: "loss", Bottom: []string{"innerprod", "targets"}, Top: []string{"loss"},
		Config: &layers.EuclideanLossConfig{}}
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

// lsqRun is one RunLeastSquaresSolver: a fresh net (seed 1701) and
// solver, trained for iters iterations; next is the batch the following
// iteration would read.
type lsqRun struct {
	net  *model.Net
	s    *solver.Solver
	next int
}

func newLsqRun(t *testing.T, cfg solver.Config, share bool) *lsqRun {
	t.Helper()
	net, err := model.Build(lsqSpec(share), map[string]tensor.Shape{"data": {lsqNum, 3, 10, 10}, "targets": {lsqNum, 1}},
		model.Options{Phase: layers.Train, Seed: 1701})
	if err != nil {
		t.Fatal(err)
	}
	var segs []solver.Segment
	for _, b := range net.Blocks() {
		segs = append(segs, solver.Segment{Off: b.Off, Len: b.Len(), LRMult: b.LRMult, DecayMult: b.DecayMult})
	}
	s, err := solver.New(cfg, len(net.Params()), segs)
	if err != nil {
		t.Fatal(err)
	}
	return &lsqRun{net: net, s: s}
}

// fill loads batch k (rows 4k.. mod 8) into the inputs.
func (r *lsqRun) fill(k int) {
	data, targets := lsqData()
	d, y := r.net.Input("data"), r.net.Input("targets")
	for j := range lsqNum {
		row := (k*lsqNum + j) % lsqRows
		copy(d.Data[j*lsqDim:(j+1)*lsqDim], data[row*lsqDim:(row+1)*lsqDim])
		y.Data[j] = targets[row]
	}
}

func (r *lsqRun) train(iters int) {
	for it := r.next; it < iters; it++ {
		r.fill(it)
		r.net.ForwardBackward()
		r.s.Step(it, r.net.Params(), r.net.Grads())
	}
	r.next = max(r.next, iters)
}

// blocks returns the weights' and the bias's offsets.
func (r *lsqRun) blocks(t *testing.T) (w, b int) {
	t.Helper()
	bs := r.net.Blocks()
	if len(bs) != 2 || bs[0].Len() != lsqDim || bs[1].Len() != 1 {
		t.Fatalf("blocks %+v, want the weights (%d) and the bias (1)", bs, lsqDim)
	}
	return bs[0].Off, bs[1].Off
}

// expected is ComputeLeastSquaresUpdate: the parameters after the next
// update, and the update itself (Caffe's expected SGD history).
func expected(t *testing.T, r *lsqRun, cfg solver.Config, t1 int) (params, update []float64) {
	wo, bo := r.blocks(t)
	data, targets := lsqData()
	x := func(k, i int) float64 { // the batch's row k, with a 1 for the bias
		row := (r.next*lsqNum + k) % lsqRows
		if i == lsqDim {
			return 1
		}
		return float64(data[row*lsqDim+i])
	}
	y := func(k int) float64 { return float64(targets[(r.next*lsqNum+k)%lsqRows]) }
	p := r.net.Params()
	theta := func(i int) float64 {
		if i == lsqDim {
			return float64(p[bo])
		}
		return float64(p[wo+i])
	}
	off := func(i int) int {
		if i == lsqDim {
			return bo
		}
		return wo + i
	}
	h := r.s.History()
	lr, wd, mom, delta := cfg.BaseLR, cfg.WeightDecay, cfg.Momentum, cfg.Delta
	params, update = make([]float64, lsqDim+1), make([]float64, lsqDim+1)
	for i := 0; i <= lsqDim; i++ {
		var grad float64
		for k := range lsqNum {
			var pred float64
			for j := 0; j <= lsqDim; j++ {
				pred += x(k, j) * theta(j)
			}
			grad += x(k, i) * (pred - y(k))
		}
		grad = grad/lsqNum + wd*theta(i)
		hv := float64(h[0][off(i)])
		u := lr * grad
		switch cfg.Type {
		case "SGD":
			u += mom * hv
		case "Nesterov":
			u += mom * hv
			u = (1+mom)*u - mom*hv
		case "AdaGrad":
			u /= math.Sqrt(hv+grad*grad) + delta
		case "RMSProp":
			u /= math.Sqrt(cfg.RMSDecay*hv+grad*grad*(1-cfg.RMSDecay)) + delta
		case "AdaDelta":
			uh := float64(h[1][off(i)])
			avg := mom*hv + (1-mom)*grad*grad
			u = grad * math.Sqrt((uh+delta)/(avg+delta)) * lr
		case "Adam":
			m, v := hv, float64(h[1][off(i)])
			vm := (1-mom)*grad + mom*m
			vv := (1-cfg.Momentum2)*grad*grad + cfg.Momentum2*v
			alpha := lr * math.Sqrt(1-math.Pow(cfg.Momentum2, float64(t1))) / (1 - math.Pow(mom, float64(t1)))
			u = alpha * vm / (math.Sqrt(vv) + delta)
		}
		update[i], params[i] = u, theta(i)-u
	}
	return params, update
}

// near is Caffe's check: |e − s| ≤ max(1e-7, 1e-2·min(|e|, |s|)).
func near(t *testing.T, what string, i int, e, s float64) {
	t.Helper()
	if math.Abs(e-s) > math.Max(1e-7, 1e-2*math.Min(math.Abs(e), math.Abs(s))) {
		t.Errorf("%s[%d] = %.8g, expected %.8g", what, i, s, e)
	}
}

// leastSquaresUpdate is TestLeastSquaresUpdate(lr, wd, mom, k).
func leastSquaresUpdate(t *testing.T, cfg solver.Config, share bool, k int) {
	r := newLsqRun(t, cfg, share)
	r.train(k)
	params, update := expected(t, r, cfg, k+1)
	r2 := newLsqRun(t, cfg, share)
	r2.train(k + 1)
	wo, bo := r2.blocks(t)
	p := r2.net.Params()
	for i := range lsqDim {
		near(t, "weight", i, params[i], float64(p[wo+i]))
	}
	near(t, "bias", 0, params[lsqDim], float64(p[bo]))
	if cfg.Type == "SGD" {
		h := r2.s.History()[0]
		for i := range lsqDim {
			near(t, "weight history", i, update[i], float64(h[wo+i]))
		}
		near(t, "bias history", 0, update[lsqDim], float64(h[bo]))
	}
}

// snapshot is TestSnapshot(lr, wd, mom, n): 2n iterations straight, and n
// iterations, a snapshot (weights and WriteState), a fresh net and solver
// restored from it and n more, agree.
func snapshot(t *testing.T, cfg solver.Config, share bool, n int) {
	full := newLsqRun(t, cfg, share)
	full.train(2 * n)

	half := newLsqRun(t, cfg, share)
	half.train(n)
	weights := append([]float32(nil), half.net.Params()...)
	var state bytes.Buffer
	if err := half.s.WriteState(&state); err != nil {
		t.Fatal(err)
	}
	resumed := newLsqRun(t, cfg, share)
	copy(resumed.net.Params(), weights)
	if err := resumed.s.ReadState(&state); err != nil {
		t.Fatal(err)
	}
	// Caffe's test runs Forward once per restored iteration, so the data
	// layer reads on from where the snapshot stopped.
	resumed.next = n
	resumed.train(2 * n)
	same := func(what string, a, b []float32) {
		t.Helper()
		for i := range a {
			if d := math.Abs(float64(a[i] - b[i])); d > 4*math.Max(math.Abs(float64(a[i])), math.Abs(float64(b[i])))*0x1p-23 {
				t.Errorf("%s[%d]: %.9g straight, %.9g resumed", what, i, a[i], b[i])
				return
			}
		}
	}
	same("param", full.net.Params(), resumed.net.Params())
	same("param diff", full.net.Grads(), resumed.net.Grads())
	for i := range full.s.History() {
		same(fmt.Sprint("history ", i), full.s.History()[i], resumed.s.History()[i])
	}
}

type lsqCase struct {
	name        string
	lr, wd, mom float64
	iters       int  // check iterations 0..iters (Caffe's loop; 0: only the first)
	share, snap bool // WithEverythingShare / TestSnapshot(Share)
}

func runLsqCases(t *testing.T, typ string, cases []lsqCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := solver.Config{Type: typ, BaseLR: c.lr, WeightDecay: c.wd, Momentum: c.mom, LRPolicy: "fixed",
				Delta: 1e-8, Momentum2: 0.999, RMSDecay: 0.95}
			if typ == "Adam" {
				cfg.Momentum = 0.9 // AdamSolverTest's InitSolver sets it
			}
			for k := 0; k <= c.iters; k++ {
				if c.snap {
					if k > 0 {
						snapshot(t, cfg, c.share, k)
					}
					continue
				}
				leastSquaresUpdate(t, cfg, c.share, k)
			}
		})
	}
}

func TestCaffePortSGDSolver(t *testing.T) {
	runLsqCases(t, "SGD", []lsqCase{
		{name: "SGDSolverTest.TestLeastSquaresUpdate", lr: 1},
		{name: "SGDSolverTest.TestLeastSquaresUpdateLROneHundredth", lr: 0.01},
		{name: "SGDSolverTest.TestLeastSquaresUpdateWithWeightDecay", lr: 0.01, wd: 0.5, iters: 1},
		{name: "SGDSolverTest.TestLeastSquaresUpdateWithWeightDecayMultiIter", lr: 0.01, wd: 0.5, iters: 4},
		{name: "SGDSolverTest.TestLeastSquaresUpdateWithMomentum", lr: 0.01, mom: 0.5, iters: 1},
		{name: "SGDSolverTest.TestLeastSquaresUpdateWithMomentumMultiIter", lr: 0.01, mom: 0.5, iters: 4},
		{name: "SGDSolverTest.TestLeastSquaresUpdateWithEverything", lr: 0.01, wd: 0.5, mom: 0.5, iters: 4},
		{name: "SGDSolverTest.TestLeastSquaresUpdateWithEverythingShare", lr: 0.01, wd: 0.5, mom: 0.5, iters: 4, share: true},
		{name: "SGDSolverTest.TestSnapshot", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, snap: true},
		{name: "SGDSolverTest.TestSnapshotShare", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, snap: true, share: true},
	})
}

func TestCaffePortAdaGradSolver(t *testing.T) {
	runLsqCases(t, "AdaGrad", []lsqCase{
		{name: "AdaGradSolverTest.TestAdaGradLeastSquaresUpdate", lr: 1},
		{name: "AdaGradSolverTest.TestAdaGradLeastSquaresUpdateLROneHundredth", lr: 0.01},
		{name: "AdaGradSolverTest.TestAdaGradLeastSquaresUpdateWithWeightDecay", lr: 0.01, wd: 0.5},
		{name: "AdaGradSolverTest.TestAdaGradLeastSquaresUpdateWithEverything", lr: 0.01, wd: 0.5, iters: 4},
		{name: "AdaGradSolverTest.TestAdaGradLeastSquaresUpdateWithEverythingShare", lr: 0.01, wd: 0.5, iters: 4, share: true},
		{name: "AdaGradSolverTest.TestSnapshot", lr: 0.01, wd: 0.5, iters: 4, snap: true},
		{name: "AdaGradSolverTest.TestSnapshotShare", lr: 0.01, wd: 0.5, iters: 4, snap: true, share: true},
	})
}

func TestCaffePortNesterovSolver(t *testing.T) {
	runLsqCases(t, "Nesterov", []lsqCase{
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdate", lr: 1},
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdateLROneHundredth", lr: 0.01},
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdateWithWeightDecay", lr: 0.01, wd: 0.5},
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdateWithWeightDecayMultiIter", lr: 0.01, wd: 0.5, iters: 4},
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdateWithMomentum", lr: 0.01, mom: 0.5, iters: 1},
		{name: "NesterovSolverTest.TestLeastSquaresUpdateWithMomentumMultiIter", lr: 0.01, mom: 0.5, iters: 4},
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdateWithEverything", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4},
		{name: "NesterovSolverTest.TestNesterovLeastSquaresUpdateWithEverythingShare", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, share: true},
		{name: "NesterovSolverTest.TestSnapshot", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, snap: true},
		{name: "NesterovSolverTest.TestSnapshotShare", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, snap: true, share: true},
	})
}

func TestCaffePortAdaDeltaSolver(t *testing.T) {
	runLsqCases(t, "AdaDelta", []lsqCase{
		{name: "AdaDeltaSolverTest.TestAdaDeltaLeastSquaresUpdate", lr: 0.1},
		{name: "AdaDeltaSolverTest.TestAdaDeltaLeastSquaresUpdateWithWeightDecay", lr: 0.1, wd: 0.5, mom: 0.95},
		{name: "AdaDeltaSolverTest.TestAdaDeltaLeastSquaresUpdateWithHalfMomentum", lr: 0.1, mom: 0.5},
		{name: "AdaDeltaSolverTest.TestAdaDeltaLeastSquaresUpdateWithMomentum", lr: 0.1, mom: 0.95},
		{name: "AdaDeltaSolverTest.TestLeastSquaresUpdateWithMomentumMultiIter", lr: 0.1, mom: 0.95, iters: 4},
		{name: "AdaDeltaSolverTest.TestAdaDeltaLeastSquaresUpdateWithEverything", lr: 0.1, wd: 0.1, mom: 0.95, iters: 4},
		{name: "AdaDeltaSolverTest.TestAdaDeltaLeastSquaresUpdateWithEverythingShare", lr: 0.1, wd: 0.1, mom: 0.95, iters: 4, share: true},
		{name: "AdaDeltaSolverTest.TestSnapshot", lr: 0.1, wd: 0.1, mom: 0.95, iters: 4, snap: true},
		{name: "AdaDeltaSolverTest.TestSnapshotShare", lr: 0.1, wd: 0.1, mom: 0.95, iters: 4, snap: true, share: true},
	})
}

func TestCaffePortAdamSolver(t *testing.T) {
	runLsqCases(t, "Adam", []lsqCase{
		{name: "AdamSolverTest.TestAdamLeastSquaresUpdate", lr: 0.01, mom: 0.9},
		{name: "AdamSolverTest.TestAdamLeastSquaresUpdateWithWeightDecay", lr: 0.01, wd: 0.5, mom: 0.9},
		{name: "AdamSolverTest.TestAdamLeastSquaresUpdateWithEverything", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4},
		{name: "AdamSolverTest.TestAdamLeastSquaresUpdateWithEverythingShare", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, share: true},
		{name: "AdamSolverTest.TestSnapshot", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, snap: true},
		{name: "AdamSolverTest.TestSnapshotShare", lr: 0.01, wd: 0.5, mom: 0.9, iters: 4, snap: true, share: true},
	})
}

func TestCaffePortRMSPropSolver(t *testing.T) {
	runLsqCases(t, "RMSProp", []lsqCase{
		{name: "RMSPropSolverTest.TestRMSPropLeastSquaresUpdateWithWeightDecay", lr: 1, wd: 0.5},
		{name: "RMSPropSolverTest.TestRMSPropLeastSquaresUpdateWithRmsDecay", lr: 0.01, iters: 4},
		{name: "RMSPropSolverTest.TestRMSPropLeastSquaresUpdateWithEverything", lr: 0.01, wd: 0.5, iters: 4},
		{name: "RMSPropSolverTest.TestRMSPropLeastSquaresUpdateWithEverythingShare", lr: 0.01, wd: 0.5, iters: 4, share: true},
		{name: "RMSPropSolverTest.TestSnapshot", lr: 0.01, wd: 0.5, iters: 4, snap: true},
		{name: "RMSPropSolverTest.TestSnapshotShare", lr: 0.01, wd: 0.5, iters: 4, snap: true, share: true},
	})
}
