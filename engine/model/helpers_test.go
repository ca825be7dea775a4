package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// This file holds the test nets and helpers shared by the model tests: spec
// builders for small nets of every kind the model must handle, input
// filling, and the net-level finite-difference gradient checker.

// gauss is the weight filler of the test nets.
func gauss(std float32) layers.Filler {
	return layers.Filler{Type: layers.FillGaussian, Std: std}
}

// ip is an InnerProduct layer spec.
func ip(name, bottom, top string, n int) LayerSpec {
	return LayerSpec{Name: name, Bottom: []string{bottom}, Top: []string{top}, Config: &layers.InnerProductConfig{
		NumOutput: n, BiasTerm: true, Axis: 1, WeightFiller: gauss(0.5), BiasFiller: gauss(0.2),
	}}
}

// conv is a Convolution layer spec with a square kernel.
func conv(name, bottom, top string, n, k, pad int) LayerSpec {
	return LayerSpec{Name: name, Bottom: []string{bottom}, Top: []string{top}, Config: &layers.ConvolutionConfig{
		NumOutput: n, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1, PadH: pad, PadW: pad, Group: 1, BiasTerm: true,
		WeightFiller: gauss(0.5), BiasFiller: gauss(0.2),
	}}
}

// rectConv is a Convolution layer spec with a 3x2 kernel, which only a
// 4-D (NCHW) bottom takes.
func rectConv(name, bottom, top string) LayerSpec {
	s := conv(name, bottom, top, 2, 3, 0)
	s.Config.(*layers.ConvolutionConfig).KernelW = 2
	return s
}

// pool is a Pooling layer spec with a square kernel and stride.
func pool(name, bottom, top string, m layers.PoolMethod, k, s int) LayerSpec {
	return LayerSpec{Name: name, Bottom: []string{bottom}, Top: []string{top}, Config: &layers.PoolingConfig{
		Method: m, KernelH: k, KernelW: k, StrideH: s, StrideW: s,
	}}
}

// unary is a one-bottom one-top layer spec (in place when bottom == top).
func unary(name, bottom, top string, c layers.Config) LayerSpec {
	return LayerSpec{Name: name, Bottom: []string{bottom}, Top: []string{top}, Config: c}
}

// lossLayer is a SoftmaxWithLoss layer spec over scores and "label".
func lossLayer(scores string) LayerSpec {
	return LayerSpec{Name: "loss", Bottom: []string{scores, "label"}, Top: []string{"loss"}, Config: &layers.SoftmaxWithLossConfig{Axis: 1}}
}

// accuracyLayer is an Accuracy layer spec over scores and "label".
func accuracyLayer(scores string) LayerSpec {
	return LayerSpec{Name: "accuracy", Bottom: []string{scores, "label"}, Top: []string{"accuracy"}, Config: &layers.AccuracyConfig{TopK: 1, Axis: 1}}
}

// testNet is a spec with the input shapes it is built for.
type testNet struct {
	name    string
	spec    Spec
	inputs  map[string]tensor.Shape
	classes int // label range; 0 when the net has no label input
}

// mlpNet: InnerProduct → ReLU (in place) → InnerProduct → SoftmaxWithLoss.
func mlpNet() testNet {
	return testNet{
		name: "mlp",
		spec: Spec{Name: "mlp", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "ip1", 8),
			unary("relu1", "ip1", "ip1", &layers.ReLUConfig{}),
			ip("ip2", "ip1", "ip2", 3),
			lossLayer("ip2"),
		}},
		inputs:  map[string]tensor.Shape{"data": {4, 6}, "label": {4}},
		classes: 3,
	}
}

// lenetNet: Convolution → Pooling MAX → Convolution → Pooling AVE →
// InnerProduct → ReLU → InnerProduct → SoftmaxWithLoss.
func lenetNet() testNet {
	return testNet{
		name: "lenet",
		spec: Spec{Name: "lenet", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			conv("conv1", "data", "conv1", 3, 3, 0),               // 2x3x6x6
			pool("pool1", "conv1", "pool1", layers.PoolMax, 2, 2), // 2x3x3x3
			conv("conv2", "pool1", "conv2", 4, 2, 0),              // 2x4x2x2
			pool("pool2", "conv2", "pool2", layers.PoolAve, 2, 2), // 2x4x1x1
			ip("ip1", "pool2", "ip1", 5),
			unary("relu1", "ip1", "ip1", &layers.ReLUConfig{}),
			ip("ip2", "ip1", "ip2", 3),
			lossLayer("ip2"),
		}},
		inputs:  map[string]tensor.Shape{"data": {2, 1, 8, 8}, "label": {2}},
		classes: 3,
	}
}

// splitNet: one blob (written in place by a ReLU) read by two
// InnerProducts whose outputs Eltwise SUM adds; the sum is then squared by
// an Eltwise PROD that reads it twice.
func splitNet() testNet {
	return testNet{
		name: "split",
		spec: Spec{Name: "split", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip0", "data", "h", 6),
			unary("relu0", "h", "h", &layers.ReLUConfig{NegativeSlope: 0.1}),
			ip("ipA", "h", "a", 5),
			unary("tanhA", "a", "a", &layers.TanHConfig{}),
			ip("ipB", "h", "b", 5),
			{Name: "sum", Bottom: []string{"a", "b"}, Top: []string{"s"}, Config: &layers.EltwiseConfig{Operation: layers.EltwiseSum, Coeff: []float32{1, -0.5}}},
			{Name: "square", Bottom: []string{"s", "s"}, Top: []string{"sq"}, Config: &layers.EltwiseConfig{Operation: layers.EltwiseProd}},
			ip("ip2", "sq", "ip2", 3),
			lossLayer("ip2"),
		}},
		inputs:  map[string]tensor.Shape{"data": {4, 5}, "label": {4}},
		classes: 3,
	}
}

// concatNet: two convolutions of the input joined along channels, then
// Sigmoid in place, Flatten, InnerProduct, SoftmaxWithLoss.
func concatNet() testNet {
	return testNet{
		name: "concat",
		spec: Spec{Name: "concat", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			conv("convA", "data", "a", 2, 3, 0),            // 2x2x3x3
			conv("convB", "data", "b", 3, 1, 0),            // 2x3x5x5
			pool("poolB", "b", "pb", layers.PoolAve, 3, 1), // 2x3x3x3
			{Name: "cat", Bottom: []string{"a", "pb"}, Top: []string{"c"}, Config: &layers.ConcatConfig{Axis: 1}},
			unary("sig", "c", "c", &layers.SigmoidConfig{}),
			unary("flat", "c", "f", &layers.FlattenConfig{Axis: 1, EndAxis: -1}),
			ip("ip", "f", "ip", 3),
			lossLayer("ip"),
		}},
		inputs:  map[string]tensor.Shape{"data": {2, 2, 5, 5}, "label": {2}},
		classes: 3,
	}
}

// bnNet: Convolution → BatchNorm → Scale (bias) → ReLU, all three in place,
// then LRN, InnerProduct and SoftmaxWithLoss.
func bnNet() testNet {
	return testNet{
		name: "batchnorm",
		spec: Spec{Name: "batchnorm", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			conv("conv1", "data", "conv1", 3, 2, 0), // 4x3x3x3
			unary("bn1", "conv1", "conv1", &layers.BatchNormConfig{MovingAverageFraction: 0.999, Eps: 1e-5}),
			unary("scale1", "conv1", "conv1", &layers.ScaleConfig{Axis: 1, NumAxes: 1, Filler: gauss(1), BiasTerm: true, BiasFiller: gauss(0.5)}),
			unary("relu1", "conv1", "conv1", &layers.ReLUConfig{}),
			unary("norm1", "conv1", "norm1", &layers.LRNConfig{LocalSize: 3, Alpha: 1, Beta: 0.75, K: 2}),
			ip("ip", "norm1", "ip", 3),
			lossLayer("ip"),
		}},
		inputs:  map[string]tensor.Shape{"data": {4, 2, 4, 4}, "label": {4}},
		classes: 3,
	}
}

// sharedNet: two InnerProducts of the input share their weights (param
// name "w"); their outputs are summed.
func sharedNet() testNet {
	a, b := ip("ipA", "data", "a", 4), ip("ipB", "data", "b", 4)
	a.Params = []ParamSpec{{Name: "w", LRMult: 1, DecayMult: 1}}
	b.Params = []ParamSpec{{Name: "w", LRMult: 1, DecayMult: 1}}
	b.Top = []string{"b"}
	return testNet{
		name: "shared",
		spec: Spec{Name: "shared", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			a,
			unary("sigA", "a", "a", &layers.SigmoidConfig{}),
			b,
			{Name: "sum", Bottom: []string{"a", "b"}, Top: []string{"s"}, Config: &layers.EltwiseConfig{Operation: layers.EltwiseSum}},
			ip("ip2", "s", "ip2", 3),
			lossLayer("ip2"),
		}},
		inputs:  map[string]tensor.Shape{"data": {3, 5}, "label": {3}},
		classes: 3,
	}
}

// weightedNet has no loss layer: its objective is loss weights on plain
// tops, one of them read by the next layer (h), one modified in place by
// the next layer (out), and one on a top nobody reads (obj).
func weightedNet() testNet {
	h := ip("ip1", "data", "h", 4)
	h.LossWeight = []float32{0.5}
	out := ip("ip2", "hs", "out", 4)
	out.LossWeight = []float32{-1}
	obj := ip("ip3", "sm", "obj", 2)
	obj.LossWeight = []float32{2}
	return testNet{
		name: "loss-weighted",
		spec: Spec{Name: "weighted", Inputs: []string{"data"}, Layers: []LayerSpec{
			h,
			unary("sig", "h", "hs", &layers.SigmoidConfig{}),
			out,
			unary("tanh", "out", "out", &layers.TanHConfig{}),
			unary("softmax", "out", "sm", &layers.SoftmaxConfig{Axis: 1}),
			obj,
		}},
		inputs: map[string]tensor.Shape{"data": {3, 4}},
	}
}

// build builds tn with the given options, failing the test on error, and
// fills its inputs from seed.
func (tn testNet) build(t testing.TB, opt Options, seed uint64) *Net {
	t.Helper()
	n, err := Build(tn.spec, tn.inputs, opt)
	if err != nil {
		t.Fatalf("%s: Build: %v", tn.name, err)
	}
	tn.fill(n, seed)
	return n
}

// fill puts gaussian data in every input but "label", and class indices in
// [0, tn.classes) in "label".
func (tn testNet) fill(n *Net, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for _, name := range tn.spec.Inputs {
		b := n.Input(name)
		for i := range b.Data {
			if name == "label" {
				b.Data[i] = float32(r.IntN(tn.classes))
			} else {
				b.Data[i] = float32(r.NormFloat64())
			}
		}
	}
}

// gradCheck configures compareGradients. Its zero value uses step 1e-2 and
// threshold 1e-2, Caffe's GradientChecker defaults.
type gradCheck struct {
	Step float64
	// Threshold bounds |analytic − numeric| relative to max(|analytic|,
	// |numeric|, Floor).
	Threshold, Floor float64
	// Samples is how many learnable parameters are checked (all when 0).
	Samples int
	// KinkTol flags a sample as lying across a kink (a ReLU changing side,
	// a max-pooling window changing winner) when its two one-sided
	// differences disagree by more than KinkTol; such samples are skipped,
	// as Caffe's checker skips inputs near a kink. 0 disables the test.
	KinkTol float64
	Seed    uint64
}

// gradReport is the outcome of compareGradients.
type gradReport struct {
	sampled, checked, kinks int
	bad                     []string // one line per disagreeing sample
	maxErr                  float64  // the largest |analytic − numeric| / scale seen
}

// compareGradients compares analytic (Grads() after one ForwardBackward on
// the current inputs) with central finite differences of n.Forward() with
// respect to sampled learnable parameters (blocks with LRMult != 0).
// Parameters are restored after each probe.
func compareGradients(n *Net, analytic []float32, g gradCheck) gradReport {
	if g.Step == 0 {
		g.Step = 1e-2
	}
	if g.Threshold == 0 {
		g.Threshold = 1e-2
	}
	if g.Floor == 0 {
		g.Floor = 1
	}
	var idx []int
	owner := map[int]string{}
	for _, b := range n.Blocks() {
		if b.LRMult == 0 {
			continue
		}
		for i := b.Off; i < b.Off+b.Len(); i++ {
			if _, dup := owner[i]; !dup {
				idx = append(idx, i)
			}
			owner[i] = fmt.Sprintf("%s[%d]", b.Name, i-b.Off)
		}
	}
	r := rand.New(rand.NewPCG(g.Seed, 11))
	if g.Samples > 0 && len(idx) > g.Samples {
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:g.Samples]
	}
	rep := gradReport{sampled: len(idx)}
	p := n.Params()
	f0 := n.Forward()
	for _, i := range idx {
		x := p[i]
		p[i] = x + float32(g.Step)
		fp := n.Forward()
		p[i] = x - float32(g.Step)
		fm := n.Forward()
		p[i] = x
		// The perturbation actually applied, in float32.
		hp := float64(x+float32(g.Step)) - float64(x)
		hm := float64(x) - float64(x-float32(g.Step))
		num := (fp - fm) / (hp + hm)
		if g.KinkTol > 0 && math.Abs((fp-f0)/hp-(f0-fm)/hm) > g.KinkTol {
			rep.kinks++
			continue
		}
		rep.checked++
		ana := float64(analytic[i])
		scale := math.Max(math.Max(math.Abs(num), math.Abs(ana)), g.Floor)
		e := math.Abs(num-ana) / scale
		rep.maxErr = math.Max(rep.maxErr, e)
		if e > g.Threshold {
			rep.bad = append(rep.bad, fmt.Sprintf("%s: analytic %.6g, numeric %.6g", owner[i], ana, num))
		}
	}
	n.Forward()
	return rep
}

// grads runs ForwardBackward and returns a copy of the gradients.
func grads(n *Net) []float32 {
	n.ForwardBackward()
	return append([]float32(nil), n.Grads()...)
}

// blockOf returns the index of the block named name, failing the test when
// there is none.
func blockOf(t testing.TB, n *Net, name string) int {
	t.Helper()
	for i, b := range n.Blocks() {
		if b.Name == name {
			return i
		}
	}
	t.Fatalf("no block %q in %v", name, n.Blocks())
	return -1
}

// blockVals returns the slice of buf that block bi covers.
func blockVals(n *Net, buf []float32, bi int) []float32 {
	b := n.Blocks()[bi]
	return buf[b.Off : b.Off+b.Len()]
}

// layerInfo returns the LayerInfo of the named layer.
func layerInfo(t testing.TB, n *Net, name string) LayerInfo {
	t.Helper()
	for _, li := range n.Layers() {
		if li.Name == name {
			return li
		}
	}
	t.Fatalf("no layer %q", name)
	return LayerInfo{}
}

// allZero reports whether every value of x is zero.
func allZero(x []float32) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}
