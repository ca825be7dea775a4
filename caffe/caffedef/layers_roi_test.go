package caffedef

import (
	"math"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// The region layers of the Fast/Faster R-CNN and R-FCN forks and SNN's
// SeLu: decoding with the forks' fields and defaults, their errors, and
// small nets from prototxt that train.

// TestROIDecode: each layer decodes with its fork's field names and
// defaults (extraInput's data is 2×3×9×8).
func TestROIDecode(t *testing.T) {
	checkDecodes(t, []decodeCase{
		{`layer { name: "l" type: "ROIPooling" bottom: "data" bottom: "data" top: "l" roi_pooling_param { pooled_w: 7 pooled_h: 6 spatial_scale: 0.0625 } }`,
			&layers.ROIPoolingConfig{PooledH: 6, PooledW: 7, SpatialScale: 0.0625}},
		{`layer { name: "l" type: "ROIPooling" bottom: "data" bottom: "data" top: "l" roi_pooling_param { pooled_w: 1 pooled_h: 1 } }`,
			&layers.ROIPoolingConfig{PooledH: 1, PooledW: 1, SpatialScale: 1}},
		{`layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 0.0625 output_dim: 21 group_size: 7 } }`,
			&layers.PSROIPoolingConfig{SpatialScale: 0.0625, OutputDim: 21, GroupSize: 7}},
		{`layer { name: "l" type: "SeLu" bottom: "data" top: "l" }`, &layers.SeLuConfig{Lambda: 1.050700987, Alpha: 1.67326324}},
		{`layer { name: "l" type: "SeLu" bottom: "data" top: "data" selu_param { alpha: 1.5 lambda: 2 } }`, &layers.SeLuConfig{Lambda: 2, Alpha: 1.5}},
	})
}

// TestROIDecodeErrors: a bad value is an error at its line and column,
// naming the layer, the field and the rule; at is the text the error
// points at, "" for the layer's start.
func TestROIDecodeErrors(t *testing.T) {
	const roi = `layer { name: "l" type: "ROIPooling" bottom: "data" bottom: "data" top: "l" `
	checkDecodeErrors(t, []decodeErrCase{
		{"roi no param", roi + `}`, "", "roi_pooling_param of layer 'l' needs pooled_h (the output's height per region)"},
		{"roi no pooled_w", roi + `roi_pooling_param { pooled_h: 2 } }`, "{ pooled_h", "roi_pooling_param of layer 'l' needs pooled_w"},
		{"roi pooled_h 0", roi + `roi_pooling_param { pooled_h: 0 pooled_w: 2 } }`, "0 pooled_w", "pooled_h in roi_pooling_param of layer 'l': must be at least 1, got 0"},
		{"roi pooled_w negative", roi + `roi_pooling_param { pooled_h: 2 pooled_w: -3 } }`, "-3", "pooled_w in roi_pooling_param of layer 'l': must be at least 1, got -3"},
		{"roi scale 0", roi + `roi_pooling_param { pooled_h: 2 pooled_w: 2 spatial_scale: 0 } }`, "0 } }", "spatial_scale in roi_pooling_param of layer 'l': must be positive"},
		{"roi scale negative", roi + `roi_pooling_param { pooled_h: 2 pooled_w: 2 spatial_scale: -0.0625 } }`, "-0.0625", "spatial_scale in roi_pooling_param of layer 'l': must be positive"},
		{"roi scale underflows", roi + `roi_pooling_param { pooled_h: 2 pooled_w: 2 spatial_scale: 1e-50 } }`, "1e-50", "spatial_scale in roi_pooling_param of layer 'l': must be positive (the feature map's size over the image's), got 0"},
		{"roi unknown field", roi + `roi_pooling_param { pooled_h: 2 pooled_w: 2 spatial_scale_h: 1 } }`, "spatial_scale_h", "unsupported field 'spatial_scale_h' in roi_pooling_param of layer 'l'"},
		{"roi one bottom", `layer { name: "l" type: "ROIPooling" bottom: "data" top: "l" roi_pooling_param { pooled_h: 2 pooled_w: 2 } }`,
			"", "layer 'l' (ROIPooling) takes 2 bottoms, the features and the regions (R×5 rows [batch_index x1 y1 x2 y2]), got 1"},
		{"psroi no param", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" }`, "",
			"psroi_pooling_param of layer 'l' needs spatial_scale (the score maps' size over the image's; R-FCN's proto requires it)"},
		{"psroi no output_dim", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 0.5 group_size: 3 } }`,
			"{ spatial_scale", "psroi_pooling_param of layer 'l' needs output_dim (the top's channels)"},
		{"psroi no group_size", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 0.5 output_dim: 3 } }`,
			"{ spatial_scale", "psroi_pooling_param of layer 'l' needs group_size (k, the bins per side)"},
		{"psroi group_size 0", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 0.5 output_dim: 3 group_size: 0 } }`,
			"0 } }", "group_size in psroi_pooling_param of layer 'l': must be in [1, 32768], got 0"},
		{"psroi output_dim negative", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 0.5 output_dim: -2 group_size: 3 } }`,
			"-2", "output_dim in psroi_pooling_param of layer 'l': must be at least 1, got -2"},
		{"psroi scale 0", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 0 output_dim: 2 group_size: 3 } }`,
			"0 output_dim", "spatial_scale in psroi_pooling_param of layer 'l': must be positive"},
		{"psroi channels overflow", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 1 output_dim: 2000000 group_size: 100 } }`,
			"2000000", "output_dim in psroi_pooling_param of layer 'l': output_dim·group_size² = 2000000·100² overflows the channel count"},
		{"psroi three bottoms", `layer { name: "l" type: "PSROIPooling" bottom: "data" bottom: "data" bottom: "data" top: "l" psroi_pooling_param { spatial_scale: 1 output_dim: 1 group_size: 1 } }`,
			"", "layer 'l' (PSROIPooling) takes 2 bottoms, the features and the regions (R×5 rows [batch_index x1 y1 x2 y2]), got 3"},
		{"selu alpha", `layer { name: "l" type: "SeLu" bottom: "data" top: "l" selu_param { alpha: "x" } }`, `"x"`, "alpha in selu_param of layer 'l'"},
		{"selu unknown field", `layer { name: "l" type: "SeLu" bottom: "data" top: "l" selu_param { dropout_ratio: 0.1 } }`,
			"dropout_ratio", "unsupported field 'dropout_ratio' in selu_param of layer 'l'"},
		{"selu huge lambda", `layer { name: "l" type: "SeLu" bottom: "data" top: "l" selu_param { lambda: 1e39 } }`, "1e39", "lambda in selu_param of layer 'l': 1e39 is out of the float32 range"},
	})
}

// roiNet is Fast R-CNN's head in small: a convolution over two images,
// ROIPooling of four regions given by an Input (as py-faster-rcnn's data
// layer gives them), an InnerProduct and a classifier loss.
const roiNet = `name: "roi-net"
layer { name: "input" type: "Input" top: "data" top: "rois" top: "label"
  input_param { shape { dim: 2 dim: 3 dim: 12 dim: 10 } shape { dim: 4 dim: 5 } shape { dim: 4 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 4 kernel_size: 3 pad: 1 stride: 2 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "roi_pool" type: "ROIPooling" bottom: "conv1" bottom: "rois" top: "pool"
  roi_pooling_param { pooled_w: 2 pooled_h: 2 spatial_scale: 0.5 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
  inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
`

// trainRegionNet fills the net's data, regions and labels, runs 40 SGD
// steps of rate lr and checks the loss halves and every weight moves.
func trainRegionNet(t *testing.T, src string, rois []float32, lr float32) {
	_, n := buildInputNet(t, src)
	data := n.Input("data")
	for i := range data.Data {
		data.Data[i] = float32(math.Sin(float64(i)*0.37)) + float32(i%5)*0.2
	}
	copy(n.Input("rois").Data, rois)
	copy(n.Input("label").Data, []float32{0, 1, 2, 1})
	start := append([]float32(nil), n.Params()...)
	first := n.ForwardBackward()
	loss := first
	for range 40 {
		tensor.Axpy(-lr, n.Grads(), n.Params())
		loss = n.ForwardBackward()
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			t.Fatalf("loss %v: %v", loss, n.Err())
		}
	}
	t.Logf("loss %.4f after 40 steps, from %.4f", loss, first)
	for _, b := range n.Blocks() {
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

// TestROINetTrains: the ROIPooling head builds from prototxt with the
// fork's shapes and trains, its gradient reaching the convolution below.
func TestROINetTrains(t *testing.T) {
	_, n := buildInputNet(t, roiNet)
	if got := n.Blob("pool").Shape; !got.Equal(tensor.Shape{4, 4, 2, 2}) {
		t.Errorf("pool %v, want 4×4×2×2", got)
	}
	trainRegionNet(t, roiNet, []float32{
		0, 0, 0, 9, 11,
		1, 2, 3, 8, 10,
		0, 4, 1, 9, 6,
		1, 0, 0, 4, 4,
	}, 0.1)
}

// TestROINetBadRegion: a region naming an image outside the batch, or not
// finite, stops the net with an error naming the layer, not a crash.
func TestROINetBadRegion(t *testing.T) {
	for _, c := range []struct {
		roi  []float32
		want string
	}{
		{[]float32{2, 0, 0, 4, 4}, "region 1's batch index 2 is out of range for 2 images"},
		{[]float32{0, float32(math.NaN()), 0, 4, 4}, "region 1 [0 NaN 0 4 4] is not finite"},
	} {
		_, n := buildInputNet(t, roiNet)
		copy(n.Input("rois").Data[5:], c.roi)
		if loss := n.ForwardBackward(); !math.IsNaN(loss) {
			t.Errorf("%v: loss %v, want NaN", c.roi, loss)
		}
		if err := n.Err(); err == nil || !strings.Contains(err.Error(), `layer "roi_pool"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming layer \"roi_pool\" and %q", c.roi, err, c.want)
		}
	}
}

// seluNet is an SNN block as the fork's README writes it: an InnerProduct
// with SeLu in place, twice, and a classifier.
const seluNet = `name: "selu-net"
layer { name: "input" type: "Input" top: "data" top: "label"
  input_param { shape { dim: 4 dim: 6 } shape { dim: 4 } } }
layer { name: "fc1" type: "InnerProduct" bottom: "data" top: "fc1"
  inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 0.4 } } }
layer { name: "selu1" type: "SeLu" bottom: "fc1" top: "fc1" }
layer { name: "fc2" type: "InnerProduct" bottom: "fc1" top: "fc2"
  inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 0.35 } } }
layer { name: "selu2" type: "SeLu" bottom: "fc2" top: "fc2" selu_param { lambda: 1.0507 alpha: 1.6733 } }
layer { name: "fc3" type: "InnerProduct" bottom: "fc2" top: "fc3"
  inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.35 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc3" bottom: "label" top: "loss" }
`

// TestSeLuNetTrains: SeLu in place trains, its gradient reaching the
// first InnerProduct.
func TestSeLuNetTrains(t *testing.T) {
	_, n := buildInputNet(t, seluNet)
	data := n.Input("data")
	for i := range data.Data {
		data.Data[i] = float32(math.Sin(float64(i)*0.61)) * 1.5
	}
	copy(n.Input("label").Data, []float32{0, 1, 2, 1})
	start := append([]float32(nil), n.Params()...)
	first := n.ForwardBackward()
	loss := first
	for range 60 {
		tensor.Axpy(-0.1, n.Grads(), n.Params())
		loss = n.ForwardBackward()
	}
	t.Logf("loss %.4f after 60 steps, from %.4f", loss, first)
	for _, b := range n.Blocks() {
		moved := false
		for i := b.Off; i < b.Off+b.Shape.Count(); i++ {
			moved = moved || n.Params()[i] != start[i]
		}
		if !moved {
			t.Errorf("block %s of layer %s did not move in training", b.Name, b.Layer)
		}
	}
	if !(loss < 0.5*first) {
		t.Errorf("60 SGD steps took the loss from %v to %v; want it halved", first, loss)
	}
}

// psroiNet is R-FCN's head in small: a convolution to output_dim·k²
// position-sensitive score maps, PSROIPooling of four Input regions, the
// average of the k×k bins (R-FCN's ave_cls) and a classifier loss.
const psroiNet = `name: "psroi-net"
layer { name: "input" type: "Input" top: "data" top: "rois" top: "label"
  input_param { shape { dim: 2 dim: 3 dim: 12 dim: 10 } shape { dim: 4 dim: 5 } shape { dim: 4 } } }
layer { name: "rfcn_cls" type: "Convolution" bottom: "data" top: "rfcn_cls"
  convolution_param { num_output: 12 kernel_size: 3 pad: 1 stride: 2 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "psroipooled_cls_rois" type: "PSROIPooling" bottom: "rfcn_cls" bottom: "rois" top: "psroipooled_cls_rois"
  psroi_pooling_param { spatial_scale: 0.5 output_dim: 3 group_size: 2 } }
layer { name: "ave_cls_score_rois" type: "Pooling" bottom: "psroipooled_cls_rois" top: "cls_score"
  pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "cls_score" bottom: "label" top: "loss" }
`

// TestPSROINetTrains: the R-FCN head builds from prototxt with the fork's
// shapes and trains, its gradient reaching the score maps' convolution.
func TestPSROINetTrains(t *testing.T) {
	_, n := buildInputNet(t, psroiNet)
	if got := n.Blob("psroipooled_cls_rois").Shape; !got.Equal(tensor.Shape{4, 3, 2, 2}) {
		t.Errorf("psroipooled_cls_rois %v, want 4×3×2×2", got)
	}
	trainRegionNet(t, psroiNet, []float32{
		0, 0, 0, 9, 11,
		1, 2, 3, 8, 10,
		0, 4, 1, 9, 6,
		1, 0, 0, 4, 4,
	}, 0.5)
}

// TestPSROINetErrors: score maps whose channels are not output_dim·k² are
// refused when the net is built, naming the layer; a bad region stops the
// net with an error naming it.
func TestPSROINetErrors(t *testing.T) {
	bad := strings.Replace(psroiNet, "num_output: 12", "num_output: 10", 1)
	nd, err := ParseNet("f.prototxt", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, nd, layers.Train)
	inputs := map[string]tensor.Shape{}
	for i, name := range pn.Spec.Inputs {
		inputs[name] = pn.Data[0].Shapes[i]
	}
	_, err = model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1})
	if want := "must have output_dim·group_size² = 3·2² = 12 channels"; err == nil || !strings.Contains(err.Error(), `layer "psroipooled_cls_rois" (f.prototxt:6:1)`) || !strings.Contains(err.Error(), want) {
		t.Errorf("10 channels: %v, want the layer and %q", err, want)
	}
	_, n := buildInputNet(t, psroiNet)
	copy(n.Input("rois").Data[10:], []float32{-1, 0, 0, 4, 4})
	if loss := n.ForwardBackward(); !math.IsNaN(loss) {
		t.Errorf("loss %v, want NaN", loss)
	}
	if err := n.Err(); err == nil || !strings.Contains(err.Error(), `layer "psroipooled_cls_rois"`) || !strings.Contains(err.Error(), "region 2's batch index -1 is out of range for 2 images") {
		t.Errorf("bad region: %v", err)
	}
}

// TestRFCNFixtureRuns: the R-FCN fixture that was refused as a fork's
// layer now builds and runs forward.
func TestRFCNFixtureRuns(t *testing.T) {
	n := buildForkFixture(t, "rfcn_psroi.prototxt")
	if loss := n.Forward(); math.IsNaN(loss) {
		t.Fatal(n.Err())
	}
	if got := n.Blob("psroipooled_cls_rois").Shape; !got.Equal(tensor.Shape{1, 2, 2, 2}) {
		t.Errorf("psroipooled_cls_rois %v, want 1×2×2×2", got)
	}
}
