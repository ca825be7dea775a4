package model_test

import (
	"fmt"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// Build a two-layer perceptron, run one forward/backward pass, and take
// one SGD step on the flat buffers.
func ExampleBuild() {
	gauss := layers.Filler{Type: layers.FillGaussian, Std: 0.1}
	spec := model.Spec{
		Name:   "mlp",
		Inputs: []string{"data", "label"},
		Layers: []model.LayerSpec{
			{Name: "ip1", Bottom: []string{"data"}, Top: []string{"ip1"},
				Config: &layers.InnerProductConfig{NumOutput: 16, BiasTerm: true, Axis: 1, WeightFiller: gauss}},
			{Name: "relu1", Bottom: []string{"ip1"}, Top: []string{"ip1"}, Config: &layers.ReLUConfig{}},
			{Name: "ip2", Bottom: []string{"ip1"}, Top: []string{"ip2"},
				Config: &layers.InnerProductConfig{NumOutput: 10, BiasTerm: true, Axis: 1, WeightFiller: gauss}},
			{Name: "loss", Bottom: []string{"ip2", "label"}, Top: []string{"loss"},
				Config: &layers.SoftmaxWithLossConfig{Axis: 1}},
		},
	}
	shapes := map[string]tensor.Shape{"data": {8, 784}, "label": {8}}
	net, err := model.Build(spec, shapes, model.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range net.Blocks() {
		fmt.Printf("%s: %d values at offset %d\n", b.Name, b.Len(), b.Off)
	}
	for i := range net.Input("label").Data {
		net.Input("label").Data[i] = float32(i % 10)
	}
	loss := net.ForwardBackward()
	tensor.Axpy(-0.01, net.Grads(), net.Params())
	fmt.Printf("%d params, loss %.2f\n", len(net.Params()), loss)
	// Output:
	// ip1/0: 12544 values at offset 0
	// ip1/1: 16 values at offset 12544
	// ip2/0: 160 values at offset 12560
	// ip2/1: 10 values at offset 12720
	// 12730 params, loss 2.30
}
