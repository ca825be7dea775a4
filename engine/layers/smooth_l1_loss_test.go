package layers

import (
	"math"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// Fast/Faster R-CNN's SmoothL1Loss against the float64 oracle of
// scripts/smoothl1.py (testdata/smoothl1.json), finite differences and
// the fork's rules on sigma, bottoms and shapes.

// smoothL1Cases are the layer configurations of smoothl1.json, by fixture
// name; the weights take no gradient.
func smoothL1Cases() map[string]caffeCase {
	noWeights := map[int]bool{2: true, 3: true}
	return map[string]caffeCase{
		"SmoothL1Loss":          {cfg: &SmoothL1LossConfig{Sigma: 1}, tol: 1e-6},
		"SmoothL1LossWeights":   {cfg: &SmoothL1LossConfig{Sigma: 3}, skip: noWeights, tol: 1e-6},
		"SmoothL1LossInside":    {cfg: &SmoothL1LossConfig{Sigma: 1}, skip: noWeights, tol: 1e-6},
		"SmoothL1LossSigmaHalf": {cfg: &SmoothL1LossConfig{Sigma: 0.5}, tol: 1e-6},
	}
}

// TestSmoothL1Fixtures compares the loss and the gradients of the
// predictions and the targets with the oracle within 1e-6 relative to
// max(1, |want|) on two passes (the fixture's top diff is its loss
// weight: 1, 2 and 0.25 scale them), then checks Backward against finite
// differences; the inputs keep |d| at least 0.05 from the kink 1/σ². The
// layer is a loss (loss_weight 1 by default) and only the predictions and
// the targets may take a gradient.
func TestSmoothL1Fixtures(t *testing.T) {
	cases := smoothL1Cases()
	runTorchFixtures(t, loadTorchFixture(t, "testdata/smoothl1.json"), cases)
	l, err := cases["SmoothL1LossWeights"].cfg.Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.(LossLayer); !ok {
		t.Error("SmoothL1Loss is not a LossLayer (loss_weight 1 by default)")
	}
	gb, ok := l.(GradientBlocker)
	if !ok || !gb.AllowBackward(0) || !gb.AllowBackward(1) || gb.AllowBackward(2) || gb.AllowBackward(3) {
		t.Error("only the predictions and the targets may take a gradient")
	}
}

// TestSmoothL1Sigma checks both sides of the kink 1/σ² by hand: with σ = 2
// the kink is at 0.25; d = 0.2 gives 0.5·4·0.04 = 0.08 and gradient 0.8,
// d = −1 gives 1 − 0.125 and gradient −1, over a batch of 2.
func TestSmoothL1Sigma(t *testing.T) {
	l, err := (&SmoothL1LossConfig{Sigma: 2}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	p := newBlobData(tensor.Shape{2, 1}, []float32{0.2, -1})
	q := newBlobData(tensor.Shape{2, 1}, []float32{0, 0})
	top := []*tensor.Blob{tensor.NewBlob("loss")}
	bottom := []*tensor.Blob{p, q}
	if err := l.Setup(bottom, top); err != nil {
		t.Fatal(err)
	}
	l.Forward(bottom, top)
	want := (0.08 + 0.875) / 2
	if got := float64(top[0].Data[0]); math.Abs(got-want) > 1e-6 {
		t.Errorf("loss %v, want %v", got, want)
	}
	top[0].Diff[0] = 3
	l.Backward(top, []bool{true, true}, bottom)
	for i, w := range []float64{3 * 0.8 / 2, -3.0 / 2} {
		if math.Abs(float64(p.Diff[i])-w) > 1e-6 || math.Abs(float64(q.Diff[i])+w) > 1e-6 {
			t.Errorf("diff %d: %v and %v, want %v and its negative", i, p.Diff[i], q.Diff[i], w)
		}
	}
}

// TestSmoothL1Errors: bad sigma, bottom counts and shapes are errors, not
// panics, and NaN inputs give a NaN loss without panicking.
func TestSmoothL1Errors(t *testing.T) {
	for _, s := range []float32{0, -1, float32(math.NaN()), float32(math.Inf(1)), 1e-30, 1e30} {
		if _, err := (&SmoothL1LossConfig{Sigma: s}).Build(Context{}); err == nil || !strings.Contains(err.Error(), "sigma") {
			t.Errorf("sigma %g: err %v, want one naming sigma", s, err)
		}
	}
	blob := func(s ...int) *tensor.Blob { return newBlobData(s, make([]float32, tensor.Shape(s).Count())) }
	for _, tc := range []struct {
		bottom []*tensor.Blob
		want   string
	}{
		{[]*tensor.Blob{blob(2, 3)}, "bottom"},
		{[]*tensor.Blob{blob(2, 3), blob(2, 3), blob(2, 3), blob(2, 3), blob(2, 3)}, "bottom"},
		{[]*tensor.Blob{blob(2, 3), blob(3, 2)}, "targets"},
		{[]*tensor.Blob{blob(2, 3), blob(2, 3), blob(2, 4)}, "inside weights"},
		{[]*tensor.Blob{blob(2, 3), blob(2, 3), blob(2, 3), blob(1, 3)}, "outside weights"},
		{[]*tensor.Blob{blob(), blob()}, "scalar"},
	} {
		l, err := (&SmoothL1LossConfig{Sigma: 1}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Setup(tc.bottom, []*tensor.Blob{tensor.NewBlob("loss")}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d bottoms: err %v, want one naming %q", len(tc.bottom), err, tc.want)
		}
	}
	l, _ := (&SmoothL1LossConfig{Sigma: 1}).Build(Context{})
	b := []*tensor.Blob{blob(2, 3), blob(2, 3)}
	if err := l.Setup(b, []*tensor.Blob{b[0]}); err == nil {
		t.Error("in place: no error")
	}
	top := []*tensor.Blob{tensor.NewBlob("loss")}
	if err := l.Setup(b, top); err != nil {
		t.Fatal(err)
	}
	b[0].Data[0] = float32(math.NaN())
	l.Forward(b, top)
	top[0].Diff[0] = 1
	l.Backward(top, []bool{true, true}, b)
	if !math.IsNaN(float64(top[0].Data[0])) {
		t.Errorf("NaN prediction: loss %v, want NaN", top[0].Data[0])
	}
}

// TestSmoothL1NoAllocs: after a first pass, Forward and Backward allocate
// nothing.
func TestSmoothL1NoAllocs(t *testing.T) {
	checkFixturesNoAllocs(t, loadTorchFixture(t, "testdata/smoothl1.json"), smoothL1Cases(), false)
}
