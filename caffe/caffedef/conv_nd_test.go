package caffedef

import (
	"math"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// convNDNet runs two bottom/top pairs through one 3-D Convolution and
// through one 2-D Convolution, a 3-D Deconvolution with a channel axis
// given as -4, and losses tying the pairs together so every weight
// gradient sums over both pairs.
const convNDNet = `name: "conv_nd"
layer { name: "input" type: "Input" top: "a" top: "b" top: "p" top: "q"
  input_param { shape { dim: 2 dim: 3 dim: 5 dim: 7 dim: 5 } shape { dim: 2 dim: 3 dim: 5 dim: 7 dim: 5 }
                shape { dim: 2 dim: 3 dim: 6 dim: 4 } shape { dim: 2 dim: 3 dim: 6 dim: 4 } } }
layer { name: "conv3d" type: "Convolution" bottom: "a" bottom: "b" top: "ca" top: "cb"
  convolution_param { num_output: 4 kernel_size: [3, 3, 2] stride: 2 pad: [0, 0, 1]
    weight_filler { type: "gaussian" std: 0.1 } bias_filler { type: "constant" value: 0.1 } } }
layer { name: "conv2d" type: "Convolution" bottom: "p" bottom: "q" top: "cp" top: "cq"
  convolution_param { num_output: 4 kernel_size: 3 stride: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "deconv3d" type: "Deconvolution" bottom: "ca" top: "da"
  convolution_param { num_output: 2 kernel_size: 2 stride: 2 axis: -4 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss3d" type: "EuclideanLoss" bottom: "ca" bottom: "cb" top: "loss3d" }
layer { name: "loss2d" type: "EuclideanLoss" bottom: "cp" bottom: "cq" top: "loss2d" }
`

func TestConvNDNet(t *testing.T) {
	pn, n := buildInputNet(t, convNDNet)
	c := findLayer(t, pn.Spec, "conv3d").Config.(*layers.ConvolutionConfig)
	if want := (&layers.ConvND{Axis: 1, Kernel: []int{3, 3, 2}, Stride: []int{2}, Pad: []int{0, 0, 1}}); c.ND == nil ||
		c.ND.Axis != want.Axis || !slices.Equal(c.ND.Kernel, want.Kernel) || !slices.Equal(c.ND.Stride, want.Stride) || !slices.Equal(c.ND.Pad, want.Pad) {
		t.Fatalf("conv3d ND %+v, want %+v", c.ND, want)
	}
	tops := map[string][]tensor.Shape{}
	kernels := map[string]string{}
	for _, li := range n.Layers() {
		tops[li.Name], kernels[li.Name] = li.Tops, li.Kernel
	}
	for name, want := range map[string][][]int{
		"conv3d":   {{2, 4, 2, 3, 3}, {2, 4, 2, 3, 3}},
		"conv2d":   {{2, 4, 2, 1}, {2, 4, 2, 1}},
		"deconv3d": {{2, 2, 4, 6, 6}},
	} {
		if len(tops[name]) != len(want) {
			t.Fatalf("%s tops %v, want %v", name, tops[name], want)
		}
		for i := range want {
			if !slices.Equal([]int(tops[name][i]), want[i]) {
				t.Errorf("%s top %d shape %v, want %v", name, i, tops[name][i], want[i])
			}
		}
	}
	if !strings.Contains(kernels["conv3d"], "im2col_nd") || strings.Contains(kernels["conv2d"], "im2col_nd") {
		t.Errorf("conv3d runs %q, conv2d %q; want im2col_nd only for conv3d", kernels["conv3d"], kernels["conv2d"])
	}
	// Params: conv3d weight 4×3×3×3×2 and bias, conv2d 4×3×3×3 and bias,
	// deconv3d 4×2×2×2×2 and bias (Caffe's shapes).
	if got, want := len(n.Params()), 4*3*3*3*2+4+4*3*3*3+4+4*2*2*2*2+2; got != want {
		t.Fatalf("%d params, want %d", got, want)
	}
	for i, name := range []string{"a", "b", "p", "q"} {
		for j := range n.Input(name).Data {
			n.Input(name).Data[j] = float32(math.Sin(float64(7*j + 3*i)))
		}
	}
	loss := n.ForwardBackward()
	var want float64
	for _, pair := range [][2]string{{"ca", "cb"}, {"cp", "cq"}} {
		x, y := n.Blob(pair[0]), n.Blob(pair[1])
		var s float64
		for i := range x.Data {
			d := float64(x.Data[i] - y.Data[i])
			s += d * d
		}
		want += s / 2 / float64(x.Shape[0])
	}
	if math.Abs(loss-want) > 1e-4*math.Max(want, 1) || want == 0 {
		t.Fatalf("loss %g, want %g from the tops", loss, want)
	}
	if s := n.NonFinite(); s != "" {
		t.Fatal(s)
	}
	// Each conv weight gradient is the sum over its two pairs: with the
	// Euclidean loss those are opposite in sign, so it is neither pair's
	// alone; it is at least not all zero.
	nz := 0
	for _, g := range n.Grads()[:4*3*3*3*2] {
		if g != 0 {
			nz++
		}
	}
	if nz == 0 {
		t.Error("conv3d's weight gradient is all zero")
	}
}

func TestConvNDNetErrors(t *testing.T) {
	net := func(shapeB, conv string) string {
		return `name: "bad"
layer { name: "input" type: "Input" top: "a" top: "b"
  input_param { shape { dim: 2 dim: 3 dim: 5 dim: 7 dim: 5 } shape { ` + shapeB + ` } } }
layer { name: "conv" type: "Convolution" bottom: "a" bottom: "b" top: "ca" top: "cb"
  convolution_param { num_output: 2 ` + conv + ` } }
`
	}
	same := "dim: 2 dim: 3 dim: 5 dim: 7 dim: 5"
	for _, tc := range []struct{ name, src, want string }{
		{"kernel count", net(same, "kernel_size: [3, 3]"),
			`layer "conv" (f.prototxt:4:1): layers: Convolution: kernel_size must be given once, or once per spatial axis (given 2 times; the bottom 2x3x5x7x5`},
		{"axis out of range", net(same, "kernel_size: 1 axis: 5"), `layer "conv" (f.prototxt:4:1): layers: Convolution: axis 5 is out of range`},
		{"kernel_h on 3-D", net(same, "kernel_h: 1 kernel_w: 1"), `layer "conv" (f.prototxt:4:1): layers: Convolution: kernel_h and kernel_w can only be used for 2-D convolution`},
		{"no kernel", net(same, ""), `layer "conv" (f.prototxt:4:1): layers: Convolution: needs kernel_size (3 spatial axes)`},
		{"bottoms differ", net("dim: 2 dim: 3 dim: 5 dim: 7 dim: 4", "kernel_size: 3"),
			`layer "conv" (f.prototxt:4:1): layers: Convolution: bottom 1 "b" has shape 2x3x5x7x4 (840), bottom 0 "a" has 2x3x5x7x5 (1050)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nd, err := ParseNet("f.prototxt", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			pn := mustPhase(t, nd, layers.Train)
			inputs := map[string]tensor.Shape{}
			for i, name := range pn.Spec.Inputs {
				inputs[name] = pn.Data[0].Shapes[i]
			}
			_, err = model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Seed: 1, Threads: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
