// Package caffemodel reads and writes Caffe's trained-weights files in
// both of Caffe's snapshot formats: a .caffemodel (a binary NetParameter
// whose layers carry their blobs) with a .solverstate (a binary
// SolverState: the iteration, the model it goes with, and the solver's
// history blobs), and the HDF5 pair .caffemodel.h5 / .solverstate.h5 that
// Caffe writes for snapshot_format: HDF5 (through Debian's libhdf5; under
// -tags purego those two are refused with an error saying so).
//
// Files are laid out as Caffe's own writers lay them out, shared
// parameters included. Resolve pairs every layer of a net with its param
// blobs as Caffe's Net holds them: a layer that names a param another
// layer named first (param { name: "w" } in both, as siamese nets do)
// shares that layer's blob. FromNet and Write then give every layer all of
// its blobs, shared ones in full (Net::ToProto), while WriteHDF5 writes a
// group /data/LAYER per layer holding dataset "j" only for the blobs the
// layer owns (Net::ToHDF5). Layers dsgd does not build as layers of the
// net (data layers, which feed it from outside, and the Split layers
// Caffe inserts) have no blobs, and are not written; Caffe's readers skip
// them as it skips any layer it lacks.
//
// CopyTrainedNet copies a model's blobs into a net's parameters by layer
// name, as Caffe's Net::CopyTrainedLayersFrom does: layers of the file
// that the net lacks are ignored; each layer of the file is copied, in
// file order, into the net's layer of that name (a later copy of a shared
// blob wins); a blob count or a blob's shape that differs is an error
// naming the layer and both shapes (an HDF5 model may lack the blobs a
// layer shares, as CopyTrainedLayersFromHDF5 allows); and a file of which
// no layer matches the net is an error naming the layers of each.
// ReadModel and ReadAnyState pick the format by the file's name as Caffe
// does (".h5" is HDF5).
//
// The protobuf encoding is Caffe's wire format, through the generated
// messages of package caffepb.
package caffemodel
