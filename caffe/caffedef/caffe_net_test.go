package caffedef_test

// Caffe's NetTest (BVLC/caffe src/caffe/test/test_net.cpp), ported: which
// layers and bottoms take gradients (propagate_down, force_backward,
// lr_mult 0) and weights shared by name. The nets are Caffe's, written as
// in its test; subtests carry Caffe's test names.

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// caffeNet builds the TRAIN phase of a net given as prototxt text, with its
// DummyData tops filled as their data_filler says (seeded), as Caffe's
// NetTest builds its nets.
func caffeNet(t *testing.T, src string) (*model.Net, error) {
	t.Helper()
	def, err := caffedef.ParseNet("net.prototxt", []byte(src))
	if err != nil {
		return nil, err
	}
	pn, err := def.Phase(layers.Train)
	if err != nil {
		return nil, err
	}
	inputs := map[string]tensor.Shape{}
	for _, dl := range pn.Data {
		for i, top := range dl.Tops {
			inputs[top] = tensor.Shape(dl.Shapes[i])
		}
	}
	n, err := model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1701})
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(1701, 0))
	for _, dl := range pn.Data {
		for i, top := range dl.Tops {
			f := caffedef.Filler{Type: "constant"}
			switch {
			case i < len(dl.Fillers):
				f = dl.Fillers[i]
			case len(dl.Fillers) == 1:
				f = dl.Fillers[0]
			}
			b := n.Input(top)
			for k := range b.Data {
				switch f.Type {
				case "gaussian":
					b.Data[k] = f.Mean + f.Std*float32(r.NormFloat64())
				case "uniform":
					b.Data[k] = f.Min + (f.Max-f.Min)*r.Float32()
				default:
					b.Data[k] = f.Value
				}
			}
		}
	}
	return n, nil
}

func mustCaffeNet(t *testing.T, src string) *model.Net {
	t.Helper()
	n, err := caffeNet(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// layerInfo returns the named layer's LayerInfo.
func layerInfo(t *testing.T, n *model.Net, name string) model.LayerInfo {
	t.Helper()
	for _, li := range n.Layers() {
		if li.Name == name {
			return li
		}
	}
	t.Fatalf("no layer %q", name)
	return model.LayerInfo{}
}

func wantNeed(t *testing.T, n *model.Net, layer string, backprop bool, bottoms ...bool) {
	t.Helper()
	li := layerInfo(t, n, layer)
	if li.Backprop != backprop {
		t.Errorf("%s: layer_need_backward %v, want %v", layer, li.Backprop, backprop)
	}
	if len(li.PropagateDown) != len(bottoms) {
		t.Fatalf("%s: %d bottoms, want %d", layer, len(li.PropagateDown), len(bottoms))
	}
	for i, w := range bottoms {
		if li.PropagateDown[i] != w {
			t.Errorf("%s: bottom_need_backward[%d] %v, want %v", layer, i, li.PropagateDown[i], w)
		}
	}
}

const tinyData = `layer { name: 'data' type: 'DummyData'
  dummy_data_param { shape { dim: 5 dim: 2 dim: 3 dim: 4 } data_filler { type: 'gaussian' std: 0.01 }
                     shape { dim: 5 } data_filler { type: 'constant' value: 0 } }
  top: 'data' top: 'label' }
`

func tinyNet(force bool, loss string) string {
	s := "name: 'TinyTestNetwork' " + tinyData + `
layer { name: 'innerproduct' type: 'InnerProduct'
  inner_product_param { num_output: 1000 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  bottom: 'data' top: 'innerproduct' }
layer { name: 'loss' type: '` + loss + `' bottom: 'innerproduct' bottom: 'label' top: 'top_loss' }
`
	if loss == "EuclideanLoss" {
		s = strings.Replace(s, "num_output: 1000", "num_output: 1", 1)
		s = strings.Replace(s, "shape { dim: 5 } data_filler", "shape { dim: 5 dim: 1 } data_filler", 1)
	}
	if force {
		s += "force_backward: true\n"
	}
	return s
}

func TestNetNeedBackward(t *testing.T) {
	t.Run("NetTest.TestBottomNeedBackward", func(t *testing.T) {
		n := mustCaffeNet(t, tinyNet(false, "SoftmaxWithLoss"))
		wantNeed(t, n, "innerproduct", true, false)
		wantNeed(t, n, "loss", true, true, false)
	})
	t.Run("NetTest.TestBottomNeedBackwardForce", func(t *testing.T) {
		n := mustCaffeNet(t, tinyNet(true, "SoftmaxWithLoss"))
		wantNeed(t, n, "innerproduct", true, true)
		wantNeed(t, n, "loss", true, true, false)
	})
	t.Run("NetTest.TestBottomNeedBackwardEuclideanForce", func(t *testing.T) {
		n := mustCaffeNet(t, tinyNet(true, "EuclideanLoss"))
		wantNeed(t, n, "innerproduct", true, true)
		wantNeed(t, n, "loss", true, true, true)
		// The forced gradients are computed: the input's is not zero.
		n.ForwardBackward()
		if asum(n.Input("data").Diff) == 0 {
			t.Error("force_backward: the data input's gradient is zero")
		}
	})
	skipProp := func(skip bool) string {
		pd := "propagate_down: true propagate_down: true"
		if skip {
			pd = "propagate_down: true propagate_down: false"
		}
		return "name: 'SkipPropTestNetwork' " + tinyData + `
layer { name: 'silence' bottom: 'label' type: 'Silence' }
layer { name: 'innerproduct' type: 'InnerProduct'
  inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  bottom: 'data' top: 'innerproduct' }
layer { name: 'ip_fake_labels' type: 'InnerProduct'
  inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 } }
  bottom: 'data' top: 'fake_labels' }
layer { name: 'argmax' bottom: 'fake_labels' top: 'label_argmax' type: 'ArgMax' }
layer { name: 'loss' bottom: 'innerproduct' bottom: 'label_argmax' ` + pd + `
  top: 'cross_entropy_loss' type: 'SigmoidCrossEntropyLoss' loss_weight: 0.1 }
`
	}
	t.Run("NetTest.TestSkipPropagateDown", func(t *testing.T) {
		// propagate_down: false on the labels: only the inner product
		// and the loss run Backward.
		n := mustCaffeNet(t, skipProp(true))
		wantNeed(t, n, "loss", true, true, false)
		wantNeed(t, n, "innerproduct", true, false)
		wantNeed(t, n, "ip_fake_labels", false, false)
		wantNeed(t, n, "argmax", false, false)
		wantNeed(t, n, "silence", false, false)
		// propagate_down: true on them: Caffe builds the net and stops at
		// the first backward pass ("cannot backpropagate to label
		// inputs"); dsgd refuses it when building, naming the layer.
		_, err := caffeNet(t, skipProp(false))
		if err == nil || !strings.Contains(err.Error(), `layer "loss" (net.prototxt:`) ||
			!strings.Contains(err.Error(), `propagate_down: true for bottom "label_argmax"`) {
			t.Errorf("propagate_down: true on labels: err %v", err)
		}
	})
	forceProp := func(force bool) string {
		pd := ""
		if force {
			pd = "propagate_down: true"
		}
		return "name: 'ForcePropTestNetwork' " + tinyData + `
layer { name: 'innerproduct' type: 'InnerProduct'
  inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.01 } }
  bottom: 'data' top: 'innerproduct' ` + pd + ` }
layer { name: 'loss' bottom: 'innerproduct' bottom: 'label' top: 'cross_entropy_loss' type: 'SigmoidCrossEntropyLoss' }
`
	}
	t.Run("NetTest.TestForcePropagateDown", func(t *testing.T) {
		n := mustCaffeNet(t, forceProp(false))
		wantNeed(t, n, "innerproduct", true, false)
		wantNeed(t, n, "loss", true, true, false)
		n = mustCaffeNet(t, forceProp(true))
		wantNeed(t, n, "innerproduct", true, true)
		wantNeed(t, n, "loss", true, true, false)
		n.ForwardBackward()
		if asum(n.Input("data").Diff) == 0 {
			t.Error("propagate_down: true: the data input's gradient is zero")
		}
	})
}

func asum(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += math.Abs(float64(x))
	}
	return s
}

// unsharedNet is Caffe's InitUnsharedWeightsNet with a bias term and the
// given lr_mult of ip1's weights and bias and ip2's weights and bias.
func unsharedNet(lr [4]float32) string {
	ip := func(i int, w, b float32) string {
		return strings.NewReplacer("$I", string(rune('0'+i)), "$W", ftoa(w), "$B", ftoa(b)).Replace(`
layer { name: 'innerproduct$I' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: true weight_filler { type: 'gaussian' std: 10 } }
  param { lr_mult: $W } param { lr_mult: $B }
  bottom: 'data' top: 'innerproduct$I' }`)
	}
	return `name: 'UnsharedWeightsNetwork'
layer { name: 'data' type: 'DummyData'
  dummy_data_param { num: 5 channels: 2 height: 3 width: 4 data_filler { type: 'gaussian' std: 0.01 } }
  top: 'data' }` + ip(1, lr[0], lr[1]) + ip(2, lr[2], lr[3]) + `
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'innerproduct1' bottom: 'innerproduct2' }
`
}

func ftoa(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

// blockAsums runs one forward and backward pass and returns the absolute
// sum of each param block's gradient.
func blockAsums(t *testing.T, n *model.Net) []float64 {
	t.Helper()
	n.ForwardBackward()
	var out []float64
	for _, b := range n.Blocks() {
		out = append(out, asum(n.Grads()[b.Off:b.Off+b.Len()]))
	}
	return out
}

func TestNetParamPropagateDown(t *testing.T) {
	t.Run("NetTest.TestParamPropagateDown", func(t *testing.T) {
		all := blockAsums(t, mustCaffeNet(t, unsharedNet([4]float32{1, 2, 1, 2})))
		if len(all) != 4 {
			t.Fatalf("%d param blobs, want 4", len(all))
		}
		for i, a := range all {
			if !(a > 1e-3) {
				t.Errorf("param %d: gradient asum %g, want > 1e-3", i, a)
			}
		}
		// Other non-zero rates: the same gradients.
		for i, a := range blockAsums(t, mustCaffeNet(t, unsharedNet([4]float32{2, 4, 2, 4}))) {
			if a != all[i] {
				t.Errorf("lr_mult doubled: param %d asum %g, want %g", i, a, all[i])
			}
		}
		// lr_mult 0 on ip1's bias and ip2's weights: no gradient there,
		// the others unchanged; then the opposite subset.
		for _, c := range []struct {
			lr   [4]float32
			zero map[int]bool
		}{
			{[4]float32{1, 0, 0, 1}, map[int]bool{1: true, 2: true}},
			{[4]float32{0, 1, 1, 0}, map[int]bool{0: true, 3: true}},
		} {
			for i, a := range blockAsums(t, mustCaffeNet(t, unsharedNet(c.lr))) {
				switch {
				case c.zero[i] && a != 0:
					t.Errorf("lr_mult %v: param %d asum %g, want 0", c.lr, i, a)
				case !c.zero[i] && a != all[i]:
					t.Errorf("lr_mult %v: param %d asum %g, want %g", c.lr, i, a, all[i])
				}
			}
		}
	})
}

const sharedWeightsNet = `name: 'SharedWeightsNetwork'
layer { name: 'data' type: 'DummyData'
  dummy_data_param { num: 5 channels: 2 height: 3 width: 4 data_filler { type: 'gaussian' std: 0.01 } }
  top: 'data' }
layer { name: 'innerproduct1' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'gaussian' std: 10 } }
  param { name: 'sharedweights' } bottom: 'data' top: 'innerproduct1' }
layer { name: 'innerproduct2' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'gaussian' std: 10 } }
  param { name: 'sharedweights' } bottom: 'data' top: 'innerproduct2' }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'innerproduct1' bottom: 'innerproduct2' }
`

func diffDataNet(shared bool) string {
	p := ""
	if shared {
		p = "param { name: 'sharedweights' }"
	}
	return `name: 'DiffDataNetwork'
layer { name: 'data' type: 'DummyData'
  dummy_data_param { num: 10 channels: 10 height: 1 width: 1 num: 10 channels: 10 height: 1 width: 1
                     data_filler { type: 'gaussian' std: 10 } }
  top: 'data1' top: 'data2' }
layer { name: 'innerproduct1' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'constant' value: 0.5 } }
  ` + p + ` bottom: 'data1' top: 'innerproduct1' }
layer { name: 'innerproduct2' type: 'InnerProduct'
  inner_product_param { num_output: 10 bias_term: false weight_filler { type: 'constant' value: 0.5 } }
  ` + p + ` bottom: 'innerproduct1' top: 'innerproduct2' }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'data2' bottom: 'innerproduct2' }
`
}

func TestNetSharedWeights(t *testing.T) {
	t.Run("NetTest.TestUnsharedWeightsDataNet", func(t *testing.T) {
		if loss := mustCaffeNet(t, unsharedNet([4]float32{1, 2, 1, 2})).Forward(); !(loss > 0) {
			t.Errorf("loss %g, want > 0", loss)
		}
	})
	t.Run("NetTest.TestSharedWeightsDataNet", func(t *testing.T) {
		n := mustCaffeNet(t, sharedWeightsNet)
		if len(n.Blocks()) != 1 {
			t.Fatalf("%d param blocks, want the one shared", len(n.Blocks()))
		}
		if loss := n.Forward(); loss != 0 {
			t.Errorf("loss %g, want 0", loss)
		}
	})
	t.Run("NetTest.TestSharedWeightsDiffNet", func(t *testing.T) {
		n := mustCaffeNet(t, sharedWeightsNet)
		if loss := n.ForwardBackward(); loss != 0 {
			t.Errorf("loss %g, want 0", loss)
		}
		if a := asum(n.Grads()); a != 0 {
			t.Errorf("shared weights' gradient asum %g, want 0", a)
		}
	})
	t.Run("NetTest.TestSharedWeightsUpdate", func(t *testing.T) {
		sh := mustCaffeNet(t, diffDataNet(true))
		un := mustCaffeNet(t, diffDataNet(false))
		if len(sh.Blocks()) != 1 || len(un.Blocks()) != 2 {
			t.Fatalf("blocks: shared %d, unshared %d; want 1 and 2", len(sh.Blocks()), len(un.Blocks()))
		}
		sh.ForwardBackward()
		un.ForwardBackward()
		g, b := sh.Grads(), un.Blocks()
		g1, g2 := un.Grads()[b[0].Off:b[0].Off+b[0].Len()], un.Grads()[b[1].Off:b[1].Off+b[1].Len()]
		for i := range g {
			if g1[i] == 0 || g2[i] == 0 || g1[i] == g2[i] {
				t.Fatalf("unshared gradients %g and %g at %d: want both non-zero and different", g1[i], g2[i], i)
			}
			// Caffe's EXPECT_FLOAT_EQ: within 4 ulps (a GEMM that adds into
			// the diff may round its partial sums differently).
			if want := g1[i] + g2[i]; math.Abs(float64(g[i]-want)) > 4*ulp(want) {
				t.Fatalf("shared gradient %g at %d, want the sum of the unshared ones %g", g[i], i, want)
			}
		}
	})
}

// TestNetSharedParamSpecs checks Caffe's rules for a param shared by name:
// STRICT needs the same shape, PERMISSIVE the same count, and lr_mult or
// decay_mult given twice must agree.
func TestNetSharedParamSpecs(t *testing.T) {
	net := func(spec1, spec2, shape2 string) string {
		return `layer { name: 'data' type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 6 } } top: 'data' }
layer { name: 'a' type: 'InnerProduct' inner_product_param { num_output: 6 bias_term: false }
  param { name: 'w' ` + spec1 + ` } bottom: 'data' top: 'a' }
layer { name: 'b' type: 'Embed' embed_param { num_output: ` + shape2 + ` bias_term: false }
  param { name: 'w' ` + spec2 + ` } bottom: 'data' top: 'b' }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'a' bottom: 'a' }
`
	}
	for _, c := range []struct {
		name, spec1, spec2, n2, err string
	}{
		{"permissive equal count", "", "share_mode: PERMISSIVE", "12 input_dim: 3", ""},
		{"strict equal count", "", "", "12 input_dim: 3", "shared param \"w\" has shape"},
		{"permissive other count", "", "share_mode: PERMISSIVE", "6 input_dim: 5", "has 30 values here"},
		{"lr_mult mismatch", "lr_mult: 1", "lr_mult: 2 share_mode: PERMISSIVE", "12 input_dim: 3", "has lr_mult 2 here but 1 in layer \"a\""},
		{"decay_mult mismatch", "decay_mult: 1", "decay_mult: 0 share_mode: PERMISSIVE", "12 input_dim: 3", "has decay_mult 0 here but 1"},
		{"lr_mult given once", "", "lr_mult: 3 share_mode: PERMISSIVE", "12 input_dim: 3", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := caffeNet(t, net(c.spec1, c.spec2, c.n2))
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.spec2 == "lr_mult: 3 share_mode: PERMISSIVE" && n.Blocks()[0].LRMult != 3 {
					t.Errorf("the sharer's lr_mult was not adopted: %g", n.Blocks()[0].LRMult)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("err %v, want %q", err, c.err)
			}
		})
	}
}

// ulp is the spacing of float32 values at v.
func ulp(v float32) float64 {
	a := float32(math.Abs(float64(v)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// TestNetFrozenConvolutions: a Convolution or Deconvolution (2-D on either
// engine, or N-D) with lr_mult 0 between learnt layers computes no param
// gradient (they stay zero) and passes the same gradient down as when it
// learns, so the layers below get the same gradients bit for bit.
func TestNetFrozenConvolutions(t *testing.T) {
	net := func(lr string, nd bool, c2 string) string {
		data := "shape { dim: 2 dim: 3 dim: 9 dim: 9 }"
		k := "kernel_size: 3"
		if nd {
			data = "shape { dim: 2 dim: 3 dim: 5 dim: 6 dim: 7 }"
			k = "kernel_size: 3 kernel_size: 2 kernel_size: 3"
		}
		return `layer { name: "d" type: "DummyData" top: "x" top: "t"
  dummy_data_param { ` + data + ` data_filler { type: "gaussian" std: 1 } shape { dim: 2 dim: 4 } data_filler { type: "gaussian" std: 1 } } }
layer { name: "c1" type: "Convolution" bottom: "x" top: "c1"
  convolution_param { num_output: 32 ` + k + ` weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "c2" type: "Convolution" bottom: "c1" top: "c2" param { lr_mult: ` + lr + ` } param { lr_mult: ` + lr + ` }
  convolution_param { num_output: ` + c2 + ` ` + k + ` pad: 1 weight_filler { type: "gaussian" std: 0.1 } bias_filler { type: "constant" value: 0.1 } } }
layer { name: "dc" type: "Deconvolution" bottom: "c2" top: "dc" param { lr_mult: ` + lr + ` } param { lr_mult: ` + lr + ` }
  convolution_param { num_output: 8 ` + k + ` stride: 1 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "dc" top: "ip" inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.01 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "t" }
`
	}
	// c2 of 32 channels runs on oneDNN where it is loaded, of 20 on
	// im2col + GEMM (20 fill too little of oneDNN's channel blocks).
	for _, c := range []struct {
		nd bool
		c2 string
	}{{false, "32"}, {false, "20"}, {true, "32"}} {
		nd := c.nd
		learn, frozen := mustCaffeNet(t, net("1", nd, c.c2)), mustCaffeNet(t, net("0", nd, c.c2))
		learn.ForwardBackward()
		frozen.ForwardBackward()
		for _, li := range frozen.Layers() {
			t.Logf("nd %v: %s: %s", nd, li.Name, li.Kernel)
		}
		for i, b := range frozen.Blocks() {
			g, want := frozen.Grads()[b.Off:b.Off+b.Len()], learn.Grads()[b.Off:b.Off+b.Len()]
			switch b.Layer {
			case "c2", "dc":
				if a := asum(g); a != 0 || asum(want) == 0 {
					t.Errorf("nd %v: block %d (%s) of a frozen layer: gradient asum %g (learnt: %g), want 0", nd, i, b.Name, a, asum(want))
				}
			default:
				for k := range g {
					if g[k] != want[k] {
						t.Fatalf("nd %v: block %s: gradient %d is %g with the layers above frozen, %g without", nd, b.Name, k, g[k], want[k])
					}
				}
			}
		}
	}
}
