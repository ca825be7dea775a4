package zoo

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/config"
	"dsgd/data"
	"dsgd/model"
	"dsgd/nn/layers"
	"dsgd/solver"
	"dsgd/tensor"
)

func TestNames(t *testing.T) {
	want := []string{"alexnet", "cifar10_quick", "lenet", "mlp", "nin"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	// Every embedded file belongs to a model.
	entries, err := files.ReadDir("models")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	var wantFiles []string
	for _, n := range want {
		wantFiles = append(wantFiles, n+".prototxt", n+"_solver.prototxt")
	}
	slices.Sort(wantFiles)
	if !slices.Equal(got, wantFiles) {
		t.Errorf("embedded files %q, want %q", got, wantFiles)
	}
}

func TestLookupUnknown(t *testing.T) {
	_, _, err := Get("resnet")
	if err == nil || !strings.Contains(err.Error(), `"resnet"`) ||
		!strings.Contains(err.Error(), "alexnet, cifar10_quick, lenet, mlp, nin") {
		t.Errorf("err = %v", err)
	}
	if _, err := Lookup(""); err == nil {
		t.Error("Lookup(\"\") succeeded")
	}
}

func TestGetReturnsCopies(t *testing.T) {
	net, _, err := Get("lenet")
	if err != nil {
		t.Fatal(err)
	}
	net[0] = 'X'
	again, _, _ := Get("lenet")
	if again[0] == 'X' {
		t.Error("Get returned shared bytes")
	}
}

// parsed is a zoo model run through config.
type parsed struct {
	m      Model
	net    *config.NetDef
	solver *config.SolverDef
	phases map[layers.Phase]*config.PhaseNet
}

func parse(t *testing.T, name string) parsed {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	p := parsed{m: m, phases: map[layers.Phase]*config.PhaseNet{}}
	if p.net, err = config.ParseNet(m.NetFile, m.Net); err != nil {
		t.Fatal(err)
	}
	if p.solver, err = config.ParseSolver(m.SolverFile, m.Solver); err != nil {
		t.Fatal(err)
	}
	for _, ph := range []layers.Phase{layers.Train, layers.Test} {
		pn, err := p.net.Phase(ph)
		if err != nil {
			t.Fatal(err)
		}
		p.phases[ph] = pn
	}
	return p
}

func TestModelsParse(t *testing.T) {
	sources := map[string]string{"cifar10_quick": "cifar10"}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p := parse(t, name)
			if p.m.Name != name || p.m.Description == "" || p.m.NetFile != name+".prototxt" {
				t.Errorf("model %+v", p.m)
			}
			if len(p.net.Warnings) > 0 || len(p.solver.Warnings) > 0 {
				t.Errorf("warnings: %q %q", p.net.Warnings, p.solver.Warnings)
			}
			if p.solver.Net != p.m.NetFile {
				t.Errorf("solver net %q, want %q", p.solver.Net, p.m.NetFile)
			}
			if p.solver.SnapshotPrefix != "snapshots/"+name {
				t.Errorf("snapshot_prefix %q", p.solver.SnapshotPrefix)
			}
			source := sources[name]
			if source == "" {
				source = "fashion-mnist"
			}
			for ph, pn := range p.phases {
				if len(pn.Data) != 1 || pn.Data[0].Source != source || !slices.Equal(pn.Spec.Inputs, []string{"data", "label"}) {
					t.Errorf("%v data %+v inputs %q", ph, pn.Data, pn.Spec.Inputs)
				}
				last := pn.Spec.Layers[len(pn.Spec.Layers)-1]
				if _, ok := last.Config.(*layers.SoftmaxWithLossConfig); !ok {
					t.Errorf("%v: last layer %s is not the loss", ph, last.Name)
				}
			}
			testData := p.phases[layers.Test].Data[0]
			if p.solver.TestIter*testData.BatchSize != 10000 {
				t.Errorf("test_iter %d x batch %d does not cover the 10000 test images", p.solver.TestIter, testData.BatchSize)
			}
			if n := len(p.phases[layers.Test].Spec.Layers) - len(p.phases[layers.Train].Spec.Layers); n != 1 {
				t.Errorf("TEST has %d more layers than TRAIN, want 1 (accuracy)", n)
			}
		})
	}
}

// TestLeNetIsCaffes pins lenet to Caffe's examples/mnist files.
func TestLeNetIsCaffes(t *testing.T) {
	p := parse(t, "lenet")
	want := solver.Config{
		Type: "SGD", BaseLR: 0.01, Momentum: 0.9, Momentum2: 0.999, Delta: 1e-8, RMSDecay: 0.99,
		WeightDecay: 0.0005, Regularization: "L2", ClipGradients: -1,
		LRPolicy: "inv", Gamma: 0.0001, Power: 0.75, MaxIter: 10000,
	}
	s := p.solver
	if !reflect.DeepEqual(s.Solver, want) || s.TestIter != 100 || s.TestInterval != 500 || s.Display != 100 ||
		s.MaxIter != 10000 || s.Snapshot != 5000 || s.SnapshotPrefix != "snapshots/lenet" {
		t.Errorf("solver %+v", s)
	}
	train, test := p.phases[layers.Train], p.phases[layers.Test]
	if train.Data[0].BatchSize != 64 || test.Data[0].BatchSize != 100 ||
		!reflect.DeepEqual(train.Data[0].Transform, data.TransformConfig{Scale: 0.00390625}) {
		t.Errorf("data %+v / %+v", train.Data, test.Data)
	}
	var names []string
	for _, l := range test.Spec.Layers {
		names = append(names, l.Name)
	}
	if want := []string{"conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "accuracy", "loss"}; !slices.Equal(names, want) {
		t.Errorf("layers %q, want %q", names, want)
	}
	xavier := layers.Filler{Type: layers.FillXavier, Max: 1, Std: 1}
	zero := layers.Filler{Type: layers.FillConstant, Max: 1, Std: 1}
	mults := []model.ParamSpec{{LRMult: 1, DecayMult: 1}, {LRMult: 2, DecayMult: 1}}
	conv := func(n int) *layers.ConvolutionConfig {
		return &layers.ConvolutionConfig{NumOutput: n, KernelH: 5, KernelW: 5, StrideH: 1, StrideW: 1, Group: 1,
			BiasTerm: true, WeightFiller: xavier, BiasFiller: zero}
	}
	pool := &layers.PoolingConfig{Method: layers.PoolMax, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}
	ip := func(n int) *layers.InnerProductConfig {
		return &layers.InnerProductConfig{NumOutput: n, BiasTerm: true, Axis: 1, WeightFiller: xavier, BiasFiller: zero}
	}
	wantCfg := []layers.Config{conv(20), pool, conv(50), pool, ip(500), &layers.ReLUConfig{}, ip(10),
		&layers.AccuracyConfig{TopK: 1, Axis: 1}, &layers.SoftmaxWithLossConfig{Axis: 1}}
	for i, l := range test.Spec.Layers {
		if !reflect.DeepEqual(l.Config, wantCfg[i]) {
			t.Errorf("%s: %+v, want %+v", l.Name, l.Config, wantCfg[i])
		}
		hasParams := l.Name == "conv1" || l.Name == "conv2" || l.Name == "ip1" || l.Name == "ip2"
		if hasParams && !reflect.DeepEqual(l.Params, mults) || !hasParams && l.Params != nil {
			t.Errorf("%s: params %+v", l.Name, l.Params)
		}
	}
}

// build builds a phase of a zoo model for batch images of shape chw.
func build(t *testing.T, p parsed, ph layers.Phase, batch int, chw []int, seed uint64) *model.Net {
	t.Helper()
	inputs := map[string]tensor.Shape{
		"data":  append(tensor.Shape{batch}, chw...),
		"label": {batch},
	}
	n, err := model.Build(p.phases[ph].Spec, inputs, model.Options{Phase: ph, Seed: seed})
	if err != nil {
		t.Fatalf("%s %v %v: %v", p.m.Name, ph, chw, err)
	}
	return n
}

func paramCount(n *model.Net) int {
	c := 0
	for _, b := range n.Blocks() {
		c += b.Len()
	}
	return c
}

func TestModelsBuild(t *testing.T) {
	gray, rgb := []int{1, 28, 28}, []int{3, 32, 32}
	tests := []struct {
		name   string
		chw    []int
		params int
	}{
		// Caffe's LeNet: conv1 520, conv2 25050, ip1 400500, ip2 5010.
		{"lenet", gray, 431080},
		// conv1 2432, conv2 25632, conv3 51264, ip1 65600, ip2 650.
		{"cifar10_quick", rgb, 145578},
		// 784·512+512, 512·256+256, 256·10+10.
		{"mlp", gray, 535818},
		// conv1 832, cccp1 1056, cccp2 1056, conv2 51264, cccp3 4160,
		// cccp4 4160, conv3 73856, cccp5 16512, cccp6 1290.
		{"nin", gray, 154186},
		{"nin", rgb, 155786},
		// conv1 832, conv2 51264, conv3 55392, conv4 83040, conv5 55360,
		// fc6 147712 (64x3x3 in), fc7 65792, fc8 2570.
		{"alexnet", gray, 461962},
		{"alexnet", rgb, 578250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse(t, tt.name)
			for _, ph := range []layers.Phase{layers.Train, layers.Test} {
				n := build(t, p, ph, 2, tt.chw, 1)
				if got := paramCount(n); got != tt.params {
					t.Errorf("%v: %d params, want %d", ph, got, tt.params)
				}
			}
		})
	}
}

// TestModelsLearn trains each model with its own solver settings on a toy
// task, random images whose class brightens a band of rows: the loss must
// fall well below chance, which catches a net or solver that cannot train
// (dead initialisation, a learning rate that diverges, a broken graph).
func TestModelsLearn(t *testing.T) {
	if testing.Short() {
		t.Skip("trains five nets")
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p := parse(t, name)
			chw := []int{1, 28, 28}
			if name == "cifar10_quick" {
				chw = []int{3, 32, 32}
			}
			batch, iters := 16, 120
			if name == "nin" {
				// Global average pooling makes NIN slow to leave chance
				// level (its maps must first learn where the band is).
				batch, iters = 8, 240
			}
			n := build(t, p, layers.Train, batch, chw, 7)
			var segs []solver.Segment
			for _, b := range n.Blocks() {
				segs = append(segs, solver.Segment{Off: b.Off, Len: b.Len(), LRMult: b.LRMult, DecayMult: b.DecayMult})
			}
			s, err := solver.New(p.solver.Solver, len(n.Params()), segs)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			img, labels := n.Input("data").Data, n.Input("label").Data
			tr := p.phases[layers.Train].Data[0].Transform
			c, h, w := chw[0], chw[1], chw[2]
			var first, last float64
			for it := range iters {
				for b := range batch {
					k := rng.IntN(10)
					labels[b] = float32(k)
					for i := range c * h * w {
						// A pixel as the data layer delivers it.
						ch, row := i/(h*w), (i/w)%h
						v := float32(rng.IntN(128))
						if row/3 == k {
							v += 100
						}
						if len(tr.MeanValue) > 0 {
							v -= tr.MeanValue[ch]
						}
						img[b*c*h*w+i] = v * tr.Scale
					}
				}
				loss := n.ForwardBackward()
				if math.IsNaN(loss) || math.IsInf(loss, 0) {
					t.Fatalf("iteration %d: loss %v", it, loss)
				}
				switch {
				case it < 10:
					first += loss / 10
				case it >= iters-10:
					last += loss / 10
				}
				s.Step(it, n.Params(), n.Grads())
			}
			t.Logf("mean loss of the first 10 iterations %.4f, of the last 10 %.4f", first, last)
			if !(last < 0.5*first) || !(last < 1) {
				t.Errorf("mean loss %.4f -> %.4f after %d iterations: not learning", first, last, iters)
			}
		})
	}
}
