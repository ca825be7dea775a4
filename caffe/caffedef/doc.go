// Package caffedef turns Caffe prototxt files into dsgd's typed, validated
// configs: a NetParameter into a NetDef (and, per phase, a model.Spec with
// its data layers), a SolverParameter into a SolverDef holding a
// solver.Config.
//
// It owns the mapping from Caffe's schema to dsgd's types: which fields
// exist, their Caffe defaults, their allowed ranges, and the graph checks
// Caffe makes when it builds a net. Syntax is the prototxt package's job;
// building and running the net is the model package's.
//
// Nothing is silently dropped. A field dsgd does not support is an error
// naming the field and its position ("lenet.prototxt:14:5: unsupported
// field 'dilation' in convolution_param of layer 'conv1': ..."); so is a
// value of the wrong type, an unknown enum value, or a value out of range.
// A short list of harmless fields (debug_info, layer_wise_reduce,
// data_param prefetch, the engine of a layer) is accepted and ignored,
// each with a warning in NetDef.Warnings or SolverDef.Warnings that the
// caller should show. solver_mode and device_id are read
// (SolverDef.GPU, DeviceID); whether a GPU is there is the caller's to
// decide. A layer dsgd cannot build (an unknown type)
// is the exception, as in Caffe, which filters a net by its rules before
// it looks a type up: its fields beyond its name, rules, bottoms and tops
// are not read, and NetDef.PhaseState refuses a net that includes it
// (LayerDef.Err).
//
// The canonical use:
//
//	sd, err := caffedef.LoadSolver("lenet_solver.prototxt")
//	if err != nil { ... }
//	for _, w := range sd.Warnings { log.Println(w) }
//	nd, err := caffedef.LoadNet(sd.Net)
//	if err != nil { ... }
//	train, err := nd.Phase(layers.Train)
//	if err != nil { ... }
//	// train.Spec feeds model.Build; train.Data says which datasets fill
//	// train.Spec.Inputs, with what batch size and transform.
package caffedef
