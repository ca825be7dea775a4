package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// newBlobData returns a blob of the given shape holding data (zeros when
// data is nil).
func newBlobData(shape []int, data []float32) *tensor.Blob {
	b := tensor.NewBlob("", shape...)
	if data != nil {
		if len(data) != len(b.Data) {
			panic("newBlobData: data length does not match shape")
		}
		copy(b.Data, data)
	}
	return b
}

// randBlob returns a blob of the given shape filled with N(0,1) noise.
func randBlob(shape []int, seed uint64) *tensor.Blob {
	b := tensor.NewBlob("", shape...)
	fillGaussian(b, 1, rand.New(rand.NewPCG(seed, 7)))
	return b
}

// assertClose fails the test when got and want differ in length or in any
// element by more than tol·max(1, |want|).
func assertClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if !(math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.7g, want %.7g", what, i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(want))
	}
}

// inPlaceCase describes a layer checked in place against itself out of
// place: bottom 0 (and top 0) of shape shape, extra further bottoms.
type inPlaceCase struct {
	cfg   Config
	ctx   Context
	shape []int
	extra [][]int // shapes of further bottoms
	// prepare, if set, runs on each freshly set-up layer (to set frozen
	// params).
	prepare func(Layer)
}

// checkInPlaceLayer runs c's layer once out of place and once with
// bottom[0] == top[0] on the same input, top gradient and params, and
// checks that the outputs, bottom gradients and param gradients agree.
func checkInPlaceLayer(t *testing.T, c inPlaceCase) {
	t.Helper()
	type run struct {
		bottom  []*tensor.Blob
		top     *tensor.Blob
		pdiffs  [][]float32
		extraDx [][]float32
	}
	do := func(inPlace bool) run {
		bottom := []*tensor.Blob{randBlob(c.shape, 1)}
		for i, s := range c.extra {
			bottom = append(bottom, randBlob(s, uint64(i+2)))
		}
		top := tensor.NewBlob("top")
		if inPlace {
			top = bottom[0]
		}
		l := newTestLayer(t, c.cfg, c.ctx, bottom, []*tensor.Blob{top})
		if c.prepare != nil {
			c.prepare(l)
		}
		l.Forward(bottom, []*tensor.Blob{top})
		out := append([]float32(nil), top.Data...)
		dy := randBlob(top.Shape, 42)
		copy(top.Diff, dy.Data)
		for _, p := range l.Params() {
			p.Blob.ZeroDiff()
		}
		prop := make([]bool, len(bottom))
		for i := range prop {
			prop[i] = true
		}
		l.Backward([]*tensor.Blob{top}, prop, bottom)
		r := run{bottom: bottom, top: &tensor.Blob{Data: out, Diff: bottom[0].Diff}}
		for _, p := range l.Params() {
			r.pdiffs = append(r.pdiffs, p.Blob.Diff)
		}
		for _, b := range bottom[1:] {
			r.extraDx = append(r.extraDx, b.Diff)
		}
		return r
	}
	want, got := do(false), do(true)
	name := c.cfg.Type() + " in place"
	assertClose(t, name+": top data", got.top.Data, want.top.Data, 1e-6)
	assertClose(t, name+": bottom diff", got.top.Diff, want.top.Diff, 1e-6)
	for i := range want.pdiffs {
		assertClose(t, name+": param diff", got.pdiffs[i], want.pdiffs[i], 1e-5)
	}
	for i := range want.extraDx {
		assertClose(t, name+": extra bottom diff", got.extraDx[i], want.extraDx[i], 1e-5)
	}
}

// checkLayerNoAllocs checks that Forward and Backward of a set-up layer do
// not allocate once warm.
func checkLayerNoAllocs(t *testing.T, l Layer, bottom, top []*tensor.Blob, prop []bool) {
	t.Helper()
	step := func() {
		l.Forward(bottom, top)
		l.Backward(top, prop, bottom)
	}
	step()
	if n := testing.AllocsPerRun(5, step); n != 0 {
		t.Errorf("%s: Forward+Backward allocate %v times per run", l.Type(), n)
	}
}

// allTrue returns n trues.
func allTrue(n int) []bool {
	p := make([]bool, n)
	for i := range p {
		p[i] = true
	}
	return p
}

func TestReLUValues(t *testing.T) {
	x := []float32{-2, -0.5, 0, 0.5, 2}
	dy := []float32{1, 2, 3, 4, 5}
	tests := []struct {
		slope    float32
		wantY    []float32
		wantDiff []float32
	}{
		{0, []float32{0, 0, 0, 0.5, 2}, []float32{0, 0, 0, 4, 5}},
		{0.1, []float32{-0.2, -0.05, 0, 0.5, 2}, []float32{0.1, 0.2, 0.3, 4, 5}},
		{-1, []float32{2, 0.5, 0, 0.5, 2}, []float32{-1, -2, -3, 4, 5}},
	}
	for _, tc := range tests {
		for _, inPlace := range []bool{false, true} {
			bottom := newBlobData([]int{5}, x)
			top := tensor.NewBlob("top")
			if inPlace {
				top = bottom
			}
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l := newTestLayer(t, &ReLUConfig{NegativeSlope: tc.slope}, Context{}, bs, ts)
			l.Forward(bs, ts)
			assertClose(t, "ReLU top", top.Data, tc.wantY, 1e-7)
			copy(top.Diff, dy)
			l.Backward(ts, []bool{true}, bs)
			assertClose(t, "ReLU bottom diff", bottom.Diff, tc.wantDiff, 1e-7)
		}
	}
}

func TestReLUGradient(t *testing.T) {
	for _, slope := range []float32{0, 0.2, -0.3} {
		bottom := []*tensor.Blob{randBlob([]int{2, 3, 4, 5}, 11)}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &ReLUConfig{NegativeSlope: slope}, Context{}, bottom, top)
		checkGradients(t, l, bottom, top, gradCheck{KinkRange: 0.01, Threshold: 1e-3})
	}
}

func TestReLUInPlace(t *testing.T) {
	for _, slope := range []float32{0, 0.1, -0.5} {
		checkInPlaceLayer(t, inPlaceCase{cfg: &ReLUConfig{NegativeSlope: slope}, shape: []int{2, 3, 4}})
	}
}

func TestReLUPropagateDownFalse(t *testing.T) {
	bottom := []*tensor.Blob{randBlob([]int{6}, 1)}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &ReLUConfig{}, Context{}, bottom, top)
	l.Forward(bottom, top)
	for i := range bottom[0].Diff {
		bottom[0].Diff[i] = 7
		top[0].Diff[i] = 1
	}
	l.Backward(top, []bool{false}, bottom)
	for i, v := range bottom[0].Diff {
		if v != 7 {
			t.Fatalf("bottom diff[%d] = %v, want it left at 7", i, v)
		}
	}
}

func TestReLUErrors(t *testing.T) {
	if _, err := (&ReLUConfig{NegativeSlope: float32(math.NaN())}).Build(Context{}); err == nil {
		t.Error("NaN negative_slope: no error")
	}
	l, err := (&ReLUConfig{}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	b := tensor.NewBlob("b", 2)
	if err := l.Setup([]*tensor.Blob{b, b}, []*tensor.Blob{b}); err == nil {
		t.Error("two bottoms: no error")
	}
	if err := l.Setup([]*tensor.Blob{b}, nil); err == nil {
		t.Error("no top: no error")
	}
}

// TestElementwiseNoAllocs checks the allocation contract of every layer of
// this file set.
func TestElementwiseNoAllocs(t *testing.T) {
	yes := true
	cases := []struct {
		cfg    Config
		ctx    Context
		shapes [][]int
		nTop   int
	}{
		{&ReLUConfig{}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&ReLUConfig{NegativeSlope: -0.1}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&SigmoidConfig{}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&TanHConfig{}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&DropoutConfig{Ratio: 0.5}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&ConcatConfig{Axis: 1}, Context{}, [][]int{{2, 3, 4}, {2, 1, 4}}, 1},
		{&EltwiseConfig{Operation: EltwiseMax}, Context{}, [][]int{{2, 3}, {2, 3}}, 1},
		{&EltwiseConfig{Operation: EltwiseProd}, Context{}, [][]int{{2, 3}, {2, 3}}, 1},
		{&FlattenConfig{Axis: 1, EndAxis: -1}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&BatchNormConfig{MovingAverageFraction: 0.9, Eps: 1e-5}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&BatchNormConfig{UseGlobalStats: &yes, Eps: 1e-5}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&ScaleConfig{Axis: 1, NumAxes: 1, BiasTerm: true}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&ScaleConfig{Axis: 1}, Context{}, [][]int{{2, 3, 4}, {3}}, 1},
		{&SoftmaxConfig{Axis: 1}, Context{}, [][]int{{2, 3, 4}}, 1},
		{&SoftmaxWithLossConfig{Axis: 1}, Context{}, [][]int{{2, 3, 4}, {2, 4}}, 2},
		{&AccuracyConfig{TopK: 1, Axis: 1}, Context{}, [][]int{{2, 3, 4}, {2, 4}}, 2},
	}
	for _, c := range cases {
		var bottom, top []*tensor.Blob
		for i, s := range c.shapes {
			bottom = append(bottom, randBlob(s, uint64(i)))
		}
		if len(c.shapes) == 2 && (c.cfg.Type() == "SoftmaxWithLoss" || c.cfg.Type() == "Accuracy") {
			bottom[1] = newBlobData(c.shapes[1], make([]float32, 8))
		}
		for range c.nTop {
			top = append(top, tensor.NewBlob("top"))
		}
		l := newTestLayer(t, c.cfg, c.ctx, bottom, top)
		prop := allTrue(len(bottom))
		if c.cfg.Type() == "SoftmaxWithLoss" {
			prop[1] = false
		}
		checkLayerNoAllocs(t, l, bottom, top, prop)
	}
}

// reluBranchy is the obvious form of the ReLU select (simd.SelectScaled), the reference it must match
// bit for bit.
func reluBranchy(dst, ref, v []float32, s float32) {
	for i, r := range ref {
		if r > 0 {
			dst[i] = v[i]
		} else {
			dst[i] = s * v[i]
		}
	}
}

func TestReLUSelectMatchesBranchy(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	special := []float32{0, negZero, 1, -1, inf, -inf, nan, math.SmallestNonzeroFloat32, -math.MaxFloat32}
	r := rand.New(rand.NewPCG(3, 4))
	var x []float32
	for _, a := range special {
		for _, b := range special {
			x = append(x, a, b)
		}
	}
	for range 1000 {
		x = append(x, float32(r.NormFloat64()))
	}
	for _, s := range []float32{0, negZero, 0.1, -0.5, inf, nan} {
		for _, ref := range [][]float32{x, x[1:]} {
			v := x[:len(ref)]
			want := make([]float32, len(ref))
			reluBranchy(want, ref, v, s)
			got := make([]float32, len(ref))
			simd.SelectScaled(got, ref, v, s)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("slope %v: ref %v, v %v: got %v (%#x), want %v (%#x)",
						s, ref[i], v[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
			// In place, as Forward runs when bottom == top.
			inPlace := slices.Clone(ref)
			simd.SelectScaled(inPlace, inPlace, inPlace, s)
			reluBranchy(want, ref, ref, s)
			for i := range want {
				if math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("slope %v in place: x %v: got %v, want %v", s, ref[i], inPlace[i], want[i])
				}
			}
		}
	}
}

// BenchmarkReLU times LeNet's relu1 (64×500) forward and backward, and
// the branchy loop the select replaced.
func BenchmarkReLU(b *testing.B) {
	x := randBlob([]int{64, 500}, 1)
	y := tensor.NewBlob("y", 64, 500)
	fillGaussianDiff(y, rand.New(rand.NewPCG(1, 2)))
	l, err := (&ReLUConfig{}).Build(Context{})
	if err != nil {
		b.Fatal(err)
	}
	bs, ts := []*tensor.Blob{x}, []*tensor.Blob{y}
	if err := l.Setup(bs, ts); err != nil {
		b.Fatal(err)
	}
	if err := l.Reshape(bs, ts); err != nil {
		b.Fatal(err)
	}
	b.Run("fwd", func(b *testing.B) {
		for b.Loop() {
			l.Forward(bs, ts)
		}
	})
	b.Run("bwd", func(b *testing.B) {
		prop := []bool{true}
		for b.Loop() {
			l.Backward(ts, prop, bs)
		}
	})
	b.Run("branchy-fwd", func(b *testing.B) {
		for b.Loop() {
			reluBranchy(y.Data, x.Data, x.Data, 0)
		}
	})
}
