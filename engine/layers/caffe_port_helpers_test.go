package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// Helpers for the ports of Caffe's own unit tests (src/caffe/test/*.cpp,
// issue 22). Each ported test is a subtest named after Caffe's, e.g.
// "PoolingLayerTest.TestForwardMaxPadded". Caffe types its tests over
// float/double and CPU/GPU; they are ported once, in float32.

// caffeRand is the random source of a port; Caffe seeds its tests with
// 1701, so do the ports (the streams differ: only the distributions match).
func caffeRand() *rand.Rand { return rand.New(rand.NewPCG(1701, 1701)) }

// caffeBlob returns a blob of the shape holding data (nil: zeros).
func caffeBlob(data []float32, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("b", shape...)
	if data != nil {
		if len(data) != b.Count() {
			panic("caffeBlob: data does not match the shape")
		}
		copy(b.Data, data)
	}
	return b
}

// caffeGaussian is a blob filled as by Caffe's GaussianFiller.
func caffeGaussian(r *rand.Rand, mean, std float64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("b", shape...)
	for i := range b.Data {
		b.Data[i] = float32(mean + std*r.NormFloat64())
	}
	return b
}

// caffeUniform is a blob filled as by Caffe's UniformFiller.
func caffeUniform(r *rand.Rand, lo, hi float64, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("b", shape...)
	for i := range b.Data {
		b.Data[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return b
}

// cpTops makes n empty tops.
func cpTops(n int) []*tensor.Blob {
	out := make([]*tensor.Blob, n)
	for i := range out {
		out[i] = tensor.NewBlob("top")
	}
	return out
}

// caffeLayer builds and sets up a layer as Caffe's Layer::SetUp does,
// filling its params with the fillers of its config (not random noise, as
// newTestLayer does), then reshapes the tops.
func caffeLayer(t *testing.T, cfg Config, phase Phase, bottom, top []*tensor.Blob) Layer {
	t.Helper()
	return caffeLayerWith(t, cfg, Context{Phase: phase}, bottom, top)
}

// caffeLayerWith is caffeLayer with a given context.
func caffeLayerWith(t *testing.T, cfg Config, ctx Context, bottom, top []*tensor.Blob) Layer {
	t.Helper()
	l, err := caffeLayerErr(cfg, ctx, bottom, top)
	if err != nil {
		t.Fatalf("%s: %v", cfg.Type(), err)
	}
	return l
}

func caffeLayerErr(cfg Config, ctx Context, bottom, top []*tensor.Blob) (Layer, error) {
	if ctx.Rand == nil {
		ctx.Rand = rand.New(rand.NewPCG(1701, 7))
	}
	l, err := cfg.Build(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.Setup(bottom, top); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(1701, 8))
	for _, p := range l.Params() {
		p.Filler.Fill(p.Blob, r)
	}
	if err := l.Reshape(bottom, top); err != nil {
		return nil, err
	}
	return l, nil
}

// cpWantShape fails unless b has the shape.
func cpWantShape(t *testing.T, what string, b *tensor.Blob, shape ...int) {
	t.Helper()
	if !b.Shape.Equal(shape) {
		t.Fatalf("%s shape %v, want %v", what, b.Shape, shape)
	}
}

// cpNear fails unless |got[i] - want[i]| <= eps for every i (Caffe's
// EXPECT_NEAR; eps 0 is EXPECT_EQ).
func cpNear(t *testing.T, what string, got, want []float32, eps float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= eps) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.8g, want %.8g (±%g)", what, i, got[i], want[i], eps)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// cpRepeat returns n copies of pattern, end to end.
func cpRepeat(pattern []float32, n int) []float32 {
	out := make([]float32, 0, len(pattern)*n)
	for range n {
		out = append(out, pattern...)
	}
	return out
}

// cpFloatEq is Caffe's EXPECT_FLOAT_EQ: equal within 4 units in the last
// place of float32.
func cpFloatEq(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if d := math.Abs(g - w); !(d <= 4*math.Max(math.Abs(g), math.Abs(w))*0x1p-23) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.9g, want %.9g", what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// caffeGrad is Caffe's GradientChecker::CheckGradientExhaustive: for every
// element of every top, the objective is twice that element (Caffe's
// GetObjAndGradient with a loss weight of 2), and the analytic gradient of
// every param and every bottom not in g.Skip is compared with the central
// difference, within g.Threshold·max(|analytic|, |numeric|, 1); features
// with |x| within g.KinkRange of g.Kink are passed over. Unlike
// checkGradients' random weighted sum of all tops, a single element's
// objective carries only its own rounding, which is what thresholds such
// as BatchNorm's 1e-4 were set for.
func caffeGrad(t *testing.T, l Layer, bottom, top []*tensor.Blob, g gradCheck) {
	t.Helper()
	if g.Step == 0 {
		g.Step = 1e-2
	}
	if g.Threshold == 0 {
		g.Threshold = 1e-2
	}
	saved := make([][]float32, len(bottom))
	for i, b := range bottom {
		saved[i] = append([]float32(nil), b.Data...)
	}
	restore := func() {
		for i, b := range bottom {
			copy(b.Data, saved[i])
		}
	}
	prop := make([]bool, len(bottom))
	for i := range bottom {
		prop[i] = !g.Skip[i]
	}
	restore()
	l.Forward(bottom, top)
	type target struct {
		name string
		data []float32
		in   bool
		diff func() []float32
	}
	var targets []target
	for i, p := range l.Params() {
		if p.Frozen {
			continue
		}
		targets = append(targets, target{name: "param" + string(rune('0'+i)), data: p.Blob.Data, diff: func() []float32 { return p.Blob.Diff }})
	}
	for i, b := range bottom {
		if g.Skip[i] {
			continue
		}
		targets = append(targets, target{name: "bottom" + string(rune('0'+i)), data: saved[i], in: true, diff: func() []float32 { return b.Diff }})
	}
	bad := 0
	for ti := range top {
		for te := range top[ti].Count() {
			objective := func() float64 {
				restore()
				l.Forward(bottom, top)
				return 2 * float64(top[ti].Data[te])
			}
			objective()
			for _, tb := range top {
				clear(tb.Diff)
			}
			top[ti].Diff[te] = 2
			for _, p := range l.Params() {
				p.Blob.ZeroDiff()
			}
			l.Backward(top, prop, bottom)
			computed := make([][]float32, len(targets))
			for k, tg := range targets {
				computed[k] = append([]float32(nil), tg.diff()...)
			}
			for k, tg := range targets {
				for j := range tg.data {
					x := tg.data[j]
					if g.KinkRange > 0 && math.Abs(math.Abs(float64(x))-g.Kink) <= g.KinkRange {
						continue
					}
					tg.data[j] = x + float32(g.Step)
					pos := objective()
					tg.data[j] = x - float32(g.Step)
					neg := objective()
					tg.data[j] = x
					est := (pos - neg) / g.Step / 2
					ana := float64(computed[k][j])
					scale := math.Max(math.Max(math.Abs(ana), math.Abs(est)), 1)
					if math.Abs(ana-est) > g.Threshold*scale {
						if bad < 5 {
							t.Errorf("%s: top%d[%d] wrt %s[%d]: analytic %.6g, numeric %.6g", l.Type(), ti, te, tg.name, j, ana, est)
						}
						bad++
					}
				}
			}
		}
	}
	restore()
	if bad > 0 {
		t.Errorf("%s: %d gradient entries disagree", l.Type(), bad)
	}
}
