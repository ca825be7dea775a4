package layers

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"dsgd/engine/tensor"
)

// This file checks the layers added for Caffe's model files (issue 12)
// two ways on the same inputs: against PyTorch in float64 with Caffe's
// semantics (testdata/torch_layers.json, made by scripts/torch_layers.py),
// and against central finite differences of the layer itself.

// caffeCase is one layer configuration, named as its fixture.
type caffeCase struct {
	cfg Config
	// tops is the number of tops (1 when zero).
	tops int
	// skip lists bottoms without a gradient (labels, indices, shapes).
	skip map[int]bool
	// step overrides the finite-difference step (kinks near the inputs).
	step float64
	// noFD skips the finite-difference check (piecewise-constant layers).
	noFD bool
	// phase is the phase the layer is built for (Train when zero).
	phase Phase
	// tol, when set, bounds the comparisons with the fixture instead of
	// 2e-5: relative to max(1, |want|), or absolute with abs.
	tol float64
	abs bool
}

func ip(v int) *int { return &v }

func caffeCases() map[string]caffeCase {
	conv := func(c ConvolutionConfig) ConvolutionConfig {
		c.WeightFiller, c.BiasFiller = Filler{Type: FillGaussian, Std: 1}, Filler{Type: FillGaussian, Std: 1}
		return c
	}
	return map[string]caffeCase{
		"AbsVal":                  {cfg: &AbsValConfig{}, step: 1e-3},
		"BNLL":                    {cfg: &BNLLConfig{}},
		"ELU":                     {cfg: &ELUConfig{Alpha: 0.7}, step: 1e-3},
		"Power":                   {cfg: &PowerConfig{Power: 2.5, Scale: 0.8, Shift: 1.5}},
		"Exp":                     {cfg: &ExpConfig{Base: 2, Scale: 0.5, Shift: 0.3}},
		"Log":                     {cfg: &LogConfig{Base: 10, Scale: 2, Shift: 3}},
		"Threshold":               {cfg: &ThresholdConfig{Threshold: 0.2}, noFD: true},
		"PReLU":                   {cfg: &PReLUConfig{Filler: Filler{Value: 0.25}}, step: 1e-3},
		"PReLUShared":             {cfg: &PReLUConfig{Filler: Filler{Value: 0.25}, ChannelShared: true}, step: 1e-3},
		"Slice":                   {cfg: &SliceConfig{Axis: 1, SlicePoints: []int{1, 3}}, tops: 3},
		"Split":                   {cfg: &SplitConfig{}, tops: 2},
		"Reshape":                 {cfg: &ReshapeConfig{Shape: []int{0, -1}, NumAxes: -1}},
		"Crop":                    {cfg: &CropConfig{Axis: 2, Offset: []int{1, 2}}, skip: map[int]bool{1: true}},
		"Tile":                    {cfg: &TileConfig{Axis: 1, Tiles: 3}},
		"ReductionSum":            {cfg: &ReductionConfig{Operation: ReduceSum, Axis: 1, Coeff: 1}},
		"ReductionASum":           {cfg: &ReductionConfig{Operation: ReduceASum, Axis: 0, Coeff: 1}, step: 1e-3},
		"ReductionSumSq":          {cfg: &ReductionConfig{Operation: ReduceSumSq, Axis: 1, Coeff: 0.5}},
		"ReductionMean":           {cfg: &ReductionConfig{Operation: ReduceMean, Axis: 2, Coeff: 2}},
		"ArgMax":                  {cfg: &ArgMaxConfig{TopK: 2, OutMaxVal: true}, noFD: true},
		"ArgMaxAxis":              {cfg: &ArgMaxConfig{TopK: 1, Axis: ip(1)}, noFD: true},
		"Bias":                    {cfg: &BiasConfig{Axis: 1, NumAxes: 1}},
		"Bias2":                   {cfg: &BiasConfig{Axis: 1, NumAxes: 1}},
		"Embed":                   {cfg: &EmbedConfig{NumOutput: 4, InputDim: 5, BiasTerm: true}, skip: map[int]bool{0: true}},
		"EuclideanLoss":           {cfg: &EuclideanLossConfig{}},
		"SigmoidCrossEntropyLoss": {cfg: &SigmoidCrossEntropyLossConfig{Normalization: NormBatchSize}, skip: map[int]bool{1: true}},
		"ContrastiveLoss":         {cfg: &ContrastiveLossConfig{Margin: 1.5}, skip: map[int]bool{2: true}, step: 1e-3},
		"ContrastiveLossLegacy":   {cfg: &ContrastiveLossConfig{Margin: 1.5, LegacyVersion: true}, skip: map[int]bool{2: true}, step: 1e-3},
		"HingeLossL1":             {cfg: &HingeLossConfig{Norm: HingeL1}, skip: map[int]bool{1: true}, step: 1e-3},
		"HingeLossL2":             {cfg: &HingeLossConfig{Norm: HingeL2}, skip: map[int]bool{1: true}, step: 1e-3},
		"InfogainLoss":            {cfg: &InfogainLossConfig{Axis: 1}, skip: map[int]bool{1: true, 2: true}},
		"MultinomialLogisticLoss": {cfg: &MultinomialLogisticLossConfig{}, skip: map[int]bool{1: true}, step: 1e-3},
		"Deconvolution": {cfg: &DeconvolutionConfig{conv(ConvolutionConfig{NumOutput: 6, KernelH: 3, KernelW: 3,
			StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Group: 2, BiasTerm: true})}},
		"ConvolutionDilated": {cfg: ptr(conv(ConvolutionConfig{NumOutput: 4, KernelH: 3, KernelW: 3,
			StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilationH: 2, DilationW: 2, Group: 1, BiasTerm: true}))},
		"ConvolutionDilatedStrided": {cfg: ptr(conv(ConvolutionConfig{NumOutput: 3, KernelH: 2, KernelW: 3,
			StrideH: 2, StrideW: 1, PadH: 1, PadW: 0, DilationH: 3, DilationW: 2, Group: 1}))},
	}
}

func ptr[T any](v T) *T { return &v }

type torchBlob struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type torchCase struct {
	Name        string      `json:"name"`
	Bottoms     []torchBlob `json:"bottoms"`
	Params      [][]float64 `json:"params"`
	Tops        []torchBlob `json:"tops"`
	TopDiffs    [][]float64 `json:"top_diffs"`
	BottomDiffs [][]float64 `json:"bottom_diffs"`
	ParamDiffs  [][]float64 `json:"param_diffs"`

	// tol and abs are the Go case's bound (caffeCase.tol, .abs).
	tol float64
	abs bool
}

// compare fails unless got matches the fixture's want within the case's
// bound: 2e-5 relative to max(1, |want|) by default.
func (tc torchCase) compare(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	switch {
	case tc.abs:
		closeTo(t, what, got, want, tc.tol)
	case tc.tol != 0:
		assertClose(t, what, got, to32(want), tc.tol)
	default:
		assertClose(t, what, got, to32(want), 2e-5)
	}
}

func loadTorchCases(t *testing.T) []torchCase {
	return loadTorchFixture(t, "testdata/torch_layers.json")
}

// loadTorchFixture reads the cases of one PyTorch fixture file (made by a
// script under scripts/).
func loadTorchFixture(t *testing.T, path string) []torchCase {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []torchCase `json:"cases"`
	}
	if err := json.Unmarshal(src, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

// checkForward runs l.Forward and compares the tops with the fixture's
// shapes and values.
func (tc torchCase) checkForward(t *testing.T, l Layer, bottom, top []*tensor.Blob) {
	t.Helper()
	l.Forward(bottom, top)
	if len(top) != len(tc.Tops) {
		t.Fatalf("%d tops, fixture %d", len(top), len(tc.Tops))
	}
	for i, want := range tc.Tops {
		if want.Shape == nil {
			want.Shape = []int{}
		}
		if !top[i].Shape.Equal(want.Shape) {
			t.Fatalf("top %d shape %v, want %v", i, []int(top[i].Shape), want.Shape)
		}
		tc.compare(t, "top", top[i].Data, want.Data)
	}
}

// checkBackward sets the fixture's top diffs, runs l.Backward for the
// bottoms the fixture has gradients of (their diffs poisoned with NaN
// first: Backward must overwrite them), and compares the bottom diffs and,
// when params is set, every param's diff.
func (tc torchCase) checkBackward(t *testing.T, l Layer, bottom, top []*tensor.Blob, params bool) {
	t.Helper()
	for i, d := range tc.TopDiffs {
		copy(top[i].Diff, to32(d))
	}
	for _, p := range l.Params() {
		p.Blob.ZeroDiff()
	}
	prop := make([]bool, len(bottom))
	for i, d := range tc.BottomDiffs {
		prop[i] = d != nil
		for j := range bottom[i].Diff {
			bottom[i].Diff[j] = float32(math.NaN())
		}
	}
	l.Backward(top, prop, bottom)
	for i, d := range tc.BottomDiffs {
		if d != nil {
			tc.compare(t, "bottom diff", bottom[i].Diff, d)
		}
	}
	if !params {
		return
	}
	for i, p := range l.Params() {
		tc.compare(t, "param diff "+p.Blob.Name, p.Blob.Diff, tc.ParamDiffs[i])
	}
}

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// setUp builds the case's layer on the fixture's bottoms and params.
func (tc torchCase) setUp(t *testing.T, c caffeCase) (Layer, []*tensor.Blob, []*tensor.Blob) {
	t.Helper()
	var bottom []*tensor.Blob
	for _, b := range tc.Bottoms {
		bottom = append(bottom, newBlobData(b.Shape, to32(b.Data)))
	}
	var top []*tensor.Blob
	for range max(c.tops, 1) {
		top = append(top, tensor.NewBlob("top"))
	}
	l, err := c.cfg.Build(Context{Phase: c.phase, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Setup(bottom, top); err != nil {
		t.Fatal(err)
	}
	ps := l.Params()
	if len(ps) != len(tc.Params) {
		t.Fatalf("layer has %d params, fixture %d", len(ps), len(tc.Params))
	}
	for i, p := range ps {
		if len(p.Blob.Data) != len(tc.Params[i]) {
			t.Fatalf("param %d has %d values, fixture %d", i, len(p.Blob.Data), len(tc.Params[i]))
		}
		copy(p.Blob.Data, to32(tc.Params[i]))
	}
	if err := l.Reshape(bottom, top); err != nil {
		t.Fatal(err)
	}
	return l, bottom, top
}

// TestTorchFixtures compares every new layer's forward and backward with
// PyTorch's float64 results on the same inputs.
func TestTorchFixtures(t *testing.T) {
	cases := caffeCases()
	seen := map[string]bool{}
	for _, tc := range loadTorchCases(t) {
		c, ok := cases[tc.Name]
		if !ok {
			t.Errorf("fixture %s has no Go case", tc.Name)
			continue
		}
		seen[tc.Name] = true
		t.Run(tc.Name, func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			tc.checkForward(t, l, bottom, top)
			tc.checkBackward(t, l, bottom, top, true)
		})
	}
	for name := range cases {
		if !seen[name] {
			t.Errorf("case %s has no fixture; rerun make torch-layers", name)
		}
	}
}

// TestCaffeLayersGradient checks each new layer's Backward against finite
// differences on the fixture's inputs.
func TestCaffeLayersGradient(t *testing.T) {
	cases := caffeCases()
	for _, tc := range loadTorchCases(t) {
		c := cases[tc.Name]
		if c.cfg == nil || c.noFD {
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			checkGradients(t, l, bottom, top, gradCheck{Step: c.step, Threshold: 2e-2, Skip: c.skip, Seed: 5})
		})
	}
}

func TestBilinearFiller(t *testing.T) {
	// Caffe's bilinear kernel for factor 2 (kernel 4): rows and columns
	// 0.25, 0.75, 0.75, 0.25; every tap is their product.
	b := tensor.NewBlob("w", 1, 1, 4, 4)
	Filler{Type: FillBilinear}.Fill(b, nil)
	v := []float32{0.25, 0.75, 0.75, 0.25}
	var want []float32
	for y := range 4 {
		for x := range 4 {
			want = append(want, v[y]*v[x])
		}
	}
	assertClose(t, "bilinear", b.Data, want, 1e-7)
	// BilinearFillerTest.TestFillOdd/TestFillEven (Caffe master): every
	// tap of an n×n kernel is (1-|x/f-c|)(1-|y/f-c|) with f = ceil(n/2),
	// c = (n-1)/(2f). For n = 7 the corner is 1/16 (Caffe 1.0 gave 1/64).
	for _, tc := range []struct {
		name string
		n    int
	}{{"BilinearFillerTest.TestFillOdd", 7}, {"BilinearFillerTest.TestFillEven", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			b := tensor.NewBlob("w", 10, 2, tc.n, tc.n)
			Filler{Type: FillBilinear}.Fill(b, nil)
			f := math.Ceil(float64(tc.n) / 2)
			c := float64(tc.n-1) / (2 * f)
			inner := tc.n * tc.n
			for i, got := range b.Data {
				j := i % inner
				x, y := float64(j%tc.n), float64(j/tc.n)
				want := (1 - math.Abs(x/f-c)) * (1 - math.Abs(y/f-c))
				if math.Abs(float64(got)-want) > 1e-6 {
					t.Fatalf("tap %d (y %v, x %v): got %v, want %v", i, y, x, got, want)
				}
			}
			if tc.n == 7 && math.Abs(float64(b.Data[0])-0.0625) > 1e-7 {
				t.Fatalf("7x7 corner %v, want 0.0625", b.Data[0])
			}
		})
	}
}

func TestCaffeLayersInPlace(t *testing.T) {
	for _, c := range []inPlaceCase{
		{cfg: &AbsValConfig{}, shape: []int{3, 5}},
		{cfg: &BNLLConfig{}, shape: []int{3, 5}},
		{cfg: &ELUConfig{Alpha: 1}, shape: []int{3, 5}},
		{cfg: &PowerConfig{Power: 2, Scale: 1, Shift: 0}, shape: []int{3, 5}},
		{cfg: &ExpConfig{Base: -1, Scale: 1}, shape: []int{3, 5}},
		{cfg: &PReLUConfig{Filler: Filler{Value: 0.25}}, shape: []int{2, 3, 4}},
		{cfg: &BiasConfig{Axis: 1, NumAxes: 1}, shape: []int{2, 3, 4}},
	} {
		checkInPlaceLayer(t, c)
	}
}

func TestCaffeLayersRefuse(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		bottom [][]int
		tops   int
	}{
		{&SliceConfig{Axis: 1, SlicePoints: []int{2, 1}}, [][]int{{2, 4}}, 3},
		{&SliceConfig{Axis: 1}, [][]int{{2, 5}}, 2},
		{&ReshapeConfig{Shape: []int{-1, -1}}, [][]int{{2, 6}}, 1},
		{&ReshapeConfig{Shape: []int{5, -1}, NumAxes: -1}, [][]int{{2, 6}}, 1},
		{&CropConfig{Axis: 2, Offset: []int{3}}, [][]int{{1, 1, 4, 4}, {1, 1, 2, 2}}, 1},
		{&TileConfig{Tiles: 0}, [][]int{{2, 3}}, 1},
		{&EuclideanLossConfig{}, [][]int{{2, 3}, {2, 4}}, 1},
		{&InfogainLossConfig{Axis: 1}, [][]int{{2, 3}, {2}}, 1},
		{&ExpConfig{Base: -2}, [][]int{{2}}, 1},
	} {
		var bottom, top []*tensor.Blob
		for _, s := range tc.bottom {
			bottom = append(bottom, tensor.NewBlob("b", s...))
		}
		for range tc.tops {
			top = append(top, tensor.NewBlob("t"))
		}
		l, err := tc.cfg.Build(Context{})
		if err == nil {
			err = l.Setup(bottom, top)
		}
		if err == nil {
			t.Errorf("%s %+v on %v: no error", tc.cfg.Type(), tc.cfg, tc.bottom)
		}
	}
}

// TestSparseGaussianFiller: Caffe's sparse gaussian keeps about sparse of
// each output's inputs.
func TestSparseGaussianFiller(t *testing.T) {
	b := tensor.NewBlob("w", 100, 400)
	Filler{Type: FillGaussian, Std: 1, Sparse: 15}.Fill(b, rand.New(rand.NewPCG(1, 2)))
	nz := 0
	for _, v := range b.Data {
		if v != 0 {
			nz++
		}
	}
	// Each weight is kept with probability 15/100: 6000 of 40000 expected.
	if nz < 5500 || nz > 6500 {
		t.Errorf("%d non-zero weights, want about 6000", nz)
	}
}
