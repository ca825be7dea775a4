package caffedef_test

// Ports of Caffe's test_net.cpp beyond caffe_net_test.go (issue 22): the
// loss-weight tests, Backward with an Accuracy layer, TestReshape, the
// blob and layer look-ups, FilterNetTest (include/exclude by phase, stage
// and level), and EuclideanLossLayerTest.TestForward (the loss weight
// applied by the net).

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/prototxt"
	"dsgd/data"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
)

// unsharedLossNet is Caffe's InitUnsharedWeightsNet(loss_weight,
// midnet_loss_weight, force_backward: true) without a bias term: two
// InnerProducts of 10 outputs over 5×2×3×4 gaussian data, compared by a
// EuclideanLoss; nil weights are left unset.
func unsharedLossNet(lossWeight, midWeight *float32) string {
	w := func(v *float32) string {
		if v == nil {
			return ""
		}
		return fmt.Sprintf(" loss_weight: %g ", *v)
	}
	return `name: 'UnsharedWeightsNetwork' force_backward: true
layer { name: 'data' type: 'DummyData'
  dummy_data_param { num: 5 channels: 2 height: 3 width: 4 data_filler { type: 'gaussian' std: 0.01 } }
  top: 'data' }
layer { name: 'innerproduct1' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'gaussian' std: 10 } }
  param { name: 'unsharedweights1' lr_mult: 1 }
  bottom: 'data' top: 'innerproduct1'` + w(midWeight) + `}
layer { name: 'innerproduct2' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'gaussian' std: 10 } }
  param { name: 'unsharedweights2' lr_mult: 1 }
  bottom: 'data' top: 'innerproduct2' }
layer { name: 'loss' type: 'EuclideanLoss'` + w(lossWeight) + ` bottom: 'innerproduct1' bottom: 'innerproduct2' }
`
}

// netBlobs are the blobs of the unshared net whose diffs Caffe compares
// (dsgd inserts no split blobs).
var netBlobs = []string{"data", "innerproduct1", "innerproduct2"}

func copyDiffs(n *model.Net) map[string][]float32 {
	out := map[string][]float32{}
	for _, name := range netBlobs {
		out[name] = append([]float32(nil), n.Blob(name).Diff...)
	}
	return out
}

func f32(v float32) *float32 { return &v }

func TestCaffePortNetLossWeight(t *testing.T) {
	weights := []float32{2, 0, 1, -1, -2.5, 3.7}
	t.Run("NetTest.TestLossWeight", func(t *testing.T) {
		n := mustCaffeNet(t, unsharedLossNet(nil, nil))
		loss := n.ForwardBackward()
		blobs, params := copyDiffs(n), append([]float32(nil), n.Grads()...)
		if math.Abs(loss) < 1e-2 {
			t.Fatalf("loss %g is trivial", loss)
		}
		for _, w := range weights {
			n := mustCaffeNet(t, unsharedLossNet(f32(w), nil))
			wl := n.ForwardBackward()
			margin := 1e-4 * math.Abs(float64(w))
			if math.Abs(loss*float64(w)-wl) > margin {
				t.Errorf("weight %g: loss %g, want %g", w, wl, loss*float64(w))
			}
			for _, name := range netBlobs {
				for k, d := range n.Blob(name).Diff {
					if math.Abs(float64(blobs[name][k]*w-d)) > margin {
						t.Errorf("weight %g: %s diff[%d] = %g, want %g", w, name, k, d, blobs[name][k]*w)
						break
					}
				}
			}
			for k, g := range n.Grads() {
				if math.Abs(float64(params[k]*w-g)) > margin {
					t.Errorf("weight %g: param grad[%d] = %g, want %g", w, k, g, params[k]*w)
					break
				}
			}
		}
	})
	t.Run("NetTest.TestLossWeightMidNet", func(t *testing.T) {
		n := mustCaffeNet(t, unsharedLossNet(f32(0), f32(1)))
		loss := n.ForwardBackward()
		grad := append([]float32(nil), n.Blob("data").Diff...)
		if math.Abs(loss) < 1e-2 {
			t.Fatalf("loss %g is trivial", loss)
		}
		for _, w := range weights {
			n := mustCaffeNet(t, unsharedLossNet(f32(0), f32(w)))
			wl := n.ForwardBackward()
			margin := 1e-4 * math.Abs(float64(w))
			if math.Abs(loss*float64(w)-wl) > margin {
				t.Errorf("weight %g: loss %g, want %g", w, wl, loss*float64(w))
			}
			for k, d := range n.Blob("data").Diff {
				if math.Abs(float64(grad[k]*w-d)) > margin {
					t.Errorf("weight %g: data diff[%d] = %g, want %g", w, k, d, grad[k]*w)
					break
				}
			}
		}
	})
	t.Run("NetTest.TestComboLossWeight", func(t *testing.T) {
		run := func(lw, mw float32) (float64, map[string][]float32) {
			n := mustCaffeNet(t, unsharedLossNet(f32(lw), f32(mw)))
			loss := n.ForwardBackward()
			return loss, copyDiffs(n)
		}
		loss, base := run(1, 1)
		// changes checks that diff(2) − base is non-trivial and half of
		// diff(3) − base for the blobs in change, and zero for the others.
		changes := func(what string, d2, d3 map[string][]float32, change map[string]bool) {
			for _, name := range netBlobs {
				for k := range base[name] {
					g2, g3 := d2[name][k]-base[name][k], d3[name][k]-base[name][k]
					if change[name] {
						if math.Abs(float64(g2)) <= 1e-4 || math.Abs(float64(2*g2-g3)) > 1e-4 {
							t.Errorf("%s: %s diff[%d] moved by %g and %g", what, name, k, g2, g3)
							break
						}
					} else if g2 != 0 || g3 != 0 {
						t.Errorf("%s: %s diff[%d] moved by %g and %g, want 0", what, name, k, g2, g3)
						break
					}
				}
			}
		}
		lossMain2, main2 := run(2, 1)
		lossMain3, main3 := run(3, 1)
		// Caffe: every blob's gradient changes with the main loss weight
		// but that of innerproduct1's split for the mid-net loss, which
		// dsgd does not create.
		changes("loss weight", main2, main3, map[string]bool{"data": true, "innerproduct1": true, "innerproduct2": true})
		lossMid2, mid2 := run(1, 2)
		lossMid3, mid3 := run(1, 3)
		changes("mid-net loss weight", mid2, mid3, map[string]bool{"data": true, "innerproduct1": true})
		for _, c := range []struct {
			what   string
			l2, l3 float64
		}{{"loss weight", lossMain2, lossMain3}, {"mid-net loss weight", lossMid2, lossMid3}} {
			d2, d3 := c.l2-loss, c.l3-loss
			if math.Abs(d2) <= 1e-4 || math.Abs(2*d2-d3) > 1e-4 {
				t.Errorf("%s: loss moved by %g and %g", c.what, d2, d3)
			}
		}
	})
	t.Run("NetTest.TestBackwardWithAccuracyLayer", func(t *testing.T) {
		// Caffe names the Accuracy layer 'loss', as the loss layer.
		src := tinyNet(false, "SoftmaxWithLoss") +
			"layer { name: 'loss' type: 'Accuracy' bottom: 'innerproduct' bottom: 'label' top: 'accuracy' }\n"
		n := mustCaffeNet(t, src)
		if n.Blob("accuracy") == nil {
			t.Fatal("no blob 'accuracy'")
		}
		n.ForwardBackward()
	})
}

// TestCaffePortEuclideanLossForward ports EuclideanLossLayerTest.TestForward
// (test_euclidean_loss_layer.cpp): loss_weight 3.7 scales the loss the
// net reports.
func TestCaffePortEuclideanLossForward(t *testing.T) {
	t.Run("EuclideanLossLayerTest.TestForward", func(t *testing.T) {
		net := func(weight string) string {
			return `name: 'Euclidean'
layer { name: 'data' type: 'DummyData'
  dummy_data_param { shape { dim: 10 dim: 5 dim: 1 dim: 1 } data_filler { type: 'gaussian' }
                     shape { dim: 10 dim: 5 dim: 1 dim: 1 } data_filler { type: 'gaussian' } }
  top: 'data' top: 'label' }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'data' bottom: 'label' top: 'loss' ` + weight + ` }
`
		}
		l1 := mustCaffeNet(t, net("")).ForwardBackward()
		l2 := mustCaffeNet(t, net("loss_weight: 3.7")).ForwardBackward()
		if math.Abs(l1*float64(float32(3.7))-l2) > 1e-5 {
			t.Errorf("weighted loss %g, want 3.7 × %g", l2, l1)
		}
		if math.Abs(l1) < 0.1 {
			t.Errorf("loss %g is trivial", l1)
		}
	})
}

// TestCaffePortNetLookups ports TestHasBlob, TestGetBlob, TestHasLayer and
// TestGetLayerByName on Caffe's tiny net.
func TestCaffePortNetLookups(t *testing.T) {
	n := mustCaffeNet(t, tinyNet(false, "SoftmaxWithLoss"))
	t.Run("NetTest.TestHasBlob", func(t *testing.T) {
		for _, b := range []string{"data", "label", "innerproduct", "top_loss"} {
			if n.Blob(b) == nil {
				t.Errorf("no blob %q", b)
			}
		}
		if n.Blob("loss") != nil {
			t.Error("a blob 'loss'")
		}
	})
	t.Run("NetTest.TestGetBlob", func(t *testing.T) {
		if n.Blob("data") != n.Input("data") || n.Blob("label") != n.Input("label") {
			t.Error("Blob and Input disagree on the inputs")
		}
		if n.Blob("innerproduct") == nil || n.Blob("top_loss") == nil || n.Blob("loss") != nil {
			t.Error("wrong blobs by name")
		}
	})
	var names []string
	for _, li := range n.Layers() {
		names = append(names, li.Name)
	}
	t.Run("NetTest.TestHasLayer", func(t *testing.T) {
		// dsgd's model holds the compute layers; the DummyData layer
		// 'data' is its inputs.
		for _, want := range []string{"innerproduct", "loss"} {
			if !slices.Contains(names, want) {
				t.Errorf("no layer %q in %v", want, names)
			}
		}
		if slices.Contains(names, "label") {
			t.Error("a layer 'label'")
		}
	})
	t.Run("NetTest.TestGetLayerByName", func(t *testing.T) {
		for _, li := range n.Layers() {
			want := map[string]string{"innerproduct": "InnerProduct", "loss": "SoftmaxWithLoss"}[li.Name]
			if li.Type != want {
				t.Errorf("layer %q has type %q, want %q", li.Name, li.Type, want)
			}
		}
	})
}

// TestCaffePortNetReshape ports NetTest.TestReshape. Caffe reshapes one
// net's input in place; a dsgd net has fixed shapes, and a new shape is a
// net built for it sharing the first one's weights (model ShareWith, as a
// TEST net shares the TRAIN net's). Switching between the two gives the
// same outputs each time, and the output shapes follow the input's.
func TestCaffePortNetReshape(t *testing.T) {
	t.Run("NetTest.TestReshape", func(t *testing.T) {
		const src = `name: 'ReshapableNetwork'
layer { name: 'data' type: 'Input' top: 'data' input_param { shape: { dim: 1 dim: 3 dim: 100 dim: 100 } } }
layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
  convolution_param { num_output: 5 kernel_size: 3 stride: 2
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0.2 } } }
layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: 'norm1' type: 'LRN' bottom: 'pool1' top: 'norm1' lrn_param { local_size: 3 } }
layer { name: 'softmax' type: 'Softmax' bottom: 'norm1' top: 'softmax' }
`
		def, err := caffedef.ParseNet("net.prototxt", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		pn, err := def.Phase(layers.Train)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1701, 1))
		gauss := func(shape ...int) *tensor.Blob {
			b := tensor.NewBlob("b", shape...)
			for i := range b.Data {
				b.Data[i] = float32(r.NormFloat64())
			}
			return b
		}
		blob1, blob2 := gauss(2, 3, 12, 10), gauss(4, 3, 9, 11)
		n1, err := model.Build(pn.Spec, map[string]tensor.Shape{"data": blob1.Shape}, model.Options{Phase: layers.Train, Seed: 1701})
		if err != nil {
			t.Fatal(err)
		}
		n2, err := model.Build(pn.Spec, map[string]tensor.Shape{"data": blob2.Shape}, model.Options{Phase: layers.Train, Seed: 1701, ShareWith: n1})
		if err != nil {
			t.Fatal(err)
		}
		run := func(n *model.Net, in *tensor.Blob) []float32 {
			copy(n.Input("data").Data, in.Data)
			n.Forward()
			n.Backward()
			return append([]float32(nil), n.Outputs()[0].Data...)
		}
		out1, out2 := run(n1, blob1), run(n2, blob2)
		again1, again2 := run(n1, blob1), run(n2, blob2)
		for _, c := range []struct {
			what      string
			got, want []float32
		}{{"first shape", again1, out1}, {"second shape", again2, out2}} {
			for i := range c.want {
				if c.got[i] != c.want[i] {
					t.Errorf("%s: output[%d] %g, then %g", c.what, i, c.want[i], c.got[i])
					break
				}
			}
		}
		s1, s2 := n1.Outputs()[0].Shape, n2.Outputs()[0].Shape
		if s1[0] != 2 || s2[0] != 4 {
			t.Errorf("output nums %d and %d, want 2 and 4", s1[0], s2[0])
		}
		if slices.Equal(s1[2:], s2[2:]) {
			t.Errorf("output shapes %v and %v have the same spatial shape", s1, s2)
		}
	})
}

// filterable completes the bare layers of Caffe's FilterNetTest nets with
// the parameters dsgd requires to parse them (a Data layer's source and
// batch size, an InnerProduct's num_output), which do not bear on
// filtering, and returns the phase of the net's state (Caffe's NetState
// default, TEST, when it names none).
func filterable(t *testing.T, src string) (string, layers.Phase) {
	t.Helper()
	m, err := prototxt.Parse("net.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	phase := layers.Test
	for _, st := range m.Get("state") {
		for _, p := range st.Msg.Get("phase") {
			if p.Value == "TRAIN" {
				phase = layers.Train
			}
		}
	}
	add := func(l *prototxt.Message, text string) {
		extra, err := prototxt.Parse("extra", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		l.Fields = append(l.Fields, extra.Fields...)
	}
	for _, f := range m.Get("layer") {
		l := f.Msg
		typ := ""
		if ts := l.Get("type"); len(ts) > 0 {
			typ = ts[0].Value
		}
		switch typ {
		case "Data":
			if len(l.Get("data_param")) == 0 {
				add(l, "data_param { source: 'unused' batch_size: 1 }")
			}
		case "InnerProduct":
			if len(l.Get("inner_product_param")) == 0 {
				add(l, "inner_product_param { num_output: 1 }")
			}
		}
	}
	return string(prototxt.Format(m)), phase
}

// cpLayerNames lists the names of a net's layers in order.
func cpLayerNames(t *testing.T, src string) []string {
	t.Helper()
	m, err := prototxt.Parse("net.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m.Get("layer") {
		for _, n := range f.Msg.Get("name") {
			out = append(out, n.Value)
		}
	}
	return out
}

// TestCaffePortFilterNet ports FilterNetTest: the layers dsgd keeps for
// the net's state (its phase, stages and level) are those of Caffe's
// expected filtered net. Caffe also checks that filtering twice changes
// nothing; dsgd filters when it builds a phase's net, from the same rules.
func TestCaffePortFilterNet(t *testing.T) {
	for _, tc := range caffeFilterNetTests {
		t.Run(tc.name, func(t *testing.T) {
			for i, run := range tc.runs {
				src, phase := filterable(t, run[0])
				def, err := caffedef.ParseNet("net.prototxt", []byte(src))
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				var kept []string
				for _, l := range def.Layers {
					if l.InState(phase, def.State) {
						kept = append(kept, l.Name)
					}
				}
				if want := cpLayerNames(t, run[1]); !slices.Equal(kept, want) {
					t.Errorf("run %d (%v, state %+v): kept %v, want %v", i, phase, def.State, kept, want)
				}
			}
		})
	}
}

// TestCaffePortSolver ports Caffe's test_solver.cpp: the train net and
// the two test nets of a solver with an inline net_param and test_states.
func TestCaffePortSolver(t *testing.T) {
	t.Run("SolverTest.TestInitTrainTestNets", func(t *testing.T) {
		// Caffe's solver, literally: no base_lr nor lr_policy, which it
		// (and dsgd) needs only to train.
		const src = `test_interval: 10
test_iter: 10 test_state: { stage: 'with-softmax' }
test_iter: 10 test_state: {}
net_param {
  name: 'TestNetwork'
  layer { name: 'data' type: 'DummyData'
    dummy_data_param { shape { dim: 5 dim: 2 dim: 3 dim: 4 } shape { dim: 5 } }
    top: 'data' top: 'label' }
  layer { name: 'innerprod' type: 'InnerProduct' inner_product_param { num_output: 10 } bottom: 'data' top: 'innerprod' }
  layer { name: 'accuracy' type: 'Accuracy' bottom: 'innerprod' bottom: 'label' top: 'accuracy' exclude: { phase: TRAIN } }
  layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'innerprod' bottom: 'label'
    include: { phase: TRAIN } include: { phase: TEST stage: 'with-softmax' } }
}
`
		sd, err := caffedef.ParseSolver("solver.prototxt", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := sd.CheckTrain(); err == nil || !strings.Contains(err.Error(), "base_lr is required") {
			t.Errorf("CheckTrain: %v, want base_lr is required", err)
		}
		names := func(src caffedef.NetSource, p layers.Phase, st caffedef.NetState) []string {
			def, err := src.Load()
			if err != nil {
				t.Fatal(err)
			}
			pn, err := def.PhaseState(p, st)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range pn.Spec.Layers {
				out = append(out, l.Name)
			}
			return out
		}
		has := func(what string, ls []string, layer string, want bool) {
			if slices.Contains(ls, layer) != want {
				t.Errorf("%s has layer %q: %v, want %v (layers %v)", what, layer, !want, want, ls)
			}
		}
		train := names(sd.TrainNet, layers.Train, sd.TrainState)
		has("train net", train, "loss", true)
		has("train net", train, "accuracy", false)
		if len(sd.TestNets) != 2 {
			t.Fatalf("%d test nets, want 2", len(sd.TestNets))
		}
		t0 := names(sd.TestNets[0].Source, layers.Test, sd.TestNets[0].State)
		t1 := names(sd.TestNets[1].Source, layers.Test, sd.TestNets[1].State)
		has("test net 0", t0, "loss", true)
		has("test net 0", t0, "accuracy", true)
		has("test net 1", t1, "loss", false)
		has("test net 1", t1, "accuracy", true)
	})
}

// TestCaffePortNetMore ports NetTest.TestUnsharedWeightsDiffNet and the
// TestAllInOneNet tests (one net for train, val and deploy by stage).
func TestCaffePortNetMore(t *testing.T) {
	t.Run("NetTest.TestUnsharedWeightsDiffNet", func(t *testing.T) {
		n := mustCaffeNet(t, unsharedLossNet(nil, nil))
		n.Forward()
		n.Backward()
		bs := n.Blocks()
		if len(bs) != 2 {
			t.Fatalf("%d param blocks, want 2", len(bs))
		}
		g := n.Grads()
		g1, g2 := g[bs[0].Off:bs[0].Off+bs[0].Len()], g[bs[1].Off:bs[1].Off+bs[1].Len()]
		for i := range g1 {
			if g1[i] == 0 || math.Abs(float64(-g1[i]-g2[i])) > 4*math.Abs(float64(g1[i]))*0x1p-23 {
				t.Errorf("grad1[%d] = %g, grad2[%d] = %g; want nonzero opposites", i, g1[i], i, g2[i])
				break
			}
		}
	})
	const allInOne = `name: 'All-in-one Network'
layer { name: 'train-data' type: 'DummyData' top: 'data' top: 'label'
  dummy_data_param { shape { dim: 1 dim: 10 } shape { dim: 1 dim: 1 } } include { phase: TRAIN stage: 'train' } }
layer { name: 'val-data' type: 'DummyData' top: 'data' top: 'label'
  dummy_data_param { shape { dim: 1 dim: 10 } shape { dim: 1 dim: 1 } } include { phase: TEST stage: 'val' } }
layer { name: 'deploy-data' type: 'Input' top: 'data' input_param { shape { dim: 1 dim: 10 } } include { phase: TEST stage: 'deploy' } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip' inner_product_param { num_output: 2 } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss'
  include { phase: TRAIN stage: 'train' } include { phase: TEST stage: 'val' } }
`
	for _, c := range []struct {
		name, stage string
		phase       layers.Phase
		want, not   []string
	}{
		{"NetTest.TestAllInOneNetTrain", "train", layers.Train, []string{"train-data", "loss"}, []string{"val-data", "deploy-data"}},
		{"NetTest.TestAllInOneNetVal", "val", layers.Test, []string{"val-data", "loss"}, []string{"train-data", "deploy-data"}},
		{"NetTest.TestAllInOneNetDeploy", "deploy", layers.Test, []string{"deploy-data"}, []string{"train-data", "val-data", "loss"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			def, err := caffedef.ParseNet("net.prototxt", []byte(allInOne))
			if err != nil {
				t.Fatal(err)
			}
			pn, err := def.PhaseState(c.phase, caffedef.NetState{Stages: []string{c.stage}})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range pn.Data {
				names = append(names, d.Name)
			}
			for _, l := range pn.Spec.Layers {
				names = append(names, l.Name)
			}
			for _, w := range c.want {
				if !slices.Contains(names, w) {
					t.Errorf("no layer %q in %v", w, names)
				}
			}
			for _, w := range c.not {
				if slices.Contains(names, w) {
					t.Errorf("layer %q in %v", w, names)
				}
			}
		})
	}
}

// TestCaffePortDummyData ports Caffe's test_dummy_data_layer.cpp: the
// caffedef package reads the shapes (legacy num/channels/height/width, one
// value standing for every top) and the fillers (one for every top, none
// meaning constant 0), and data.Dummy fills the tops with them.
func TestCaffePortDummyData(t *testing.T) {
	run := func(t *testing.T, param string, tops int) ([]*tensor.Blob, func()) {
		t.Helper()
		src := "layer { name: 'dummy' type: 'DummyData' dummy_data_param { " + param + " }"
		names := []string{"a", "b", "c"}[:tops]
		for _, n := range names {
			src += " top: '" + n + "'"
		}
		def, err := caffedef.ParseNet("net.prototxt", []byte(src+" }"))
		if err != nil {
			t.Fatal(err)
		}
		pn, err := def.Phase(layers.Train)
		if err != nil {
			t.Fatal(err)
		}
		dl := pn.Data[0]
		var fs []data.DummyFiller
		for i := range dl.Tops {
			f := caffedef.Filler{Type: "constant"}
			switch {
			case i < len(dl.Fillers):
				f = dl.Fillers[i]
			case len(dl.Fillers) == 1:
				f = dl.Fillers[0]
			}
			fs = append(fs, data.DummyFiller{Type: f.Type, Value: f.Value, Min: f.Min, Max: f.Max, Mean: f.Mean, Std: f.Std})
		}
		out := make([]*tensor.Blob, len(dl.Tops))
		for i := range out {
			out[i] = tensor.NewBlob(dl.Tops[i], dl.Shapes[i]...)
		}
		d := &data.Dummy{Name: dl.Name, Fillers: fs, Seed: 1701}
		return out, func() {
			if err := d.Fill(context.Background(), out); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := func(t *testing.T, b *tensor.Blob, v float32) {
		t.Helper()
		for i, x := range b.Data {
			if x != v {
				t.Fatalf("%s[%d] = %g, want %g", b.Name, i, x, v)
			}
		}
	}
	t.Run("DummyDataLayerTest.TestOneTopConstant", func(t *testing.T) {
		tops, fill := run(t, "num: 5 channels: 3 height: 2 width: 4", 1)
		if !tops[0].Shape.Equal(tensor.Shape{5, 3, 2, 4}) {
			t.Fatalf("shape %v", tops[0].Shape)
		}
		fill()
		all(t, tops[0], 0)
	})
	t.Run("DummyDataLayerTest.TestTwoTopConstant", func(t *testing.T) {
		tops, fill := run(t, "num: 5 channels: 3 height: 2 width: 4 num: 5 height: 1 data_filler { value: 7 }", 2)
		if !tops[0].Shape.Equal(tensor.Shape{5, 3, 2, 4}) || !tops[1].Shape.Equal(tensor.Shape{5, 3, 1, 4}) {
			t.Fatalf("shapes %v and %v, want 5×3×2×4 and 5×3×1×4", tops[0].Shape, tops[1].Shape)
		}
		fill()
		all(t, tops[0], 7)
		all(t, tops[1], 7)
	})
	t.Run("DummyDataLayerTest.TestThreeTopConstantGaussianConstant", func(t *testing.T) {
		tops, fill := run(t, "num: 5 channels: 3 height: 2 width: 4 data_filler { value: 7 } "+
			"data_filler { type: 'gaussian' mean: 3 std: 0.01 } data_filler { value: 9 }", 3)
		for _, b := range tops {
			if !b.Shape.Equal(tensor.Shape{5, 3, 2, 4}) {
				t.Fatalf("%s shape %v", b.Name, b.Shape)
			}
		}
		gauss := func() []float32 {
			fill()
			all(t, tops[0], 7)
			all(t, tops[2], 9)
			for i, x := range tops[1].Data {
				if math.Abs(float64(x)-3) > 0.1 {
					t.Errorf("b[%d] = %g, want 3 ± 0.1", i, x)
				}
			}
			return append([]float32(nil), tops[1].Data...)
		}
		first, second := gauss(), gauss()
		n := len(first)
		if first[0] == second[0] || first[n-1] == second[n-1] {
			t.Error("the gaussian top did not change between batches")
		}
	})
}

// TestCaffePortSolverFactory ports Caffe's test_solver_factory.cpp: a
// solver of each of Caffe's registered types reads and builds with that
// type. Caffe's solver, literally, has no base_lr nor lr_policy: Caffe's
// solver takes its rate when it steps, dsgd's solver.New when it is
// made, so the port gives solver.New a fixed rate.
func TestCaffePortSolverFactory(t *testing.T) {
	t.Run("SolverFactoryTest.TestCreateSolver", func(t *testing.T) {
		for _, typ := range []string{"AdaDelta", "AdaGrad", "Adam", "Nesterov", "RMSProp", "SGD"} {
			src := "train_net_param { layer { name: 'data' type: 'DummyData' top: 'data' dummy_data_param { shape { dim: 1 } } } } " +
				"type: '" + typ + "'"
			sd, err := caffedef.ParseSolver("solver.prototxt", []byte(src))
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if _, err := sd.TrainNet.Load(); err != nil {
				t.Fatalf("%s: train net: %v", typ, err)
			}
			cfg := sd.Solver
			cfg.BaseLR, cfg.LRPolicy = 0.01, "fixed"
			s, err := solver.New(cfg, 1, []solver.Segment{{Off: 0, Len: 1, LRMult: 1, DecayMult: 1}})
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if got := s.Config().Type; got != typ {
				t.Errorf("solver type %q, want %q", got, typ)
			}
		}
	})
}

// TestCaffePortSolverTypeUpgrade ports SolverTypeUpgradeTest.TestSimple of
// Caffe's test_upgrade_proto.cpp: a solver with the legacy solver_type
// enum reads as the same solver with the type string.
func TestCaffePortSolverTypeUpgrade(t *testing.T) {
	t.Run("SolverTypeUpgradeTest.TestSimple", func(t *testing.T) {
		old := []string{"SGD", "ADAGRAD", "NESTEROV", "RMSPROP", "ADADELTA", "ADAM"}
		typ := []string{"SGD", "AdaGrad", "Nesterov", "RMSProp", "AdaDelta", "Adam"}
		const common = "net: 'examples/mnist/lenet_train_test.prototxt' " +
			"weights: 'examples/mnist/lenet_train_test1.caffemodel' " +
			"weights: 'examples/mnist/lenet_train_test2.caffemodel' " +
			"test_iter: 100 test_interval: 500 base_lr: 0.01 momentum: 0.0 weight_decay: 0.0005 " +
			"lr_policy: 'inv' gamma: 0.0001 power: 0.75 display: 100 max_iter: 10000 snapshot: 5000 " +
			"snapshot_prefix: 'examples/mnist/lenet_rmsprop' solver_mode: GPU "
		for i := range old {
			in, err := caffedef.ParseSolver("solver.prototxt", []byte(common+"solver_type: "+old[i]+" "))
			if err != nil {
				t.Fatalf("%s: %v", old[i], err)
			}
			want, err := caffedef.ParseSolver("solver.prototxt", []byte(common+"type: '"+typ[i]+"' "))
			if err != nil {
				t.Fatalf("%s: %v", typ[i], err)
			}
			if in.Solver.Type != typ[i] {
				t.Errorf("solver_type %s reads as type %q, want %q", old[i], in.Solver.Type, typ[i])
			}
			if !reflect.DeepEqual(in.Solver, want.Solver) || in.TestIter != want.TestIter || in.TestInterval != want.TestInterval ||
				in.Net != want.Net || !slices.Equal(in.Weights, want.Weights) {
				t.Errorf("solver_type %s: %+v, want %+v", old[i], in, want)
			}
		}
	})
}
