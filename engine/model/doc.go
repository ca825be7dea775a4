// Package model owns the network graph: it builds a Net from a Spec (the
// layers of one phase) and the shapes of its inputs, runs Forward and
// Backward over it in Caffe's semantics, and keeps every parameter of the
// net, and every parameter gradient, in ONE contiguous buffer each, with a
// view per parameter blob.
//
// The canonical use:
//
//	net, err := model.Build(spec, map[string]tensor.Shape{"data": {64, 1, 28, 28}, "label": {64}}, model.Options{Seed: 1, Threads: 2})
//	copy(net.Input("data").Data, batch)     // fill the inputs
//	loss := net.ForwardBackward()           // gradients now in net.Grads()
//	solver.Step(iter, net.Params(), net.Grads())
//
// Distribution lives elsewhere. The net offers what the schemes need: the
// flat buffers (Params, Grads), the block layout (Blocks), and a hook
// (Options.OnGradReady) called during Backward the moment a layer's
// parameter gradients are final, so communication can start while the rest
// of backward runs.
//
// Blob semantics follow Caffe: a layer may run in place (top == bottom);
// a blob read by several layers that need its gradient gets a split, whose
// backward sums the consumers' gradients; params with the same name in
// param { name } are shared and their gradients accumulate.
//
// A Net is not safe for concurrent use.
package model
