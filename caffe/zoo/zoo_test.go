package zoo

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
)

func TestNames(t *testing.T) {
	want := []string{"alexnet", "caffenet", "cifar10_quick", "googlenet", "lenet", "mlp", "nin"}
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
		!strings.Contains(err.Error(), "alexnet, caffenet, cifar10_quick, googlenet, lenet, mlp, nin") {
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

// parsed is a zoo model run through caffedef.
type parsed struct {
	m      Model
	net    *caffedef.NetDef
	solver *caffedef.SolverDef
	phases map[layers.Phase]*caffedef.PhaseNet
}

func parse(t *testing.T, name string) parsed {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	p := parsed{m: m, phases: map[layers.Phase]*caffedef.PhaseNet{}}
	if p.net, err = caffedef.ParseNet(m.NetFile, m.Net); err != nil {
		t.Fatal(err)
	}
	if p.solver, err = caffedef.ParseSolver(m.SolverFile, m.Solver); err != nil {
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

// imagenet holds the models of BVLC's ImageNet nets, fed synthetic
// 256x256 images: the accuracy layers they carry per classifier and the
// images they test on.
var imagenet = map[string]struct{ accuracies, testImages int }{
	"caffenet":  {1, 250},
	"googlenet": {6, 250},
}

const imagenetSource = "synthetic:N=250,C=3,H=256,W=256,classes=256"

func TestModelsParse(t *testing.T) {
	sources := map[string]string{"cifar10_quick": "cifar10", "caffenet": imagenetSource, "googlenet": imagenetSource}
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
				ls := pn.Spec.Layers
				for len(ls) > 1 && isAccuracy(ls[len(ls)-1]) {
					ls = ls[:len(ls)-1] // GoogLeNet's TEST net ends in its top-1 and top-5
				}
				last := ls[len(ls)-1]
				if _, ok := last.Config.(*layers.SoftmaxWithLossConfig); !ok {
					t.Errorf("%v: last layer %s is not the loss", ph, last.Name)
				}
			}
			testData := p.phases[layers.Test].Data[0]
			testImages, accuracies := 10000, 1
			if in, ok := imagenet[name]; ok {
				testImages, accuracies = in.testImages, in.accuracies
			}
			if p.solver.TestIter*testData.BatchSize != testImages {
				t.Errorf("test_iter %d x batch %d does not cover the %d test images", p.solver.TestIter, testData.BatchSize, testImages)
			}
			if n := len(p.phases[layers.Test].Spec.Layers) - len(p.phases[layers.Train].Spec.Layers); n != accuracies {
				t.Errorf("TEST has %d more layers than TRAIN, want %d (accuracy)", n, accuracies)
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
	mults := []model.ParamSpec{{LRMult: 1, DecayMult: 1, LRSet: true}, {LRMult: 2, DecayMult: 1, LRSet: true}}
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
		if _, ok := imagenet[name]; ok {
			continue // ImageNet-sized: too big to train in a unit test (see TestImageNetModels)
		}
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

func isAccuracy(l model.LayerSpec) bool {
	_, ok := l.Config.(*layers.AccuracyConfig)
	return ok
}

// TestImageNetModels pins caffenet and googlenet to BVLC's files: the
// parameter counts are what PyTorch counts for the same nets built layer
// for layer in /work/shared/peer/torch_nets.py (sum of numel over
// parameters: 60,965,224 and 13,378,280); the layer census, the loss
// weights and the shapes where the pooling arithmetic (Caffe rounds up)
// could go wrong are from BVLC's train_val.prototxt.
func TestImageNetModels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds CaffeNet's 61M parameters")
	}
	tests := []struct {
		name   string
		chw    []int
		params int
		census map[string]int // TRAIN layers by type
		losses map[string]float32
		shapes map[string]tensor.Shape // batch 1
	}{
		{"caffenet", []int{3, 227, 227}, 60965224,
			map[string]int{"Convolution": 5, "ReLU": 7, "Pooling": 3, "LRN": 2, "InnerProduct": 3, "Dropout": 2, "SoftmaxWithLoss": 1},
			map[string]float32{"loss": 1},
			map[string]tensor.Shape{"conv1": {1, 96, 55, 55}, "pool1": {1, 96, 27, 27}, "conv2": {1, 256, 27, 27},
				"pool2": {1, 256, 13, 13}, "pool5": {1, 256, 6, 6}, "fc8": {1, 1000}}},
		{"googlenet", []int{3, 224, 224}, 13378280,
			// 3 stem + 9 inceptions x 6 + 2 auxiliary convolutions; 9
			// inception pools, pool1-5 and 2 auxiliary pools.
			map[string]int{"Convolution": 59, "ReLU": 61, "Pooling": 16, "LRN": 2, "Concat": 9, "InnerProduct": 5, "Dropout": 3, "SoftmaxWithLoss": 3},
			map[string]float32{"loss1/loss": 0.3, "loss2/loss": 0.3, "loss3/loss3": 1},
			map[string]tensor.Shape{"conv1/7x7_s2": {1, 64, 112, 112}, "pool1/3x3_s2": {1, 64, 56, 56}, "pool2/3x3_s2": {1, 192, 28, 28},
				"inception_3b/output": {1, 480, 28, 28}, "pool3/3x3_s2": {1, 480, 14, 14}, "inception_4a/output": {1, 512, 14, 14},
				"loss1/ave_pool": {1, 512, 4, 4}, "loss2/ave_pool": {1, 528, 4, 4}, "pool4/3x3_s2": {1, 832, 7, 7},
				"inception_5b/output": {1, 1024, 7, 7}, "pool5/7x7_s1": {1, 1024, 1, 1}, "loss3/classifier": {1, 1000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse(t, tt.name)
			train := p.phases[layers.Train]
			census := map[string]int{}
			losses := map[string]float32{}
			for _, l := range train.Spec.Layers {
				typ := strings.TrimSuffix(strings.TrimPrefix(reflect.TypeOf(l.Config).String(), "*layers."), "Config")
				census[typ]++
				if typ == "SoftmaxWithLoss" {
					w := float32(1)
					if len(l.LossWeight) > 0 {
						w = l.LossWeight[0]
					}
					losses[l.Name] = w
				}
			}
			if !reflect.DeepEqual(census, tt.census) {
				t.Errorf("TRAIN layers by type %v, want %v", census, tt.census)
			}
			if !reflect.DeepEqual(losses, tt.losses) {
				t.Errorf("loss weights %v, want %v", losses, tt.losses)
			}
			d := train.Data[0]
			if d.Transform.CropSize != tt.chw[1] || !d.Transform.Mirror || !slices.Equal(d.Transform.MeanValue, []float32{104, 117, 123}) {
				t.Errorf("TRAIN transform %+v", d.Transform)
			}
			n := build(t, p, layers.Train, 1, tt.chw, 1)
			if got := paramCount(n); got != tt.params {
				t.Errorf("%d params, want %d", got, tt.params)
			}
			for name, want := range tt.shapes {
				if b := n.Blob(name); b == nil || !slices.Equal(b.Shape, want) {
					t.Errorf("blob %s: %v, want %v", name, b, want)
				}
			}
		})
	}
}
