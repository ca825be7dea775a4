package caffedef

import (
	"math"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// Fast/Faster R-CNN's SmoothL1Loss: smooth_l1_loss_param, its errors, the
// shape checks when the net is built, and a small box-regression net from
// prototxt that trains.

// TestSmoothL1Decode: sigma defaults to 1 (and the fast-rcnn branch's form
// without the message reads as that); 2, 3 and 4 bottoms are accepted.
func TestSmoothL1Decode(t *testing.T) {
	checkDecodes(t, []decodeCase{
		{`layer { name: "l" type: "SmoothL1Loss" bottom: "data" bottom: "data" top: "l" }`, &layers.SmoothL1LossConfig{Sigma: 1}},
		{`layer { name: "l" type: "SmoothL1Loss" bottom: "data" bottom: "data" bottom: "data" top: "l" loss_weight: 1 }`, &layers.SmoothL1LossConfig{Sigma: 1}},
		{`layer { name: "l" type: "SmoothL1Loss" bottom: "data" bottom: "data" bottom: "data" bottom: "data" top: "l" smooth_l1_loss_param { sigma: 3.0 } }`,
			&layers.SmoothL1LossConfig{Sigma: 3}},
		{`layer { name: "l" type: "SmoothL1Loss" bottom: "data" bottom: "data" top: "l" smooth_l1_loss_param { } }`, &layers.SmoothL1LossConfig{Sigma: 1}},
	})
}

// TestSmoothL1DecodeErrors: a bad sigma or bottom count is an error at its
// line and column naming the layer and the field; at is the text the error
// points at, "" for the layer's start.
func TestSmoothL1DecodeErrors(t *testing.T) {
	const sl = `layer { name: "l" type: "SmoothL1Loss" bottom: "data" bottom: "data" top: "l" `
	checkDecodeErrors(t, []decodeErrCase{
		{"sigma 0", sl + `smooth_l1_loss_param { sigma: 0 } }`, "0 } }", "sigma in smooth_l1_loss_param of layer 'l': must be positive (the quadratic part ends at |d| = 1/sigma²), got 0"},
		{"sigma negative", sl + `smooth_l1_loss_param { sigma: -3 } }`, "-3", "sigma in smooth_l1_loss_param of layer 'l': must be positive"},
		{"sigma nan", sl + `smooth_l1_loss_param { sigma: nan } }`, "nan", "sigma in smooth_l1_loss_param of layer 'l': expected a number"},
		{"sigma inf", sl + `smooth_l1_loss_param { sigma: inf } }`, "inf", "sigma in smooth_l1_loss_param of layer 'l'"},
		{"sigma² overflows", sl + `smooth_l1_loss_param { sigma: 1e20 } }`, "1e20", "sigma in smooth_l1_loss_param of layer 'l': sigma² = 1e+40 is outside the float32 range the fork keeps it in"},
		{"sigma² vanishes", sl + `smooth_l1_loss_param { sigma: 1e-30 } }`, "1e-30", "sigma in smooth_l1_loss_param of layer 'l': sigma²"},
		{"sigma string", sl + `smooth_l1_loss_param { sigma: "x" } }`, `"x"`, "sigma in smooth_l1_loss_param of layer 'l'"},
		{"sigma twice", sl + `smooth_l1_loss_param { sigma: 1 sigma: 3 } }`, "sigma: 3", "sigma in smooth_l1_loss_param of layer 'l' is given more than once"},
		{"unknown field", sl + `smooth_l1_loss_param { beta: 1 } }`, "beta", "unsupported field 'beta' in smooth_l1_loss_param of layer 'l'"},
		{"one bottom", `layer { name: "l" type: "SmoothL1Loss" bottom: "data" top: "l" }`, "",
			"layer 'l' (SmoothL1Loss) takes 2 to 4 bottoms, the predictions, the targets and optionally the inside and the outside weights, got 1"},
		{"five bottoms", `layer { name: "l" type: "SmoothL1Loss" bottom: "data" bottom: "data" bottom: "data" bottom: "data" bottom: "data" top: "l" }`, "",
			"layer 'l' (SmoothL1Loss) takes 2 to 4 bottoms"},
	})
}

// smoothL1Net is Fast R-CNN's box regression in small: a convolution, an
// InnerProduct to four coordinates per class, and Faster R-CNN's
// SmoothL1Loss (σ 3, as its RPN loss) against targets and inside and
// outside weights from an Input, as py-faster-rcnn's data layers give them.
const smoothL1Net = `name: "smoothl1-net"
layer { name: "input" type: "Input" top: "data" top: "bbox_targets" top: "bbox_inside_weights" top: "bbox_outside_weights"
  input_param { shape { dim: 4 dim: 3 dim: 6 dim: 6 } shape { dim: 4 dim: 8 } shape { dim: 4 dim: 8 } shape { dim: 4 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 4 kernel_size: 3 stride: 2 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "bbox_pred" type: "InnerProduct" bottom: "conv1" top: "bbox_pred"
  inner_product_param { num_output: 8 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss_bbox" type: "SmoothL1Loss" bottom: "bbox_pred" bottom: "bbox_targets"
  bottom: "bbox_inside_weights" bottom: "bbox_outside_weights" top: "loss_bbox"
  smooth_l1_loss_param { sigma: 3.0 } }
`

// fillSmoothL1Net gives the net its images, targets and weights: the
// inside weights select one class's four coordinates per image, as
// py-faster-rcnn's, the outside weights are 1.
func fillSmoothL1Net(n *model.Net) {
	data := n.Input("data")
	for i := range data.Data {
		data.Data[i] = float32(math.Sin(float64(i)*0.37)) + float32(i%5)*0.2
	}
	tg, in, out := n.Input("bbox_targets").Data, n.Input("bbox_inside_weights").Data, n.Input("bbox_outside_weights").Data
	for i := range tg {
		tg[i] = float32(math.Cos(float64(i)*0.9)) * 0.8
		if (i/4)%2 == (i/8)%2 {
			in[i] = 1
		}
		out[i] = 1
	}
}

// TestSmoothL1NetTrains: the box-regression net builds from prototxt, is
// a loss by default, and 60 SGD steps take its loss down to under a third,
// the gradient reaching the convolution.
func TestSmoothL1NetTrains(t *testing.T) {
	_, n := buildInputNet(t, smoothL1Net)
	fillSmoothL1Net(n)
	start := append([]float32(nil), n.Params()...)
	first := n.ForwardBackward()
	if !(first > 0) {
		t.Fatalf("loss %v: SmoothL1Loss is not the net's loss (%v)", first, n.Err())
	}
	loss := first
	for range 60 {
		tensor.Axpy(-0.1, n.Grads(), n.Params())
		loss = n.ForwardBackward()
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			t.Fatalf("loss %v: %v", loss, n.Err())
		}
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
	if !(loss < first/3) {
		t.Errorf("60 SGD steps took the loss from %v to %v; want it under a third", first, loss)
	}
}

// TestSmoothL1LossWeight: loss_weight 2.5 scales the net's loss and every
// gradient by 2.5 (Caffe's loss weight is the top's diff).
func TestSmoothL1LossWeight(t *testing.T) {
	_, n1 := buildInputNet(t, smoothL1Net)
	_, n2 := buildInputNet(t, strings.Replace(smoothL1Net, `top: "loss_bbox"`, `top: "loss_bbox" loss_weight: 2.5`, 1))
	fillSmoothL1Net(n1)
	fillSmoothL1Net(n2)
	l1, l2 := n1.ForwardBackward(), n2.ForwardBackward()
	if math.Abs(l2-2.5*l1) > 1e-5*l1 {
		t.Errorf("loss %v with loss_weight 2.5, %v without", l2, l1)
	}
	g1, g2 := n1.Grads(), n2.Grads()
	for i := range g1 {
		if math.Abs(float64(g2[i])-2.5*float64(g1[i])) > 1e-5*math.Max(1, math.Abs(float64(g2[i]))) {
			t.Fatalf("grad %d: %v with loss_weight 2.5, %v without", i, g2[i], g1[i])
		}
	}
}

// TestSmoothL1BuildErrors: bottoms of different shapes, and propagate_down
// on a weights bottom (the fork's backward fills only the predictions' and
// the targets'), are refused when the net is built, naming the layer and
// its file:line; N×K targets against N×K×1×1 predictions are accepted, as
// the fork's num/channels/height/width checks accept them.
func TestSmoothL1BuildErrors(t *testing.T) {
	build := func(src string) error {
		nd, err := ParseNet("f.prototxt", []byte(src))
		if err != nil {
			return err
		}
		pn := mustPhase(t, nd, layers.Train)
		inputs := map[string]tensor.Shape{}
		for i, name := range pn.Spec.Inputs {
			inputs[name] = pn.Data[0].Shapes[i]
		}
		_, err = model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1, Threads: 1})
		return err
	}
	at := `layer "loss_bbox" (f.prototxt:9:1)`
	for _, c := range []struct{ name, src, want string }{
		{"targets", strings.Replace(smoothL1Net, "shape { dim: 4 dim: 8 } shape { dim: 4 dim: 8 } shape", "shape { dim: 4 dim: 7 } shape { dim: 4 dim: 8 } shape", 1),
			"the targets (bottom 1) are 4x7 (28), the predictions 4x8 (32): all bottoms must have one shape"},
		{"outside weights", strings.Replace(smoothL1Net, "shape { dim: 4 dim: 8 } } }", "shape { dim: 2 dim: 16 } } }", 1),
			"the outside weights (bottom 3) are 2x16"},
		{"propagate_down", strings.Replace(smoothL1Net, `top: "loss_bbox"`, `top: "loss_bbox" propagate_down: true propagate_down: true propagate_down: true propagate_down: false`, 1),
			`propagate_down: true for bottom "bbox_inside_weights"`},
	} {
		if err := build(c.src); err == nil || !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s and %q", c.name, err, at, c.want)
		}
	}
	ok := strings.Replace(smoothL1Net, "shape { dim: 4 dim: 8 } shape { dim: 4 dim: 8 } shape", "shape { dim: 4 dim: 8 dim: 1 dim: 1 } shape { dim: 4 dim: 8 } shape", 1)
	if err := build(ok); err != nil {
		t.Errorf("4×8×1×1 targets for 4×8 predictions: %v", err)
	}
}

// TestFRCNNSmoothL1FixtureRuns: the Faster R-CNN fixture that was refused
// as a fork's layer now builds and runs forward, its loss (σ 1, no
// weights) Σ f(pred − target) over the batch of 2, f worked out here.
func TestFRCNNSmoothL1FixtureRuns(t *testing.T) {
	n := buildForkFixture(t, "frcnn_smoothl1.prototxt")
	p, q := n.Input("bbox_pred").Data, n.Input("bbox_targets").Data
	var want float64
	for i := range p {
		p[i] = float32(i%5) * 0.4
		d := float64(p[i]) - float64(q[i])
		if math.Abs(d) < 1 {
			want += 0.5 * d * d
		} else {
			want += math.Abs(d) - 0.5
		}
	}
	want /= 2
	if loss := n.Forward(); math.Abs(loss-want) > 1e-6 {
		t.Errorf("loss %v, want %v (%v)", loss, want, n.Err())
	}
}
