package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// hookRecord is what an OnGradReady hook saw in one call.
type hookRecord struct {
	blocks []int
	grads  [][]float32 // copy of each reported block's gradient at the call
	// unreportedZero says whether every block not yet reported in this
	// pass still had an all-zero gradient at the call.
	unreportedZero bool
}

// TestOnGradReady checks the hook's contract: one call per layer with
// params, in backward order, each block reported once, and at the call the
// reported gradients are final while the blocks of lower layers are still
// untouched (zero; a shared block may hold the part its higher users
// added).
func TestOnGradReady(t *testing.T) {
	for _, tc := range []struct {
		tn   testNet
		want [][]string // block names per call, in call order
	}{
		{lenetNet(), [][]string{{"ip2/0", "ip2/1"}, {"ip1/0", "ip1/1"}, {"conv2/0", "conv2/1"}, {"conv1/0", "conv1/1"}}},
		// The shared block is final only after its lowest user, ipA.
		{sharedNet(), [][]string{{"ip2/0", "ip2/1"}, {"ipB/1"}, {"w", "ipA/1"}}},
		{bnNet(), [][]string{{"ip/0", "ip/1"}, {"scale1/0", "scale1/1"}, {"bn1/0", "bn1/1", "bn1/2"}, {"conv1/0", "conv1/1"}}},
	} {
		t.Run(tc.tn.name, func(t *testing.T) {
			var n *Net
			var recs []hookRecord
			reported := map[int]bool{}
			sharedBlock := map[int]bool{}
			hook := func(blocks []int) {
				r := hookRecord{blocks: slices.Clone(blocks), unreportedZero: true}
				for _, bi := range blocks {
					r.grads = append(r.grads, slices.Clone(blockVals(n, n.Grads(), bi)))
					reported[bi] = true
				}
				for bi := range n.Blocks() {
					if !reported[bi] && !sharedBlock[bi] && !allZero(blockVals(n, n.Grads(), bi)) {
						r.unreportedZero = false
					}
				}
				recs = append(recs, r)
			}
			var err error
			n, err = Build(tc.tn.spec, tc.tn.inputs, Options{Seed: 3, Threads: 2, OnGradReady: hook})
			if err != nil {
				t.Fatal(err)
			}
			// A shared block accumulates from each user, so it may hold
			// a partial gradient before its lowest user reports it.
			users := map[int]int{}
			for _, bis := range n.byLayer {
				for _, bi := range bis {
					users[bi]++
					sharedBlock[bi] = users[bi] > 1
				}
			}
			tc.tn.fill(n, 5)
			for pass := range 2 { // the second pass starts from non-zero grads
				recs = recs[:0]
				clear(reported)
				n.ForwardBackward()
				var got [][]string
				for _, r := range recs {
					var names []string
					for _, bi := range r.blocks {
						names = append(names, n.Blocks()[bi].Name)
					}
					got = append(got, names)
				}
				if !slices.EqualFunc(got, tc.want, slices.Equal) {
					t.Fatalf("pass %d: hook calls %v, want %v", pass, got, tc.want)
				}
				for _, r := range recs {
					for k, bi := range r.blocks {
						if !tensor.SameBits(r.grads[k], blockVals(n, n.Grads(), bi)) {
							t.Errorf("pass %d: block %s changed after its hook call", pass, n.Blocks()[bi].Name)
						}
					}
					if !r.unreportedZero {
						t.Errorf("pass %d: at the call for %v, a block not yet reported already had a gradient", pass, r.blocks)
					}
				}
				if len(reported) != len(n.Blocks()) {
					t.Errorf("pass %d: %d of %d blocks reported", pass, len(reported), len(n.Blocks()))
				}
			}
		})
	}
}

// TestNoLoss checks a net with no loss: Forward returns 0, nothing runs
// backward, and the gradients are zero.
func TestNoLoss(t *testing.T) {
	spec := Spec{Name: "features", Inputs: []string{"data"}, Layers: []LayerSpec{
		ip("ip1", "data", "ip1", 4),
		unary("relu", "ip1", "ip1", &layers.ReLUConfig{}),
		ip("ip2", "ip1", "ip2", 2),
	}}
	calls := 0
	n, err := Build(spec, map[string]tensor.Shape{"data": {3, 5}}, Options{Seed: 1, OnGradReady: func([]int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	(testNet{spec: spec}).fill(n, 1)
	if loss := n.ForwardBackward(); loss != 0 {
		t.Errorf("loss %v, want 0", loss)
	}
	if allZero(n.Blob("ip2").Data) {
		t.Errorf("forward did not run: ip2 is all zero")
	}
	if !allZero(n.Grads()) {
		t.Errorf("gradients without a loss are not zero")
	}
	for _, li := range n.Layers() {
		if li.Backprop {
			t.Errorf("layer %s runs backward in a net without a loss", li.Name)
		}
	}
	if calls != 2 {
		t.Errorf("OnGradReady called %d times, want 2 (once per layer with params, even without a loss)", calls)
	}
	if outs := blobNames(n.Outputs()); !slices.Equal(outs, []string{"ip2"}) {
		t.Errorf("outputs %v, want [ip2]", outs)
	}
}

func blobNames(bs []*tensor.Blob) []string {
	var s []string
	for _, b := range bs {
		s = append(s, b.Name)
	}
	return s
}

// TestLossWeight checks that loss_weight 2 on the loss doubles the loss and
// every gradient, and loss_weight 0 turns the loss off.
func TestLossWeight(t *testing.T) {
	base := mlpNet()
	n1 := base.build(t, Options{Seed: 8}, 3)
	l1 := n1.ForwardBackward()
	for _, w := range []float32{2, 0.5, 0} {
		tn := mlpNet()
		tn.spec.Layers[3].LossWeight = []float32{w}
		n := tn.build(t, Options{Seed: 8}, 3)
		l := n.ForwardBackward()
		if math.Abs(l-float64(w)*l1) > 1e-6*math.Abs(l1) {
			t.Errorf("weight %v: loss %v, want %v·%v", w, l, w, l1)
		}
		for i, g := range n.Grads() {
			if want := w * n1.Grads()[i]; math.Abs(float64(g-want)) > 1e-6*math.Max(1e-3, math.Abs(float64(want))) {
				t.Fatalf("weight %v: grad %d is %v, want %v", w, i, g, want)
			}
		}
		if w == 0 {
			for _, li := range n.Layers() {
				if li.Backprop {
					t.Errorf("weight 0: layer %s runs backward", li.Name)
				}
			}
		}
	}
	// One loss_weight per top: a mismatch is an error.
	tn := mlpNet()
	tn.spec.Layers[3].LossWeight = []float32{1, 1}
	if _, err := Build(tn.spec, tn.inputs, Options{}); err == nil || !strings.Contains(err.Error(), `"loss"`) || !strings.Contains(err.Error(), "2 loss_weight values for 1 tops") {
		t.Errorf("two loss weights for one top: error %v", err)
	}
}

// TestAccuracyAndOutputs checks Outputs and that Accuracy, with no
// gradient, never runs backward nor makes its score blob need a split.
func TestAccuracyAndOutputs(t *testing.T) {
	for _, phase := range []layers.Phase{layers.Train, layers.Test} {
		t.Run(phase.String(), func(t *testing.T) {
			_, tn := trainTestSpecs()
			n := tn.build(t, Options{Seed: 4, Phase: phase}, 2)
			loss := n.ForwardBackward()
			if outs := blobNames(n.Outputs()); !slices.Equal(outs, []string{"loss", "accuracy"}) {
				t.Errorf("outputs %v, want [loss accuracy]", outs)
			}
			if got := float64(n.Outputs()[0].Data[0]); got != loss {
				t.Errorf("loss output %v, Forward returned %v", got, loss)
			}
			acc := n.Outputs()[1].Data[0]
			if acc < 0 || acc > 1 || acc*6 != float32(math.Round(float64(acc*6))) {
				t.Errorf("accuracy %v is not a fraction of the 6 examples", acc)
			}
			if layerInfo(t, n, "accuracy").Backprop {
				t.Errorf("Accuracy runs backward")
			}
			for _, name := range []string{"loss", "ip2", "relu1", "ip1"} {
				if !layerInfo(t, n, name).Backprop {
					t.Errorf("%s does not run backward", name)
				}
			}
			if len(n.splits) != 0 {
				t.Errorf("splits %v: Accuracy takes no gradient, ip2 needs no split", n.splits)
			}
			// Gradients match the net without the Accuracy layer.
			tn2 := mlpNet()
			tn2.inputs = tn.inputs
			m := tn2.build(t, Options{Seed: 4, Phase: phase}, 2)
			if m.ForwardBackward() != loss || !tensor.SameBits(m.Grads(), n.Grads()) {
				t.Errorf("adding Accuracy changed the loss or the gradients")
			}
		})
	}
}

// TestNonFinite checks that NonFinite names the first layer whose output or
// params hold a NaN or an infinity, and for a blob modified in place, the
// layers that modified it, after checking their params.
func TestNonFinite(t *testing.T) {
	poisonParam := func(block string, k int, v float64) func(*testing.T, *Net) {
		return func(t *testing.T, n *Net) {
			n.Params()[n.Blocks()[blockOf(t, n, block)].Off+k] = float32(v)
		}
	}
	nanInput := func(_ *testing.T, n *Net) { n.Input("data").Data[5] = float32(math.NaN()) }
	tests := []struct {
		name   string
		net    func() testNet
		poison func(t *testing.T, n *Net)
		want   []string // substrings of NonFinite(); none means ""
	}{
		{"finite", mlpNet, func(*testing.T, *Net) {}, nil},
		{"finite, in place", bnNet, func(*testing.T, *Net) {}, nil},
		{"NaN input", mlpNet, nanInput,
			[]string{`layer "ip1" (mlp.prototxt:3:1) (InnerProduct): output "ip1", then modified in place by "relu1", holds NaN`}},
		{"NaN weight", mlpNet, poisonParam("ip2/0", 4, math.NaN()), []string{`layer "ip2": param ip2/0 holds NaN at index 4`}},
		{"Inf bias", mlpNet, poisonParam("ip1/1", 1, math.Inf(1)), []string{`layer "ip1" (mlp.prototxt:3:1): param ip1/1 holds +Inf at index 1`}},
		{"NaN input, in-place chain", bnNet, nanInput,
			[]string{`layer "conv1" (Convolution): output "conv1", then modified in place by "bn1", "scale1", "relu1", holds NaN`}},
		// The scale's param, not conv1 whose blob it spoils, is reported.
		{"NaN param in the chain", bnNet, poisonParam("scale1/1", 2, math.NaN()), []string{`layer "scale1": param scale1/1 holds NaN at index 2`}},
		// Stored statistics gone bad while the outputs are finite.
		{"NaN statistics", bnNet, poisonParam("bn1/1", 1, math.NaN()), []string{`layer "bn1": param bn1/1 holds NaN at index 1`}},
		{"NaN after the chain", bnNet, poisonParam("ip/1", 0, math.Inf(-1)), []string{`layer "ip": param ip/1 holds -Inf`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := tc.net()
			tn.spec.Layers[0].Pos = tn.name + ".prototxt:3:1"
			if tn.name != "mlp" {
				tn.spec.Layers[0].Pos = ""
			}
			n := tn.build(t, Options{Seed: 1}, 1)
			tc.poison(t, n)
			n.Forward()
			got := n.NonFinite()
			if len(tc.want) == 0 {
				if got != "" {
					t.Errorf("NonFinite() = %q, want \"\"", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("NonFinite() = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

// TestPropagateDown checks backward planning: which layers run Backward and
// which bottoms receive a gradient.
func TestPropagateDown(t *testing.T) {
	t.Run("data input", func(t *testing.T) {
		tn := lenetNet()
		n := tn.build(t, Options{Seed: 1}, 1)
		conv1 := n.nodes[0]
		if conv1.spec.Name != "conv1" || !conv1.backward || conv1.propDown[0] {
			t.Fatalf("conv1: backward %v propagateDown %v, want true [false]", conv1.backward, conv1.propDown)
		}
		// Observable: conv1 never writes the input's Diff.
		d := n.Input("data").Diff
		for i := range d {
			d[i] = 7
		}
		n.ForwardBackward()
		for i, v := range d {
			if v != 7 {
				t.Fatalf("data diff[%d] = %v: conv1 wrote the input's gradient", i, v)
			}
		}
		if l := n.nodes[len(n.nodes)-1]; !l.propDown[0] || l.propDown[1] {
			t.Errorf("loss propagateDown %v, want [true false] (no gradient to labels)", l.propDown)
		}
	})
	tests := []struct {
		name   string
		edit   func(s *Spec)
		noBack []string // layers that must not run Backward
		back   []string // layers that must
		zero   []string // blocks whose gradient must stay zero
		cut    bool     // the spec cuts the gradient: no finite-difference check
	}{
		{"frozen first layer", func(s *Spec) {
			s.Layers[0].Params = []ParamSpec{{LRMult: 0, DecayMult: 1}, {LRMult: 0, DecayMult: 0}}
		}, []string{"ip1", "relu1"}, []string{"ip2", "loss"}, []string{"ip1/0", "ip1/1"}, false},
		{"one frozen blob still learns", func(s *Spec) {
			s.Layers[0].Params = []ParamSpec{{LRMult: 0, DecayMult: 1}, {LRMult: 1, DecayMult: 0}}
		}, nil, []string{"ip1", "relu1", "ip2", "loss"}, nil, false},
		{"propagate_down false", func(s *Spec) {
			s.Layers[2].PropagateDown = []bool{false}
		}, []string{"ip1", "relu1"}, []string{"ip2", "loss"}, []string{"ip1/0", "ip1/1"}, true},
		{"everything frozen", func(s *Spec) {
			f := []ParamSpec{{}, {}}
			s.Layers[0].Params, s.Layers[2].Params = f, f
		}, []string{"ip1", "relu1", "ip2", "loss"}, nil, []string{"ip1/0", "ip1/1", "ip2/0", "ip2/1"}, false},
		// propagate_down false on a layer computing in place cuts the
		// gradient of the blob's older version only.
		{"propagate_down false in place", func(s *Spec) {
			s.Layers[1].PropagateDown = []bool{false}
		}, []string{"ip1", "relu1"}, []string{"ip2", "loss"}, []string{"ip1/0", "ip1/1"}, true},
		{"propagate_down false in place, with params", func(s *Spec) {
			s.Layers[1] = unary("scale1", "ip1", "ip1", &layers.ScaleConfig{Axis: 1, NumAxes: 1, Filler: gauss(1), BiasTerm: true})
			s.Layers[1].PropagateDown = []bool{false}
		}, []string{"ip1"}, []string{"scale1", "ip2", "loss"}, []string{"ip1/0", "ip1/1"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := mlpNet()
			tn.spec.Layers = slices.Clone(tn.spec.Layers)
			tc.edit(&tn.spec)
			n := tn.build(t, Options{Seed: 1}, 1)
			g := grads(n)
			for _, name := range tc.noBack {
				if layerInfo(t, n, name).Backprop {
					t.Errorf("%s runs backward", name)
				}
			}
			for _, name := range tc.back {
				if !layerInfo(t, n, name).Backprop {
					t.Errorf("%s does not run backward", name)
				}
			}
			for _, name := range tc.zero {
				if !allZero(blockVals(n, g, blockOf(t, n, name))) {
					t.Errorf("block %s has a gradient", name)
				}
			}
			// What is computed is still right (frozen blobs get no
			// gradient: the checker skips lr_mult 0).
			if tc.cut {
				return
			}
			if rep := compareGradients(n, g, netGradCheck); len(rep.bad) > 0 {
				t.Errorf("gradients: %v", rep.bad)
			}
		})
	}
	t.Run("batchnorm on the input", func(t *testing.T) {
		// BatchNorm's params are all frozen and its bottom is the input:
		// it needs no Backward; Scale after it does.
		spec := Spec{Name: "bn", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			unary("bn", "data", "x", &layers.BatchNormConfig{MovingAverageFraction: 0.9, Eps: 1e-5}),
			unary("scale", "x", "x", &layers.ScaleConfig{Axis: 1, NumAxes: 1, Filler: gauss(1)}),
			ip("ip", "x", "ip", 3),
			lossLayer("ip"),
		}}
		tn := testNet{name: "bn", spec: spec, inputs: map[string]tensor.Shape{"data": {4, 2, 3, 3}, "label": {4}}, classes: 3}
		n := tn.build(t, Options{Seed: 1}, 1)
		g := grads(n)
		if layerInfo(t, n, "bn").Backprop {
			t.Errorf("bn runs backward")
		}
		for _, name := range []string{"scale", "ip"} {
			if !layerInfo(t, n, name).Backprop {
				t.Errorf("%s does not run backward", name)
			}
		}
		if allZero(blockVals(n, g, blockOf(t, n, "scale/0"))) {
			t.Errorf("scale has no gradient")
		}
		for bi, b := range n.Blocks() {
			if b.Layer == "bn" && (b.LRMult != 0 || !allZero(blockVals(n, g, bi))) {
				t.Errorf("bn block %s: lr_mult %v, gradient non-zero %v", b.Name, b.LRMult, !allZero(blockVals(n, g, bi)))
			}
		}
	})
}

// TestSplits checks where the model sums gradients: a blob read by two
// layers needing its gradient gets one split at its producer (the in-place
// ReLU), and a blob read twice by one layer gets one too.
func TestSplits(t *testing.T) {
	n := splitNet().build(t, Options{Seed: 1}, 1)
	got := map[string][]string{}
	for i, sps := range n.splits {
		for _, sp := range sps {
			got[n.nodes[i].spec.Name] = append(got[n.nodes[i].spec.Name], fmt.Sprintf("%s×%d", sp.target.Name, len(sp.parts)))
		}
	}
	want := map[string][]string{"relu0": {"h×2"}, "sum": {"s×2"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("splits %v, want %v", got, want)
	}
	if len(n.inputSp) != 0 {
		t.Errorf("input splits %d, want 0", len(n.inputSp))
	}
	// The split parts share the producer's data.
	for _, sp := range n.splits[1] {
		for _, p := range sp.parts {
			if &p.Data[0] != &sp.target.Data[0] {
				t.Errorf("split part of %s does not share its data", sp.target.Name)
			}
		}
	}
}

// TestSteadyStateAllocs checks that ForwardBackward, with the hook set,
// allocates nothing once the net is built.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tn := range []testNet{mlpNet(), lenetNet(), splitNet(), concatNet(), bnNet(), sharedNet(), weightedNet()} {
		t.Run(tn.name, func(t *testing.T) {
			calls := 0
			n := tn.build(t, Options{Seed: 1, OnGradReady: func([]int) { calls++ }}, 1)
			n.ForwardBackward()
			if a := testing.AllocsPerRun(20, func() { n.ForwardBackward() }); a != 0 {
				t.Errorf("%v allocations per ForwardBackward", a)
			}
			if calls == 0 {
				t.Errorf("hook never called")
			}
		})
	}
}

// TestLayersReport checks Layers, NumLayers, ResetTimes and the accessors.
func TestLayersReport(t *testing.T) {
	tn := lenetNet()
	tn.spec.Layers = slices.Clone(tn.spec.Layers)
	n := tn.build(t, Options{Seed: 1}, 1)
	if n.Name() != "lenet" || n.NumLayers() != 8 {
		t.Errorf("name %q, %d layers", n.Name(), n.NumLayers())
	}
	n.ForwardBackward()
	li := n.Layers()
	wantTypes := []string{"Convolution", "Pooling", "Convolution", "Pooling", "InnerProduct", "ReLU", "InnerProduct", "SoftmaxWithLoss"}
	wantTops := []tensor.Shape{{2, 3, 6, 6}, {2, 3, 3, 3}, {2, 4, 2, 2}, {2, 4, 1, 1}, {2, 5}, {2, 5}, {2, 3}, {}}
	for i, l := range li {
		if l.Name != tn.spec.Layers[i].Name || l.Type != wantTypes[i] || len(l.Tops) != 1 || !l.Tops[0].Equal(wantTops[i]) {
			t.Errorf("layer %d: %s %s tops %v, want %s %s [%v]", i, l.Name, l.Type, l.Tops, tn.spec.Layers[i].Name, wantTypes[i], wantTops[i])
		}
		if l.Forward <= 0 {
			t.Errorf("layer %s: forward time %v", l.Name, l.Forward)
		}
		if l.Backprop != (l.Backward > 0) {
			t.Errorf("layer %s: backprop %v but backward time %v", l.Name, l.Backprop, l.Backward)
		}
	}
	n.ResetTimes()
	for _, l := range n.Layers() {
		if l.Forward != 0 || l.Backward != 0 {
			t.Errorf("layer %s: times %v %v after ResetTimes", l.Name, l.Forward, l.Backward)
		}
	}
	if n.Input("data") == nil || n.Input("conv1") != nil || n.Input("nope") != nil {
		t.Errorf("Input finds the wrong blobs")
	}
	if b := n.Blob("pool1"); b == nil || !b.Shape.Equal(tensor.Shape{2, 3, 3, 3}) {
		t.Errorf("Blob(pool1) = %v", b)
	}
	if n.Blob("nope") != nil {
		t.Errorf("Blob of an unknown name is not nil")
	}
}

// BenchmarkForwardBackward times one pass of the LeNet-like test net.
func BenchmarkForwardBackward(b *testing.B) {
	tn := lenetNet()
	tn.inputs = map[string]tensor.Shape{"data": {16, 1, 8, 8}, "label": {16}}
	n := tn.build(b, Options{Seed: 1}, 1)
	b.ReportAllocs()
	for b.Loop() {
		n.ForwardBackward()
	}
}
