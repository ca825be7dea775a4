package calib

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
)

func TestFitRecoversLine(t *testing.T) {
	sizes := make([]float64, len(DefaultSizes))
	for i, s := range DefaultSizes {
		sizes[i] = float64(s)
	}
	tests := []struct {
		name        string
		alpha, beta float64
		xs          []float64
	}{
		{"fdr-ib", 0.7e-6, 0.2e-9, sizes},
		{"10gbe", 7.2e-6, 0.9e-9, sizes},
		{"loopback-like", 25e-6, 0.1e-9, sizes},
		{"zero latency", 0, 1e-9, sizes},
		{"two sizes", 3e-6, 2e-9, []float64{4, 1 << 20}},
		{"repeated sizes", 1e-6, 1e-9, []float64{4, 4, 4096, 4096, 1 << 24}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := make([]float64, len(tt.xs))
			for i, x := range tt.xs {
				ts[i] = tt.alpha + tt.beta*x
			}
			a, b, err := Fit(tt.xs, ts)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(a-tt.alpha) > 1e-9*tt.alpha+1e-18 || math.Abs(b-tt.beta) > 1e-9*tt.beta {
				t.Errorf("Fit = alpha %g, beta %g; want %g, %g", a, b, tt.alpha, tt.beta)
			}
		})
	}
}

// When the largest message's noise swamps the latency, the intercept comes
// from the smallest message and the slope stays that of the large ones.
func TestFitNetworkNoisyLargeMessage(t *testing.T) {
	alpha, beta := 5e-6, 0.5e-9
	var samples []Sample
	for _, s := range DefaultSizes {
		samples = append(samples, Sample{s, alpha + beta*float64(s)})
	}
	exact := samples[len(samples)-1].Seconds
	samples[len(samples)-1].Seconds *= 0.97 // 3% noise on 16 MiB: 50 alphas
	a, b, err := fitNetwork(samples)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a-alpha) > 0.01*alpha {
		t.Errorf("alpha %g, want within 1%% of %g", a, alpha)
	}
	if math.Abs(b-beta) > 0.05*beta {
		t.Errorf("beta %g, want within 5%% of %g", b, beta)
	}
	if pred := a + b*float64(16<<20); math.Abs(pred-exact) > 0.05*exact {
		t.Errorf("16 MiB predicted %g s, want within 5%% of %g", pred, exact)
	}
	// On an exact line fitNetwork is Fit.
	samples[len(samples)-1].Seconds = exact
	if a, b, _ := fitNetwork(samples); math.Abs(a-alpha) > 1e-9*alpha || math.Abs(b-beta) > 1e-9*beta {
		t.Errorf("exact line: alpha %g, beta %g; want %g, %g", a, b, alpha, beta)
	}
}

func TestFitErrors(t *testing.T) {
	tests := []struct {
		name   string
		xs, ts []float64
		want   string
	}{
		{"length mismatch", []float64{1, 2}, []float64{1}, "2 sizes but 1 times"},
		{"empty", nil, nil, "two or more distinct"},
		{"one size", []float64{8, 8}, []float64{1, 2}, "two or more distinct"},
		{"zero time", []float64{4, 8}, []float64{0, 1}, "point 0"},
		{"negative time", []float64{4, 8}, []float64{1, -1}, "point 1"},
		{"NaN size", []float64{math.NaN(), 8}, []float64{1, 1}, "point 0"},
		{"infinite time", []float64{4, 8}, []float64{1, math.Inf(1)}, "point 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Fit(tt.xs, tt.ts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzFit(f *testing.F) {
	f.Add(4.0, 1e-6, 1024.0, 2e-6, 1e6, 1e-3)
	f.Add(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
	f.Add(1.0, 1.0, 1.0, 1.0, 2.0, 1.0)
	f.Add(math.MaxFloat64, 1e-300, -math.MaxFloat64, 1e300, 1.0, math.NaN())
	f.Fuzz(func(t *testing.T, x0, t0, x1, t1, x2, t2 float64) {
		_, _, err := Fit([]float64{x0, x1, x2}, []float64{t0, t1, t2})
		if err == nil && x0 == x1 && x1 == x2 {
			t.Errorf("no error for a single size %g", x0)
		}
		if err == nil && !(t0 > 0 && t1 > 0 && t2 > 0) {
			t.Errorf("no error for times %g, %g, %g", t0, t1, t2)
		}
	})
}

// tinyNet is a 3-layer perceptron with its inputs filled.
func tinyNet(t *testing.T) *model.Net {
	t.Helper()
	gauss := layers.Filler{Type: layers.FillGaussian, Std: 0.1}
	spec := model.Spec{
		Name:   "tiny",
		Inputs: []string{"data", "label"},
		Layers: []model.LayerSpec{
			{Name: "ip1", Bottom: []string{"data"}, Top: []string{"ip1"},
				Config: &layers.InnerProductConfig{NumOutput: 32, BiasTerm: true, Axis: 1, WeightFiller: gauss}},
			{Name: "relu1", Bottom: []string{"ip1"}, Top: []string{"ip1"}, Config: &layers.ReLUConfig{}},
			{Name: "ip2", Bottom: []string{"ip1"}, Top: []string{"ip2"},
				Config: &layers.InnerProductConfig{NumOutput: 10, BiasTerm: false, Axis: 1, WeightFiller: gauss}},
			{Name: "loss", Bottom: []string{"ip2", "label"}, Top: []string{"loss"},
				Config: &layers.SoftmaxWithLossConfig{Axis: 1}},
		},
	}
	net, err := model.Build(spec, map[string]tensor.Shape{"data": {16, 64}, "label": {16}}, model.Options{Phase: layers.Train, Seed: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range net.Input("data").Data {
		net.Input("data").Data[i] = float32(i%7) / 7
	}
	for i := range net.Input("label").Data {
		net.Input("label").Data[i] = float32(i % 10)
	}
	return net
}

func TestModel(t *testing.T) {
	net := tinyNet(t)
	before := append([]float32(nil), net.Params()...)
	sc := solver.Config{Type: "SGD", BaseLR: 0.01, Momentum: 0.9, LRPolicy: "fixed"}
	m, err := Model(context.Background(), net, ModelOptions{Iters: 3, Warmup: 1, Solver: &sc, AddLen: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		params   int
		backward bool
	}{
		{"ip1", 64*32 + 32, true},
		{"relu1", 0, true},
		{"ip2", 32 * 10, true},
		{"loss", 0, true},
	}
	if m.Name != "tiny" {
		t.Errorf("model name %q, want tiny", m.Name)
	}
	if len(m.Layers) != len(want) {
		t.Fatalf("%d layers, want %d: %+v", len(m.Layers), len(want), m.Layers)
	}
	for i, w := range want {
		l := m.Layers[i]
		if l.Name != w.name || l.Params != w.params {
			t.Errorf("layer %d = %s with %d params, want %s with %d", i, l.Name, l.Params, w.name, w.params)
		}
		if l.Forward <= 0 || (w.backward && l.Backward <= 0) {
			t.Errorf("layer %s: forward %v, backward %v; want both positive", l.Name, l.Forward, l.Backward)
		}
	}
	if m.Params() != len(net.Params()) {
		t.Errorf("model has %d params, net %d", m.Params(), len(net.Params()))
	}
	if m.Update <= 0 {
		t.Errorf("update time %v, want positive", m.Update)
	}
	if m.AddRate <= 0 {
		t.Errorf("add rate %g, want positive", m.AddRate)
	}
	for i, v := range net.Params() {
		if v != before[i] {
			t.Fatalf("param %d changed from %g to %g: Model must leave the weights alone", i, before[i], v)
		}
	}
}

func TestModelNoSolverNoAdd(t *testing.T) {
	m, err := Model(context.Background(), tinyNet(t), ModelOptions{Iters: 1, AddLen: -1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Update != 0 || m.AddRate != 0 {
		t.Errorf("update %v, add rate %g; want 0 and 0 without a solver or add length", m.Update, m.AddRate)
	}
}

func TestModelBadSolver(t *testing.T) {
	_, err := Model(context.Background(), tinyNet(t), ModelOptions{Iters: 1, AddLen: -1, Solver: &solver.Config{Type: "Nope", LRPolicy: "fixed"}})
	if err == nil || !strings.HasPrefix(err.Error(), "calib: ") {
		t.Fatalf("err = %v, want a calib: error for an unknown solver type", err)
	}
}

func TestTime(t *testing.T) {
	net := tinyNet(t)
	tm, err := Time(context.Background(), net, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tm.Iters != 4 || tm.Warmup != 1 || len(tm.Layers) != 4 || tm.Wall <= 0 {
		t.Fatalf("timing %+v", tm)
	}
	var sum time.Duration
	for _, l := range tm.Layers {
		sum += l.Forward + l.Backward
	}
	if sum > tm.Wall {
		t.Errorf("layer times %v exceed the wall time %v", sum, tm.Wall)
	}
	if tm.PerIter(tm.Wall) != tm.Wall/4 {
		t.Errorf("PerIter(%v) = %v", tm.Wall, tm.PerIter(tm.Wall))
	}
	for _, bad := range [][2]int{{0, 0}, {1, -1}, {-1, 5}} {
		if _, err := Time(context.Background(), net, bad[1], bad[0]); err == nil {
			t.Errorf("Time(iters %d, warmup %d): no error", bad[0], bad[1])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Time(ctx, net, 0, 3); err != context.Canceled {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestAddRate(t *testing.T) {
	r := AddRate(1<<16, time.Millisecond)
	// Any machine adds more than 10 M and fewer than 1 T floats a second.
	if r < 1e7 || r > 1e12 {
		t.Errorf("AddRate = %g adds/s, outside [1e7, 1e12]", r)
	}
}

func TestNetwork(t *testing.T) {
	for _, kind := range []string{"inproc", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			opt := NetworkOptions{Sizes: []int{4, 4 << 10, 256 << 10, 2 << 20}, Reps: 3, Warmup: 1, Timeout: 20 * time.Second}
			samples, err := PingPong(context.Background(), kind, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(samples) != len(opt.Sizes) {
				t.Fatalf("%d samples for %d sizes", len(samples), len(opt.Sizes))
			}
			for i, s := range samples {
				if s.Bytes != opt.Sizes[i] || !(s.Seconds > 0) {
					t.Errorf("sample %d = %+v", i, s)
				}
			}
			nw, err := Network(context.Background(), kind, opt)
			if err != nil {
				t.Fatal(err)
			}
			// Loopback moves between 10 MB/s and 1 TB/s.
			if nw.Name != "measured "+kind || nw.Alpha < 0 || nw.Beta < 1e-12 || nw.Beta > 1e-7 {
				t.Errorf("network %+v", nw)
			}
		})
	}
}

func TestPingPongErrors(t *testing.T) {
	tests := []struct {
		name, kind string
		sizes      []int
		want       string
	}{
		{"unknown transport", "smoke", nil, `transport "smoke"`},
		{"odd size", "inproc", []int{4, 6}, "size 6 bytes"},
		{"zero size", "inproc", []int{0}, "size 0 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PingPong(context.Background(), tt.kind, NetworkOptions{Sizes: tt.sizes})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PingPong(ctx, "inproc", NetworkOptions{Sizes: []int{4}}); err == nil {
		t.Error("cancelled context: no error")
	}
}
