// Package layers owns dsgd's Caffe layers: each layer type's configuration
// (the fields of Caffe's *_param message, in config.go), its Forward and
// Backward over tensor blobs, and the fillers that initialise parameters.
//
// A layer is built from its config and a Context (phase, thread count,
// random source), set up once against its bottom blobs, then reshaped and
// run. The Layer interface in layer.go states the contracts every layer
// keeps: param blobs are views the model may replace, Backward adds into
// param gradients and overwrites bottom gradients, in-place layers work
// with top == bottom, and nothing allocates in steady state.
//
//	l, err := (&layers.ReLUConfig{}).Build(layers.Context{Phase: layers.Train, Threads: 2})
//	err = l.Setup(bottom, top)
//	err = l.Reshape(bottom, top)
//	l.Forward(bottom, top)
//	l.Backward(top, []bool{true}, bottom)
//
// Besides BVLC Caffe's layers, the package runs the Caffe forks' layers
// that published nets use (depthwise convolution, ReLU6, Axpy,
// ShuffleChannel, Permute, Normalize, Interp, Upsample, PSPNet's BN,
// SSD's PriorBox, DetectionOutput and DetectionEvaluate, forward only, its
// MultiBoxLoss, and ComputeAP for its solver's eval_type "detection");
// each config's
// comment names the fork it follows and where dsgd departs from it.
//
// The model package composes layers into nets; this package knows nothing
// of graphs, solvers or distribution. Every differentiable layer is checked
// against finite differences by the shared helper in gradcheck_test.go.
package layers
