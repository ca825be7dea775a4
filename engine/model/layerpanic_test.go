package model_test

import (
	"math"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// layerPanicNet reads a 16-row index blob through BatchReindex, whose
// Forward panics on an index outside the data's rows, as Caffe's CHECK
// aborts. (A panic in a chunk of a layer's parallel loop reaches the
// net's goroutine through the pool: tensor's TestPanicReachesCaller.)
const layerPanicNet = `name: "panics"
input: "data" input_shape { dim: 16 dim: 3 }
input: "idx" input_shape { dim: 16 }
layer { name: "pick" type: "BatchReindex" bottom: "data" bottom: "idx" top: "picked" }
layer { name: "ip" type: "InnerProduct" bottom: "picked" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "ip" top: "loss" }
`

// TestLayerPanicIsNetErr: a layer that panics on data it cannot take (an
// index past the data's rows) leaves the net with an error naming the
// layer and its pass, a NaN loss and no further work, at one thread and
// at two, instead of ending the process.
func TestLayerPanicIsNetErr(t *testing.T) {
	def, err := caffedef.ParseNet("panics.prototxt", []byte(layerPanicNet))
	if err != nil {
		t.Fatal(err)
	}
	pn, err := def.Phase(layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		threads, bad int
	}{{1, 0}, {2, 0}, {2, 15}} {
		net, err := model.Build(pn.Spec, map[string]tensor.Shape{"data": {16, 3}, "idx": {16}}, model.Options{Phase: layers.Train, Threads: tc.threads, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		idx := net.Input("idx").Data
		for i := range idx {
			idx[i] = float32(i)
		}
		if loss := net.Forward(); math.IsNaN(loss) || net.Err() != nil {
			t.Fatalf("%+v: good indices: loss %v, err %v", tc, loss, net.Err())
		}
		net.Backward()
		idx[tc.bad] = 99
		loss := net.Forward()
		err = net.Err()
		if !math.IsNaN(loss) || err == nil {
			t.Fatalf("%+v: index 99 of 16 rows: loss %v, err %v; want NaN and an error", tc, loss, err)
		}
		for _, want := range []string{`layer "pick"`, "BatchReindex", "forward", "99"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: error %q does not say %q", tc, err, want)
			}
		}
		net.Backward() // does nothing once the net has failed
		if again := net.Forward(); !math.IsNaN(again) || net.Err() != err {
			t.Errorf("%+v: a failed net ran again: loss %v, err %v", tc, again, net.Err())
		}
	}
}
