package layers

import (
	"math/rand/v2"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// The layers of Caffe forks that published nets use (depthwise
// convolution, ReLU6, Axpy, ShuffleChannel, Permute, Normalize, Interp,
// Upsample, PSPNet's BN):
// PyTorch's float64 results (testdata/torch_fork_layers.json, made by
// scripts/torch_fork_layers.py), finite differences, and the forks' own
// rules on shapes and values.

// forkCases are the layer configurations of torch_fork_layers.json, by
// fixture name.
func forkCases() map[string]caffeCase {
	one := Filler{Type: FillConstant, Value: 1}
	norm := func(across, shared bool) *NormalizeConfig {
		return &NormalizeConfig{AcrossSpatial: across, ChannelShared: shared, Eps: 1e-10, ScaleFiller: one}
	}
	return map[string]caffeCase{
		"ConvolutionDepthwise": {cfg: &DepthwiseConvolutionConfig{Fork: "ConvolutionDepthwise", Conv: ConvolutionConfig{
			KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, BiasTerm: true}}},
		"DepthwiseConvolutionMultiplier": {cfg: &DepthwiseConvolutionConfig{Fork: "DepthwiseConvolution", Conv: ConvolutionConfig{
			NumOutput: 8, KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 1, PadH: 1, DilationH: 2, DilationW: 2}}},
		"ReLU6":                      {cfg: &ReLU6Config{}},
		"ReLU6Slope":                 {cfg: &ReLU6Config{NegativeSlope: 0.1}},
		"Axpy":                       {cfg: &AxpyConfig{}},
		"Axpy2D":                     {cfg: &AxpyConfig{}},
		"ShuffleChannel":             {cfg: &ShuffleChannelConfig{Group: 3}},
		"ShuffleChannel2D":           {cfg: &ShuffleChannelConfig{Group: 2}},
		"Permute":                    {cfg: &PermuteConfig{Order: []int{0, 2, 3, 1}}},
		"PermutePartial":             {cfg: &PermuteConfig{Order: []int{1}}},
		"NormalizeSSD":               {cfg: norm(false, false), step: 1e-2},
		"NormalizeAcrossShared":      {cfg: norm(true, true), step: 1e-2},
		"NormalizeAcrossChannels":    {cfg: norm(true, false), step: 1e-2},
		"NormalizeSharedPerPosition": {cfg: norm(false, true), step: 1e-2},
		"InterpZoom":                 {cfg: &InterpConfig{ZoomFactor: 2}},
		"InterpShrink":               {cfg: &InterpConfig{ShrinkFactor: 2}},
		"InterpSize":                 {cfg: &InterpConfig{Height: 5, Width: 11}},
		"InterpCropZoom":             {cfg: &InterpConfig{ZoomFactor: 3, PadBeg: -1, PadEnd: -1}},
		"InterpShrinkZoom":           {cfg: &InterpConfig{ShrinkFactor: 2, ZoomFactor: 3}},
		"InterpDown":                 {cfg: &InterpConfig{Height: 3, Width: 1}},
		"Upsample":                   {cfg: &UpsampleConfig{ScaleH: 2, ScaleW: 2}, skip: map[int]bool{1: true}},
		"UpsamplePadOut":             {cfg: &UpsampleConfig{ScaleH: 2, ScaleW: 2, PadOutH: true, PadOutW: true}, skip: map[int]bool{1: true}},
		"UpsampleSize":               {cfg: &UpsampleConfig{UpsampleH: 5, UpsampleW: 7}, skip: map[int]bool{1: true}},
		"BNPSPNetFrozen":             {cfg: &PSPNetBNConfig{Eps: 1e-5, Momentum: 0.9, Frozen: true}},
		"BNPSPNetTest":               {cfg: &PSPNetBNConfig{Eps: 1e-3, Momentum: 0.9}, phase: Test},
	}
}

// TestTorchForkFixtures compares each fork layer's forward and backward
// with PyTorch's float64 results, twice (the second pass on the reshaped
// tops), then checks its Backward against finite differences.
func TestTorchForkFixtures(t *testing.T) {
	runTorchFixtures(t, loadTorchFixture(t, "testdata/torch_fork_layers.json"), forkCases())
}

// TestForkLayersNoAllocs: after a first pass, Forward and Backward of each
// fork layer allocate nothing.
func TestForkLayersNoAllocs(t *testing.T) {
	checkFixturesNoAllocs(t, loadTorchFixture(t, "testdata/torch_fork_layers.json"), forkCases(), true)
}

// buildSetUp builds cfg and sets it up on bottoms of the given shapes
// (and tops of their own, or in place where inPlace names a bottom),
// returning the first error.
func buildSetUp(cfg Config, shapes [][]int, inPlace int) error {
	l, err := cfg.Build(Context{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		return err
	}
	var bottom []*tensor.Blob
	for _, s := range shapes {
		bottom = append(bottom, tensor.NewBlob("b", s...))
	}
	top := []*tensor.Blob{tensor.NewBlob("top")}
	if inPlace >= 0 {
		top[0] = bottom[inPlace]
	}
	if err := l.Setup(bottom, top); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

// TestForkLayerRules: each fork layer refuses the configurations and
// shapes its fork refuses (or would read differently), with a message
// naming the rule, and accepts the ones around them.
func TestForkLayerRules(t *testing.T) {
	dw := func(fork string, numOutput, group int) *DepthwiseConvolutionConfig {
		return &DepthwiseConvolutionConfig{Fork: fork, Conv: ConvolutionConfig{
			NumOutput: numOutput, Group: group, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1}}
	}
	x := []int{2, 4, 5, 5}
	tests := []struct {
		name    string
		cfg     Config
		shapes  [][]int
		inPlace int
		want    string // "" accepts
	}{
		{"depthwise defaults", dw("ConvolutionDepthwise", 0, 0), [][]int{x}, -1, ""},
		{"depthwise num_output = channels", dw("ConvolutionDepthwise", 4, 4), [][]int{x}, -1, ""},
		{"ConvolutionDepthwise multiplier", dw("ConvolutionDepthwise", 8, 0), [][]int{x}, -1, "num_output 8 must equal the bottom's 4 channels"},
		{"DepthwiseConvolution multiplier", dw("DepthwiseConvolution", 8, 0), [][]int{x}, -1, ""},
		{"DepthwiseConvolution not a multiple", dw("DepthwiseConvolution", 6, 0), [][]int{x}, -1, "num_output 6 must be a multiple of the bottom's 4 channels"},
		{"depthwise group", dw("DepthwiseConvolution", 4, 2), [][]int{x}, -1, "group 2 must equal the bottom's 4 channels"},
		{"depthwise kernel", &DepthwiseConvolutionConfig{Conv: ConvolutionConfig{StrideH: 1, StrideW: 1}}, [][]int{x}, -1, "kernel size must be positive"},
		{"depthwise fork name", &DepthwiseConvolutionConfig{Fork: "Depthwise", Conv: dw("", 0, 0).Conv}, [][]int{x}, -1, "unknown fork type"},
		{"ReLU6 in place", &ReLU6Config{}, [][]int{x}, 0, ""},
		{"Axpy", &AxpyConfig{}, [][]int{{2, 4, 1, 1}, x, x}, -1, ""},
		{"Axpy in place on y", &AxpyConfig{}, [][]int{{2, 4, 1, 1}, x, x}, 2, ""},
		{"Axpy in place on x", &AxpyConfig{}, [][]int{{2, 4, 1, 1}, x, x}, 1, "not the scale or x"},
		{"Axpy two bottoms", &AxpyConfig{}, [][]int{{2, 4}, x}, -1, "takes 3 bottom"},
		{"Axpy scale not N×C", &AxpyConfig{}, [][]int{{2, 4, 2, 1}, x, x}, -1, "must be N×C or N×C×1×1"},
		{"Axpy y shape", &AxpyConfig{}, [][]int{{2, 4}, x, {2, 4, 5, 4}}, -1, "must have x's shape"},
		{"ShuffleChannel group 0", &ShuffleChannelConfig{}, [][]int{x}, -1, "group must be positive"},
		{"ShuffleChannel group 3 of 4", &ShuffleChannelConfig{Group: 3}, [][]int{x}, -1, "group 3 divides"},
		{"ShuffleChannel in place", &ShuffleChannelConfig{Group: 2}, [][]int{x}, 0, "cannot run in place"},
		{"Permute none", &PermuteConfig{}, [][]int{x}, -1, ""},
		{"Permute twice", &PermuteConfig{Order: []int{1, 1}}, [][]int{x}, -1, "names axis 1 twice"},
		{"Permute axis 4 of 4", &PermuteConfig{Order: []int{0, 4}}, [][]int{x}, -1, "names axis 4, but bottom"},
		{"Normalize eps", &NormalizeConfig{Eps: -1}, [][]int{x}, -1, "eps must be finite and not negative"},
		{"Normalize 1 axis", &NormalizeConfig{}, [][]int{{4}}, -1, "needs at least 2 axes"},
		{"Normalize in place", &NormalizeConfig{}, [][]int{x}, 0, "cannot run in place"},
		{"Interp no size", &InterpConfig{}, [][]int{x}, -1, "needs the output size"},
		{"Interp height only", &InterpConfig{Height: 3}, [][]int{x}, -1, "both height and width"},
		{"Interp positive pad", &InterpConfig{ZoomFactor: 2, PadBeg: 1}, [][]int{x}, -1, "must not be positive"},
		{"Interp crops all", &InterpConfig{ZoomFactor: 2, PadBeg: -3, PadEnd: -2}, [][]int{x}, -1, "to nothing"},
		{"Interp 3-D", &InterpConfig{ZoomFactor: 2}, [][]int{{2, 4, 5}}, -1, "must be 4-D"},
		{"Interp zoom wins over size", &InterpConfig{ZoomFactor: 2, Height: 3, Width: 3}, [][]int{x}, -1, ""},
		{"Upsample", &UpsampleConfig{ScaleH: 2, ScaleW: 3}, [][]int{x, x}, -1, ""},
		{"Upsample one bottom", &UpsampleConfig{ScaleH: 2, ScaleW: 2}, [][]int{x}, -1, "the values and the argmax mask"},
		{"Upsample mask shape", &UpsampleConfig{ScaleH: 2, ScaleW: 2}, [][]int{x, {2, 4, 5, 4}}, -1, "of their shape"},
		{"Upsample scale 1", &UpsampleConfig{ScaleH: 1, ScaleW: 2}, [][]int{x, x}, -1, "scale must be greater than 1"},
		{"Upsample pad_out scale 3", &UpsampleConfig{ScaleH: 3, ScaleW: 3, PadOutH: true}, [][]int{x, x}, -1, "need scale 2"},
		{"Upsample size one", &UpsampleConfig{UpsampleH: 4}, [][]int{x, x}, -1, "both upsample_h and upsample_w"},
		{"Upsample in place", &UpsampleConfig{ScaleH: 2, ScaleW: 2}, [][]int{x, x}, 0, "cannot run in place"},
		{"BN frozen in place", &PSPNetBNConfig{Eps: 1e-5, Frozen: true}, [][]int{x}, 0, ""},
		{"BN not frozen in TRAIN", &PSPNetBNConfig{Eps: 1e-5}, [][]int{x}, 0, "frozen: false trains on its batch's statistics"},
		{"BN eps 0", &PSPNetBNConfig{Frozen: true}, [][]int{x}, 0, "eps must be positive"},
	}
	for _, tt := range tests {
		err := buildSetUp(tt.cfg, tt.shapes, tt.inPlace)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want it to say %q", tt.name, err, tt.want)
		}
	}
}

// TestForkLayerShapes: the tops' shapes as the forks compute them.
func TestForkLayerShapes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		in, want []int
	}{
		{"depthwise stride 2", &DepthwiseConvolutionConfig{Conv: ConvolutionConfig{KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}}, []int{1, 3, 7, 8}, []int{1, 3, 4, 4}},
		{"multiplier", &DepthwiseConvolutionConfig{Fork: "DepthwiseConvolution", Conv: ConvolutionConfig{NumOutput: 6, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1}}, []int{1, 3, 2, 2}, []int{1, 6, 2, 2}},
		{"Permute SSD", &PermuteConfig{Order: []int{0, 2, 3, 1}}, []int{2, 3, 4, 5}, []int{2, 4, 5, 3}},
		{"Interp zoom 8 (PSPNet)", &InterpConfig{ZoomFactor: 8}, []int{1, 2, 60, 60}, []int{1, 2, 473, 473}},
		{"Interp shrink 8", &InterpConfig{ShrinkFactor: 8}, []int{1, 2, 473, 473}, []int{1, 2, 60, 60}},
		{"Interp size", &InterpConfig{Height: 10, Width: 12}, []int{1, 2, 3, 4}, []int{1, 2, 10, 12}},
		{"Interp crop only", &InterpConfig{ShrinkFactor: 1, PadBeg: -1, PadEnd: -2}, []int{1, 2, 6, 7}, []int{1, 2, 3, 4}},
		{"Upsample pad_out (SegNet's 45x60 to 90x120 to ...)", &UpsampleConfig{ScaleH: 2, ScaleW: 2, PadOutH: true}, []int{1, 2, 23, 30}, []int{1, 2, 45, 60}},
	}
	for _, tt := range tests {
		bottom := []*tensor.Blob{tensor.NewBlob("x", tt.in...)}
		if _, ok := tt.cfg.(*UpsampleConfig); ok {
			bottom = append(bottom, tensor.NewBlob("mask", tt.in...)) // all 0: valid indices
		}
		top := []*tensor.Blob{tensor.NewBlob("y")}
		l := newTestLayer(t, tt.cfg, Context{}, bottom, top)
		l.Forward(bottom, top)
		if !top[0].Shape.Equal(tt.want) {
			t.Errorf("%s: top %v, want %v", tt.name, top[0].Shape, tt.want)
		}
	}
}

// TestInterpCropCopies: with the output the size of the cropped input,
// Interp copies the crop, as PSPNet's special case does.
func TestInterpCropCopies(t *testing.T) {
	x := tensor.NewBlob("x", 1, 1, 4, 5)
	for i := range x.Data {
		x.Data[i] = float32(i)
	}
	top := []*tensor.Blob{tensor.NewBlob("y")}
	l := newTestLayer(t, &InterpConfig{Height: 2, Width: 3, PadBeg: -1, PadEnd: -1}, Context{}, []*tensor.Blob{x}, top)
	l.Forward([]*tensor.Blob{x}, top)
	want := []float32{6, 7, 8, 11, 12, 13}
	for i, w := range want {
		if top[0].Data[i] != w {
			t.Fatalf("top %v, want %v", top[0].Data, want)
		}
	}
	copy(top[0].Diff, []float32{1, 2, 3, 4, 5, 6})
	l.Backward(top, []bool{true}, []*tensor.Blob{x})
	wantDiff := []float32{0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0}
	for i, w := range wantDiff {
		if x.Diff[i] != w {
			t.Fatalf("bottom diff %v, want %v", x.Diff, wantDiff)
		}
	}
}

// TestReLU6Kinks: the fork's gradient at its kinks: at 0 the slope, at 6
// and above 0 (where Clip passes the gradient at 6).
func TestReLU6Kinks(t *testing.T) {
	x := tensor.NewBlob("x", 5)
	copy(x.Data, []float32{-1, 0, 3, 6, 7})
	top := []*tensor.Blob{tensor.NewBlob("y")}
	l := newTestLayer(t, &ReLU6Config{NegativeSlope: 0.5}, Context{}, []*tensor.Blob{x}, top)
	l.Forward([]*tensor.Blob{x}, top)
	for i, w := range []float32{-0.5, 0, 3, 6, 6} {
		if top[0].Data[i] != w {
			t.Fatalf("top %v", top[0].Data)
		}
	}
	for i := range top[0].Diff {
		top[0].Diff[i] = 1
	}
	l.Backward(top, []bool{true}, []*tensor.Blob{x})
	for i, w := range []float32{0.5, 0.5, 1, 0, 0} {
		if x.Diff[i] != w {
			t.Fatalf("bottom diff %v", x.Diff)
		}
	}
}

// TestUpsampleMaskOutOfRange: a mask index outside the top's plane stops
// the layer with a message saying what to check, as the fork does.
func TestUpsampleMaskOutOfRange(t *testing.T) {
	x, mask := tensor.NewBlob("x", 1, 1, 2, 2), tensor.NewBlob("mask", 1, 1, 2, 2)
	copy(mask.Data, []float32{0, 3, 8, 16})
	bottom, top := []*tensor.Blob{x, mask}, []*tensor.Blob{tensor.NewBlob("y")}
	l := newTestLayer(t, &UpsampleConfig{ScaleH: 2, ScaleW: 2}, Context{}, bottom, top)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "mask index 16 out of range for the 4x4 top") {
			t.Errorf("recovered %v", r)
		}
	}()
	l.Forward(bottom, top)
}

// TestAxpyInPlace: Axpy writing its top over y gives what it gives into a
// top of its own, forward and backward.
func TestAxpyInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	blobs := func() []*tensor.Blob {
		a, x, y := tensor.NewBlob("a", 2, 3), tensor.NewBlob("x", 2, 3, 2, 2), tensor.NewBlob("y", 2, 3, 2, 2)
		for _, b := range []*tensor.Blob{a, x, y} {
			fillGaussian(b, 1, rand.New(rand.NewPCG(7, uint64(b.Count()))))
		}
		return []*tensor.Blob{a, x, y}
	}
	dy := make([]float32, 24)
	for i := range dy {
		dy[i] = float32(r.NormFloat64())
	}
	run := func(inPlace bool) []*tensor.Blob {
		bottom := blobs()
		top := []*tensor.Blob{tensor.NewBlob("top")}
		if inPlace {
			top[0] = bottom[2]
		}
		l := newTestLayer(t, &AxpyConfig{}, Context{}, bottom, top)
		l.Forward(bottom, top)
		copy(top[0].Diff, dy)
		l.Backward(top, []bool{true, true, true}, bottom)
		return append(bottom, top[0])
	}
	own, in := run(false), run(true)
	assertClose(t, "top", in[3].Data, own[3].Data, 0)
	for i, name := range []string{"a", "x", "y"} {
		assertClose(t, name+" diff", in[i].Diff, own[i].Diff, 0)
	}
}

// TestPSPNetBNInPlace: PSPNet's BN in place (as PSPNet's files run it)
// gives what it gives into a top of its own, frozen and in the TEST phase,
// forward and backward, the slope's and bias's gradients included.
func TestPSPNetBNInPlace(t *testing.T) {
	for _, c := range []struct {
		cfg   *PSPNetBNConfig
		phase Phase
	}{{&PSPNetBNConfig{Eps: 1e-5, Frozen: true}, Train}, {&PSPNetBNConfig{Eps: 1e-5}, Test}} {
		run := func(inPlace bool) (*tensor.Blob, []Param) {
			x := tensor.NewBlob("x", 2, 3, 2, 2)
			fillGaussian(x, 1, rand.New(rand.NewPCG(9, 9)))
			top := []*tensor.Blob{tensor.NewBlob("top")}
			if inPlace {
				top[0] = x
			}
			l := newTestLayer(t, c.cfg, Context{Phase: c.phase}, []*tensor.Blob{x}, top)
			for j, p := range l.Params() { // slope, bias, mean, variance (positive)
				for i := range p.Blob.Data {
					p.Blob.Data[i] = 0.5 + float32(i) + 0.3*float32(j)
				}
			}
			l.Forward([]*tensor.Blob{x}, top)
			y := append([]float32(nil), top[0].Data...)
			for i := range top[0].Diff {
				top[0].Diff[i] = float32(i%5) - 2
			}
			l.Backward(top, []bool{true}, []*tensor.Blob{x})
			return &tensor.Blob{Data: y, Diff: x.Diff}, l.Params()
		}
		own, ownP := run(false)
		in, inP := run(true)
		assertClose(t, "top", in.Data, own.Data, 0)
		assertClose(t, "x diff", in.Diff, own.Diff, 0)
		if norm := tensor.Dot(own.Diff, own.Diff); norm == 0 {
			t.Errorf("phase %v: the gradient is zero", c.phase)
		}
		for i := range ownP {
			assertClose(t, ownP[i].Blob.Name+" diff", inP[i].Blob.Diff, ownP[i].Blob.Diff, 0)
		}
	}
}
