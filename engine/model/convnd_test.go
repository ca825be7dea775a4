package model

import (
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// convPairsNet: one 3-D Convolution with two bottom/top pairs (shared
// weights), one 2-D Convolution with two pairs, a 1-D Deconvolution on
// channel axis 2, Concat, InnerProduct and SoftmaxWithLoss: the model
// wires a Convolution with several bottoms and tops like any other
// multi-blob layer.
func convPairsNet() testNet {
	c3 := &layers.ConvolutionConfig{NumOutput: 2, Group: 1, BiasTerm: true, WeightFiller: gauss(0.5), BiasFiller: gauss(0.2),
		ND: &layers.ConvND{Axis: 1, Kernel: []int{2, 3, 2}, Stride: []int{1, 2, 1}, Pad: []int{0, 1, 0}}}
	c2 := &layers.ConvolutionConfig{NumOutput: 3, Group: 1, BiasTerm: true, KernelH: 2, KernelW: 2, StrideH: 1, StrideW: 1,
		WeightFiller: gauss(0.5), BiasFiller: gauss(0.2)}
	d1 := &layers.DeconvolutionConfig{ConvolutionConfig: layers.ConvolutionConfig{NumOutput: 2, Group: 1, BiasTerm: true,
		WeightFiller: gauss(0.5), BiasFiller: gauss(0.2), ND: &layers.ConvND{Axis: 2, Kernel: []int{2}, Stride: []int{2}}}}
	flat := func(name, bottom string) LayerSpec {
		return unary(name, bottom, name, &layers.FlattenConfig{Axis: 1, EndAxis: -1})
	}
	return testNet{
		name: "conv_pairs",
		spec: Spec{Name: "conv_pairs", Inputs: []string{"x", "y", "p", "q", "s", "label"}, Layers: []LayerSpec{
			{Name: "conv3d", Bottom: []string{"x", "y"}, Top: []string{"cx", "cy"}, Config: c3}, // 2x2x2x2x3 each
			{Name: "conv2d", Bottom: []string{"p", "q"}, Top: []string{"cp", "cq"}, Config: c2}, // 2x3x3x3 each
			{Name: "deconv1d", Bottom: []string{"s"}, Top: []string{"ds"}, Config: d1},          // 2x3x2x4
			flat("fx", "cx"), flat("fy", "cy"), flat("fp", "cp"), flat("fq", "cq"), flat("fs", "ds"),
			{Name: "cat", Bottom: []string{"fx", "fy", "fp", "fq", "fs"}, Top: []string{"c"}, Config: &layers.ConcatConfig{Axis: 1}},
			ip("ip", "c", "ip", 3),
			lossLayer("ip"),
		}},
		inputs: map[string]tensor.Shape{
			"x": {2, 2, 3, 4, 4}, "y": {2, 2, 3, 4, 4}, "p": {2, 2, 4, 4}, "q": {2, 2, 4, 4}, "s": {2, 3, 4, 2}, "label": {2},
		},
		classes: 3,
	}
}

// TestConvPairsNetGradients checks the net's parameter gradients (each
// convolution's summed over its pairs) against finite differences of its
// loss, at one and three threads.
func TestConvPairsNetGradients(t *testing.T) {
	tn := convPairsNet()
	for _, threads := range []int{1, 3} {
		n := tn.build(t, Options{Seed: 5, Threads: threads}, 9)
		g := grads(n)
		if allZero(g) {
			t.Fatalf("threads %d: all gradients are zero", threads)
		}
		gc := netGradCheck
		gc.Seed, gc.Samples = uint64(threads), 80
		rep := compareGradients(n, g, gc)
		for _, s := range rep.bad {
			t.Errorf("threads %d: %s", threads, s)
		}
		if rep.checked < rep.sampled*3/4 {
			t.Errorf("threads %d: only %d of %d samples checked", threads, rep.checked, rep.sampled)
		}
	}
}
