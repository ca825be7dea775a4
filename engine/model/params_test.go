package model

import (
	"math"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// allNets are the test nets every layout test runs over.
func allNets() []testNet {
	return []testNet{mlpNet(), lenetNet(), splitNet(), concatNet(), bnNet(), sharedNet(), weightedNet()}
}

// TestParamViews checks that every layer's param blobs are views into the
// flat buffers at their block's offset, with their capacity clipped so a
// layer cannot write past its block.
func TestParamViews(t *testing.T) {
	for _, tn := range allNets() {
		t.Run(tn.name, func(t *testing.T) {
			n := tn.build(t, Options{Seed: 1}, 1)
			for _, nd := range n.nodes {
				ps := nd.layer.Params()
				bis := n.byLayer[nd.spec.Name]
				if len(ps) != len(bis) {
					t.Fatalf("layer %s: %d params but %d blocks", nd.spec.Name, len(ps), len(bis))
				}
				for j, p := range ps {
					b := n.Blocks()[bis[j]]
					if !b.Shape.Equal(p.Blob.Shape) {
						t.Errorf("layer %s param %d: block shape %v, blob shape %v", nd.spec.Name, j, b.Shape, p.Blob.Shape)
					}
					for _, v := range []struct {
						what      string
						view, buf []float32
					}{{"Data", p.Blob.Data, n.Params()}, {"Diff", p.Blob.Diff, n.Grads()}} {
						if len(v.view) != b.Len() || cap(v.view) != b.Len() {
							t.Errorf("layer %s param %d %s: len %d cap %d, want %d", nd.spec.Name, j, v.what, len(v.view), cap(v.view), b.Len())
							continue
						}
						if &v.view[0] != &v.buf[b.Off] {
							t.Errorf("layer %s param %d %s is not a view at offset %d of the flat buffer", nd.spec.Name, j, v.what, b.Off)
						}
					}
				}
			}
			// Writing through Params is seen by the layers: the forward
			// output moves.
			before := n.Forward()
			for i := range n.Params() {
				n.Params()[i] *= 0.5
			}
			if after := n.Forward(); after == before {
				t.Errorf("halving every param left the loss at %v", before)
			}
		})
	}
}

// TestBlockLayout checks that the blocks tile Params and Grads exactly, in
// layer order, with Caffe's names and multipliers.
func TestBlockLayout(t *testing.T) {
	for _, tn := range allNets() {
		t.Run(tn.name, func(t *testing.T) {
			n := tn.build(t, Options{Seed: 1}, 1)
			if len(n.Params()) != len(n.Grads()) {
				t.Fatalf("Params has %d values, Grads %d", len(n.Params()), len(n.Grads()))
			}
			layerIdx := map[string]int{}
			for i, li := range n.Layers() {
				layerIdx[li.Name] = i
			}
			off, prev := 0, -1
			for i, b := range n.Blocks() {
				if b.Off != off {
					t.Errorf("block %d (%s) at offset %d, want %d (blocks must be contiguous)", i, b.Name, b.Off, off)
				}
				if b.Len() <= 0 {
					t.Errorf("block %d (%s) is empty", i, b.Name)
				}
				off = b.Off + b.Len()
				li, ok := layerIdx[b.Layer]
				if !ok {
					t.Fatalf("block %s names unknown layer %q", b.Name, b.Layer)
				}
				if li < prev {
					t.Errorf("block %s of layer %s comes after a block of a later layer", b.Name, b.Layer)
				}
				prev = li
			}
			if off != len(n.Params()) {
				t.Errorf("blocks cover %d values, Params has %d", off, len(n.Params()))
			}
		})
	}

	n := bnNet().build(t, Options{Seed: 1}, 1)
	var got []string
	for _, b := range n.Blocks() {
		got = append(got, b.Name)
		frozen := strings.HasPrefix(b.Name, "bn1/")
		if frozen != (b.LRMult == 0 && b.DecayMult == 0) || !frozen && (b.LRMult != 1 || b.DecayMult != 1) {
			t.Errorf("block %s: lr_mult %v decay_mult %v", b.Name, b.LRMult, b.DecayMult)
		}
	}
	want := []string{"conv1/0", "conv1/1", "bn1/0", "bn1/1", "bn1/2", "scale1/0", "scale1/1", "ip/0", "ip/1"}
	if !slices.Equal(got, want) {
		t.Errorf("block names %v, want %v", got, want)
	}
	if s := n.Blocks()[blockOf(t, n, "conv1/0")].Shape; !s.Equal(tensor.Shape{3, 2, 2, 2}) {
		t.Errorf("conv1 weight shape %v, want [3 2 2 2]", s)
	}

	// Multipliers from the spec reach the blocks.
	tn := mlpNet()
	tn.spec.Layers[0].Params = []ParamSpec{{LRMult: 1, DecayMult: 1}, {LRMult: 2, DecayMult: 0}}
	n = tn.build(t, Options{}, 1)
	if b := n.Blocks()[blockOf(t, n, "ip1/1")]; b.LRMult != 2 || b.DecayMult != 0 {
		t.Errorf("ip1 bias: lr_mult %v decay_mult %v, want 2 and 0", b.LRMult, b.DecayMult)
	}
	if b := n.Blocks()[blockOf(t, n, "ip2/1")]; b.LRMult != 1 || b.DecayMult != 1 {
		t.Errorf("ip2 bias (no param spec): lr_mult %v decay_mult %v, want 1 and 1", b.LRMult, b.DecayMult)
	}
}

// TestFillers checks that Build fills each block with its layer's filler.
func TestFillers(t *testing.T) {
	tn := mlpNet()
	tn.spec.Layers[0].Config = &layers.InnerProductConfig{NumOutput: 300, BiasTerm: true, Axis: 1,
		WeightFiller: layers.Filler{Type: layers.FillGaussian, Mean: 1, Std: 0.1},
		BiasFiller:   layers.Filler{Type: layers.FillConstant, Value: 0.25}}
	n := tn.build(t, Options{Seed: 3}, 1)
	w := blockVals(n, n.Params(), blockOf(t, n, "ip1/0"))
	var sum, sq float64
	for _, v := range w {
		sum += float64(v)
	}
	mean := sum / float64(len(w))
	for _, v := range w {
		sq += (float64(v) - mean) * (float64(v) - mean)
	}
	std := math.Sqrt(sq / float64(len(w)))
	if math.Abs(mean-1) > 0.01 || math.Abs(std-0.1) > 0.01 {
		t.Errorf("gaussian(1, 0.1) filler gave mean %.4f std %.4f over %d values", mean, std, len(w))
	}
	for i, v := range blockVals(n, n.Params(), blockOf(t, n, "ip1/1")) {
		if v != 0.25 {
			t.Fatalf("constant 0.25 bias filler: element %d is %v", i, v)
		}
	}
	if !allZero(n.Grads()) {
		t.Errorf("a new net's gradients are not zero")
	}
}

// TestDeterminism checks that a seed fixes the params and so the whole
// forward/backward pass, bit for bit, run after run even with several
// threads, and that different seeds give different params. (Different
// thread counts may sum partial gradients in a different order, so only
// the params, not the gradients, are compared across them.)
func TestDeterminism(t *testing.T) {
	for _, tn := range allNets() {
		t.Run(tn.name, func(t *testing.T) {
			a := tn.build(t, Options{Seed: 42, Threads: 2}, 1)
			b := tn.build(t, Options{Seed: 42, Threads: 2}, 1)
			c := tn.build(t, Options{Seed: 43, Threads: 2}, 1)
			if one := tn.build(t, Options{Seed: 42, Threads: 1}, 1); !tensor.SameBits(a.Params(), one.Params()) {
				t.Fatalf("same seed, threads 1 and 2: params differ")
			}
			if !tensor.SameBits(a.Params(), b.Params()) {
				t.Fatalf("same seed: params differ")
			}
			if tensor.SameBits(a.Params(), c.Params()) {
				t.Errorf("seeds 42 and 43 give the same params")
			}
			for it := range 3 {
				la, lb := a.ForwardBackward(), b.ForwardBackward()
				if math.Float64bits(la) != math.Float64bits(lb) || !tensor.SameBits(a.Grads(), b.Grads()) {
					t.Fatalf("iteration %d: same seed, losses %v and %v, grads equal %v", it, la, lb, tensor.SameBits(a.Grads(), b.Grads()))
				}
				// A plain SGD step through the flat buffers, so later
				// iterations run on new weights.
				tensor.Axpy(-0.1, a.Grads(), a.Params())
				tensor.Axpy(-0.1, b.Grads(), b.Params())
			}
		})
	}
}

// TestSharedParams checks param { name } sharing: one block, filled once,
// used by both layers, whose gradient is the sum of both uses.
func TestSharedParams(t *testing.T) {
	tn := sharedNet()
	n := tn.build(t, Options{Seed: 2}, 4)
	var names []string
	for _, b := range n.Blocks() {
		names = append(names, b.Name)
	}
	if want := []string{"w", "ipA/1", "ipB/1", "ip2/0", "ip2/1"}; !slices.Equal(names, want) {
		t.Fatalf("blocks %v, want %v", names, want)
	}
	if b := n.Blocks()[0]; b.Layer != "ipA" || !b.Shape.Equal(tensor.Shape{4, 5}) {
		t.Errorf("shared block: layer %q shape %v, want ipA [4 5]", b.Layer, b.Shape)
	}
	if got := n.byLayer["ipB"]; len(got) != 2 || got[0] != 0 {
		t.Errorf("ipB's blocks %v, want the shared block 0 first", got)
	}
	shared := grads(n)

	// The same net without sharing, with ipB's weights set equal to ipA's:
	// the shared gradient is the sum of the two separate ones.
	sep := tn
	sep.spec.Layers = slices.Clone(tn.spec.Layers)
	sep.spec.Layers[0].Params = nil
	sep.spec.Layers[2].Params = nil
	m := sep.build(t, Options{Seed: 2}, 4)
	copyBlock := func(dst, src string, from *Net) {
		copy(blockVals(m, m.Params(), blockOf(t, m, dst)), blockVals(from, from.Params(), blockOf(t, from, src)))
	}
	for _, c := range [][2]string{{"ipA/0", "w"}, {"ipB/0", "w"}, {"ipA/1", "ipA/1"}, {"ipB/1", "ipB/1"}, {"ip2/0", "ip2/0"}, {"ip2/1", "ip2/1"}} {
		copyBlock(c[0], c[1], n)
	}
	if lm, ln := m.Forward(), n.Forward(); math.Abs(lm-ln) > 1e-6 {
		t.Fatalf("unshared copy: loss %v, shared %v", lm, ln)
	}
	sepG := grads(m)
	ga := blockVals(m, sepG, blockOf(t, m, "ipA/0"))
	gb := blockVals(m, sepG, blockOf(t, m, "ipB/0"))
	gs := blockVals(n, shared, blockOf(t, n, "w"))
	for i := range gs {
		if d := math.Abs(float64(gs[i]) - float64(ga[i]+gb[i])); d > 1e-5*math.Max(1, math.Abs(float64(gs[i]))) {
			t.Errorf("w[%d]: shared gradient %v, separate %v + %v", i, gs[i], ga[i], gb[i])
		}
	}
	if allZero(ga) || allZero(gb) {
		t.Errorf("a separate gradient is zero: the test cannot tell the sum from one use")
	}

	// The finite-difference check on the shared net sees both uses.
	gc := netGradCheck
	gc.Samples = 0
	if rep := compareGradients(n, shared, gc); len(rep.bad) > 0 {
		t.Errorf("shared net gradients: %v", rep.bad)
	}
}

// TestSharedParamErrors checks that sharing a name between params of
// different shapes is reported with both layers named.
func TestSharedParamErrors(t *testing.T) {
	tn := sharedNet()
	tn.spec.Layers[2].Config = &layers.InnerProductConfig{NumOutput: 4, BiasTerm: true, Axis: 1}
	tn.spec.Layers[2].Bottom = []string{"a"}
	tn.spec.Layers[2].Pos = "shared.prototxt:20:1"
	_, err := Build(tn.spec, tn.inputs, Options{})
	if err == nil {
		t.Fatal("Build accepted a shared param with two shapes")
	}
	for _, want := range []string{`"ipB"`, "shared.prototxt:20:1", `"w"`, "4x4", "4x5", `"ipA"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// trainTestSpecs returns an MLP for TRAIN and its TEST twin, which adds an
// Accuracy layer.
func trainTestSpecs() (train, test testNet) {
	train = mlpNet()
	test = mlpNet()
	test.spec.Name = "mlp-test"
	test.spec.Layers = append(slices.Clone(test.spec.Layers), accuracyLayer("ip2"))
	test.inputs = map[string]tensor.Shape{"data": {6, 6}, "label": {6}}
	return train, test
}

// TestShareWith checks that a TEST net built with ShareWith runs on the
// TRAIN net's weights, and sees every change made through its Params.
func TestShareWith(t *testing.T) {
	train, test := trainTestSpecs()
	tr := train.build(t, Options{Seed: 1}, 1)
	te := test.build(t, Options{Seed: 99, Phase: layers.Test, ShareWith: tr}, 2)
	if &te.Params()[0] != &tr.Params()[0] || len(te.Params()) != len(tr.Params()) {
		t.Fatal("the TEST net does not use the TRAIN net's Params buffer")
	}
	if &te.Grads()[0] != &tr.Grads()[0] {
		t.Fatal("the TEST net does not use the TRAIN net's Grads buffer")
	}
	if !slices.EqualFunc(te.Blocks(), tr.Blocks(), func(a, b Block) bool {
		return a.Name == b.Name && a.Off == b.Off && a.Shape.Equal(b.Shape)
	}) {
		t.Errorf("blocks differ: TEST %v, TRAIN %v", te.Blocks(), tr.Blocks())
	}
	// A reference TEST net with its own copy of the weights.
	ref := test.build(t, Options{Seed: 7, Phase: layers.Test}, 2)
	check := func(when string) {
		t.Helper()
		copy(ref.Params(), tr.Params())
		lt, lr := te.Forward(), ref.Forward()
		if lt != lr {
			t.Errorf("%s: shared TEST net loss %v, reference %v", when, lt, lr)
		}
		if a, b := te.Blob("accuracy").Data[0], ref.Blob("accuracy").Data[0]; a != b {
			t.Errorf("%s: accuracy %v, reference %v", when, a, b)
		}
	}
	check("fresh")
	before := te.Forward()
	for i := range 5 {
		tr.ForwardBackward()
		tensor.Axpy(-0.5, tr.Grads(), tr.Params())
		check("after step " + string(rune('1'+i)))
	}
	if te.Forward() == before {
		t.Errorf("TEST loss unchanged after five TRAIN steps")
	}
	// A change to a single weight shows through.
	bi := blockOf(t, tr, "ip2/1")
	tr.Params()[tr.Blocks()[bi].Off] += 3
	check("after editing one bias")
}

// TestShareWithErrors checks that ShareWith refuses nets whose params do
// not match, naming the layer.
func TestShareWithErrors(t *testing.T) {
	train, _ := trainTestSpecs()
	tr := train.build(t, Options{Seed: 1}, 1)
	tests := []struct {
		name string
		edit func(s *Spec)
		want []string
	}{
		{"layer missing from TRAIN", func(s *Spec) {
			s.Layers = slices.Insert(slices.Clone(s.Layers), 3, ip("ip3", "ip2", "ip3", 3))
			s.Layers[3].Pos = "test.prototxt:40:1"
			s.Layers[4].Bottom = []string{"ip3", "label"}
		}, []string{`layer "ip3" (test.prototxt:40:1)`, "TEST", "TRAIN", "no layer of that name"}},
		{"different shape", func(s *Spec) {
			s.Layers = slices.Clone(s.Layers)
			s.Layers[0] = ip("ip1", "data", "ip1", 7)
		}, []string{`"ip1"`, "param 0", "7x6", "8x6"}},
		{"different param count", func(s *Spec) {
			s.Layers = slices.Clone(s.Layers)
			s.Layers[2].Config = &layers.InnerProductConfig{NumOutput: 3, Axis: 1}
		}, []string{`"ip2"`, "1 param blobs", "2 in the TRAIN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := train.spec
			tc.edit(&spec)
			_, err := Build(spec, train.inputs, Options{Phase: layers.Test, ShareWith: tr})
			if err == nil {
				t.Fatal("Build succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	// A net without params shares trivially.
	noParams := Spec{Name: "p", Inputs: []string{"data"}, Layers: []LayerSpec{unary("relu", "data", "r", &layers.ReLUConfig{})}}
	if _, err := Build(noParams, map[string]tensor.Shape{"data": {2}}, Options{ShareWith: tr}); err != nil {
		t.Errorf("param-free net with ShareWith: %v", err)
	}
}

// TestDropoutSeed checks that the seed fixes Dropout's masks: the same
// seed repeats them, another seed draws others, and in the TEST phase
// Dropout is the identity.
func TestDropoutSeed(t *testing.T) {
	tn := mlpNet()
	tn.spec.Layers = slices.Insert(slices.Clone(tn.spec.Layers), 2, unary("drop1", "ip1", "ip1", &layers.DropoutConfig{Ratio: 0.5}))
	tn.inputs = map[string]tensor.Shape{"data": {16, 6}, "label": {16}}
	a := tn.build(t, Options{Seed: 10}, 1)
	b := tn.build(t, Options{Seed: 10}, 1)
	c := tn.build(t, Options{Seed: 11}, 1)
	copy(c.Params(), a.Params())
	differ := false
	for it := range 4 {
		la, lb, lc := a.ForwardBackward(), b.ForwardBackward(), c.ForwardBackward()
		if la != lb || !tensor.SameBits(a.Grads(), b.Grads()) {
			t.Fatalf("iteration %d: same seed, losses %v and %v", it, la, lb)
		}
		differ = differ || la != lc
	}
	if !differ {
		t.Errorf("seeds 10 and 11 gave the same dropout masks four times")
	}
	// TEST phase: the net equals the one without the Dropout layer.
	te := tn.build(t, Options{Seed: 10, Phase: layers.Test}, 1)
	plain := mlpNet()
	plain.inputs = tn.inputs
	p := plain.build(t, Options{Seed: 10, Phase: layers.Test}, 1)
	if lt, lp := te.ForwardBackward(), p.ForwardBackward(); lt != lp || !tensor.SameBits(te.Grads(), p.Grads()) {
		t.Errorf("TEST phase: loss %v with Dropout, %v without", lt, lp)
	}
}

// TestReseed: after Reseed(k) a net draws the masks any net of its seed
// draws after Reseed(k), whatever either drew before; another key draws
// others.
func TestReseed(t *testing.T) {
	tn := mlpNet()
	tn.spec.Layers = slices.Insert(slices.Clone(tn.spec.Layers), 2, unary("drop1", "ip1", "ip1", &layers.DropoutConfig{Ratio: 0.5}))
	tn.inputs = map[string]tensor.Shape{"data": {16, 6}, "label": {16}}
	a := tn.build(t, Options{Seed: 10}, 1)
	b := tn.build(t, Options{Seed: 10}, 1)
	for range 3 {
		a.ForwardBackward() // a's streams move on; b's do not
	}
	a.Reseed(7)
	b.Reseed(7)
	la, lb := a.ForwardBackward(), b.ForwardBackward()
	if la != lb || !tensor.SameBits(a.Grads(), b.Grads()) {
		t.Fatalf("after Reseed(7): losses %v and %v", la, lb)
	}
	a.Reseed(8)
	b.Reseed(7)
	if la, lb := a.ForwardBackward(), b.ForwardBackward(); la == lb {
		t.Fatalf("keys 7 and 8 gave the same masks (loss %v)", la)
	}
}

// TestSharedPoolAndGradUsers: Options.Pool runs a net on another's pool
// (with as many threads, else an error naming both counts), with the
// same results as a pool of its own; DropGradUser stops UseGrads moving
// a dropped net's gradients.
func TestSharedPoolAndGradUsers(t *testing.T) {
	train, _ := trainTestSpecs()
	tr := train.build(t, Options{Seed: 1, Threads: 2}, 1)
	for _, c := range []struct {
		name    string
		threads int
		want    string
	}{
		{"same threads", 2, ""},
		{"other threads", 3, "Options.Pool has 2 threads but Options.Threads is 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := Build(train.spec, train.inputs, Options{Seed: 1, Threads: c.threads, ShareWith: tr, Pool: tr.Pool()})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v; want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.Pool() != tr.Pool() {
				t.Fatal("the net does not run on the given pool")
			}
			train.fill(n, 1)
			if a, b := n.Forward(), tr.Forward(); a != b {
				t.Errorf("loss %v on the shared pool, %v on the net's own", a, b)
			}
			buf := make([]float32, len(tr.Grads()))
			if err := tr.UseGrads(buf); err != nil {
				t.Fatal(err)
			}
			if &n.Grads()[0] != &buf[0] {
				t.Fatal("UseGrads did not move a sharing net's gradients")
			}
			tr.DropGradUser(n)
			buf2 := make([]float32, len(tr.Grads()))
			if err := tr.UseGrads(buf2); err != nil {
				t.Fatal(err)
			}
			if &n.Grads()[0] == &buf2[0] {
				t.Error("UseGrads moved a dropped net's gradients")
			}
		})
	}
}
