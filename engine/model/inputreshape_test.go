package model_test

import (
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// inputReshapeNet reads a label blob of G rows of 8, as SSD's
// AnnotatedData fills it (1×1×G×8, G changing between batches), through
// two layers; the loss ignores it.
const inputReshapeNet = `name: "rows"
input: "data" input_shape { dim: 2 dim: 3 }
input: "label" input_shape { dim: 1 dim: 1 dim: 1 dim: 8 }
layer { name: "relu" type: "ReLU" bottom: "label" top: "pos" }
layer { name: "flat" type: "Flatten" bottom: "pos" top: "flat" }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "ip" top: "loss" }
`

// TestInputReshape: a data source that changes an input's shape between
// batches (its Data grown or shrunk) makes the next Forward reshape every
// layer, as Caffe's Net::Forward does after a data layer reshapes its top;
// a layer that refuses the new shape leaves an error naming it.
func TestInputReshape(t *testing.T) {
	def, err := caffedef.ParseNet("rows.prototxt", []byte(inputReshapeNet))
	if err != nil {
		t.Fatal(err)
	}
	pn, err := def.Phase(layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	net, err := model.Build(pn.Spec, map[string]tensor.Shape{"data": {2, 3}, "label": {1, 1, 1, 8}}, model.Options{Phase: layers.Train, Threads: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []int{1, 5, 2, 2, 7} {
		in := net.Input("label")
		in.Shape = tensor.Shape{1, 1, g, 8}
		in.Data = make([]float32, g*8)
		for i := range in.Data {
			in.Data[i] = float32(i%3) - 1
		}
		net.Forward()
		if err := net.Err(); err != nil {
			t.Fatal(err)
		}
		flat := net.Blob("flat")
		if !flat.Shape.Equal(tensor.Shape{1, g * 8}) {
			t.Fatalf("G=%d: flat is %v, want 1x%d", g, flat.Shape, g*8)
		}
		for i, v := range flat.Data {
			if want := max(float32(i%3)-1, 0); v != want {
				t.Fatalf("G=%d: flat[%d] = %g, want %g", g, i, v, want)
			}
		}
		net.Backward()
		if err := net.Err(); err != nil {
			t.Fatal(err)
		}
	}
	// data's batch axis feeds InnerProduct, whose weights fix the rest.
	in := net.Input("data")
	in.Shape, in.Data = tensor.Shape{2, 4}, make([]float32, 8)
	net.Forward()
	if err := net.Err(); err == nil || !strings.Contains(err.Error(), `"ip"`) || !strings.Contains(err.Error(), "an input changed shape") {
		t.Fatalf("InnerProduct fed a 2x4 input built for 2x3: error %v; want one naming the layer and the input", err)
	}
}
