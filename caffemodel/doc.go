// Package caffemodel reads and writes Caffe's trained-weights files: a
// .caffemodel (a binary NetParameter whose layers carry their blobs) and a
// .solverstate (a binary SolverState: the iteration, the .caffemodel it
// goes with, and the solver's history blobs).
//
// CopyTrained copies a .caffemodel's blobs into a net's parameters by
// layer name, as Caffe's Net::CopyTrainedLayersFrom does: layers of the
// file that the net lacks are ignored, a layer of the net that the file
// lacks keeps its initial weights, and a blob whose shape differs is an
// error naming the layer and both shapes. FromNet and Write make a
// .caffemodel that Caffe itself loads; EncodeState and WriteState the
// .solverstate beside it.
//
// The encoding is Caffe's protobuf wire format, through the generated
// messages of package caffepb.
package caffemodel
