package model

import (
	"math"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// TestBuildErrors checks that Build rejects bad specs with an error naming
// the layer and its source position.
func TestBuildErrors(t *testing.T) {
	withPos := func(ls LayerSpec, pos string) LayerSpec {
		ls.Pos = pos
		return ls
	}
	mlp := mlpNet()
	tests := []struct {
		name   string
		spec   Spec
		inputs map[string]tensor.Shape // mlp's when nil
		want   []string
	}{
		{"bottom not produced earlier", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			withPos(ip("ip1", "ip0", "ip1", 3), "net.prototxt:7:1"),
		}}, nil, []string{`layer "ip1"`, "net.prototxt:7:1", `bottom "ip0"`, "not produced by an earlier layer"}},
		{"bottom produced later", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			withPos(ip("ip2", "ip1", "ip2", 3), "net.prototxt:9:1"),
			ip("ip1", "data", "ip1", 3),
		}}, nil, []string{`layer "ip2"`, "net.prototxt:9:1", `bottom "ip1"`}},
		{"top produced twice", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "h", 3),
			withPos(ip("ip2", "data", "h", 3), "net.prototxt:12:3"),
		}}, nil, []string{`layer "ip2"`, "net.prototxt:12:3", `top "h"`, "already produced"}},
		{"top overwrites an input", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "label", "data", 3),
		}}, map[string]tensor.Shape{"data": {2, 3}, "label": {2, 1}}, []string{`layer "ip1"`, `top "data"`, "already produced"}},
		{"missing input shape", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: mlp.spec.Layers},
			map[string]tensor.Shape{"data": {4, 6}}, []string{`net "n"`, `input "label"`, "no shape"}},
		{"input declared twice", Spec{Name: "n", Inputs: []string{"data", "data"}},
			nil, []string{`input "data"`, "twice"}},
		// A square kernel on a 2-D blob is Caffe's 0-D convolution; a 3x2
		// one needs NCHW.
		{"setup error: conv on a 2-D blob", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			withPos(rectConv("conv1", "data", "conv1"), "lenet.prototxt:20:1"),
		}}, nil, []string{`layer "conv1"`, "lenet.prototxt:20:1", "4-D", "4x6"}},
		{"setup error without position", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			rectConv("conv1", "data", "conv1"),
		}}, nil, []string{`layer "conv1": `, "4-D"}},
		{"config error", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			withPos(unary("ip1", "data", "ip1", &layers.InnerProductConfig{NumOutput: 0, Axis: 1}), "x.prototxt:2:1"),
		}}, nil, []string{`layer "ip1"`, "x.prototxt:2:1", "num_output"}},
		{"no config", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			{Name: "mystery", Bottom: []string{"data"}, Top: []string{"m"}, Pos: "x.prototxt:4:1"},
		}}, nil, []string{`layer "mystery"`, "x.prototxt:4:1", "no layer config"}},
		{"loss label shape", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "ip1", 3),
			withPos(lossLayer("ip1"), "x.prototxt:30:1"),
		}}, map[string]tensor.Shape{"data": {4, 6}, "label": {5}}, []string{`layer "loss"`, "x.prototxt:30:1", "label"}},
		{"duplicate layer name", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			withPos(ip("ip", "data", "a", 3), "x.prototxt:1:1"),
			withPos(ip("ip", "a", "b", 3), "x.prototxt:9:1"),
		}}, nil, []string{`layer "ip" (x.prototxt:9:1)`, "same name", "x.prototxt:1:1", "parameters"}},
		{"duplicate name: a param-free layer, then one with params", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			withPos(unary("x", "data", "a", &layers.ReLUConfig{}), "x.prototxt:1:1"),
			withPos(ip("x", "a", "b", 3), "x.prototxt:9:1"),
		}}, nil, []string{`layer "x" (x.prototxt:9:1)`, "same name", "x.prototxt:1:1"}},
		{"propagate_down count", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "ip1", 3),
			{Name: "loss", Bottom: []string{"ip1", "label"}, Top: []string{"loss"}, PropagateDown: []bool{true},
				Config: &layers.SoftmaxWithLossConfig{Axis: 1}, Pos: "x.prototxt:8:1"},
		}}, nil, []string{`layer "loss" (x.prototxt:8:1)`, "1 propagate_down values for 2 bottoms"}},
		{"too many param specs", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			{Name: "ip1", Bottom: []string{"data"}, Top: []string{"ip1"}, Pos: "x.prototxt:2:1",
				Params: []ParamSpec{{LRMult: 1}, {LRMult: 2}, {LRMult: 3}},
				Config: &layers.InnerProductConfig{NumOutput: 2, BiasTerm: true, Axis: 1}},
		}}, nil, []string{`layer "ip1" (x.prototxt:2:1)`, "3 param specs", "2 param blobs"}},
		{"in-place write after a gradient reader", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "h", 4),
			ip("ipA", "h", "a", 3),
			withPos(unary("relu", "h", "h", &layers.ReLUConfig{}), "x.prototxt:15:1"),
			ip("ipB", "h", "b", 3),
			{Name: "sum", Bottom: []string{"a", "b"}, Top: []string{"s"}, Config: &layers.EltwiseConfig{Operation: layers.EltwiseSum}},
			lossLayer("s"),
		}}, nil, []string{`layer "relu"`, "x.prototxt:15:1", `blob "h"`, "in place", `layer "ipA"`}},
		{"in-place write after a reader that learns", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			// ipA needs h's data for its weight gradient even though h
			// (from the input, through a param-free ReLU) needs none.
			unary("relu0", "data", "h", &layers.ReLUConfig{}),
			ip("ipA", "h", "a", 3),
			withPos(unary("tanh", "h", "h", &layers.TanHConfig{}), "x.prototxt:15:1"),
			ip("ipB", "h", "b", 3),
			{Name: "sum", Bottom: []string{"a", "b"}, Top: []string{"s"}, Config: &layers.EltwiseConfig{Operation: layers.EltwiseSum}},
			lossLayer("s"),
		}}, nil, []string{`layer "tanh"`, `blob "h"`, "in place", `layer "ipA"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.inputs
			if in == nil {
				in = mlp.inputs
			}
			n, err := Build(tc.spec, in, Options{Seed: 1})
			if err == nil {
				t.Fatalf("Build succeeded with %d layers", n.NumLayers())
			}
			if !strings.HasPrefix(err.Error(), "model: ") {
				t.Errorf("error %q lacks the model: prefix", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

// TestBuildAccepts checks specs that look odd but are valid: in-place
// writes after readers that run no Backward, an unused input, a layer with
// no bottoms, and readers of a blob after an in-place write.
func TestBuildAccepts(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		inputs map[string]tensor.Shape
	}{
		{"in-place after a reader without backward", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "h", 3),
			accuracyLayer("h"),
			unary("relu", "h", "h", &layers.ReLUConfig{}),
			lossLayer("h"),
		}}, map[string]tensor.Shape{"data": {4, 6}, "label": {4}}},
		{"unused input", Spec{Name: "n", Inputs: []string{"data", "label", "extra"}, Layers: mlpNet().spec.Layers},
			map[string]tensor.Shape{"data": {4, 6}, "label": {4}, "extra": {7}}},
		{"empty net", Spec{Name: "n", Inputs: []string{"data"}}, map[string]tensor.Shape{"data": {1}}},
		{"param-free layers sharing a name", Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{
			ip("ip1", "data", "h", 3),
			lossLayer("h"),
			{Name: "loss", Bottom: []string{"h", "label"}, Top: []string{"loss2"}, Config: &layers.SoftmaxWithLossConfig{Axis: 1}},
		}}, map[string]tensor.Shape{"data": {4, 6}, "label": {4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Build(tc.spec, tc.inputs, Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			n.ForwardBackward()
		})
	}
}

// Two loss layers named alike, as Caffe's mnist_autoencoder has, both
// count: the net's loss is their sum.
func TestSameNamedLossesBothCount(t *testing.T) {
	one := Spec{Name: "n", Inputs: []string{"data", "label"}, Layers: []LayerSpec{ip("ip1", "data", "h", 3), lossLayer("h")}}
	two := Spec{Name: "n", Inputs: one.Inputs, Layers: append(slices.Clone(one.Layers),
		LayerSpec{Name: "loss", Bottom: []string{"h", "label"}, Top: []string{"loss2"}, Config: &layers.SoftmaxWithLossConfig{Axis: 1}})}
	in := map[string]tensor.Shape{"data": {4, 6}, "label": {4}}
	var losses [2]float64
	for i, spec := range []Spec{one, two} {
		n, err := Build(spec, in, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for j := range n.Blob("data").Data {
			n.Blob("data").Data[j] = float32(j%5) - 2
		}
		copy(n.Blob("label").Data, []float32{0, 1, 2, 1})
		losses[i] = n.Forward()
	}
	if losses[0] <= 0 || math.Abs(losses[1]-2*losses[0]) > 1e-6*losses[0] {
		t.Fatalf("loss with one layer %v, with two of the same name %v; want twice", losses[0], losses[1])
	}
}
