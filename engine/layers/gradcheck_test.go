package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// gradCheck configures checkGradients. The zero value is Caffe's
// GradientChecker default: step 1e-2, threshold 1e-2.
type gradCheck struct {
	Step, Threshold float64
	// Kink and KinkRange skip points where the checked input lies within
	// KinkRange of a non-differentiable point (ReLU at 0), as Caffe does.
	Kink, KinkRange float64
	// MaxPerBlob bounds how many elements of each blob are perturbed
	// (sampled at random); 0 means all.
	MaxPerBlob int
	// Skip lists bottom indices not to check (labels).
	Skip map[int]bool
	// Seed seeds the random top weights and the sampling.
	Seed uint64
}

// setUpShaped runs l's Setup and Reshape on bottom and top, failing t on
// an error: a built layer ready for Forward.
func setUpShaped(t testing.TB, l Layer, bottom, top []*tensor.Blob) {
	t.Helper()
	if err := l.Setup(bottom, top); err != nil {
		t.Fatal(err)
	}
	if err := l.Reshape(bottom, top); err != nil {
		t.Fatal(err)
	}
}

// newTestLayer builds and sets up a layer for a test, failing the test on
// error, and fills its params with gaussian noise so gradients are not
// trivially zero.
func newTestLayer(t testing.TB, cfg Config, ctx Context, bottom, top []*tensor.Blob) Layer {
	t.Helper()
	if ctx.Rand == nil {
		ctx.Rand = rand.New(rand.NewPCG(1, 2))
	}
	l, err := cfg.Build(ctx)
	if err != nil {
		t.Fatalf("%s: Build: %v", cfg.Type(), err)
	}
	if err := l.Setup(bottom, top); err != nil {
		t.Fatalf("%s: Setup: %v", cfg.Type(), err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range l.Params() {
		if p.Frozen {
			continue
		}
		for i := range p.Blob.Data {
			p.Blob.Data[i] = float32(r.NormFloat64())
		}
	}
	if err := l.Reshape(bottom, top); err != nil {
		t.Fatalf("%s: Reshape: %v", cfg.Type(), err)
	}
	return l
}

// fillGaussian fills b's data with N(0, std²) noise from r.
func fillGaussian(b *tensor.Blob, std float64, r *rand.Rand) {
	for i := range b.Data {
		b.Data[i] = float32(r.NormFloat64() * std)
	}
}

// checkGradients compares a layer's Backward against central finite
// differences of the objective L = Σ_j w_j·top_j over every top (w random
// and fixed), or, for a loss layer, L = top[0].Data[0] times its weight.
// Every param and every bottom not in g.Skip is checked.
func checkGradients(t *testing.T, l Layer, bottom, top []*tensor.Blob, g gradCheck) {
	t.Helper()
	if g.Step == 0 {
		g.Step = 1e-2
	}
	if g.Threshold == 0 {
		g.Threshold = 1e-2
	}
	r := rand.New(rand.NewPCG(g.Seed, 99))
	_, isLoss := l.(LossLayer)

	// Random weights for each top element define the scalar objective.
	weights := make([][]float32, len(top))
	objective := func() float64 {
		l.Forward(bottom, top)
		if isLoss {
			return float64(top[0].Data[0])
		}
		var s float64
		for i, tb := range top {
			s += tensor.Dot(tb.Data, weights[i])
		}
		return s
	}
	l.Forward(bottom, top)
	for i, tb := range top {
		weights[i] = make([]float32, tb.Count())
		for j := range weights[i] {
			weights[i][j] = float32(r.NormFloat64())
		}
	}

	// Analytic gradients. Snapshot bottom data first: in-place layers
	// overwrite it in Forward, so restore before each evaluation.
	saved := make([][]float32, len(bottom))
	for i, b := range bottom {
		saved[i] = append([]float32(nil), b.Data...)
	}
	restore := func() {
		for i, b := range bottom {
			copy(b.Data, saved[i])
		}
	}
	restore()
	objective()
	for i, tb := range top {
		if isLoss && i == 0 {
			clear(tb.Diff)
			tb.Diff[0] = 1
			continue
		}
		copy(tb.Diff, weights[i])
	}
	for _, p := range l.Params() {
		p.Blob.ZeroDiff()
	}
	prop := make([]bool, len(bottom))
	for i := range bottom {
		prop[i] = !g.Skip[i]
	}
	l.Backward(top, prop, bottom)

	type target struct {
		name string
		data []float32 // perturbed in place
		grad []float32 // analytic
		in   bool      // a bottom: restore the saved copy around evaluations
		idx  int
	}
	var targets []target
	for i, p := range l.Params() {
		if p.Frozen {
			continue
		}
		targets = append(targets, target{name: "param" + string(rune('0'+i)), data: p.Blob.Data, grad: append([]float32(nil), p.Blob.Diff...)})
	}
	for i, b := range bottom {
		if g.Skip[i] {
			continue
		}
		targets = append(targets, target{name: "bottom" + string(rune('0'+i)), data: saved[i], grad: append([]float32(nil), b.Diff...), in: true, idx: i})
	}
	for _, tg := range targets {
		idx := make([]int, len(tg.data))
		for i := range idx {
			idx[i] = i
		}
		if g.MaxPerBlob > 0 && len(idx) > g.MaxPerBlob {
			r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			idx = idx[:g.MaxPerBlob]
		}
		bad := 0
		for _, j := range idx {
			x := tg.data[j]
			if g.KinkRange > 0 && math.Abs(float64(x)-g.Kink) < g.KinkRange {
				continue
			}
			tg.data[j] = x + float32(g.Step)
			restore()
			lp := objective()
			tg.data[j] = x - float32(g.Step)
			restore()
			lm := objective()
			tg.data[j] = x
			restore()
			num := (lp - lm) / (2 * g.Step)
			ana := float64(tg.grad[j])
			scale := math.Max(math.Max(math.Abs(num), math.Abs(ana)), 1)
			if math.Abs(num-ana) > g.Threshold*scale {
				if bad < 5 {
					t.Errorf("%s: %s[%d]: analytic %.6g, numeric %.6g", l.Type(), tg.name, j, ana, num)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %s: %d of %d checked elements disagree", l.Type(), tg.name, bad, len(idx))
		}
	}
}
