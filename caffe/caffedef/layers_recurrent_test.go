package caffedef

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/caffemodel"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// lrcnNet is a small net shaped like LRCN's language model: time-major
// data and sequence continuation indicators from an Input layer, an LSTM
// as in LRCN's prototxt, a per-timestep InnerProduct and a softmax loss
// over axis 2 ignoring label -1.
const lrcnNet = `name: "lrcn_tiny"
layer { name: "input" type: "Input" top: "data" top: "cont" top: "label"
  input_param { shape { dim: 5 dim: 3 dim: 6 } shape { dim: 5 dim: 3 } shape { dim: 5 dim: 3 } } }
layer { name: "lstm1" type: "LSTM" bottom: "data" bottom: "cont" top: "lstm1"
  recurrent_param { num_output: 16
    weight_filler { type: "uniform" min: -0.08 max: 0.08 }
    bias_filler { type: "constant" value: 0 } } }
layer { name: "predict" type: "InnerProduct" bottom: "lstm1" top: "predict"
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  inner_product_param { num_output: 4 axis: 2 weight_filler { type: "uniform" min: -0.08 max: 0.08 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "predict" bottom: "label" top: "loss"
  loss_param { ignore_label: -1 } softmax_param { axis: 2 } }
`

// buildInputNet builds the TRAIN net of src, whose inputs come from one
// Input layer.
func buildInputNet(t *testing.T, src string) (*PhaseNet, *model.Net) {
	t.Helper()
	nd, err := ParseNet("f.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, nd, layers.Train)
	inputs := map[string]tensor.Shape{}
	for i, name := range pn.Spec.Inputs {
		inputs[name] = pn.Data[0].Shapes[i]
	}
	n, err := model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return pn, n
}

func TestRecurrentDecode(t *testing.T) {
	pn, n := buildInputNet(t, lrcnNet)
	c, ok := findLayer(t, pn.Spec, "lstm1").Config.(*layers.LSTMConfig)
	if !ok {
		t.Fatalf("lstm1 decodes to %T", findLayer(t, pn.Spec, "lstm1").Config)
	}
	want := layers.RecurrentConfig{
		NumOutput:    16,
		WeightFiller: layers.Filler{Type: layers.FillUniform, Min: -0.08, Max: 0.08, Std: 1},
		BiasFiller:   constant(0),
	}
	if c.RecurrentConfig != want {
		t.Errorf("lstm1 config %+v, want %+v", c.RecurrentConfig, want)
	}

	// Inputs: two sequences per stream, one restarting mid-batch; labels
	// in [0, 4), -1 (ignored) after the end of stream 2's sequence.
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n.Input("data").Data {
		n.Input("data").Data[i] = float32(r.NormFloat64())
	}
	copy(n.Input("cont").Data, []float32{0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1})
	for i := range n.Input("label").Data {
		n.Input("label").Data[i] = float32(r.IntN(4))
	}
	n.Input("label").Data[14] = -1

	var blocks []model.Block
	for _, b := range n.Blocks() {
		if b.Layer == "lstm1" {
			blocks = append(blocks, b)
		}
	}
	var shapes []string
	for _, b := range blocks {
		shapes = append(shapes, fmt.Sprint([]int(b.Shape)))
	}
	if got, want := strings.Join(shapes, " "), "[64 6] [64] [64 16]"; got != want {
		t.Errorf("lstm1 param shapes %s, want %s", got, want)
	}

	loss := n.ForwardBackward()
	if math.IsNaN(loss) || loss <= 0 {
		t.Fatalf("loss %v", loss)
	}
	if s := n.NonFinite(); s != "" {
		t.Fatalf("non-finite values in %s", s)
	}
	// The LSTM's weight gradients agree with finite differences of the
	// net's loss (the state carried between Forwards is discarded: every
	// stream starts with cont 0).
	grads := append([]float32(nil), n.Grads()...)
	params := n.Params()
	for _, b := range blocks {
		for _, k := range []int{0, b.Shape.Count() / 2, b.Shape.Count() - 1} {
			i := b.Off + k
			const eps = 1e-2
			x := params[i]
			params[i] = x + eps
			lp := n.Forward()
			params[i] = x - eps
			lm := n.Forward()
			params[i] = x
			num := (lp - lm) / (2 * eps)
			if d := math.Abs(num - float64(grads[i])); d > 1e-3*math.Max(1, math.Abs(num)) {
				t.Errorf("%s[%d]: gradient %g, finite difference %g", b.Name, k, grads[i], num)
			}
		}
	}
	if allZero := func() bool {
		for _, g := range grads[blocks[0].Off : blocks[0].Off+blocks[0].Shape.Count()] {
			if g != 0 {
				return false
			}
		}
		return true
	}(); allZero {
		t.Error("W_xc has no gradient")
	}
}

// TestRecurrentDecodeVariants builds an RNN with a static input and
// exposed state, and an LSTMUnit, from prototxt, and runs them.
func TestRecurrentDecodeVariants(t *testing.T) {
	const src = `name: "variants"
layer { name: "input" type: "Input" top: "x" top: "cont" top: "static" top: "h0" top: "c_prev" top: "gates" top: "cont1"
  input_param { shape { dim: 4 dim: 2 dim: 3 } shape { dim: 4 dim: 2 } shape { dim: 2 dim: 5 } shape { dim: 1 dim: 2 dim: 8 }
    shape { dim: 1 dim: 2 dim: 3 } shape { dim: 1 dim: 2 dim: 12 } shape { dim: 1 dim: 2 } } }
layer { name: "rnn" type: "RNN" bottom: "x" bottom: "cont" bottom: "static" bottom: "h0" top: "o" top: "hT"
  recurrent_param { num_output: 8 weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "constant" value: 0.1 }
    expose_hidden: true debug_info: false } }
layer { name: "unit" type: "LSTMUnit" bottom: "c_prev" bottom: "gates" bottom: "cont1" top: "c" top: "h" }
layer { name: "lo" type: "Reduction" bottom: "o" top: "lo" loss_weight: 1 }
layer { name: "lh" type: "Reduction" bottom: "h" top: "lh" loss_weight: 1 }
`
	pn, n := buildInputNet(t, src)
	c := findLayer(t, pn.Spec, "rnn").Config.(*layers.RNNConfig)
	if !c.ExposeHidden || c.NumOutput != 8 || c.BiasFiller != constant(0.1) {
		t.Errorf("rnn config %+v", c.RecurrentConfig)
	}
	if _, ok := findLayer(t, pn.Spec, "unit").Config.(*layers.LSTMUnitConfig); !ok {
		t.Errorf("unit decodes to %T", findLayer(t, pn.Spec, "unit").Config)
	}
	for _, name := range []string{"x", "static", "h0", "c_prev", "gates"} {
		for i := range n.Input(name).Data {
			n.Input(name).Data[i] = float32(i%7) / 7
		}
	}
	n.ForwardBackward()
	if s := n.NonFinite(); s != "" {
		t.Fatalf("non-finite values in %s", s)
	}
	if got := n.Blob("hT").Shape; !got.Equal(tensor.Shape{1, 2, 8}) {
		t.Errorf("hT shape %v", got)
	}
	var names []string
	for _, b := range n.Blocks() {
		names = append(names, b.Layer+":"+b.Shape.String())
	}
	if len(names) != 6 {
		t.Errorf("RNN with a static input has params %v, want 6 (W_xh, b_h, W_xh_static, W_hh, W_ho, b_o)", names)
	}
}

func TestRecurrentDecodeErrors(t *testing.T) {
	net := func(layer string) string {
		return `layer { name: "input" type: "Input" top: "data" top: "cont"
  input_param { shape { dim: 5 dim: 3 dim: 6 } shape { dim: 5 dim: 3 } } }
` + layer
	}
	for _, c := range []struct{ name, src, want string }{
		{"no num_output", net(`layer { name: "l" type: "LSTM" bottom: "data" bottom: "cont" top: "l" recurrent_param { } }`),
			"f.prototxt:3:87: recurrent_param of layer 'l' needs num_output"},
		{"no recurrent_param", net(`layer { name: "l" type: "RNN" bottom: "data" bottom: "cont" top: "l" }`),
			"f.prototxt:3:1: recurrent_param of layer 'l' needs num_output"},
		{"num_output 0", net(`layer { name: "l" type: "LSTM" bottom: "data" bottom: "cont" top: "l" recurrent_param { num_output: 0 } }`),
			"num_output in recurrent_param of layer 'l'"},
		{"unknown field", net(`layer { name: "l" type: "LSTM" bottom: "data" bottom: "cont" top: "l" recurrent_param { num_output: 2 clip: 1 } }`),
			"'clip' in recurrent_param of layer 'l'"},
		{"bad filler", net(`layer { name: "l" type: "LSTM" bottom: "data" bottom: "cont" top: "l" recurrent_param { num_output: 2 weight_filler { type: "unitball" } } }`),
			"unsupported filler type \"unitball\""},
	} {
		_, err := ParseNet("f.prototxt", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}

	// Shape errors surface when the model builds the layer, named.
	for _, c := range []struct{ name, layer, want string }{
		{"one bottom", `layer { name: "l" type: "LSTM" bottom: "data" top: "l" recurrent_param { num_output: 2 } }`, "bottom"},
		{"cont mismatch", `layer { name: "l" type: "LSTM" bottom: "data" bottom: "data" top: "l" recurrent_param { num_output: 2 } }`, "continuation"},
		{"exposed without state", `layer { name: "l" type: "RNN" bottom: "data" bottom: "cont" top: "l" recurrent_param { num_output: 2 expose_hidden: true } }`, "expose_hidden"},
	} {
		nd, err := ParseNet("f.prototxt", []byte(net(c.layer)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pn := mustPhase(t, nd, layers.Train)
		inputs := map[string]tensor.Shape{}
		for i, name := range pn.Spec.Inputs {
			inputs[name] = pn.Data[0].Shapes[i]
		}
		_, err = model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1})
		if err == nil || !strings.Contains(err.Error(), "'l'") && !strings.Contains(err.Error(), `"l"`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming layer l and mentioning %q", c.name, err, c.want)
		}
	}
}

// TestRecurrentCaffemodel copies a .caffemodel written with Caffe's blob
// layout for an LSTM layer (W_xc 4H×D, b_c 4H, W_hc 4H×H, by position)
// into a net built from the prototxt.
func TestRecurrentCaffemodel(t *testing.T) {
	_, n := buildInputNet(t, lrcnNet)
	const H, D = 16, 6
	lstm := caffemodel.Layer{Name: "lstm1", Type: "LSTM", Blobs: []caffemodel.Blob{
		{Shape: []int{4 * H, D}}, {Shape: []int{4 * H}}, {Shape: []int{4 * H, H}},
	}}
	var want []float32
	for i := range lstm.Blobs {
		b := &lstm.Blobs[i]
		b.Data = make([]float32, tensor.Shape(b.Shape).Count())
		for j := range b.Data {
			b.Data[j] = float32(i*10000 + j)
		}
		want = append(want, b.Data...)
	}
	enc, err := caffemodel.Encode(&caffemodel.Net{Name: "lrcn_tiny", Layers: []caffemodel.Layer{lstm}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := caffemodel.Decode("lrcn.caffemodel", enc)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := caffemodel.CopyTrained(src, "lrcn.caffemodel", n.Blocks(), n.Params())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Copied) != 1 || rep.Copied[0] != "lstm1" {
		t.Errorf("copied %v", rep.Copied)
	}
	var got []float32
	for _, b := range n.Blocks() {
		if b.Layer == "lstm1" {
			got = append(got, n.Params()[b.Off:b.Off+b.Shape.Count()]...)
		}
	}
	if !slices.Equal(got, want) {
		t.Error("the LSTM's params differ from the file's blobs")
	}
}
