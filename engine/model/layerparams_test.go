package model

import (
	"slices"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// stochasticNet is lenetNet with pool1 STOCHASTIC over a ReLU (the
// non-negative inputs the method is for) and a MAX pool2 with a mask top
// that nothing reads, as Caffe allows.
func stochasticNet() testNet {
	tn := lenetNet()
	tn.name = "stochastic"
	ls := slices.Clone(tn.spec.Layers)
	ls[1] = pool("pool1", "conv1", "pool1", layers.PoolStochastic, 2, 2)
	ls = slices.Insert(ls, 1, unary("relu0", "conv1", "conv1", &layers.ReLUConfig{}))
	p2 := pool("pool2", "conv2", "pool2", layers.PoolMax, 2, 2)
	p2.Top = append(p2.Top, "pool2_mask")
	ls[4] = p2
	tn.spec.Layers = ls
	tn.inputs = map[string]tensor.Shape{"data": {8, 1, 8, 8}, "label": {8}}
	return tn
}

// TestStochasticPoolingSeed checks that the run's seed alone fixes
// STOCHASTIC pooling's samples through the model: the same seed repeats
// them at any thread count, another seed draws others; the mask top is a
// net output holding pool2's argmaxes.
func TestStochasticPoolingSeed(t *testing.T) {
	tn := stochasticNet()
	a := tn.build(t, Options{Seed: 10}, 1)
	b := tn.build(t, Options{Seed: 10, Threads: 2}, 1)
	c := tn.build(t, Options{Seed: 11}, 1)
	copy(b.Params(), a.Params())
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
		t.Errorf("seeds 10 and 11 gave the same samples four times")
	}
	mask, conv2 := a.Blob("pool2_mask"), a.Blob("conv2")
	if mask == nil || !mask.Shape.Equal(a.Blob("pool2").Shape) {
		t.Fatalf("mask top %v", mask)
	}
	pooled := a.Blob("pool2").Data
	for i, m := range mask.Data {
		// conv2 is 2x2 per plane: the mask names the plane's maximum.
		if conv2.Data[i*4+int(m)] != pooled[i] {
			t.Errorf("mask[%d] = %v: conv2 there is %v, pooled %v", i, m, conv2.Data[i*4+int(m)], pooled[i])
		}
	}
	// TEST phase: deterministic, and no draws.
	te1 := tn.build(t, Options{Seed: 10, Phase: layers.Test}, 1)
	te2 := tn.build(t, Options{Seed: 11, Phase: layers.Test}, 1)
	copy(te2.Params(), te1.Params())
	if l1, l2 := te1.ForwardBackward(), te2.ForwardBackward(); l1 != l2 {
		t.Errorf("TEST phase: seeds 10 and 11 give losses %v and %v", l1, l2)
	}
}

// TestInfogainProbTop checks an InfogainLoss with Caffe's second top in a
// net: the top holds the softmax probabilities, takes no loss weight by
// default, and leaves the loss and gradients as the one-top layer's.
func TestInfogainProbTop(t *testing.T) {
	h := []float32{1, 0.5, 0, 0.2, 1, 0.1, 0, 0.3, 2}
	mk := func(tops ...string) testNet {
		tn := mlpNet()
		ls := slices.Clone(tn.spec.Layers)
		ls[len(ls)-1] = LayerSpec{Name: "loss", Bottom: []string{"ip2", "label"}, Top: tops,
			Config: &layers.InfogainLossConfig{Axis: 1, H: h}}
		tn.spec.Layers = ls
		return tn
	}
	one := mk("loss").build(t, Options{Seed: 3}, 1)
	two := mk("loss", "prob").build(t, Options{Seed: 3}, 1)
	l1, l2 := one.ForwardBackward(), two.ForwardBackward()
	if l1 != l2 || !tensor.SameBits(one.Grads(), two.Grads()) {
		t.Fatalf("losses %v (one top) and %v (two)", l1, l2)
	}
	prob := two.Blob("prob")
	if !prob.Shape.Equal(tensor.Shape{4, 3}) {
		t.Fatalf("prob shape %v", prob.Shape)
	}
	for i := range 4 {
		s := prob.Data[3*i] + prob.Data[3*i+1] + prob.Data[3*i+2]
		if s < 0.9999 || s > 1.0001 {
			t.Errorf("row %d of prob sums to %v", i, s)
		}
	}
}
