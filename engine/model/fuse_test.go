package model

import (
	"math"
	"slices"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// residualBNNet: two BatchNorm + Scale pairs as a ResNet has them, one
// BatchNorm writing a top of its own and one in place, a Scale without a
// bias, each followed by an in-place leaky ReLU (the positive slope's
// joins, the negative slope's does not), their sum through an in-place
// ReLU; and a BatchNorm whose Scale writes a top of its own, which is not
// joined. Without relus the leaky ReLUs are left out: TestNetGradients
// checks that net, whose few values per channel put too many units near
// the ReLUs' kinks for finite differences at Caffe's step (joined or
// not); bnNet's ReLU, joined, is checked there.
func residualBNNet(relus bool) testNet {
	bn := func(name, bottom, top string) LayerSpec {
		return unary(name, bottom, top, &layers.BatchNormConfig{MovingAverageFraction: 0.9, Eps: 1e-5})
	}
	sc := func(name, bottom, top string, bias bool) LayerSpec {
		return unary(name, bottom, top, &layers.ScaleConfig{Axis: 1, NumAxes: 1, Filler: gauss(1), BiasTerm: bias, BiasFiller: gauss(0.5)})
	}
	tn := testNet{
		name: "residual-batchnorm",
		spec: Spec{Name: "residual-batchnorm", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			conv("conv1", "data", "c1", 3, 3, 1),
			bn("bn1", "c1", "b1"),
			sc("scale1", "b1", "b1", false),
			conv("conv2", "data", "c2", 3, 3, 1),
			bn("bn2", "c2", "c2"),
			sc("scale2", "c2", "c2", true),
			{Name: "sum", Bottom: []string{"b1", "c2"}, Top: []string{"s"}, Config: &layers.EltwiseConfig{Operation: layers.EltwiseSum}},
			unary("relu", "s", "s", &layers.ReLUConfig{}),
			bn("bn3", "s", "b3"),
			sc("scale3", "b3", "s3", true),
			ip("ip", "s3", "ip", 3),
			lossLayer("ip"),
		}},
		inputs:  map[string]tensor.Shape{"data": {4, 2, 5, 5}, "label": {4}},
		classes: 3,
	}
	if relus {
		l := tn.spec.Layers
		relu1 := unary("relu1", "b1", "b1", &layers.ReLUConfig{NegativeSlope: 0.1})
		relu2 := unary("relu2", "c2", "c2", &layers.ReLUConfig{NegativeSlope: -0.5})
		tn.spec.Layers = slices.Concat(l[:3], []LayerSpec{relu1}, l[3:6], []LayerSpec{relu2}, l[6:])
	}
	return tn
}

// TestFusedBatchNormScale runs nets with BatchNorm + Scale (+ ReLU) joined
// (the default) and unjoined (Options.Unfused), from the same weights and
// inputs, for two iterations: every blob and the loss are the same bits
// (the joined BatchNorm writes what the Scale would), and so are the
// BatchNorm statistics and the Scale gradients (the same sums); the other
// gradients agree to rounding (the BatchNorm's sums are taken over dy and
// scaled, not over scale·dy).
func TestFusedBatchNormScale(t *testing.T) {
	for _, tc := range []struct {
		tn    testNet
		fused []string
	}{
		{bnNet(), []string{"bn1+scale1+relu1"}},
		{residualBNNet(true), []string{"bn1+scale1+relu1", "bn2+scale2"}},
		{residualBNNet(false), []string{"bn1+scale1", "bn2+scale2"}},
	} {
		for _, threads := range []int{1, 3} {
			a := tc.tn.build(t, Options{Seed: 5, Threads: threads}, 9)
			b := tc.tn.build(t, Options{Seed: 5, Threads: threads, Unfused: true}, 9)
			if !slices.Equal(a.Fused(), tc.fused) || len(b.Fused()) != 0 {
				t.Fatalf("%s: joined %q (unfused net: %q), want %q", tc.tn.name, a.Fused(), b.Fused(), tc.fused)
			}
			for it := range 2 {
				la, lb := a.ForwardBackward(), b.ForwardBackward()
				if la != lb {
					t.Errorf("%s threads %d iteration %d: loss %v joined, %v not", tc.tn.name, threads, it, la, lb)
				}
				for _, name := range a.order {
					if !slices.Equal(a.Blob(name).Data, b.Blob(name).Data) {
						t.Errorf("%s threads %d iteration %d: blob %s differs", tc.tn.name, threads, it, name)
					}
				}
				if !slices.Equal(a.Params(), b.Params()) {
					t.Errorf("%s threads %d iteration %d: params (BatchNorm statistics) differ", tc.tn.name, threads, it)
				}
				ga, gb := a.Grads(), b.Grads()
				var scale float64
				for _, v := range gb {
					scale = max(scale, math.Abs(float64(v)))
				}
				for _, blk := range a.Blocks() {
					for i := blk.Off; i < blk.Off+blk.Len(); i++ {
						if d := math.Abs(float64(ga[i] - gb[i])); d > 1e-5*scale {
							t.Errorf("%s threads %d iteration %d: %s gradient [%d] %v joined, %v not", tc.tn.name, threads, it, blk.Name, i-blk.Off, ga[i], gb[i])
							break
						}
					}
				}
				// The Scale layers' gradients come from the same sums.
				for _, blk := range a.Blocks() {
					if blk.Layer == "scale1" || blk.Layer == "scale2" {
						if !slices.Equal(ga[blk.Off:blk.Off+blk.Len()], gb[blk.Off:blk.Off+blk.Len()]) {
							t.Errorf("%s threads %d iteration %d: %s gradient differs", tc.tn.name, threads, it, blk.Name)
						}
					}
				}
				// Move both nets' weights alike so the next iteration
				// sees new ones.
				step := slices.Clone(gb)
				for _, n := range []*Net{a, b} {
					p := n.Params()
					for i := range p {
						p[i] -= 0.1 * step[i]
					}
				}
			}
		}
	}
}
