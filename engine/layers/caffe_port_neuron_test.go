package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// cpReseeded reseeds a layer's random source before every Forward, as
// Caffe's GradientChecker calls Caffe::set_random_seed before each: the
// finite differences then see the same dropout mask.
type cpReseeded struct {
	Layer
	src *rand.PCG
}

func (l cpReseeded) Forward(bottom, top []*tensor.Blob) {
	l.src.Seed(1701, 1701)
	l.Layer.Forward(bottom, top)
}

// TestCaffePortNeuron ports Caffe's test_neuron_layer.cpp (the Clip and
// Swish tests are ported with those layers).
func TestCaffePortNeuron(t *testing.T) {
	// Caffe's fixture: a 2×3×4×5 gaussian bottom.
	fixture := func() []*tensor.Blob { return []*tensor.Blob{caffeGaussian(caffeRand(), 0, 1, 2, 3, 4, 5)} }
	forward := func(t *testing.T, cfg Config, b []*tensor.Blob) []*tensor.Blob {
		top := cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		l.Forward(b, top)
		return top
	}
	kinked := gradCheck{Step: 1e-2, Threshold: 1e-3, Kink: 0, KinkRange: 0.01}
	gradient := func(t *testing.T, cfg Config, b []*tensor.Blob, g gradCheck) {
		top := cpTops(1)
		l := caffeLayer(t, cfg, Train, b, top)
		caffeGrad(t, l, b, top, g)
	}

	t.Run("NeuronLayerTest.TestAbsVal", func(t *testing.T) {
		b := fixture()
		top := forward(t, &AbsValConfig{}, b)
		for i, x := range b[0].Data {
			if top[0].Data[i] != float32(math.Abs(float64(x))) {
				t.Errorf("top[%d] = %g, want |%g|", i, top[0].Data[i], x)
			}
		}
	})
	t.Run("NeuronLayerTest.TestAbsGradient", func(t *testing.T) { gradient(t, &AbsValConfig{}, fixture(), kinked) })

	relu := func(t *testing.T, slope float32) {
		b := fixture()
		top := forward(t, &ReLUConfig{NegativeSlope: slope}, b)
		want := make([]float32, len(b[0].Data))
		for i, x := range b[0].Data {
			want[i] = x
			if x < 0 {
				want[i] = x * slope
			}
			if slope == 0 && !(top[0].Data[i] >= 0 && (top[0].Data[i] == 0 || top[0].Data[i] == x)) {
				t.Errorf("top[%d] = %g for bottom %g", i, top[0].Data[i], x)
			}
		}
		cpFloatEq(t, "top", top[0].Data, want)
	}
	t.Run("NeuronLayerTest.TestReLU", func(t *testing.T) { relu(t, 0) })
	t.Run("NeuronLayerTest.TestReLUGradient", func(t *testing.T) { gradient(t, &ReLUConfig{}, fixture(), kinked) })
	t.Run("NeuronLayerTest.TestReLUWithNegativeSlope", func(t *testing.T) { relu(t, 0.01) })
	t.Run("NeuronLayerTest.TestReLUGradientWithNegativeSlope", func(t *testing.T) {
		gradient(t, &ReLUConfig{NegativeSlope: 0.01}, fixture(), kinked)
	})

	t.Run("NeuronLayerTest.TestELU", func(t *testing.T) {
		b := fixture()
		top := forward(t, &ELUConfig{Alpha: 0.5}, b)
		for i, x := range b[0].Data {
			if x > 0 {
				cpFloatEq(t, "top", top[0].Data[i:i+1], []float32{x})
			} else {
				cpNear(t, "top", top[0].Data[i:i+1], []float32{float32(0.5 * (math.Exp(float64(x)) - 1))}, 2e-4)
			}
		}
	})
	t.Run("NeuronLayerTest.TestELUasReLU", func(t *testing.T) {
		b := fixture()
		top := forward(t, &ELUConfig{Alpha: 0}, b)
		for i, x := range b[0].Data {
			if y := top[0].Data[i]; !(y >= 0 && (y == 0 || y == x)) {
				t.Errorf("top[%d] = %g for bottom %g", i, y, x)
			}
		}
	})
	t.Run("NeuronLayerTest.TestELUGradient", func(t *testing.T) { gradient(t, &ELUConfig{Alpha: 1}, fixture(), kinked) })
	t.Run("NeuronLayerTest.TestELUasReLUGradient", func(t *testing.T) { gradient(t, &ELUConfig{Alpha: 0}, fixture(), kinked) })

	t.Run("NeuronLayerTest.TestSigmoid", func(t *testing.T) {
		b := fixture()
		top := forward(t, &SigmoidConfig{}, b)
		want := make([]float32, len(b[0].Data))
		for i, x := range b[0].Data {
			want[i] = float32(1 / (1 + math.Exp(-float64(x))))
			if y := top[0].Data[i]; !(y >= 0 && y <= 1) {
				t.Errorf("top[%d] = %g outside [0, 1]", i, y)
			}
		}
		cpFloatEq(t, "top", top[0].Data, want)
	})
	t.Run("NeuronLayerTest.TestSigmoidGradient", func(t *testing.T) { gradient(t, &SigmoidConfig{}, fixture(), kinked) })

	t.Run("NeuronLayerTest.TestTanH", func(t *testing.T) {
		b := fixture()
		top := forward(t, &TanHConfig{}, b)
		for i, x := range b[0].Data {
			e := math.Exp(2 * float64(x))
			want := (e - 1) / (e + 1)
			if y := float64(top[0].Data[i]); !(y+1e-4 >= want && y-1e-4 <= want) {
				t.Errorf("top[%d] = %g, want %g ± 1e-4", i, y, want)
			}
		}
	})
	t.Run("NeuronLayerTest.TestTanHGradient", func(t *testing.T) {
		gradient(t, &TanHConfig{}, fixture(), gradCheck{Step: 1e-2, Threshold: 1e-3})
	})

	expCases := []struct {
		suffix             string
		base, scale, shift float32
	}{{"", -1, 1, 0}, {"WithShift", -1, 1, 1}, {"Base2", 2, 1, 0}, {"Base2Shift1", 2, 1, 1},
		{"Base2Scale3", 2, 3, 0}, {"Base2Shift1Scale3", 2, 3, 1}}
	for _, c := range expCases {
		cfg := &ExpConfig{Base: c.base, Scale: c.scale, Shift: c.shift}
		name := "NeuronLayerTest.TestExpLayer" + c.suffix
		t.Run(name, func(t *testing.T) {
			b := fixture()
			top := forward(t, cfg, b)
			for i, x := range b[0].Data {
				// Caffe computes its expectation in the test's Dtype.
				arg := float64(c.shift + c.scale*x)
				want := float32(math.Exp(arg))
				if c.base != -1 {
					want = float32(math.Pow(float64(c.base), arg))
				}
				cpNear(t, "top", top[0].Data[i:i+1], []float32{want}, 2e-4)
			}
		})
		t.Run("NeuronLayerTest.TestExpGradient"+c.suffix, func(t *testing.T) {
			gradient(t, cfg, fixture(), gradCheck{Step: 1e-2, Threshold: 1e-3})
		})
	}

	// Caffe's LogBottomInit: the exp of a gaussian. The central difference
	// of log at x with step h is off by about (h/x)²/3, over the 1e-2
	// threshold below x ≈ 0.06 (a gaussian below -2.8) in any
	// implementation; Caffe's seed-1701 stream has no such value, so the
	// port takes the first stream from 1701 on that has none either.
	logFixture := func() []*tensor.Blob {
		var b []*tensor.Blob
		for seed := uint64(1701); ; seed++ {
			b = []*tensor.Blob{caffeGaussian(rand.New(rand.NewPCG(seed, seed)), 0, 1, 2, 3, 4, 5)}
			if m := cpMin(b[0].Data); m > -2.8 {
				break
			}
		}
		for i, x := range b[0].Data {
			b[0].Data[i] = float32(math.Exp(float64(x)))
		}
		return b
	}
	for _, c := range expCases {
		if c.suffix == "WithShift" {
			continue // Caffe has no TestLogLayerWithShift
		}
		cfg := &LogConfig{Base: c.base, Scale: c.scale, Shift: c.shift}
		t.Run("NeuronLayerTest.TestLogLayer"+c.suffix, func(t *testing.T) {
			b := logFixture()
			top := forward(t, cfg, b)
			for i, x := range b[0].Data {
				want := math.Log(float64(c.shift + c.scale*x))
				if c.base != -1 {
					want /= math.Log(float64(c.base))
				}
				cpNear(t, "top", top[0].Data[i:i+1], []float32{float32(want)}, 2e-4)
			}
		})
		t.Run("NeuronLayerTest.TestLogGradient"+c.suffix, func(t *testing.T) {
			gradient(t, cfg, logFixture(), gradCheck{Step: 1e-2, Threshold: 1e-2})
		})
	}

	dropoutForward := func(t *testing.T, ratio float64) {
		b := fixture()
		top := forward(t, &DropoutConfig{Ratio: float32(ratio)}, b)
		scale := float32(1 / (1 - ratio))
		kept := 0
		for i, y := range top[0].Data {
			if y != 0 {
				kept++
				if y != b[0].Data[i]*scale {
					t.Errorf("top[%d] = %g, want %g·%g", i, y, b[0].Data[i], scale)
				}
			}
		}
		n := float64(len(top[0].Data))
		stdErr := math.Sqrt(ratio * (1 - ratio) / n)
		if got := 1 - float64(kept)/n; math.Abs(got-ratio) > 1.96*stdErr {
			t.Errorf("empirical dropout ratio %g, want %g ± %g", got, ratio, 1.96*stdErr)
		}
	}
	t.Run("NeuronLayerTest.TestDropoutHalf", func(t *testing.T) { dropoutForward(t, 0.5) })
	t.Run("NeuronLayerTest.TestDropoutThreeQuarters", func(t *testing.T) { dropoutForward(t, 0.75) })
	t.Run("NeuronLayerTest.TestDropoutTestPhase", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, &DropoutConfig{Ratio: 0.5}, Test, b, top)
		l.Forward(b, top)
		for i, y := range top[0].Data {
			if y != 0 && y != b[0].Data[i] {
				t.Errorf("top[%d] = %g, want %g", i, y, b[0].Data[i])
			}
		}
	})
	for _, c := range []struct {
		name  string
		phase Phase
	}{{"NeuronLayerTest.TestDropoutGradient", Train}, {"NeuronLayerTest.TestDropoutGradientTest", Test}} {
		t.Run(c.name, func(t *testing.T) {
			src := rand.NewPCG(1701, 1701)
			b, top := fixture(), cpTops(1)
			l := caffeLayerWith(t, &DropoutConfig{Ratio: 0.5}, Context{Phase: c.phase, Rand: rand.New(src)}, b, top)
			caffeGrad(t, cpReseeded{l, src}, b, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
		})
	}

	t.Run("NeuronLayerTest.TestBNLL", func(t *testing.T) {
		b := fixture()
		top := forward(t, &BNLLConfig{}, b)
		for i, y := range top[0].Data {
			if !(y >= 0 && y >= b[0].Data[i]) {
				t.Errorf("top[%d] = %g for bottom %g", i, y, b[0].Data[i])
			}
		}
	})
	t.Run("NeuronLayerTest.TestBNLLGradient", func(t *testing.T) {
		gradient(t, &BNLLConfig{}, fixture(), gradCheck{Step: 1e-2, Threshold: 1e-3})
	})

	// PReLU's default filler (constant 0.25) is applied by the config
	// package, as Caffe's prelu_param default; the ports spell it out.
	prelu := func(shared bool) *PReLUConfig {
		return &PReLUConfig{Filler: Filler{Type: FillConstant, Value: 0.25}, ChannelShared: shared}
	}
	checkPReLU := func(t *testing.T, l Layer, b, top []*tensor.Blob) {
		l.Forward(b, top)
		slope := l.Params()[0].Blob.Data
		hw, ch := b[0].Shape[2]*b[0].Shape[3], b[0].Shape[1]
		for i, x := range b[0].Data {
			c := (i / hw) % ch
			if len(slope) == 1 {
				c = 0
			}
			if want := max(x, 0) + slope[c]*min(x, 0); top[0].Data[i] != want {
				t.Errorf("top[%d] = %g, want %g", i, top[0].Data[i], want)
			}
		}
	}
	t.Run("NeuronLayerTest.TestPReLUParam", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, prelu(false), Train, b, top)
		for i, s := range l.Params()[0].Blob.Data {
			if s != 0.25 {
				t.Errorf("slope[%d] = %g, want 0.25", i, s)
			}
		}
	})
	t.Run("NeuronLayerTest.TestPReLUForward", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, prelu(false), Train, b, top)
		Filler{Type: FillGaussian, Std: 1}.Fill(l.Params()[0].Blob, caffeRand())
		checkPReLU(t, l, b, top)
	})
	t.Run("NeuronLayerTest.TestPReLUForwardChannelShared", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		checkPReLU(t, caffeLayer(t, prelu(true), Train, b, top), b, top)
	})
	t.Run("NeuronLayerTest.TestPReLUGradient", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		l := caffeLayer(t, prelu(false), Train, b, top)
		Filler{Type: FillGaussian, Std: 1}.Fill(l.Params()[0].Blob, caffeRand())
		caffeGrad(t, l, b, top, kinked)
	})
	t.Run("NeuronLayerTest.TestPReLUGradientChannelShared", func(t *testing.T) {
		gradient(t, prelu(true), fixture(), kinked)
	})
	t.Run("NeuronLayerTest.TestPReLUConsistencyReLU", func(t *testing.T) {
		b, top := fixture(), cpTops(1)
		b2, top2 := []*tensor.Blob{caffeBlob(b[0].Data, b[0].Shape...)}, cpTops(1)
		p := caffeLayer(t, &PReLUConfig{Filler: Filler{Type: FillConstant, Value: 0.25}}, Train, b, top)
		r := caffeLayer(t, &ReLUConfig{NegativeSlope: 0.25}, Train, b2, top2)
		p.Forward(b, top)
		r.Forward(b2, top2)
		cpNear(t, "top", top[0].Data, top2[0].Data, 0)
		diff := caffeGaussian(rand.New(rand.NewPCG(5, 5)), 0, 1, top[0].Shape...)
		copy(top[0].Diff, diff.Data)
		copy(top2[0].Diff, diff.Data)
		p.Params()[0].Blob.ZeroDiff()
		p.Backward(top, []bool{true}, b)
		r.Backward(top2, []bool{true}, b2)
		cpNear(t, "bottom diff", b[0].Diff, b2[0].Diff, 0)
	})
	t.Run("NeuronLayerTest.TestPReLUInPlace", func(t *testing.T) {
		// ip → prelu in place, against ip2 → prelu2 out of place.
		ipCfg := &InnerProductConfig{NumOutput: 3, BiasTerm: true, Axis: 1, WeightFiller: Filler{Type: FillGaussian, Std: 1}}
		b, top := fixture(), cpTops(1)
		b2, mid2, top2 := []*tensor.Blob{caffeBlob(b[0].Data, b[0].Shape...)}, cpTops(1), cpTops(1)
		ip := caffeLayer(t, ipCfg, Train, b, top)
		pr := caffeLayer(t, prelu(false), Train, top, top)
		ip2 := caffeLayer(t, ipCfg, Train, b2, mid2)
		pr2 := caffeLayer(t, prelu(false), Train, mid2, top2)
		copy(ip2.Params()[0].Blob.Data, ip.Params()[0].Blob.Data)
		ip.Forward(b, top)
		pr.Forward(top, top)
		ip2.Forward(b2, mid2)
		pr2.Forward(mid2, top2)
		cpNear(t, "top", top[0].Data, top2[0].Data, 0)
		diff := caffeGaussian(rand.New(rand.NewPCG(5, 5)), 0, 1, top[0].Shape...)
		copy(top[0].Diff, diff.Data)
		copy(top2[0].Diff, diff.Data)
		for _, l := range []Layer{ip, pr, ip2, pr2} {
			for _, p := range l.Params() {
				p.Blob.ZeroDiff()
			}
		}
		pr.Backward(top, []bool{true}, top)
		ip.Backward(top, []bool{true}, b)
		pr2.Backward(top2, []bool{true}, mid2)
		ip2.Backward(mid2, []bool{true}, b2)
		cpFloatEq(t, "bottom diff", b[0].Diff, b2[0].Diff)
		cpFloatEq(t, "ip weight diff", ip.Params()[0].Blob.Diff, ip2.Params()[0].Blob.Diff)
		cpFloatEq(t, "ip bias diff", ip.Params()[1].Blob.Diff, ip2.Params()[1].Blob.Diff)
		cpFloatEq(t, "prelu slope diff", pr.Params()[0].Blob.Diff, pr2.Params()[0].Blob.Diff)
	})
}

func cpMin(v []float32) float32 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}
