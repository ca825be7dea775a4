package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortReduction ports Caffe's test_reduction_layer.cpp.
func TestCaffePortReduction(t *testing.T) {
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeUniform(caffeRand(), 0, 1, 2, 3, 4, 5)} }
	setup := func(t *testing.T, axis int, shape ...int) {
		b, top := fixture(), cpTops(1)
		caffeLayer(t, &ReductionConfig{Operation: ReduceSum, Axis: axis, Coeff: 1}, Train, b, top)
		cpWantShape(t, "top", top[0], shape...)
	}
	t.Run("ReductionLayerTest.TestSetUp", func(t *testing.T) { setup(t, 0) })
	t.Run("ReductionLayerTest.TestSetUpWithAxis1", func(t *testing.T) { setup(t, 1, 2) })
	t.Run("ReductionLayerTest.TestSetUpWithAxis2", func(t *testing.T) { setup(t, 2, 2, 3) })

	forward := func(t *testing.T, op ReductionOp, coeff float32, axis int) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &ReductionConfig{Operation: op, Axis: axis, Coeff: coeff}, Train, b, top)
		l.Forward(b, top)
		num, dim := b[0].Shape.CountRange(0, axis), b[0].Shape.CountFrom(axis)
		want := make([]float32, num)
		for n := range num {
			// Caffe's expectation, accumulated in the test's Dtype.
			var e float32
			for _, x := range b[0].Data[n*dim : (n+1)*dim] {
				switch op {
				case ReduceSum:
					e += x
				case ReduceMean:
					e += x / float32(dim)
				case ReduceASum:
					e += float32(math.Abs(float64(x)))
				case ReduceSumSq:
					e += x * x
				}
			}
			want[n] = e * coeff
		}
		cpFloatEq(t, "top", top[0].Data, want)
	}
	grad := func(t *testing.T, op ReductionOp, coeff float32, axis int) {
		b, top := fixture(), cpTops(1)
		if op == ReduceASum {
			// |x| has a kink at 0, and Caffe's check of ASUM passes over
			// no feature: a value within the step (1e-2) of 0 gets a
			// central difference below 1 in any implementation. Caffe's
			// seed-1701 stream has none; the port takes the first stream
			// from 1701 on that has none either.
			for seed := uint64(1701); ; seed++ {
				b = []*tensor.Blob{caffeUniform(rand.New(rand.NewPCG(seed, seed)), 0, 1, 2, 3, 4, 5)}
				if cpMin(b[0].Data) > 1e-2 {
					break
				}
			}
		}
		l := caffeLayer(t, &ReductionConfig{Operation: op, Axis: axis, Coeff: coeff}, Train, b, top)
		caffeGrad(t, l, b, top, gradCheck{Step: 1e-2, Threshold: 2e-3})
	}
	for _, o := range []struct {
		name string
		op   ReductionOp
	}{{"Sum", ReduceSum}, {"Mean", ReduceMean}, {"AbsSum", ReduceASum}, {"SumOfSquares", ReduceSumSq}} {
		p := "ReductionLayerTest.Test" + o.name
		t.Run(p, func(t *testing.T) { forward(t, o.op, 1, 0) })
		t.Run(p+"Coeff", func(t *testing.T) { forward(t, o.op, 2.3, 0) })
		t.Run(p+"CoeffAxis1", func(t *testing.T) { forward(t, o.op, 2.3, 1) })
		t.Run(p+"Gradient", func(t *testing.T) { grad(t, o.op, 1, 0) })
		t.Run(p+"CoeffGradient", func(t *testing.T) { grad(t, o.op, 2.3, 0) })
		// Caffe spells one of the four names with Axis1 before Gradient.
		axis1 := p + "CoeffAxis1Gradient"
		if o.op == ReduceMean {
			axis1 = p + "CoeffGradientAxis1"
		}
		t.Run(axis1, func(t *testing.T) { grad(t, o.op, 2.3, 1) })
	}
}
