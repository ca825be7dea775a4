// Package caffepb holds the protobuf messages of Caffe's caffe.proto that
// dsgd exchanges with Caffe: Datum (the records of Caffe's LMDB and
// LevelDB databases), BlobProto (a .binaryproto mean image, and every
// weight blob), NetParameter with its layers (a .caffemodel) and
// SolverState (a .solverstate); and SSD's AnnotatedDatum (a Datum with its
// boxes: AnnotationGroup, Annotation, NormalizedBBox), the records of
// the fork's convert_annoset databases that its AnnotatedData layer reads.
//
// caffe.proto declares these messages with Caffe's field numbers and
// types, so files written here are read by Caffe and the other way round;
// caffe.pb.go is generated from it by protoc-gen-go (`make proto`) and
// committed. Encode and decode with google.golang.org/protobuf/proto.
package caffepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative caffe.proto
