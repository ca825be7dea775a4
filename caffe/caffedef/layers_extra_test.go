package caffedef

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// extraNet is a net using each layer of layers_extra.go with its
// parameters left to Caffe's defaults where it has any.
const extraNet = `name: "extra"
layer { name: "input" type: "Input" top: "data" top: "label" top: "sel" top: "idx"
  input_param { shape { dim: 4 dim: 3 dim: 9 dim: 8 } shape { dim: 4 dim: 1 dim: 1 dim: 1 }
    shape { dim: 4 dim: 1 } shape { dim: 3 } } }
layer { name: "clip" type: "Clip" bottom: "data" top: "clip" clip_param { min: -1 max: 2 } }
layer { name: "swish" type: "Swish" bottom: "data" top: "swish" }
layer { name: "mvn" type: "MVN" bottom: "data" top: "mvn" }
layer { name: "spp" type: "SPP" bottom: "data" top: "spp" spp_param { pyramid_height: 2 } }
layer { name: "filter" type: "Filter" bottom: "data" bottom: "label" bottom: "sel" top: "fdata" top: "flabel" }
layer { name: "reindex" type: "BatchReindex" bottom: "data" bottom: "idx" top: "rdata" }
layer { name: "im2col" type: "Im2col" bottom: "data" top: "cols" convolution_param { kernel_size: 3 } }
layer { name: "param" type: "Parameter" top: "p" parameter_param { shape { dim: 2 dim: 3 } } }
layer { name: "out" type: "HDF5Output" bottom: "data" bottom: "label" hdf5_output_param { file_name: "OUT" } }
`

func TestExtraDecode(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.h5")
	nd, err := ParseNet("f.prototxt", []byte(strings.Replace(extraNet, "OUT", out, 1)))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, nd, layers.Train)
	for name, want := range map[string]layers.Config{
		"clip":    &layers.ClipConfig{Min: -1, Max: 2},
		"swish":   &layers.SwishConfig{Beta: 1},
		"mvn":     &layers.MVNConfig{NormalizeVariance: true, Eps: 1e-9},
		"spp":     &layers.SPPConfig{PyramidHeight: 2, Method: layers.PoolMax},
		"filter":  &layers.FilterConfig{},
		"reindex": &layers.BatchReindexConfig{},
		"im2col":  &layers.Im2colConfig{KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1},
		"param":   &layers.ParameterConfig{Shape: []int{2, 3}},
	} {
		if got := findLayer(t, pn.Spec, name).Config; !reflect.DeepEqual(got, want) {
			t.Errorf("%s decodes to %#v, want %#v", name, got, want)
		}
	}
	h, ok := findLayer(t, pn.Spec, "out").Config.(*layers.HDF5OutputConfig)
	if !ok || h.FileName != out || h.Write == nil {
		t.Errorf("out decodes to %#v, want file %s and a writer", findLayer(t, pn.Spec, "out").Config, out)
	}
	if layers.HDF5Writer(h.Write)(filepath.Join(t.TempDir(), "probe.h5"), nil, nil, nil) == nil {
		// With libhdf5 the net builds and runs, and HDF5Output writes.
		_, n := buildInputNet(t, strings.Replace(extraNet, "OUT", out, 1))
		n.ForwardBackward()
		if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
			t.Errorf("HDF5Output wrote no %s: %v", out, err)
		}
		if got := n.Blob("spp").Shape; !got.Equal(tensor.Shape{4, 3 * 5}) {
			t.Errorf("spp top %v, want [4 15]", got)
		}
		if got := n.Blob("p").Shape; !got.Equal(tensor.Shape{2, 3}) {
			t.Errorf("parameter top %v, want [2 3]", got)
		}
	}
	// Variants: every field given.
	checkDecodes(t, []decodeCase{
		{`layer { name: "l" type: "Swish" bottom: "data" top: "l" swish_param { beta: 1.5 } }`, &layers.SwishConfig{Beta: 1.5}},
		{`layer { name: "l" type: "MVN" bottom: "data" top: "l" mvn_param { normalize_variance: false across_channels: true eps: 0.001 } }`,
			&layers.MVNConfig{AcrossChannels: true, Eps: 0.001}},
		{`layer { name: "l" type: "SPP" bottom: "data" top: "l" spp_param { pyramid_height: 3 pool: AVE engine: CAFFE } }`,
			&layers.SPPConfig{PyramidHeight: 3, Method: layers.PoolAve}},
		{`layer { name: "l" type: "Im2col" bottom: "data" top: "l" convolution_param { num_output: 7 kernel_h: 3 kernel_w: 2 stride: 2 pad_h: 1 dilation: 2 } }`,
			&layers.Im2colConfig{KernelH: 3, KernelW: 2, StrideH: 2, StrideW: 2, PadH: 1, DilationH: 2, DilationW: 2,
				ND: &layers.ConvND{Axis: 1, KernelHW: true, Stride: []int{2}, PadHW: true, Dilation: []int{2}}}},
		{`layer { name: "l" type: "Im2col" bottom: "data" top: "l" convolution_param { kernel_size: 3 kernel_size: 1 kernel_size: 2 force_nd_im2col: true axis: 2 } }`,
			&layers.Im2colConfig{StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1,
				ND: &layers.ConvND{Axis: 2, Kernel: []int{3, 1, 2}, ForceND: true}}},
		{`layer { name: "l" type: "Parameter" top: "l" }`, &layers.ParameterConfig{}},
	})
}

const extraInput = `layer { name: "input" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 9 dim: 8 } } }
`

func TestExtraDecodeErrors(t *testing.T) {
	for _, c := range []struct{ name, layer, want string }{
		{"clip without max", `layer { name: "l" type: "Clip" bottom: "data" top: "l" clip_param { min: 0 } }`,
			"f.prototxt:2:67: clip_param of layer 'l' needs max"},
		{"clip without clip_param", `layer { name: "l" type: "Clip" bottom: "data" top: "l" }`,
			"f.prototxt:2:1: clip_param of layer 'l' needs min"},
		{"clip min > max", `layer { name: "l" type: "Clip" bottom: "data" top: "l" clip_param { min: 2 max: 1 } }`,
			"f.prototxt:2:81: max in clip_param of layer 'l': must not be less than min"},
		{"swish beta", `layer { name: "l" type: "Swish" bottom: "data" top: "l" swish_param { beta: "x" } }`,
			"f.prototxt:2:"},
		{"mvn eps", `layer { name: "l" type: "MVN" bottom: "data" top: "l" mvn_param { eps: -1 } }`,
			"f.prototxt:2:72: eps in mvn_param of layer 'l': must not be negative"},
		{"mvn unknown", `layer { name: "l" type: "MVN" bottom: "data" top: "l" mvn_param { scale: 1 } }`,
			"f.prototxt:2:67: unsupported field 'scale' in mvn_param of layer 'l'"},
		{"spp no height", `layer { name: "l" type: "SPP" bottom: "data" top: "l" spp_param { pool: AVE } }`,
			"f.prototxt:2:65: spp_param of layer 'l' needs pyramid_height"},
		{"spp height 0", `layer { name: "l" type: "SPP" bottom: "data" top: "l" spp_param { pyramid_height: 0 } }`,
			"f.prototxt:2:83: pyramid_height in spp_param of layer 'l'"},
		{"spp stochastic", `layer { name: "l" type: "SPP" bottom: "data" top: "l" spp_param { pyramid_height: 2 pool: STOCHASTIC } }`,
			"f.prototxt:2:91: unsupported value STOCHASTIC for pool"},
		{"im2col no kernel", `layer { name: "l" type: "Im2col" bottom: "data" top: "l" convolution_param { stride: 2 } }`,
			"f.prototxt:2:76: convolution_param of layer 'l' needs kernel_size"},
		{"im2col axes differ", `layer { name: "l" type: "Im2col" bottom: "data" top: "l" convolution_param { kernel_size: 3 kernel_size: 3 kernel_size: 3 stride: 1 stride: 2 } }`,
			"f.prototxt:2:133: convolution_param of layer 'l' gives kernel_size for 3 spatial axes but stride for 2"},
		{"parameter negative dim", `layer { name: "l" type: "Parameter" top: "l" parameter_param { shape { dim: -2 } } }`,
			"f.prototxt:2:77: dim in shape in parameter_param of layer 'l'"},
		{"hdf5output no file", `layer { name: "l" type: "HDF5Output" bottom: "data" bottom: "data" hdf5_output_param { } }`,
			"f.prototxt:2:86: hdf5_output_param of layer 'l' needs file_name"},
		{"hdf5output empty file", `layer { name: "l" type: "HDF5Output" bottom: "data" bottom: "data" hdf5_output_param { file_name: "" } }`,
			"f.prototxt:2:99: file_name in hdf5_output_param of layer 'l': must name a file"},
	} {
		_, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// filterNet feeds a Filter's top to an InnerProduct and, through a split,
// to a Reduction: both carry loss.
const filterNet = `name: "filter"
layer { name: "input" type: "Input" top: "data" top: "sel" input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "filter" type: "Filter" bottom: "data" bottom: "sel" top: "fdata" }
layer { name: "ip" type: "InnerProduct" bottom: "fdata" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 1 } bias_filler { type: "gaussian" std: 1 } } }
layer { name: "sum" type: "Reduction" bottom: "ip" top: "sum" loss_weight: 1 }
layer { name: "sum2" type: "Reduction" bottom: "fdata" top: "sum2" loss_weight: 0.5 }
`

// TestFilterNet: a Filter's tops change size with its selector in each
// Forward, and the model reshapes the layers after it (and the split of
// its top) as Caffe's Forward does.
func TestFilterNet(t *testing.T) {
	_, n := buildInputNet(t, filterNet)
	data, sel := n.Input("data"), n.Input("sel")
	for i := range data.Data {
		data.Data[i] = float32(i%5) - 1.5
	}
	forward := func(s ...float32) float64 {
		copy(sel.Data, s)
		return n.Forward()
	}
	// The loss is a sum over the selected rows: one row at a time gives
	// each row's share.
	var row [4]float64
	for r := range 4 {
		s := make([]float32, 4)
		s[r] = 1
		row[r] = forward(s...)
		if got := n.Blob("ip").Shape; got[0] != 1 {
			t.Fatalf("one row selected: ip shape %v", got)
		}
	}
	for _, s := range [][]float32{{1, 0, 1, 1}, {1, 1, 1, 1}, {0, 1, 0, 0}, {1, 0, 1, 1}} {
		want, k := 0.0, 0
		for r, v := range s {
			if v != 0 {
				want += row[r]
				k++
			}
		}
		got := forward(s...)
		if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Fatalf("selector %v: loss %v, want the rows' sum %v", s, got, want)
		}
		if n.Blob("ip").Shape[0] != k || n.Blob("fdata").Shape[0] != k {
			t.Fatalf("selector %v: fdata %v ip %v, want %d rows", s, n.Blob("fdata").Shape, n.Blob("ip").Shape, k)
		}
		n.Backward()
		// The InnerProduct's weight gradient is the sum of the selected rows;
		// rows not selected get no gradient (data takes none here: it is
		// an input, so check the IP's gradient is finite and non-zero).
		nonzero := false
		for _, g := range n.Grads() {
			if math.IsNaN(float64(g)) {
				t.Fatalf("selector %v: NaN gradient", s)
			}
			nonzero = nonzero || g != 0
		}
		if !nonzero {
			t.Fatalf("selector %v: all gradients zero", s)
		}
	}
}
