package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// This file ports Caffe's tests of the layer parameters issue 22 added
// (Eltwise's stable_prod_grad, the positive_unitball filler, Pooling's
// STOCHASTIC method, mask top and round_mode, InfogainLoss's prob top),
// each subtest named after Caffe's, with Caffe's inputs, expectations and
// gradient checker step and threshold, and adds checks that tell the new
// behaviour from the old.

// uniformBlob is a blob of the given shape filled uniformly on [lo, hi]
// from r, as Caffe's UniformFiller.
func uniformBlob(r *rand.Rand, lo, hi float64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("x", shape...)
	for i := range b.Data {
		b.Data[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return b
}

func TestCaffeEltwiseParams(t *testing.T) {
	// Caffe's fixture: three 2×3×4×5 bottoms, uniform on [0, 1].
	bottoms := func() []*tensor.Blob {
		r := rand.New(rand.NewPCG(1701, 0))
		return []*tensor.Blob{uniformBlob(r, 0, 1, 2, 3, 4, 5), uniformBlob(r, 0, 1, 2, 3, 4, 5), uniformBlob(r, 0, 1, 2, 3, 4, 5)}
	}
	for _, tc := range []struct {
		name     string
		unstable bool
	}{
		{"EltwiseLayerTest.TestStableProdGradient", false},
		{"EltwiseLayerTest.TestUnstableProdGradient", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, top := bottoms(), []*tensor.Blob{tensor.NewBlob("y")}
			l := newTestLayer(t, &EltwiseConfig{Operation: EltwiseProd, UnstableProdGrad: tc.unstable}, Context{}, bs, top)
			checkGradients(t, l, bs, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
		})
	}
	// The unstable gradient is top/bottom_i·dtop exactly, and Inf or NaN
	// where bottom_i is 0, as in Caffe; the stable one is the product of
	// the others, finite there.
	t.Run("UnstableIsTopOverBottom", func(t *testing.T) {
		for _, unstable := range []bool{false, true} {
			bs, top := bottoms(), []*tensor.Blob{tensor.NewBlob("y")}
			bs[1].Data[7] = 0
			l := newTestLayer(t, &EltwiseConfig{Operation: EltwiseProd, UnstableProdGrad: unstable}, Context{}, bs, top)
			l.Forward(bs, top)
			for i := range top[0].Diff {
				top[0].Diff[i] = float32(i%5) - 1.5
			}
			l.Backward(top, []bool{true, true, true}, bs)
			for j, v := range bs[1].Diff {
				var want float32
				if unstable {
					want = top[0].Data[j] / bs[1].Data[j] * top[0].Diff[j]
				} else {
					want = bs[0].Data[j] * bs[2].Data[j] * top[0].Diff[j]
				}
				if j == 7 {
					finite := !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
					if finite == unstable {
						t.Errorf("unstable=%v: gradient where bottom 1 is 0 = %v", unstable, v)
					}
					continue
				}
				if v != want {
					t.Fatalf("unstable=%v: bottom1 diff[%d] = %v, want %v", unstable, j, v, want)
				}
			}
		}
	})
}

func TestCaffePositiveUnitballFiller(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int
	}{
		{"PositiveUnitballFillerTest.TestFill", []int{2, 3, 4, 5}},
		{"PositiveUnitballFillerTest.TestFill1D", []int{15}},
		{"PositiveUnitballFillerTest.TestFill2D", []int{8, 3}},
		{"PositiveUnitballFillerTest.TestFill5D", []int{2, 3, 4, 5, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tensor.NewBlob("w", tc.shape...)
			f := Filler{Type: FillPositiveUnitball}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			f.Fill(b, rand.New(rand.NewPCG(1701, 0)))
			num := tc.shape[0]
			dim := b.Count() / num
			distinct := map[float32]bool{}
			for i, v := range b.Data {
				if v < 0 || v > 1 {
					t.Errorf("data[%d] = %v outside [0, 1]", i, v)
				}
				distinct[v] = true
			}
			for i := range num {
				var sum float32
				for _, v := range b.Data[i*dim : (i+1)*dim] {
					sum += v
				}
				if sum < 0.999 || sum > 1.001 {
					t.Errorf("row %d sums to %v, want 1 ± 0.001", i, sum)
				}
			}
			// Random, not a constant 1/dim (dim 1 has only 1s).
			if dim > 1 && len(distinct) < b.Count()/2 {
				t.Errorf("%d distinct values of %d", len(distinct), b.Count())
			}
		})
	}
}

// magic6 is MATLAB's magic(6), the input of Caffe's rectangular pooling
// tests.
var magic6 = []float32{
	35, 1, 6, 26, 19, 24,
	3, 32, 7, 21, 23, 25,
	31, 9, 2, 22, 27, 20,
	8, 28, 33, 17, 10, 15,
	30, 5, 34, 12, 14, 16,
	4, 36, 29, 13, 18, 11,
}

// repeatPlanes is a 2×2×h×w blob with every plane plane.
func repeatPlanes(plane []float32, h, w int) *tensor.Blob {
	b := tensor.NewBlob("x", 2, 2, h, w)
	for i := 0; i < len(b.Data); i += len(plane) {
		copy(b.Data[i:], plane)
	}
	return b
}

func TestCaffePoolingMaskTop(t *testing.T) {
	// Caffe's TestForwardSquare, TestForwardRectHigh, TestForwardRectWide,
	// run with the mask top as TestForwardMaxTopMask does.
	forward := []struct {
		name              string
		kh, kw            int
		plane             []float32
		h, w, oh, ow      int
		wantTop, wantMask []float32
	}{
		{"Square", 2, 2, []float32{1, 2, 5, 2, 3, 9, 4, 1, 4, 8, 1, 2, 5, 2, 3}, 3, 5, 2, 4,
			[]float32{9, 5, 5, 8, 9, 5, 5, 8},
			[]float32{5, 2, 2, 9, 5, 12, 12, 9}},
		{"RectHigh", 3, 2, magic6, 6, 6, 4, 5,
			[]float32{35, 32, 26, 27, 27, 32, 33, 33, 27, 27, 31, 34, 34, 27, 27, 36, 36, 34, 18, 18},
			[]float32{0, 7, 3, 16, 16, 7, 20, 20, 16, 16, 12, 26, 26, 16, 16, 31, 31, 26, 34, 34}},
		{"RectWide", 2, 3, magic6, 6, 6, 5, 4,
			[]float32{35, 32, 26, 26, 32, 32, 27, 27, 33, 33, 33, 27, 34, 34, 34, 17, 36, 36, 34, 18},
			[]float32{0, 7, 3, 3, 7, 7, 16, 16, 20, 20, 20, 16, 26, 26, 26, 21, 31, 31, 26, 34}},
	}
	for _, withMask := range []bool{false, true} {
		name := "PoolingLayerTest.TestForwardMax"
		if withMask {
			name += "TopMask"
		}
		t.Run(name, func(t *testing.T) {
			for _, tc := range forward {
				for _, threads := range []int{1, 3} {
					bottom := []*tensor.Blob{repeatPlanes(tc.plane, tc.h, tc.w)}
					top := []*tensor.Blob{tensor.NewBlob("y")}
					if withMask {
						top = append(top, tensor.NewBlob("mask"))
					}
					cfg := &PoolingConfig{Method: PoolMax, KernelH: tc.kh, KernelW: tc.kw, StrideH: 1, StrideW: 1}
					l := newTestLayer(t, cfg, Context{Threads: threads}, bottom, top)
					l.(*poolLayer).workPerThread = 1
					for i, b := range top {
						if !b.Shape.Equal(tensor.Shape{2, 2, tc.oh, tc.ow}) {
							t.Fatalf("%s: top %d shape %v, want 2x2x%dx%d", tc.name, i, b.Shape, tc.oh, tc.ow)
						}
					}
					l.Forward(bottom, top)
					for i, v := range top[0].Data {
						if want := tc.wantTop[i%len(tc.wantTop)]; v != want {
							t.Fatalf("%s threads %d: top[%d] = %v, want %v", tc.name, threads, i, v, want)
						}
					}
					if !withMask {
						continue
					}
					for i, v := range top[1].Data {
						if want := tc.wantMask[i%len(tc.wantMask)]; v != want {
							t.Fatalf("%s threads %d: mask[%d] = %v, want %v", tc.name, threads, i, v, want)
						}
					}
					if k := l.(*poolLayer).Kernel(); !strings.Contains(k, "Go loops") {
						t.Errorf("%s: a mask top runs on %q, want the Go loops", tc.name, k)
					}
				}
			}
		})
	}
	t.Run("PoolingLayerTest.TestGradientMaxTopMask", func(t *testing.T) {
		for kh := 3; kh <= 4; kh++ {
			for kw := 3; kw <= 4; kw++ {
				r := rand.New(rand.NewPCG(1701, 0))
				bottom := []*tensor.Blob{hlBlob(r, "x", 2, 3, 6, 5)}
				top := []*tensor.Blob{tensor.NewBlob("y"), tensor.NewBlob("mask")}
				cfg := &PoolingConfig{Method: PoolMax, KernelH: kh, KernelW: kw, StrideH: 2, StrideW: 2}
				l := newTestLayer(t, cfg, Context{}, bottom, top)
				checkGradients(t, l, bottom, top, gradCheck{Step: 1e-4, Threshold: 1e-2})
			}
		}
	})
	t.Run("AveMaskTopRefused", func(t *testing.T) {
		l, err := (&PoolingConfig{Method: PoolAve, KernelH: 2, KernelW: 2, StrideH: 1, StrideW: 1}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		err = l.Setup([]*tensor.Blob{tensor.NewBlob("x", 1, 1, 3, 3)}, []*tensor.Blob{tensor.NewBlob("y"), tensor.NewBlob("m")})
		hlErrContains(t, err, "only MAX pooling has a second top")
	})
}

// reseeded runs its layer's Forward with the random source reseeded each
// time, as Caffe's GradientChecker resets Caffe's seed before every
// forward pass, so the finite differences see the same samples.
type reseeded struct {
	Layer
	src *rand.PCG
}

func (l reseeded) Forward(bottom, top []*tensor.Blob) {
	l.src.Seed(1701, 1)
	l.Layer.Forward(bottom, top)
}

func TestCaffeStochasticPooling(t *testing.T) {
	// Caffe's fixture: 2×3×6×5, uniform on [0.1, 1]; kernel 3, stride 2.
	bottom := func() []*tensor.Blob {
		return []*tensor.Blob{uniformBlob(rand.New(rand.NewPCG(1701, 0)), 0.1, 1, 2, 3, 6, 5)}
	}
	cfg := &PoolingConfig{Method: PoolStochastic, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}
	// window is the [h0, h1)×[w0, w1) window of output (ph, pw), as the
	// Caffe tests compute it.
	window := func(ph, pw int) (int, int, int, int) {
		return ph * 2, min(ph*2+3, 6), pw * 2, min(pw*2+3, 5)
	}
	t.Run("StochasticPoolingLayerTest.TestSetup", func(t *testing.T) {
		b, top := bottom(), []*tensor.Blob{tensor.NewBlob("y")}
		newTestLayer(t, cfg, Context{}, b, top)
		if !top[0].Shape.Equal(tensor.Shape{2, 3, 3, 2}) {
			t.Errorf("top shape %v, want 2x3x3x2", top[0].Shape)
		}
	})
	t.Run("StochasticPoolingLayerTest.TestStochastic", func(t *testing.T) {
		b, top := bottom(), []*tensor.Blob{tensor.NewBlob("y")}
		l := newTestLayer(t, cfg, Context{Phase: Train}, b, top)
		l.Forward(b, top)
		x, y := b[0].Data, top[0].Data
		var total float64
		for p := range 6 {
			for ph := range 3 {
				for pw := range 2 {
					pooled := y[(p*3+ph)*2+pw]
					total += float64(pooled)
					h0, h1, w0, w1 := window(ph, pw)
					has := false
					for h := h0; h < h1; h++ {
						for w := w0; w < w1; w++ {
							has = has || pooled == x[p*30+h*5+w]
						}
					}
					if !has {
						t.Errorf("plane %d (%d, %d): %v is no element of its window", p, ph, pw, pooled)
					}
				}
			}
		}
		// Sampling weighs the larger values: the mean beats the inputs'.
		if mean := total / float64(len(y)); mean < 0.55 {
			t.Errorf("mean pooled value %v, want at least 0.55", mean)
		}
	})
	t.Run("StochasticPoolingLayerTest.TestStochasticTestPhase", func(t *testing.T) {
		b, top := bottom(), []*tensor.Blob{tensor.NewBlob("y")}
		l := newTestLayer(t, cfg, Context{Phase: Test}, b, top)
		l.Forward(b, top)
		x, y := b[0].Data, top[0].Data
		for p := range 6 {
			for ph := range 3 {
				for pw := range 2 {
					pooled := y[(p*3+ph)*2+pw]
					h0, h1, w0, w1 := window(ph, pw)
					smaller := false
					var s, sq float64
					for h := h0; h < h1; h++ {
						for w := w0; w < w1; w++ {
							v := x[p*30+h*5+w]
							smaller = smaller || pooled <= v
							s += float64(v)
							sq += float64(v) * float64(v)
						}
					}
					if !smaller {
						t.Errorf("plane %d (%d, %d): %v exceeds its window's maximum", p, ph, pw, pooled)
					}
					// And it is the probability-weighted average Σx²/Σx.
					if want := sq / s; math.Abs(float64(pooled)-want) > 1e-6*want {
						t.Errorf("plane %d (%d, %d): %v, want Σx²/Σx = %v", p, ph, pw, pooled, want)
					}
				}
			}
		}
	})
	t.Run("StochasticPoolingLayerTest.TestGradient", func(t *testing.T) {
		b, top := bottom(), []*tensor.Blob{tensor.NewBlob("y")}
		src := rand.NewPCG(1701, 1)
		l := newTestLayer(t, cfg, Context{Phase: Train, Rand: rand.New(src)}, b, top)
		checkGradients(t, reseeded{l, src}, b, top, gradCheck{Step: 1e-4, Threshold: 1e-2})
	})
	t.Run("TestPhaseGradient", func(t *testing.T) {
		b, top := bottom(), []*tensor.Blob{tensor.NewBlob("y")}
		l := newTestLayer(t, cfg, Context{Phase: Test}, b, top)
		checkGradients(t, l, b, top, gradCheck{Step: 1e-3, Threshold: 1e-2})
	})
	// Each element is drawn with probability proportional to its value:
	// a 1×4 window of 1, 2, 3, 4 sampled 40,000 times.
	t.Run("SamplesProportionally", func(t *testing.T) {
		b := newBlobData([]int{1, 1, 1, 4}, []float32{1, 2, 3, 4})
		top := []*tensor.Blob{tensor.NewBlob("y")}
		c := &PoolingConfig{Method: PoolStochastic, KernelH: 1, KernelW: 4, StrideH: 1, StrideW: 1}
		l := newTestLayer(t, c, Context{Phase: Train, Rand: rand.New(rand.NewPCG(7, 8))}, []*tensor.Blob{b}, top)
		const n = 40000
		var count [5]int
		for range n {
			l.Forward([]*tensor.Blob{b}, top)
			count[int(top[0].Data[0])]++
		}
		for v := 1; v <= 4; v++ {
			p := float64(v) / 10
			got := float64(count[v]) / n
			// Five standard errors.
			if tol := 5 * math.Sqrt(p*(1-p)/n); math.Abs(got-p) > tol {
				t.Errorf("value %d drawn %.4f of the time, want %.2f ± %.4f", v, got, p, tol)
			}
		}
		// The gradient goes to the sampled element.
		top[0].Diff[0] = 2.5
		l.Backward(top, []bool{true}, []*tensor.Blob{b})
		for i, d := range b.Diff {
			if want := float32(0); b.Data[i] == top[0].Data[0] {
				want = 2.5
				if d != want {
					t.Errorf("diff[%d] = %v, want %v", i, d, want)
				}
			} else if d != want {
				t.Errorf("diff[%d] = %v, want 0", i, d)
			}
		}
	})
	// The samples come from Context.Rand alone: the same seed gives the
	// same samples at any thread count, another seed others.
	t.Run("DeterministicFromSeed", func(t *testing.T) {
		run := func(seed uint64, threads int) []float32 {
			b := []*tensor.Blob{uniformBlob(rand.New(rand.NewPCG(3, 3)), 0.1, 1, 4, 8, 9, 9)}
			top := []*tensor.Blob{tensor.NewBlob("y")}
			l := newTestLayer(t, cfg, Context{Phase: Train, Threads: threads, Rand: rand.New(rand.NewPCG(seed, 0))}, b, top)
			l.(*poolLayer).workPerThread = 1
			l.Forward(b, top)
			return append([]float32(nil), top[0].Data...)
		}
		a, b, c := run(1, 1), run(1, 4), run(2, 1)
		if !slices.Equal(a, b) {
			t.Error("seed 1: 1 and 4 threads sample differently")
		}
		if slices.Equal(a, c) {
			t.Error("seeds 1 and 2 sample the same")
		}
	})
	t.Run("BuildErrors", func(t *testing.T) {
		c := *cfg
		c.PadH, c.PadW = 1, 1
		_, err := c.Build(Context{Phase: Test})
		hlErrContains(t, err, "STOCHASTIC pooling takes no pad")
		_, err = cfg.Build(Context{Phase: Train})
		hlErrContains(t, err, "needs Context.Rand")
	})
}

// TestCaffeInfogainLoss ports Caffe master's InfogainLossLayerTest: data
// 4×2×5×2 uniform on [−0.5, 2] with the classes on axis 2, labels
// 4×2×1×2, H 5×5 uniform on [0.1, 2], and the probability top.
func TestCaffeInfogainLoss(t *testing.T) {
	const outer, inner, k = 8, 2, 5
	setup := func() []*tensor.Blob {
		r := rand.New(rand.NewPCG(1701, 0))
		data := uniformBlob(r, -0.5, 2, 4, 2, 5, 2)
		labels := tensor.NewBlob("label", 4, 2, 1, 2)
		for i := range labels.Data {
			labels.Data[i] = float32(r.IntN(k))
		}
		return []*tensor.Blob{data, labels, uniformBlob(r, 0.1, 2, 1, 1, 5, 5)}
	}
	t.Run("InfogainLossLayerTest.TestInfogainLoss", func(t *testing.T) {
		bottom := setup()
		top := []*tensor.Blob{tensor.NewBlob("loss"), tensor.NewBlob("prob")}
		l := newTestLayer(t, &InfogainLossConfig{Axis: 2}, Context{}, bottom, top)
		l.Forward(bottom, top)
		if !top[1].Shape.Equal(bottom[0].Shape) {
			t.Fatalf("prob top shape %v, want %v", top[1].Shape, bottom[0].Shape)
		}
		data, prob, labels, h := bottom[0].Data, top[1].Data, bottom[1].Data, bottom[2].Data
		var loss float64
		for i := range outer {
			for j := range inner {
				var den float64
				est := make([]float64, k)
				for c := range k {
					est[c] = math.Exp(float64(data[i*k*inner+c*inner+j]))
					den += est[c]
				}
				gt := int(labels[i*inner+j])
				for c := range k {
					p := prob[i*k*inner+c*inner+j]
					if math.Abs(float64(p)-est[c]/den) > 1e-6 {
						t.Errorf("prob (%d, %d, %d) = %v, want %v", i, c, j, p, est[c]/den)
					}
					loss -= float64(h[gt*k+c]) * math.Log(max(float64(p), 1e-20))
				}
			}
		}
		if got, want := float64(top[0].Data[0]), loss/(outer*inner); math.Abs(got-want) > 1e-6 {
			t.Errorf("loss %v, want %v", got, want)
		}
	})
	t.Run("InfogainLossLayerTest.TestGradient", func(t *testing.T) {
		bottom := setup()
		top := []*tensor.Blob{tensor.NewBlob("loss")}
		l := newTestLayer(t, &InfogainLossConfig{Axis: 2}, Context{}, bottom, top)
		checkGradients(t, l, bottom, top, gradCheck{Step: 1e-4, Threshold: 2e-2, Seed: 1701, Skip: map[int]bool{1: true, 2: true}})
	})
	// Caffe clips probabilities at kLOG_THRESHOLD = 1e-20, not FLT_MIN: a
	// probability of about e^-60 costs −log(1e-20) = 46.05, not 60.
	t.Run("LogThreshold", func(t *testing.T) {
		bottom := []*tensor.Blob{newBlobData([]int{1, 2}, []float32{0, 60}), newBlobData([]int{1}, []float32{0}),
			newBlobData([]int{2, 2}, []float32{1, 0, 0, 1})}
		top := []*tensor.Blob{tensor.NewBlob("loss")}
		l := newTestLayer(t, &InfogainLossConfig{Axis: 1}, Context{}, bottom, top)
		l.Forward(bottom, top)
		if got, want := float64(top[0].Data[0]), -math.Log(1e-20); math.Abs(got-want) > 1e-4 {
			t.Errorf("loss %v, want %v", got, want)
		}
	})
}

// TestTorchParamFixtures compares pooling with round_mode FLOOR and the
// mask top, and InfogainLoss's probability top, with PyTorch's float64
// results (testdata/torch_params.json, made by scripts/torch_params.py).
func TestTorchParamFixtures(t *testing.T) {
	f := struct{ Cases []torchCase }{loadTorchFixture(t, "testdata/torch_params.json")}
	floor := func(kh, kw, sh, sw, ph, pw int, m PoolMethod) *PoolingConfig {
		return &PoolingConfig{Method: m, KernelH: kh, KernelW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw, RoundFloor: true}
	}
	cases := map[string]caffeCase{
		"PoolMaxFloor":        {cfg: floor(3, 3, 2, 2, 1, 1, PoolMax)},
		"PoolMaxFloorMask":    {cfg: floor(3, 3, 2, 2, 1, 1, PoolMax), tops: 2},
		"PoolAveFloor":        {cfg: floor(3, 3, 2, 2, 1, 1, PoolAve)},
		"PoolMaxFloorRect":    {cfg: floor(2, 3, 3, 2, 0, 0, PoolMax)},
		"PoolAveFloorRect":    {cfg: floor(3, 2, 2, 3, 1, 1, PoolAve)},
		"PoolMaxMaskTop":      {cfg: &PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 4, StrideH: 2, StrideW: 2}, tops: 2},
		"InfogainLossProbTop": {cfg: &InfogainLossConfig{Axis: 2}, tops: 2},
	}
	if len(f.Cases) != len(cases) {
		t.Errorf("fixture has %d cases, want %d", len(f.Cases), len(cases))
	}
	for _, tc := range f.Cases {
		c, ok := cases[tc.Name]
		if !ok {
			t.Errorf("fixture %s has no Go case", tc.Name)
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			tc.checkForward(t, l, bottom, top)
			tc.checkBackward(t, l, bottom, top, false)
		})
	}
}
