package caffedef

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/prototxt"
	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
)

func constant(v float32) layers.Filler {
	return layers.Filler{Type: layers.FillConstant, Value: v, Max: 1, Std: 1}
}

func xavier() layers.Filler {
	return layers.Filler{Type: layers.FillXavier, Max: 1, Std: 1}
}

func gaussian(std float32) layers.Filler {
	return layers.Filler{Type: layers.FillGaussian, Max: 1, Std: std}
}

// lrMults is the param { lr_mult: 1 } param { lr_mult: 2 } of Caffe's
// examples.
var lrMults = []model.ParamSpec{{LRMult: 1, DecayMult: 1, LRSet: true}, {LRMult: 2, DecayMult: 1, LRSet: true}}

func mustPhase(t *testing.T, n *NetDef, p layers.Phase) *PhaseNet {
	t.Helper()
	pn, err := n.Phase(p)
	if err != nil {
		t.Fatalf("Phase(%v): %v", p, err)
	}
	if pn.Phase != p {
		t.Fatalf("Phase(%v).Phase = %v", p, pn.Phase)
	}
	return pn
}

func layerNames(s model.Spec) []string {
	var out []string
	for _, l := range s.Layers {
		out = append(out, l.Name)
	}
	return out
}

func findLayer(t *testing.T, s model.Spec, name string) model.LayerSpec {
	t.Helper()
	for _, l := range s.Layers {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no layer %q in %v", name, layerNames(s))
	return model.LayerSpec{}
}

func TestLeNet(t *testing.T) {
	const file = "testdata/lenet_train_test.prototxt"
	n, err := LoadNet(file)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "LeNet" || n.File != file || len(n.Layers) != 11 {
		t.Errorf("Name %q File %q, %d layers", n.Name, n.File, len(n.Layers))
	}
	if len(n.Warnings) != 0 {
		t.Errorf("Warnings = %q, want none", n.Warnings)
	}

	train := mustPhase(t, n, layers.Train)
	wantData := []DataLayer{{
		Name: "mnist", Type: "Data", Tops: []string{"data", "label"},
		Source: "examples/mnist/mnist_train_lmdb", BatchSize: 64,
		Transform:    data.TransformConfig{Scale: 0.00390625},
		DataSettings: DataSettings{Backend: "LMDB"},
		Pos:          file + ":2:1",
	}}
	if !reflect.DeepEqual(train.Data, wantData) {
		t.Errorf("train Data = %+v\nwant %+v", train.Data, wantData)
	}
	if train.Spec.Name != "LeNet" || !slices.Equal(train.Spec.Inputs, []string{"data", "label"}) {
		t.Errorf("train Spec name %q inputs %q", train.Spec.Name, train.Spec.Inputs)
	}
	if got, want := layerNames(train.Spec), []string{"conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "loss"}; !slices.Equal(got, want) {
		t.Errorf("train layers %q, want %q", got, want)
	}
	wantConv1 := model.LayerSpec{
		Name: "conv1", Bottom: []string{"data"}, Top: []string{"conv1"}, Params: lrMults,
		Config: &layers.ConvolutionConfig{
			NumOutput: 20, KernelH: 5, KernelW: 5, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true,
			WeightFiller: xavier(), BiasFiller: constant(0),
		},
		Pos: file + ":36:1",
	}
	if got := findLayer(t, train.Spec, "conv1"); !reflect.DeepEqual(got, wantConv1) {
		t.Errorf("conv1 = %+v\nwant %+v", got, wantConv1)
	}
	wantPool := &layers.PoolingConfig{Method: layers.PoolMax, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}
	if got := findLayer(t, train.Spec, "pool2").Config; !reflect.DeepEqual(got, wantPool) {
		t.Errorf("pool2 = %+v, want %+v", got, wantPool)
	}
	wantIP1 := &layers.InnerProductConfig{NumOutput: 500, BiasTerm: true, Axis: 1, WeightFiller: xavier(), BiasFiller: constant(0)}
	if got := findLayer(t, train.Spec, "ip1").Config; !reflect.DeepEqual(got, wantIP1) {
		t.Errorf("ip1 = %+v, want %+v", got, wantIP1)
	}
	relu := findLayer(t, train.Spec, "relu1")
	if !reflect.DeepEqual(relu.Config, &layers.ReLUConfig{}) || relu.Bottom[0] != "ip1" || relu.Top[0] != "ip1" || relu.Params != nil {
		t.Errorf("relu1 = %+v", relu)
	}
	loss := findLayer(t, train.Spec, "loss")
	if !reflect.DeepEqual(loss.Config, &layers.SoftmaxWithLossConfig{Axis: 1}) ||
		!slices.Equal(loss.Bottom, []string{"ip2", "label"}) || loss.LossWeight != nil {
		t.Errorf("loss = %+v", loss)
	}

	test := mustPhase(t, n, layers.Test)
	if len(test.Data) != 1 || test.Data[0].BatchSize != 100 || test.Data[0].Source != "examples/mnist/mnist_test_lmdb" ||
		test.Data[0].Pos != file+":19:1" {
		t.Errorf("test Data = %+v", test.Data)
	}
	if got, want := layerNames(test.Spec), []string{"conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "accuracy", "loss"}; !slices.Equal(got, want) {
		t.Errorf("test layers %q, want %q", got, want)
	}
	acc := findLayer(t, test.Spec, "accuracy")
	if !reflect.DeepEqual(acc.Config, &layers.AccuracyConfig{TopK: 1, Axis: 1}) {
		t.Errorf("accuracy = %+v", acc.Config)
	}
}

func TestCifar10Quick(t *testing.T) {
	const file = "testdata/cifar10_quick_train_test.prototxt"
	n, err := LoadNet(file)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "CIFAR10_quick" || len(n.Warnings) != 0 {
		t.Errorf("Name %q, warnings %q", n.Name, n.Warnings)
	}
	train := mustPhase(t, n, layers.Train)
	want := []string{"conv1", "pool1", "relu1", "conv2", "relu2", "pool2", "conv3", "relu3", "pool3", "ip1", "ip2", "loss"}
	if got := layerNames(train.Spec); !slices.Equal(got, want) {
		t.Errorf("train layers %q, want %q", got, want)
	}
	if len(train.Data) != 1 || train.Data[0].Transform.MeanFile != "examples/cifar10/mean.binaryproto" ||
		train.Data[0].Transform.Scale != 1 || train.Data[0].BatchSize != 100 {
		t.Errorf("train Data = %+v", train.Data)
	}
	wantConv1 := &layers.ConvolutionConfig{
		NumOutput: 32, KernelH: 5, KernelW: 5, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, Group: 1, BiasTerm: true,
		WeightFiller: gaussian(0.0001), BiasFiller: constant(0),
	}
	if got := findLayer(t, train.Spec, "conv1").Config; !reflect.DeepEqual(got, wantConv1) {
		t.Errorf("conv1 = %+v\nwant %+v", got, wantConv1)
	}
	wantPool2 := &layers.PoolingConfig{Method: layers.PoolAve, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}
	if got := findLayer(t, train.Spec, "pool2").Config; !reflect.DeepEqual(got, wantPool2) {
		t.Errorf("pool2 = %+v", got)
	}
	ip1 := findLayer(t, train.Spec, "ip1")
	if c := ip1.Config.(*layers.InnerProductConfig); c.NumOutput != 64 || c.WeightFiller != gaussian(0.1) ||
		!reflect.DeepEqual(ip1.Params, lrMults) {
		t.Errorf("ip1 = %+v", ip1)
	}
	test := mustPhase(t, n, layers.Test)
	if got := layerNames(test.Spec); len(got) != 13 || got[11] != "accuracy" {
		t.Errorf("test layers %q", got)
	}
}

// net wraps layer definitions in a net with a TRAIN data layer "d"
// producing data and label (lines 1-6); the first line of extra is line 7.
func net(extra string) string {
	return `name: "t"
layer {
  name: "d" type: "Input" top: "data" top: "label"
  input_param { shape { dim: 2 dim: 1 dim: 8 dim: 8 } shape { dim: 2 } }
}
# line 6
` + extra
}

func TestLayerConfigs(t *testing.T) {
	one := func(v int) *int { return &v }
	yes := true
	tests := []struct {
		name, layer string
		want        layers.Config
	}{
		{"conv defaults", `type: "Convolution" convolution_param { num_output: 4 kernel_size: 3 }`,
			&layers.ConvolutionConfig{NumOutput: 4, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true,
				WeightFiller: constant(0), BiasFiller: constant(0)}},
		{"conv rect", `type: "Convolution" convolution_param { num_output: 4 kernel_size: 3 kernel_size: 5 stride: [2, 1]
			pad_h: 1 group: 2 bias_term: false dilation: 1 engine: CAFFE
			weight_filler { type: "msra" variance_norm: FAN_OUT } bias_filler { type: "uniform" min: -1 max: 2 } }`,
			&layers.ConvolutionConfig{NumOutput: 4, KernelH: 3, KernelW: 5, StrideH: 2, StrideW: 1, PadH: 1, Group: 2,
				DilationH: 1, DilationW: 1,
				WeightFiller: layers.Filler{Type: layers.FillMSRA, Max: 1, Std: 1, VarianceNorm: layers.FanOut},
				BiasFiller:   layers.Filler{Type: layers.FillUniform, Min: -1, Max: 2, Std: 1},
				ND:           &layers.ConvND{Axis: 1, Kernel: []int{3, 5}, Stride: []int{2, 1}, Dilation: []int{1}, PadHW: true}}},
		{"conv h w", `type: "Convolution" convolution_param { num_output: 1 kernel_h: 2 kernel_w: 4 stride_w: 3 pad: 1 }`,
			&layers.ConvolutionConfig{NumOutput: 1, KernelH: 2, KernelW: 4, StrideH: 1, StrideW: 3, PadH: 1, PadW: 1, Group: 1,
				BiasTerm: true, WeightFiller: constant(0), BiasFiller: constant(0),
				ND: &layers.ConvND{Axis: 1, Pad: []int{1}, KernelHW: true, StrideHW: true}}},
		// N-D fields decode as given; the layer resolves them against the
		// bottom's spatial axes (Caffe's LayerSetUp).
		{"conv 3d", `type: "Convolution" convolution_param { num_output: 2 kernel_size: [3, 2, 1] stride: 2 pad: [0, 1, 2]
			dilation: [1, 2, 1] }`,
			&layers.ConvolutionConfig{NumOutput: 2, StrideH: 2, StrideW: 2, Group: 1, BiasTerm: true,
				WeightFiller: constant(0), BiasFiller: constant(0),
				ND: &layers.ConvND{Axis: 1, Kernel: []int{3, 2, 1}, Stride: []int{2}, Pad: []int{0, 1, 2}, Dilation: []int{1, 2, 1}}}},
		{"conv axis force_nd", `type: "Convolution" convolution_param { num_output: 2 kernel_size: 3 axis: -3 force_nd_im2col: true }`,
			&layers.ConvolutionConfig{NumOutput: 2, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true,
				WeightFiller: constant(0), BiasFiller: constant(0),
				ND: &layers.ConvND{Axis: -3, Kernel: []int{3}, ForceND: true}}},
		{"conv 0d", `type: "Convolution" convolution_param { num_output: 3 axis: 3 }`,
			&layers.ConvolutionConfig{NumOutput: 3, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true,
				WeightFiller: constant(0), BiasFiller: constant(0), ND: &layers.ConvND{Axis: 3}}},
		{"deconv 3d", `type: "Deconvolution" convolution_param { num_output: 2 kernel_size: [2, 2, 2] stride: [2, 1, 2] }`,
			&layers.DeconvolutionConfig{ConvolutionConfig: layers.ConvolutionConfig{NumOutput: 2, PadH: 0, Group: 1, BiasTerm: true,
				WeightFiller: constant(0), BiasFiller: constant(0),
				ND: &layers.ConvND{Axis: 1, Kernel: []int{2, 2, 2}, Stride: []int{2, 1, 2}}}}},
		{"pool global ave", `type: "Pooling" pooling_param { pool: AVE global_pooling: true }`,
			&layers.PoolingConfig{Method: layers.PoolAve, StrideH: 1, StrideW: 1, GlobalPooling: true}},
		{"pool defaults", `type: "Pooling" pooling_param { kernel_h: 3 kernel_w: 2 pad: 1 round_mode: CEIL }`,
			&layers.PoolingConfig{Method: layers.PoolMax, KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}},
		{"pool fork ceil_mode false", `type: "Pooling" pooling_param { kernel_size: 3 stride: 2 ceil_mode: false }`,
			&layers.PoolingConfig{Method: layers.PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, RoundFloor: true}},
		{"pool fork ceil_mode true", `type: "Pooling" pooling_param { kernel_size: 3 ceil_mode: true }`,
			&layers.PoolingConfig{Method: layers.PoolMax, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1}},
		{"ip", `type: "InnerProduct" inner_product_param { num_output: 7 axis: 2 transpose: true bias_term: false
			weight_filler { type: "gaussian" mean: 0.5 std: 0.1 } bias_filler { value: 0.2 } }`,
			&layers.InnerProductConfig{NumOutput: 7, Axis: 2, Transpose: true,
				WeightFiller: layers.Filler{Type: layers.FillGaussian, Mean: 0.5, Std: 0.1, Max: 1}, BiasFiller: constant(0.2)}},
		{"leaky relu", `type: "ReLU" relu_param { negative_slope: 0.1 }`, &layers.ReLUConfig{NegativeSlope: 0.1}},
		{"sigmoid", `type: "Sigmoid"`, &layers.SigmoidConfig{}},
		{"tanh", `type: "TanH" tanh_param { engine: DEFAULT }`, &layers.TanHConfig{}},
		{"dropout default", `type: "Dropout"`, &layers.DropoutConfig{Ratio: 0.5}},
		{"dropout", `type: "Dropout" dropout_param { dropout_ratio: 0.25 }`, &layers.DropoutConfig{Ratio: 0.25}},
		{"lrn default", `type: "LRN"`, &layers.LRNConfig{LocalSize: 5, Alpha: 1, Beta: 0.75, K: 1}},
		{"lrn", `type: "LRN" lrn_param { local_size: 3 alpha: 5e-05 beta: 0.5 k: 2 norm_region: WITHIN_CHANNEL }`,
			&layers.LRNConfig{LocalSize: 3, Alpha: 5e-05, Beta: 0.5, K: 2, NormRegion: layers.WithinChannel}},
		{"concat default", `type: "Concat" bottom: "label"`, &layers.ConcatConfig{Axis: 1}},
		{"concat dim", `type: "Concat" concat_param { concat_dim: 0 }`, &layers.ConcatConfig{Axis: 0}},
		{"concat axis", `type: "Concat" concat_param { axis: -1 }`, &layers.ConcatConfig{Axis: -1}},
		{"eltwise default", `type: "Eltwise" bottom: "data"`, &layers.EltwiseConfig{Operation: layers.EltwiseSum}},
		{"eltwise coeff", `type: "Eltwise" bottom: "data" eltwise_param { operation: SUM coeff: 1 coeff: -1 }`,
			&layers.EltwiseConfig{Operation: layers.EltwiseSum, Coeff: []float32{1, -1}}},
		{"eltwise max", `type: "Eltwise" eltwise_param { operation: MAX }`, &layers.EltwiseConfig{Operation: layers.EltwiseMax}},
		{"flatten", `type: "Flatten"`, &layers.FlattenConfig{Axis: 1, EndAxis: -1}},
		{"batchnorm default", `type: "BatchNorm"`, &layers.BatchNormConfig{MovingAverageFraction: 0.999, Eps: 1e-5}},
		{"batchnorm", `type: "BatchNorm" batch_norm_param { use_global_stats: true moving_average_fraction: 0.9 eps: 0.001 }`,
			&layers.BatchNormConfig{UseGlobalStats: &yes, MovingAverageFraction: 0.9, Eps: 0.001}},
		{"scale default", `type: "Scale"`, &layers.ScaleConfig{Axis: 1, NumAxes: 1, Filler: constant(1), BiasFiller: constant(0)}},
		{"scale", `type: "Scale" scale_param { axis: 0 num_axes: -1 bias_term: true filler { value: 2 } bias_filler { value: 3 } }`,
			&layers.ScaleConfig{Axis: 0, NumAxes: -1, BiasTerm: true, Filler: constant(2), BiasFiller: constant(3)}},
		{"softmax", `type: "Softmax" softmax_param { axis: 2 }`, &layers.SoftmaxConfig{Axis: 2}},
		{"softmax loss", `type: "SoftmaxWithLoss" loss_param { ignore_label: 1 normalization: FULL }`,
			&layers.SoftmaxWithLossConfig{Axis: 1, IgnoreLabel: one(1), Normalization: layers.NormFull}},
		{"softmax loss normalize false", `type: "SoftmaxWithLoss" loss_param { normalize: false }`,
			&layers.SoftmaxWithLossConfig{Axis: 1, Normalization: layers.NormBatchSize}},
		{"softmax loss normalize true", `type: "SoftmaxWithLoss" loss_param { normalize: true }`,
			&layers.SoftmaxWithLossConfig{Axis: 1, Normalization: layers.NormValid}},
		{"softmax loss normalization wins", `type: "SoftmaxWithLoss" loss_param { normalize: false normalization: NONE }`,
			&layers.SoftmaxWithLossConfig{Axis: 1, Normalization: layers.NormNone}},
		{"accuracy", `type: "Accuracy" accuracy_param { top_k: 5 axis: 1 ignore_label: -1 }`,
			&layers.AccuracyConfig{TopK: 5, Axis: 1, IgnoreLabel: one(-1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := net("layer { name: \"x\" bottom: \"data\" top: \"y\" " + tt.layer + " }")
			n, err := ParseNet("f.prototxt", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			pn := mustPhase(t, n, layers.Train)
			if len(pn.Spec.Layers) != 1 {
				t.Fatalf("%d layers", len(pn.Spec.Layers))
			}
			if got := pn.Spec.Layers[0].Config; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("config\n%#v\nwant\n%#v", got, tt.want)
			}
			if got := pn.Spec.Layers[0].Config.Type(); got != n.Layers[1].Type {
				t.Errorf("Config.Type() = %q, layer type %q", got, n.Layers[1].Type)
			}
		})
	}
}

func TestLayerFields(t *testing.T) {
	src := net(`layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  param { name: "w" lr_mult: 0.5 } param { decay_mult: 0 }
  inner_product_param { num_output: 3 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss"
  loss_weight: 0.5 propagate_down: true propagate_down: false }
`)
	n, err := ParseNet("f.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, n, layers.Test)
	ip, loss := pn.Spec.Layers[0], pn.Spec.Layers[1]
	wantParams := []model.ParamSpec{{Name: "w", LRMult: 0.5, DecayMult: 1, LRSet: true}, {LRMult: 1, DecayMult: 0, DecaySet: true}}
	if !reflect.DeepEqual(ip.Params, wantParams) || ip.Pos != "f.prototxt:7:1" {
		t.Errorf("ip = %+v", ip)
	}
	if !slices.Equal(loss.LossWeight, []float32{0.5}) || !slices.Equal(loss.PropagateDown, []bool{true, false}) ||
		loss.Pos != "f.prototxt:10:1" {
		t.Errorf("loss = %+v", loss)
	}
	wantData := []DataLayer{{Name: "d", Type: "Input", Tops: []string{"data", "label"},
		Shapes: [][]int{{2, 1, 8, 8}, {2}}, Pos: "f.prototxt:2:1"}}
	if !reflect.DeepEqual(pn.Data, wantData) || !slices.Equal(pn.Spec.Inputs, []string{"data", "label"}) {
		t.Errorf("Data = %+v, Inputs %q", pn.Data, pn.Spec.Inputs)
	}
}

func TestInputOneShapeForAllTops(t *testing.T) {
	src := `layer { name: "in" type: "Input" top: "a" top: "b" input_param { shape: { dim: [1, 3] } } }`
	n, err := ParseNet("f", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Layers[0].Data.Shapes; !reflect.DeepEqual(got, [][]int{{1, 3}, {1, 3}}) {
		t.Errorf("Shapes = %v", got)
	}
}

func TestLegacyInput(t *testing.T) {
	tests := []struct {
		name, src string
		shapes    [][]int
	}{
		{"input_dim", `name: "n" input: "data" input_dim: 1 input_dim: 3 input_dim: 32 input_dim: 32
			layer { name: "r" type: "ReLU" bottom: "data" top: "data" }`, [][]int{{1, 3, 32, 32}}},
		{"input_shape", `input: "a" input_shape { dim: 2 dim: 5 } input: "b" input_shape { dim: 2 }`,
			[][]int{{2, 5}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseNet("f", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			pn := mustPhase(t, n, layers.Train)
			if len(pn.Data) != 1 || pn.Data[0].Type != "Input" || pn.Data[0].Name != "input" ||
				!reflect.DeepEqual(pn.Data[0].Shapes, tt.shapes) || pn.Data[0].Pos == "" {
				t.Errorf("Data = %+v", pn.Data)
			}
		})
	}
}

func TestInPhase(t *testing.T) {
	tr, te := PhaseRule{Phase: layers.Train, HasPhase: true}, PhaseRule{Phase: layers.Test, HasPhase: true}
	any := PhaseRule{}
	tests := []struct {
		name             string
		include, exclude []PhaseRule
		inTrain, inTest  bool
	}{
		{"no rules", nil, nil, true, true},
		{"include train", []PhaseRule{tr}, nil, true, false},
		{"include test", []PhaseRule{te}, nil, false, true},
		{"include both", []PhaseRule{tr, te}, nil, true, true},
		{"include any", []PhaseRule{any}, nil, true, true},
		{"exclude test", nil, []PhaseRule{te}, true, false},
		{"exclude any", nil, []PhaseRule{any}, false, false},
	}
	for _, tt := range tests {
		l := &LayerDef{Include: tt.include, Exclude: tt.exclude}
		if l.InPhase(layers.Train) != tt.inTrain || l.InPhase(layers.Test) != tt.inTest {
			t.Errorf("%s: InPhase(TRAIN) = %v, InPhase(TEST) = %v; want %v, %v",
				tt.name, l.InPhase(layers.Train), l.InPhase(layers.Test), tt.inTrain, tt.inTest)
		}
	}
	n, err := ParseNet("f", []byte(net(`layer { name: "r" type: "ReLU" bottom: "data" top: "data" exclude { phase: TEST } }`)))
	if err != nil {
		t.Fatal(err)
	}
	if r := n.Layers[1]; !reflect.DeepEqual(r.Exclude, []PhaseRule{te}) || r.Include != nil {
		t.Errorf("rules = %+v / %+v", r.Include, r.Exclude)
	}
	if got := len(mustPhase(t, n, layers.Test).Spec.Layers); got != 0 {
		t.Errorf("TEST has %d layers, want 0", got)
	}
}

func TestNetErrors(t *testing.T) {
	conv := func(body string) string {
		return net(`layer {
  name: "conv1"
  type: "Convolution"
  bottom: "data"
  top: "conv1"
  convolution_param {
    ` + body + `
  }
}`)
	}
	// conv's body starts at line 13, column 5.
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "layer {", "f.prototxt:1:8: expected field name or '}', found end of file"},
		{"unknown net field", "name: \"n\"\nfoo: 1", "f.prototxt:2:1: unsupported field 'foo' in net"},
		{"v1 type string", "layers { name: \"a\" type: \"Convolution\" }", "f.prototxt:1:26: type in a V1 'layers' block is an enum such as CONVOLUTION"},
		{"v1 unknown type", "layers { name: \"a\" type: CONV }", "f.prototxt:1:26: unknown V1 layer type CONV"},

		{"v1 unknown field", "layers { name: \"a\" type: RELU foo: 1 }", "f.prototxt:1:31: unknown field 'foo' in a V1 'layers' block"},
		{"v1 and v2", "layers { name: \"a\" type: RELU }\nlayer { name: \"b\" }", "f.prototxt:2:1: net mixes the V1 format"},
		{"v1 bad field in param", "input: \"data\" input_dim: [1, 1, 2, 2]\nlayers { name: \"a\" type: RELU bottom: \"data\" top: \"data\" relu_param { slope: 1 } }",
			"f.prototxt:2:71: unsupported field 'slope' in relu_param of layer 'a'"},
		{"engine ok but unknown field", conv("num_output: 2 kernel_size: 3 foo: 1"),
			"f.prototxt:13:34: unsupported field 'foo' in convolution_param of layer 'conv1'"},
		{"conv no num_output", conv("kernel_size: 3"), "f.prototxt:12:21: convolution_param of layer 'conv1' needs num_output"},
		{"conv num_output string", conv(`num_output: "2" kernel_size: 3`),
			`f.prototxt:13:17: num_output in convolution_param of layer 'conv1': expected an integer, found string "2"`},
		{"conv num_output zero", conv(`num_output: 0 kernel_size: 3`),
			`f.prototxt:13:17: num_output in convolution_param of layer 'conv1': must be at least 1, got 0`},
		{"conv num_output float", conv(`num_output: 2.5 kernel_size: 3`),
			`f.prototxt:13:17: num_output in convolution_param of layer 'conv1': expected an integer, found float 2.5`},
		{"conv dilation count", conv("num_output: 2 kernel_size: [3, 3, 3] dilation: [1, 2]"),
			"f.prototxt:13:42: convolution_param of layer 'conv1' gives kernel_size for 3 spatial axes but dilation for 2; each is given once or once per spatial axis"},
		{"conv stride_h on 3-D", conv("num_output: 2 kernel_size: [3, 3, 3] stride_h: 2 stride_w: 2"),
			"f.prototxt:13:42: convolution_param of layer 'conv1' gives kernel_size for 3 spatial axes but stride for 2"},
		{"conv 3-D kernel and kernel_h", conv("num_output: 2 kernel_size: [3, 3, 3] kernel_h: 3 kernel_w: 3"),
			"f.prototxt:13:42: convolution_param of layer 'conv1' gives both kernel_size and kernel_h/kernel_w"},
		{"conv force_nd not bool", conv("num_output: 2 kernel_size: 3 force_nd_im2col: 3"),
			"f.prototxt:13:51: force_nd_im2col in convolution_param of layer 'conv1': expected true or false"},
		{"conv axis float", conv("num_output: 2 kernel_size: 3 axis: 1.5"),
			"f.prototxt:13:40: axis in convolution_param of layer 'conv1': expected an integer"},
		{"conv kernel both", conv("num_output: 2 kernel_size: 3 kernel_h: 3 kernel_w: 3"),
			"f.prototxt:13:34: convolution_param of layer 'conv1' gives both kernel_size and kernel_h/kernel_w"},
		{"conv kernel_h only", conv("num_output: 2 kernel_h: 3"),
			"f.prototxt:12:21: convolution_param of layer 'conv1' needs both kernel_h and kernel_w"},
		{"conv negative pad", conv("num_output: 2 kernel_size: 3 pad: -1"),
			"f.prototxt:13:39: pad in convolution_param of layer 'conv1': must be at least 0, got -1"},
		{"conv group", conv("num_output: 3 kernel_size: 3 group: 2"),
			"f.prototxt:12:21: convolution_param of layer 'conv1': num_output 3 is not a multiple of group 2"},
		{"conv bias_term value", conv("num_output: 2 kernel_size: 3 bias_term: yes"),
			"f.prototxt:13:45: bias_term in convolution_param of layer 'conv1': expected true or false, found identifier yes"},
		{"conv twice", conv("num_output: 2 kernel_size: 3 num_output: 4"),
			"f.prototxt:13:34: num_output in convolution_param of layer 'conv1' is given more than once (first at f.prototxt:13:5)"},
		{"conv param is scalar", net(`layer { name: "c" type: "Convolution" bottom: "data" top: "c" convolution_param: 3 }`),
			"f.prototxt:7:82: convolution_param in layer 'c' is a message"},
		{"conv scalar is message", conv("num_output { } kernel_size: 3"),
			"f.prototxt:13:16: num_output in convolution_param of layer 'conv1' takes a value, not a message"},
		{"filler type", conv(`num_output: 2 kernel_size: 3 weight_filler { type: "unitball" }`),
			`f.prototxt:13:56: unsupported filler type "unitball" in weight_filler of convolution_param of layer 'conv1'`},
		{"filler unknown field", conv(`num_output: 2 kernel_size: 3 bias_filler { type: "constant" val: 1 }`),
			`f.prototxt:13:65: unsupported field 'val' in bias_filler of convolution_param of layer 'conv1'`},
		{"filler variance_norm", conv(`num_output: 2 kernel_size: 3 weight_filler { type: "xavier" variance_norm: FANIN }`),
			`f.prototxt:13:80: variance_norm in weight_filler of convolution_param of layer 'conv1': unknown value FANIN; expected one of FAN_IN, FAN_OUT, AVERAGE`},
		{"filler sparse", conv(`num_output: 2 kernel_size: 3 weight_filler { type: "xavier" sparse: 5 }`),
			`f.prototxt:13:65: unsupported field 'sparse' in weight_filler`},
		{"filler sparse 0", conv(`num_output: 2 kernel_size: 3 weight_filler { type: "gaussian" sparse: 0 }`),
			`f.prototxt:13:75: sparse in weight_filler`},
		{"uniform min max", conv(`num_output: 2 kernel_size: 3 weight_filler { type: "uniform" min: 2 max: 1 }`),
			`f.prototxt:13:48: weight_filler of convolution_param of layer 'conv1': uniform min 2 is greater than max 1`},
		{"misspelt param message", net(`layer { name: "r" type: "ReLU" bottom: "data" top: "r"
  poolng_param { pool: MAX } }`), "f.prototxt:8:3: unsupported field 'poolng_param' in layer 'r'"},
		{"pool stochastic pad", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { pool: STOCHASTIC kernel_size: 2 pad: 1 } }`),
			"f.prototxt:8:17: pooling_param of layer 'p': STOCHASTIC pooling takes no pad"},
		{"pool enum string", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { pool: "MAX" kernel_size: 2 } }`),
			`f.prototxt:8:25: pool in pooling_param of layer 'p': expected one of MAX, AVE, STOCHASTIC, found string "MAX"`},
		{"pool global with kernel", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { global_pooling: true kernel_size: 2 } }`),
			"f.prototxt:8:17: pooling_param of layer 'p': with global_pooling the kernel size must not be given"},
		{"pool pad too big", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { kernel_size: 2 pad: 2 } }`),
			"f.prototxt:8:17: pooling_param of layer 'p': pad 2x2 must be smaller than the kernel 2x2"},
		{"pool round floor", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { kernel_size: 2 round_mode: HALF } }`),
			"f.prototxt:8:46: round_mode in pooling_param of layer 'p': unknown value HALF; expected one of CEIL, FLOOR"},
		{"pool round_mode and ceil_mode", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { kernel_size: 2 round_mode: FLOOR ceil_mode: false } }`),
			"f.prototxt:8:52: pooling_param of layer 'p' gives both round_mode and ceil_mode"},
		{"pool kernel repeated", net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p"
  pooling_param { kernel_size: 2 kernel_size: 2 } }`),
			"f.prototxt:8:34: kernel_size in pooling_param of layer 'p' is given more than once"},
		{"dropout ratio", net(`layer { name: "d" type: "Dropout" bottom: "data" top: "data"
  dropout_param { dropout_ratio: 1 } }`),
			"f.prototxt:8:34: dropout_ratio in dropout_param of layer 'd': must be in [0, 1), got 1"},
		{"lrn even", net(`layer { name: "n" type: "LRN" bottom: "data" top: "n" lrn_param { local_size: 4 } }`),
			"f.prototxt:7:79: local_size in lrn_param of layer 'n': must be odd, got 4"},
		{"lrn region", net(`layer { name: "n" type: "LRN" bottom: "data" top: "n" lrn_param { norm_region: ACROSS } }`),
			"f.prototxt:7:80: norm_region in lrn_param of layer 'n': unknown value ACROSS"},
		{"concat both", net(`layer { name: "c" type: "Concat" bottom: "data" top: "c" concat_param { axis: 1 concat_dim: 1 } }`),
			"f.prototxt:7:81: concat_param of layer 'c' gives both axis and concat_dim"},
		{"eltwise coeff count", net(`layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e"
  eltwise_param { coeff: 1 } }`), "f.prototxt:8:19: eltwise_param of layer 'e' has 1 coeff for 2 bottoms"},
		{"eltwise coeff prod", net(`layer { name: "e" type: "Eltwise" bottom: "data" top: "e"
  eltwise_param { operation: PROD coeff: 1 } }`), "f.prototxt:8:35: eltwise_param of layer 'e': coeff applies to operation SUM only"},
		{"batchnorm eps", net(`layer { name: "b" type: "BatchNorm" bottom: "data" top: "data" batch_norm_param { eps: 0 } }`),
			"f.prototxt:7:88: eps in batch_norm_param of layer 'b': must be > 0"},
		{"accuracy top_k", net(`layer { name: "a" type: "Accuracy" bottom: "data" bottom: "label" top: "a" accuracy_param { top_k: 0 } }`),
			"f.prototxt:7:100: top_k in accuracy_param of layer 'a': must be at least 1, got 0"},
		{"loss normalization", net(`layer { name: "l" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "l"
  loss_param { normalization: MEAN } }`), "f.prototxt:8:31: normalization in loss_param of layer 'l': unknown value MEAN"},
		{"infogain without H", net(`layer { name: "ig" type: "InfogainLoss" bottom: "data" bottom: "label" }`),
			"f.prototxt:7:1: layer 'ig' needs the infogain matrix"},
		{"slice points", net(`layer { name: "s" type: "Slice" bottom: "data" top: "a" top: "b" slice_param { slice_point: [1, 2] } }`),
			"f.prototxt:7:80: slice_param of layer 's' has 2 slice_point for 2 tops"},
		{"tile needs tiles", net(`layer { name: "t" type: "Tile" bottom: "data" top: "t" tile_param { axis: 1 } }`),
			"f.prototxt:7:67: tile_param of layer 't' needs tiles"},
		{"no type", net(`layer { name: "r" bottom: "data" top: "data" }`), "f.prototxt:7:1: layer 'r' has no type"},
		{"type not string", net(`layer { name: "r" type: ReLU }`), "f.prototxt:7:25: type in layer 'r': expected a quoted string, found identifier ReLU"},
		{"bad phase", net(`layer { name: "r" type: "ReLU" bottom: "data" top: "data" include { phase: VAL } }`),
			"f.prototxt:7:76: phase in include of layer 'r': unknown value VAL; expected one of TRAIN, TEST"},
		{"include and exclude", net(`layer { name: "r" type: "ReLU" bottom: "data" top: "data"
  include { phase: TRAIN } exclude { phase: TEST } }`), "f.prototxt:7:1: layer 'r' has both include and exclude rules"},
		{"share_mode", net(`layer { name: "r" type: "Scale" bottom: "data" top: "data" param { share_mode: LOOSE } }`),
			"f.prototxt:7:80: share_mode in param of layer 'r': unknown value LOOSE; expected one of STRICT, PERMISSIVE"},
		{"lr_mult string", net(`layer { name: "r" type: "Scale" bottom: "data" top: "data" param { lr_mult: "1" } }`),
			`f.prototxt:7:77: lr_mult in param of layer 'r': expected a number, found string "1"`},
		{"loss_weight count", net(`layer { name: "l" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "l"
  loss_weight: 1 loss_weight: 2 }`), "f.prototxt:7:1: layer 'l' has 2 loss_weight for 1 tops"},
		{"propagate_down count", net(`layer { name: "l" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "l"
  propagate_down: true }`), "f.prototxt:7:1: layer 'l' has 1 propagate_down for 2 bottoms"},
		{"float32 overflow", net(`layer { name: "r" type: "ReLU" bottom: "data" top: "data" relu_param { negative_slope: 1e39 } }`),
			"f.prototxt:7:88: negative_slope in relu_param of layer 'r': 1e39 is out of the float32 range"},
		{"data without data_param", `layer { name: "d" type: "Data" top: "data" }`,
			"f.prototxt:1:1: Data layer 'd' needs data_param { source batch_size }"},
		{"data no batch", `layer { name: "d" type: "Data" top: "data" data_param { source: "x" } }`,
			"f.prototxt:1:55: data_param of layer 'd' needs a batch_size"},
		{"data no source nor batch", `layer { name: "d" type: "Data" top: "data" data_param { source: "" } }`,
			"f.prototxt:1:55: data_param of layer 'd' needs a batch_size"},
		{"data three tops", `layer { name: "d" type: "Data" top: "a" top: "b" top: "c" }`,
			"f.prototxt:1:1: Data layer 'd' has 3 tops; it needs 1 or 2"},
		{"data bottom", `layer { name: "d" type: "Data" bottom: "x" top: "a" }`, "f.prototxt:1:1: Data layer 'd' takes no bottom"},
		{"data backend", `layer { name: "d" type: "Data" top: "a" data_param { source: "x" batch_size: 1 backend: "LMDB" } }`,
			`f.prototxt:1:89: backend in data_param of layer 'd': expected one of LEVELDB, LMDB, found string "LMDB"`},
		{"engine value", conv("num_output: 2 kernel_size: 3 engine: MKL"),
			"f.prototxt:13:42: engine in convolution_param of layer 'conv1': unknown value MKL; expected one of DEFAULT, CAFFE, CUDNN"},
		{"data old scale", `layer { name: "d" type: "Data" top: "a" data_param { source: "x" batch_size: 1 scale: 2 } }`,
			"f.prototxt:1:80: unsupported field 'scale' in data_param of layer 'd': use transform_param in the layer instead"},
		{"data param", `layer { name: "d" type: "Data" top: "a" param { lr_mult: 1 } }`,
			"f.prototxt:1:41: unsupported field 'param' in layer 'd': a data layer has no params and no loss"},
		{"transform scale zero", `layer { name: "d" type: "Data" top: "a" transform_param { scale: 0 } data_param { source: "x" batch_size: 1 } }`,
			"f.prototxt:1:66: scale in transform_param of layer 'd': must not be 0"},
		{"transform both means", `layer { name: "d" type: "Data" top: "a" transform_param { mean_file: "m" mean_value: 1 } data_param { source: "x" batch_size: 1 } }`,
			"f.prototxt:1:57: transform_param of layer 'd' gives both mean_file and mean_value"},
		{"input no shape", `layer { name: "d" type: "Input" top: "a" input_param { } }`,
			"f.prototxt:1:54: input_param of layer 'd' has 0 shapes for 1 tops"},
		{"input zero dim", `layer { name: "d" type: "Input" top: "a" input_param { shape { dim: 0 } } }`,
			"f.prototxt:1:69: dim in shape in input_param of layer 'd': must be at least 1, got 0"},
		{"input empty shape", `layer { name: "d" type: "Input" top: "a" input_param { shape { } } }`,
			"f.prototxt:1:62: shape in input_param of layer 'd' has no dim"},
		{"legacy input_dim count", "input: \"data\"\ninput_dim: 1", "f.prototxt:2:1: net has 1 inputs, so it needs 4 input_dim"},
		{"legacy shape without input", "input_shape { dim: 1 }", "f.prototxt:1:1: input_shape in net without any input"},
		{"net state", `state { phase: TEST stage: "x" foo: 1 }`, "f.prototxt:1:32: unsupported field 'foo' in state in net"},
		{"rule level", net(`layer { name: "r" type: "ReLU" bottom: "data" top: "data" include { min_level: x } }`),
			"f.prototxt:7:80: min_level in include of layer 'r': expected an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseNet("f.prototxt", []byte(tt.src))
			if err == nil {
				t.Fatalf("ParseNet succeeded, want error %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", err, tt.want)
			}
			var pe *prototxt.Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *prototxt.Error", err)
			}
		})
	}
}

func TestNetWarnings(t *testing.T) {
	src := net(`layer { name: "c" type: "Convolution" bottom: "data" top: "c"
  convolution_param { num_output: 1 kernel_size: 1 engine: CUDNN } }
debug_info: true
layer { name: "r" type: "ReLU" bottom: "c" top: "r"
  pooling_param { pool: MAX } }
layer { name: "i" type: "Input" top: "a" transform_param { scale: 1 } input_param { shape { dim: 1 } } }
layer { name: "h" type: "HDF5Data" top: "h" transform_param { scale: 2 } hdf5_data_param { source: "l" batch_size: 1 } }`)
	n, err := ParseNet("f.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// Caffe parses every *_param on any layer and the layer ignores the
	// ones of other types: accepted, with a warning naming the line.
	want := []string{
		"f.prototxt:8:52: ignoring engine in convolution_param of layer 'c': dsgd has one engine per layer",
		"f.prototxt:9:1: ignoring debug_info in net: dsgd does not print per-layer debug information",
		"f.prototxt:11:3: ignoring pooling_param in layer 'r': a ReLU layer does not read it (Caffe accepts it and ignores it too)",
		"f.prototxt:12:42: ignoring transform_param in layer 'i': a Input layer does not read it (Caffe accepts it and ignores it too)",
		"f.prototxt:13:45: ignoring transform_param in layer 'h': Caffe's HDF5Data layer applies no transformation (it reads the data ready to use) and ignores it",
	}
	if !slices.Equal(n.Warnings, want) {
		t.Errorf("Warnings = %q\nwant %q", n.Warnings, want)
	}
}

func TestPhaseErrors(t *testing.T) {
	tests := []struct {
		name, layers string
		phase        layers.Phase
		want         string
	}{
		{"missing bottom", `layer { name: "r" type: "ReLU" bottom: "dat" top: "r" }`, layers.Train,
			"f.prototxt:7:1: layer 'r' (TRAIN phase): bottom 'dat' is not produced by any earlier layer in this phase"},
		{"bottom from other phase", `layer { name: "a" type: "ReLU" bottom: "data" top: "a" include { phase: TRAIN } }
layer { name: "b" type: "ReLU" bottom: "a" top: "b" }`, layers.Test,
			"f.prototxt:8:1: layer 'b' (TEST phase): bottom 'a' is not produced"},
		{"bottom from later layer", `layer { name: "a" type: "ReLU" bottom: "b" top: "a" }
layer { name: "b" type: "ReLU" bottom: "data" top: "b" }`, layers.Train,
			"f.prototxt:7:1: layer 'a' (TRAIN phase): bottom 'b' is not produced"},
		{"top twice", `layer { name: "a" type: "ReLU" bottom: "data" top: "x" }
layer { name: "b" type: "ReLU" bottom: "data" top: "x" }`, layers.Train,
			"f.prototxt:8:1: layer 'b' (TRAIN phase): top 'x' is already produced by an earlier layer"},
		{"top overwrites input", `layer { name: "a" type: "ReLU" bottom: "label" top: "data" }`, layers.Train,
			"f.prototxt:7:1: layer 'a' (TRAIN phase): top 'data' is already produced"},
		{"top listed twice", `layer { name: "a" type: "Concat" bottom: "data" top: "x" top: "x" }`, layers.Train,
			"f.prototxt:7:1: layer 'a' (TRAIN phase): top 'x' is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ParseNet("f.prototxt", []byte(net(tt.layers)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = n.Phase(tt.phase)
			if err == nil {
				t.Fatalf("Phase succeeded, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", err, tt.want)
			}
		})
	}
	// Layers may share a name within a phase, as in Caffe (whose
	// mnist_autoencoder has two "loss" layers); a data layer's name too.
	n, err := ParseNet("f.prototxt", []byte(net(`layer { name: "d" type: "ReLU" bottom: "data" top: "a" }
layer { name: "a" type: "ReLU" bottom: "a" top: "b" }
layer { name: "a" type: "TanH" bottom: "b" top: "c" }`)))
	if err != nil {
		t.Fatal(err)
	}
	if pn := mustPhase(t, n, layers.Test); len(pn.Spec.Layers) != 3 {
		t.Errorf("%d compute layers, want all 3: %+v", len(pn.Spec.Layers), pn.Spec.Layers)
	}
	// The same names in different phases are fine, as in Caffe's examples.
	n, err = ParseNet("f.prototxt", []byte(`
layer { name: "d" type: "Input" top: "x" include { phase: TRAIN } input_param { shape { dim: 1 } } }
layer { name: "d" type: "Input" top: "x" include { phase: TEST } input_param { shape { dim: 2 } } }
layer { name: "r" type: "ReLU" bottom: "x" top: "x" }`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []layers.Phase{layers.Train, layers.Test} {
		pn := mustPhase(t, n, p)
		if len(pn.Data) != 1 || pn.Data[0].Shapes[0][0] != int(p)+1 || len(pn.Spec.Layers) != 1 {
			t.Errorf("%v: %+v", p, pn)
		}
	}
}

func TestLoadNetMissing(t *testing.T) {
	_, err := LoadNet("testdata/nope.prototxt")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.prototxt") {
		t.Errorf("err = %v", err)
	}
}

func TestShapeLimits(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"too many axes", `layer { name: "d" type: "Input" top: "a" input_param { shape { dim: [` +
			strings.TrimSuffix(strings.Repeat("1,", 33), ",") + `] } } }`,
			"f:1:62: shape in input_param of layer 'd' has 33 dims; a blob has at most 32"},
		{"count overflow", `layer { name: "d" type: "Input" top: "a" input_param { shape { dim: [65536, 65536] } } }`,
			"f:1:62: shape in input_param of layer 'd': shape [65536 65536] has more than 2^31-1 elements"},
		{"legacy count overflow", `input: "a" input_dim: [65536, 65536, 1, 1]`,
			"f:1:12: input_dim in net: shape [65536 65536 1 1] has more than 2^31-1 elements"},
	}
	for _, tt := range tests {
		_, err := ParseNet("f", []byte(tt.src))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v\nwant %s", tt.name, err, tt.want)
		}
	}
}

// TestForkLayerTypes: a layer type or field of a published net's Caffe
// fork is refused at its line (a type where a net includes it, as BVLC
// Caffe refuses it where it builds the net), saying it is a
// fork's (not a misspelling) and, where BVLC's layers compute the same or
// dsgd has another way, how.
// The fixtures under testdata/forks name the published files they follow;
// those whose layers dsgd runs are TestForkNetFiles'.
func TestForkLayerTypes(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"hed_labelmap.prototxt", []string{
			"hed_labelmap.prototxt:5:1: layer 'data' (TRAIN phase) has unknown type 'ImageLabelmapData', a layer of a Caffe fork (HED's, s9xie/hed), not of BVLC Caffe: write images and label maps to two LMDBs"}},
		{"ssd_resize_param.prototxt", []string{
			"ssd_resize_param.prototxt:14:5: unsupported field 'resize_param' in transform_param of layer 'data': a field of a Caffe fork (SSD's, weiliu89/caffe), not of BVLC Caffe's caffe.proto, so it cannot be honoured; resize the images when writing the LMDB"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			n, err := LoadNet(filepath.Join("testdata", "forks", tt.file))
			if err == nil {
				// An unknown type is refused where a net includes it.
				_, err = n.Phase(layers.Train)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// TestLegacyInputWithoutShape: a net-level input with neither input_shape
// nor input_dim declares no blob; Caffe's UpgradeNetInput drops it, and so
// do dsgd's reader (with a warning) and `dsgd upgrade`.
func TestLegacyInputWithoutShape(t *testing.T) {
	const file = "testdata/input_without_shape.prototxt"
	tests := []struct {
		name, src   string
		layers      []string // the types of the layers read
		inputShape  []int    // the Input layer's shape
		warning     string
		upgradeNote string
	}{
		{"cvjena AlexNet header", "", []string{"Input", "Convolution"}, []int{10, 3, 227, 227},
			`6:1: ignoring input "data" in net: it has no input_shape or input_dim`,
			"the net-level input fields without input_shape or input_dim were dropped, as Caffe drops them"},
		{"two inputs, layers below", `input: "a" input: "b"
layer { name: "d" type: "Input" top: "a" top: "b" input_param { shape { dim: 2 } shape { dim: 3 } } }`,
			[]string{"Input"}, []int{2}, `1:12: ignoring input "b" in net`,
			"the net-level input fields without input_shape or input_dim were dropped, as Caffe drops them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(tt.src)
			if tt.src == "" {
				var err error
				if src, err = os.ReadFile(file); err != nil {
					t.Fatal(err)
				}
			}
			n, err := ParseNet(file, src)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, l := range n.Layers {
				types = append(types, l.Type)
			}
			if !slices.Equal(types, tt.layers) {
				t.Errorf("layers %q, want %q", types, tt.layers)
			}
			if d := n.Layers[0].Data; d == nil || len(d.Shapes) == 0 || !slices.Equal(d.Shapes[0], tt.inputShape) {
				t.Errorf("Input layer %+v, want shape %v", n.Layers[0].Data, tt.inputShape)
			}
			if !slices.ContainsFunc(n.Warnings, func(w string) bool { return strings.Contains(w, tt.warning) }) {
				t.Errorf("warnings %q lack %q", n.Warnings, tt.warning)
			}
			out, notes, err := Upgrade(file, src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(notes, []string{tt.upgradeNote}) {
				t.Errorf("upgrade notes %q", notes)
			}
			if strings.Contains(string(out), "input:") {
				t.Errorf("upgraded text keeps the input field:\n%s", out)
			}
		})
	}
}

// TestLayerPhaseField: a layer's own phase field, which Caffe writes
// into every layer of the nets it saves, is read; a net of that phase
// builds, and one of the other phase, in which Caffe would run the layer
// in a phase not its net's, is refused naming the layer.
func TestLayerPhaseField(t *testing.T) {
	const src = `name: "p"
layer { name: "in" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } phase: TRAIN }
layer { name: "drop" type: "Dropout" bottom: "data" top: "data" phase: TRAIN }
layer { name: "acc" type: "ReLU" bottom: "data" top: "r" include { phase: TEST } phase: TEST }
`
	n, err := ParseNet("f.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if l := n.Layers[1]; !l.HasPhase || l.Phase != layers.Train {
		t.Errorf("layer %q: phase %v (set %v), want TRAIN", l.Name, l.Phase, l.HasPhase)
	}
	for _, c := range []struct {
		phase layers.Phase
		want  string
	}{
		{layers.Train, ""},
		{layers.Test, "f.prototxt:2:1: layer 'in' (TEST phase) sets phase: TRAIN, in which Caffe would run it inside this TEST net"},
	} {
		pn, err := n.Phase(c.phase)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.phase, err)
		case c.want == "" && len(pn.Spec.Layers) != 1:
			t.Errorf("%v: %d compute layers, want 1 (drop)", c.phase, len(pn.Spec.Layers))
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%v: %v, want %q", c.phase, err, c.want)
		}
	}
	if _, err := ParseNet("f.prototxt", []byte(`layer { name: "r" type: "ReLU" bottom: "x" top: "x" phase: VAL }`)); err == nil || !strings.Contains(err.Error(), "unknown value VAL") {
		t.Errorf("phase: VAL: %v", err)
	}
}
