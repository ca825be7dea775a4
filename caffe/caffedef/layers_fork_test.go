package caffedef

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// TestForkDecode: each fork layer dsgd runs decodes with its fork's field
// names and defaults (extraInput's data is 2×3×9×8).
func TestForkDecode(t *testing.T) {
	one := defaultFiller()
	one.Value = 1
	msra := defaultFiller()
	msra.Type = layers.FillMSRA
	checkDecodes(t, []decodeCase{
		{`layer { name: "l" type: "ConvolutionDepthwise" bottom: "data" top: "l" convolution_param { num_output: 3 kernel_size: 3 pad: 1 stride: 2 bias_term: false weight_filler { type: "msra" } } }`,
			&layers.DepthwiseConvolutionConfig{Fork: "ConvolutionDepthwise", Conv: layers.ConvolutionConfig{
				NumOutput: 3, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, WeightFiller: msra, BiasFiller: defaultFiller()}}},
		{`layer { name: "l" type: "DepthwiseConvolution" bottom: "data" top: "l" convolution_param { num_output: 6 group: 3 kernel_size: 3 dilation: 2 engine: CAFFE } }`,
			&layers.DepthwiseConvolutionConfig{Fork: "DepthwiseConvolution", Conv: layers.ConvolutionConfig{
				NumOutput: 6, Group: 3, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, DilationH: 2, DilationW: 2, BiasTerm: true,
				WeightFiller: defaultFiller(), BiasFiller: defaultFiller()}}},
		{`layer { name: "l" type: "ConvolutionDepthwise" bottom: "data" top: "l" convolution_param { kernel_size: 3 } }`,
			&layers.DepthwiseConvolutionConfig{Fork: "ConvolutionDepthwise", Conv: layers.ConvolutionConfig{
				KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, BiasTerm: true, WeightFiller: defaultFiller(), BiasFiller: defaultFiller()}}},
		{`layer { name: "l" type: "ReLU6" bottom: "data" top: "data" }`, &layers.ReLU6Config{}},
		{`layer { name: "l" type: "ReLU6" bottom: "data" top: "l" relu6_param { negative_slope: 0.25 } }`, &layers.ReLU6Config{NegativeSlope: 0.25}},
		{`layer { name: "l" type: "Axpy" bottom: "data" bottom: "data" bottom: "data" top: "l" }`, &layers.AxpyConfig{}},
		{`layer { name: "l" type: "ShuffleChannel" bottom: "data" top: "l" }`, &layers.ShuffleChannelConfig{Group: 1}},
		{`layer { name: "l" type: "ShuffleChannel" bottom: "data" top: "l" shuffle_channel_param { group: 3 } }`, &layers.ShuffleChannelConfig{Group: 3}},
		{`layer { name: "l" type: "Permute" bottom: "data" top: "l" permute_param { order: 0 order: 2 order: 3 order: 1 } }`, &layers.PermuteConfig{Order: []int{0, 2, 3, 1}}},
		{`layer { name: "l" type: "Permute" bottom: "data" top: "l" }`, &layers.PermuteConfig{}},
		{`layer { name: "l" type: "Normalize" bottom: "data" top: "l" }`,
			&layers.NormalizeConfig{AcrossSpatial: true, ChannelShared: true, Eps: 1e-10, ScaleFiller: one}},
		{`layer { name: "l" type: "Normalize" bottom: "data" top: "l" norm_param { across_spatial: false scale_filler { type: "constant" value: 20 } channel_shared: false eps: 0.001 } }`,
			&layers.NormalizeConfig{Eps: 0.001, ScaleFiller: layers.Filler{Type: layers.FillConstant, Value: 20, Max: 1, Std: 1}}},
		{`layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { zoom_factor: 8 } }`, &layers.InterpConfig{ZoomFactor: 8}},
		{`layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { shrink_factor: 2 zoom_factor: 3 pad_beg: 0 pad_end: -1 } }`,
			&layers.InterpConfig{ShrinkFactor: 2, ZoomFactor: 3, PadEnd: -1}},
		{`layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { height: 5 width: 7 } }`, &layers.InterpConfig{Height: 5, Width: 7}},
		// PSPNet reads a lone height only when a factor sizes the output.
		{`layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { height: 5 zoom_factor: 2 } }`, &layers.InterpConfig{ZoomFactor: 2}},
		{`layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" }`, &layers.UpsampleConfig{ScaleH: 2, ScaleW: 2}},
		{`layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { scale: 3 } }`, &layers.UpsampleConfig{ScaleH: 3, ScaleW: 3}},
		{`layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { scale_h: 2 scale_w: 3 pad_out_h: true } }`,
			&layers.UpsampleConfig{ScaleH: 2, ScaleW: 3, PadOutH: true}},
		{`layer { name: "l" type: "BN" bottom: "data" top: "data" bn_param { slope_filler { type: "constant" value: 1 } bias_filler { type: "constant" value: 0 } frozen: true momentum: 0.95 } }`,
			&layers.PSPNetBNConfig{SlopeFiller: layers.Filler{Type: layers.FillConstant, Value: 1, Max: 1, Std: 1}, BiasFiller: defaultFiller(), Momentum: 0.95, Eps: 1e-5, Frozen: true}},
		{`layer { name: "l" type: "BN" bottom: "data" top: "l" }`,
			&layers.PSPNetBNConfig{SlopeFiller: defaultFiller(), BiasFiller: defaultFiller(), Momentum: 0.9, Eps: 1e-5}},
		// SegNet's files give the size and, deprecated, the scale; the size wins.
		{`layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { scale: 2 upsample_w: 30 upsample_h: 23 } }`,
			&layers.UpsampleConfig{UpsampleH: 23, UpsampleW: 30}},
	})
}

// TestForkDecodeErrors: a bad value in a fork layer's parameters is an
// error at its line and column, naming the field and the rule. at is the
// text the error points at (its column), "" for the layer's start.
func TestForkDecodeErrors(t *testing.T) {
	checkDecodeErrors(t, []decodeErrCase{
		{"depthwise num_output 0", `layer { name: "l" type: "ConvolutionDepthwise" bottom: "data" top: "l" convolution_param { num_output: 0 kernel_size: 3 } }`,
			`0 kernel_size`, "num_output in convolution_param of layer 'l': must be at least 1, got 0"},
		{"depthwise group 0", `layer { name: "l" type: "DepthwiseConvolution" bottom: "data" top: "l" convolution_param { group: 0 kernel_size: 3 } }`,
			`0 kernel_size`, "group in convolution_param of layer 'l': must be at least 1, got 0"},
		{"depthwise no kernel", `layer { name: "l" type: "ConvolutionDepthwise" bottom: "data" top: "l" convolution_param { stride: 2 } }`,
			`{ stride`, "convolution_param of layer 'l' needs kernel_size"},
		{"depthwise unknown field", `layer { name: "l" type: "ConvolutionDepthwise" bottom: "data" top: "l" convolution_param { kernel_size: 3 multiplier: 2 } }`,
			`multiplier`, "unsupported field 'multiplier' in convolution_param of layer 'l'"},
		{"relu6 slope", `layer { name: "l" type: "ReLU6" bottom: "data" top: "l" relu6_param { negative_slope: "x" } }`,
			`"x"`, "negative_slope in relu6_param of layer 'l'"},
		{"relu6 relu_param field", `layer { name: "l" type: "ReLU6" bottom: "data" top: "l" relu6_param { engine: CAFFE } }`,
			`engine`, "unsupported field 'engine' in relu6_param of layer 'l'"},
		{"shuffle group 0", `layer { name: "l" type: "ShuffleChannel" bottom: "data" top: "l" shuffle_channel_param { group: 0 } }`,
			`0 }`, "group in shuffle_channel_param of layer 'l': must be at least 1, got 0"},
		{"permute negative", `layer { name: "l" type: "Permute" bottom: "data" top: "l" permute_param { order: -1 } }`,
			`-1`, "order in permute_param of layer 'l': must be at least 0, got -1"},
		{"permute twice", `layer { name: "l" type: "Permute" bottom: "data" top: "l" permute_param { order: 0 order: 2 order: 0 } }`,
			`0 } }`, "order in permute_param of layer 'l': axis 0 is given twice"},
		{"normalize eps", `layer { name: "l" type: "Normalize" bottom: "data" top: "l" norm_param { eps: -1 } }`,
			`-1`, "eps in norm_param of layer 'l': must not be negative"},
		{"normalize filler", `layer { name: "l" type: "Normalize" bottom: "data" top: "l" norm_param { scale_filler { type: "lecun" } } }`,
			`"lecun"`, "unsupported filler type \"lecun\" in scale_filler of norm_param of layer 'l'"},
		{"interp no size", `layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { pad_end: -1 } }`,
			`{ pad_end`, "interp_param of layer 'l' needs the output size: zoom_factor, shrink_factor, or height and width"},
		{"interp no param", `layer { name: "l" type: "Interp" bottom: "data" top: "l" }`,
			"", "interp_param of layer 'l' needs the output size"},
		{"interp height only", `layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { height: 4 } }`,
			`{ height`, "interp_param of layer 'l' gives one of height and width; give both"},
		{"interp zoom 0", `layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { zoom_factor: 0 } }`,
			`0 }`, "zoom_factor in interp_param of layer 'l': must be at least 1, got 0"},
		{"interp pad positive", `layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { zoom_factor: 2 pad_beg: 1 } }`,
			`1 }`, "pad_beg in interp_param of layer 'l': must be at most 0, got 1"},
		{"upsample one bottom", `layer { name: "l" type: "Upsample" bottom: "data" top: "l" upsample_param { scale: 2 } }`,
			"", "layer 'l' (Upsample) takes 2 bottoms, the values and the mask of a MAX Pooling, got 1"},
		{"upsample scale 1", `layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { scale: 1 } }`,
			`1 }`, "scale in upsample_param of layer 'l': must be at least 2, got 1"},
		{"upsample one size", `layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { upsample_h: 4 } }`,
			`{ upsample_h`, "upsample_param of layer 'l' gives one of upsample_h and upsample_w; give both"},
		{"upsample pad_out scale 3", `layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { scale: 3 pad_out_w: true } }`,
			`true`, "pad_out_w in upsample_param of layer 'l': needs scale 2"},
		{"upsample scale twice", `layer { name: "l" type: "Upsample" bottom: "data" bottom: "data" top: "l" upsample_param { scale: 2 scale_h: 2 scale_w: 2 } }`,
			`scale: 2 scale_h`, "upsample_param of layer 'l' gives scale and scale_h/scale_w; give one or the other"},
		{"SegNet's BN", `layer { name: "l" type: "BN" bottom: "data" top: "l" bn_param { scale_filler { type: "constant" value: 1 } bn_mode: INFERENCE } }`,
			`scale_filler`, "bn_param of layer 'l': scale_filler is a field of SegNet's BN (bn_param { bn_mode scale_filler shift_filler }), which dsgd does not run"},
		{"BN eps", `layer { name: "l" type: "BN" bottom: "data" top: "l" bn_param { frozen: true eps: 0 } }`,
			`0 }`, "eps in bn_param of layer 'l': must be positive, got 0"},
		{"interp two bottoms", `layer { name: "l" type: "Interp" bottom: "data" bottom: "data" top: "l" interp_param { zoom_factor: 2 } }`,
			"", "layer 'l' (Interp) takes 1 bottom, got 2: dsgd follows PSPNet's Interp"},
	})
}

// forkNet is a small net of the fork layers as published nets use them: a
// MobileNet-v2 block (1×1 expansion, PSPNet's frozen BN in place,
// ConvolutionDepthwise, ReLU6), a
// ShuffleNet channel shuffle, an SE block joined by Axpy, SSD's
// conv4_3_norm (Normalize per position with a per-channel scale of 20) and
// box-head Permute, and a PSPNet-style Interp, trained by a classifier.
const forkNet = `name: "fork-layers"
layer { name: "data" type: "Input" top: "data" top: "label"
  input_param { shape { dim: 4 dim: 3 dim: 8 dim: 8 } shape { dim: 4 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 8 kernel_size: 1 weight_filler { type: "msra" } } }
layer { name: "bn1" type: "BN" bottom: "conv1" top: "conv1"
  bn_param { slope_filler { type: "constant" value: 1 } bias_filler { type: "constant" value: 0 } frozen: true momentum: 0.95 } }
layer { name: "relu1" type: "ReLU6" bottom: "conv1" top: "conv1" }
layer { name: "conv1/dw" type: "ConvolutionDepthwise" bottom: "conv1" top: "conv1/dw"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false weight_filler { type: "msra" } } }
layer { name: "relu1/dw" type: "ReLU6" bottom: "conv1/dw" top: "conv1/dw" }
layer { name: "shuffle" type: "ShuffleChannel" bottom: "conv1/dw" top: "shuffle" shuffle_channel_param { group: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "shuffle" top: "conv2"
  convolution_param { num_output: 8 kernel_size: 1 weight_filler { type: "msra" } } }
layer { name: "se_pool" type: "Pooling" bottom: "conv2" top: "se_pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "se_down" type: "Convolution" bottom: "se_pool" top: "se_down"
  convolution_param { num_output: 2 kernel_size: 1 weight_filler { type: "msra" } } }
layer { name: "se_relu" type: "ReLU" bottom: "se_down" top: "se_down" }
layer { name: "se_up" type: "Convolution" bottom: "se_down" top: "se_up"
  convolution_param { num_output: 8 kernel_size: 1 weight_filler { type: "msra" } } }
layer { name: "se_prob" type: "Sigmoid" bottom: "se_up" top: "se_up" }
layer { name: "se" type: "Axpy" bottom: "se_up" bottom: "conv2" bottom: "conv1" top: "se" }
layer { name: "norm" type: "Normalize" bottom: "se" top: "norm"
  norm_param { across_spatial: false channel_shared: false scale_filler { type: "constant" value: 20 } } }
layer { name: "interp" type: "Interp" bottom: "norm" top: "interp" interp_param { shrink_factor: 2 } }
layer { name: "perm" type: "Permute" bottom: "interp" top: "perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "fc" type: "InnerProduct" bottom: "perm" top: "fc"
  inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.01 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
`

// TestForkNetTrains: the fork layers build through the normal net builder
// with the shapes their forks give, and plain SGD on one batch lowers the
// loss and moves every weight, so every layer's gradient reaches the
// weights below it.
func TestForkNetTrains(t *testing.T) {
	_, n := buildInputNet(t, forkNet)
	for blob, want := range map[string]tensor.Shape{
		"conv1/dw": {4, 8, 8, 8}, "shuffle": {4, 8, 8, 8}, "se": {4, 8, 8, 8},
		"norm": {4, 8, 8, 8}, "interp": {4, 8, 4, 4}, "perm": {4, 4, 4, 8},
	} {
		if got := n.Blob(blob).Shape; !got.Equal(want) {
			t.Errorf("%s: shape %v, want %v", blob, got, want)
		}
	}
	for _, b := range n.Blocks() {
		if b.Layer == "conv1/dw" && !b.Shape.Equal(tensor.Shape{8, 1, 3, 3}) {
			t.Errorf("conv1/dw weight %v, want [8 1 3 3] (Caffe's grouped Convolution layout)", b.Shape)
		}
		if b.Layer == "bn1" && (!b.Shape.Equal(tensor.Shape{1, 8, 1, 1}) || b.LRMult != 0) {
			t.Errorf("bn1 block %s: %v lr_mult %v, want 1×8×1×1, frozen", b.Name, b.Shape, b.LRMult)
		}
		if b.Layer == "norm" && (!b.Shape.Equal(tensor.Shape{8}) || n.Params()[b.Off] != 20) {
			t.Errorf("norm scale %v starting %v, want [8] filled with 20", b.Shape, n.Params()[b.Off])
		}
	}
	data, label := n.Input("data"), n.Input("label")
	for i := range data.Data {
		data.Data[i] = float32(math.Sin(float64(i)*0.37)) + float32(i%3)*0.1
	}
	copy(label.Data, []float32{0, 1, 2, 1})
	start := append([]float32(nil), n.Params()...)
	first := n.ForwardBackward()
	loss := first
	for range 40 {
		tensor.Axpy(-0.05, n.Grads(), n.Params())
		loss = n.ForwardBackward()
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			t.Fatalf("loss %v", loss)
		}
	}
	t.Logf("loss %.4f after 40 steps, from %.4f", loss, first)
	// Every block moved: each layer passed a gradient down to the weights
	// below it (the SE branch's through Axpy's scale).
	for _, b := range n.Blocks() {
		if b.LRMult == 0 {
			continue // the frozen BN's blobs
		}
		moved := false
		for i := b.Off; i < b.Off+b.Shape.Count(); i++ {
			moved = moved || n.Params()[i] != start[i]
		}
		if !moved {
			t.Errorf("block %s of layer %s did not move in training", b.Name, b.Layer)
		}
	}
	if !(loss < 0.5*first) {
		t.Errorf("40 SGD steps took the loss from %v to %v; want it halved", first, loss)
	}
}

// TestForkNetFiles: the fork fixtures that were refused before dsgd ran
// their layers (SENet's SE block, the Xception depthwise convolution,
// SegNet's unpooling) now build and run forward.
func TestForkNetFiles(t *testing.T) {
	for file, top := range map[string]string{"senet_axpy.prototxt": "conv2_1", "xception_dw.prototxt": "xception1_conv1_1", "segnet_upsample.prototxt": "pool1_D"} {
		nd, err := LoadNet(filepath.Join("testdata", "forks", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		src, err := os.ReadFile(nd.File)
		if err != nil {
			t.Fatal(err)
		}
		_, n := buildInputNet(t, string(src))
		n.Forward()
		if got, want := n.Blob(top).Shape, n.Input("data").Shape; !got.Equal(want) {
			t.Errorf("%s: %s is %v, want the input's %v", file, top, got, want)
		}
	}
}

// TestForkBuildErrors: what only the bottoms' shapes reveal is refused
// when the net is built, naming the layer and its file:line (extraInput's
// data is 2×3×9×8).
func TestForkBuildErrors(t *testing.T) {
	for _, c := range []struct{ name, layer, want string }{
		{"axpy two bottoms", `layer { name: "l" type: "Axpy" bottom: "data" bottom: "data" top: "l" }`,
			"Axpy takes 3 bottom blob(s), got 2"},
		{"axpy scale not N×C", `layer { name: "l" type: "Axpy" bottom: "data" bottom: "data" bottom: "data" top: "l" }`,
			"the scale (bottom 0) 2x3x9x8 (432) must be N×C or N×C×1×1"},
		{"ConvolutionDepthwise num_output", `layer { name: "l" type: "ConvolutionDepthwise" bottom: "data" top: "l" convolution_param { num_output: 6 kernel_size: 3 } }`,
			"num_output 6 must equal the bottom's 3 channels"},
		{"DepthwiseConvolution group", `layer { name: "l" type: "DepthwiseConvolution" bottom: "data" top: "l" convolution_param { num_output: 6 group: 2 kernel_size: 3 } }`,
			"group 2 must equal the bottom's 3 channels"},
		{"DepthwiseConvolution num_output", `layer { name: "l" type: "DepthwiseConvolution" bottom: "data" top: "l" convolution_param { num_output: 4 kernel_size: 3 } }`,
			"num_output 4 must be a multiple of the bottom's 3 channels"},
		{"ShuffleChannel group", `layer { name: "l" type: "ShuffleChannel" bottom: "data" top: "l" shuffle_channel_param { group: 2 } }`,
			"needs a channel axis that group 2 divides"},
		{"Permute axis", `layer { name: "l" type: "Permute" bottom: "data" top: "l" permute_param { order: 4 } }`,
			"order [4] names axis 4, but bottom"},
		{"Interp crop", `layer { name: "l" type: "Interp" bottom: "data" top: "l" interp_param { zoom_factor: 2 pad_beg: -5 pad_end: -4 } }`,
			"crop bottom 2x3x9x8 (432) to nothing"},
		{"BN not frozen", `layer { name: "l" type: "BN" bottom: "data" top: "data" bn_param { eps: 0.001 } }`,
			"BN: PSPNet's BN with frozen: false trains on its batch's statistics, which dsgd does not run; give bn_param { frozen: true }"},
		{"Upsample mask", `layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "l" type: "Upsample" bottom: "p" bottom: "data" top: "l" }`,
			"the values 2x3x5x4 (120) must be 4-D (NCHW) and the mask 2x3x9x8 (432) of their shape"},
	} {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		pn := mustPhase(t, nd, layers.Train)
		_, err = model.Build(pn.Spec, map[string]tensor.Shape{"data": {2, 3, 9, 8}}, model.Options{Phase: layers.Train, Seed: 1})
		line := strings.Count(extraInput+c.layer[:strings.LastIndex(c.layer, "layer {")], "\n") + 1
		want := fmt.Sprintf(`model: layer "l" (f.prototxt:%d:1): layers: `, line)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q and %q", c.name, err, want, c.want)
		}
	}
}

// decodeCase is a layer (after extraInput's) and the config it must
// decode to.
type decodeCase struct {
	layer string
	want  layers.Config
}

// checkDecodes parses each case's layer in a net after extraInput and
// checks the TRAIN net's layer "l" has the wanted config.
func checkDecodes(t *testing.T, cases []decodeCase) {
	t.Helper()
	for _, c := range cases {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		if err != nil {
			t.Errorf("%s: %v", c.layer, err)
			continue
		}
		if got := findLayer(t, mustPhase(t, nd, layers.Train).Spec, "l").Config; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s decodes to %#v, want %#v", c.layer, got, c.want)
		}
	}
}

// decodeErrCase is a layer (after extraInput's) that must be refused: the
// error's text, and at, the text the error points at (its column; "" for
// the layer's start).
type decodeErrCase struct{ name, layer, at, want string }

// checkDecodeErrors parses each case's layer after extraInput and checks
// the error is at its line and column and says what it should.
func checkDecodeErrors(t *testing.T, cases []decodeErrCase) {
	t.Helper()
	for _, c := range cases {
		_, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		col := 1
		if c.at != "" {
			col = strings.LastIndex(c.layer, c.at) + 1
		}
		want := fmt.Sprintf("f.prototxt:2:%d: %s", col, c.want)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", c.name, err, want)
		}
	}
}

// buildForkFixture reads testdata/forks/file (checking it loads as a net
// file) and builds its TRAIN net on its Input layers' shapes.
func buildForkFixture(t *testing.T, file string) *model.Net {
	t.Helper()
	nd, err := LoadNet(filepath.Join("testdata", "forks", file))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(nd.File)
	if err != nil {
		t.Fatal(err)
	}
	_, n := buildInputNet(t, string(src))
	return n
}
