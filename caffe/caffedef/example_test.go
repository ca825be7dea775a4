package caffedef_test

import (
	"fmt"

	"dsgd/caffe/caffedef"
	"dsgd/engine/layers"
)

// A net with a data layer for each phase and a layer used only in TEST.
func ExampleNetDef_Phase() {
	src := []byte(`
name: "tiny"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        data_param { source: "fashion-mnist" batch_size: 64 } transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
        data_param { source: "fashion-mnist" batch_size: 100 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "acc" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`)
	nd, err := caffedef.ParseNet("tiny.prototxt", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range nd.Warnings {
		fmt.Println("warning:", w)
	}
	for _, p := range []layers.Phase{layers.Train, layers.Test} {
		pn, err := nd.Phase(p)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%v: batch %d of %s into %v;", p, pn.Data[0].BatchSize, pn.Data[0].Source, pn.Spec.Inputs)
		for _, l := range pn.Spec.Layers {
			fmt.Printf(" %s(%s)", l.Name, l.Config.Type())
		}
		fmt.Println()
	}
	// Output:
	// TRAIN: batch 64 of fashion-mnist into [data label]; ip(InnerProduct) loss(SoftmaxWithLoss)
	// TEST: batch 100 of fashion-mnist into [data label]; ip(InnerProduct) acc(Accuracy) loss(SoftmaxWithLoss)
}

// Errors point at the offending field.
func ExampleParseSolver() {
	_, err := caffedef.ParseSolver("solver.prototxt", []byte("base_lr: 0.01\nlr_policy: \"step\"\ngamma: 0.1\nstepsize: \"1000\"\n"))
	fmt.Println(err)
	// Output:
	// solver.prototxt:4:11: stepsize in solver: expected an integer, found string "1000"
}
