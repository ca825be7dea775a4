// Package dlopen opens the C libraries dsgd uses without linking them
// (OpenBLAS in engine/tensor, oneDNN in engine/tensor/dnnl, Open MPI in
// comm/transport/mpi), so that the binary starts on a machine without
// them: First tries a library's sonames in order, has the caller's C code
// look its entry points up in the handle, and says why each name failed.
//
// The package is a leaf: it imports no dsgd package. It calls libdl
// through cgo and has nothing to offer under the purego tag, where no
// library is opened.
package dlopen
