// Package dnnl runs convolutions, pooling, LRN and softmax on oneDNN
// (Debian's libdnnl2, the library PyTorch's CPU convolutions and Intel's
// Caffe fork use), which JIT-compiles kernels for the instruction set of
// the CPU it finds (AVX-512, AVX2, ...).
//
// The library is opened at run time (dlopen) the first time it is asked
// for, so a machine without it still runs: Load reports why it is missing
// and the layers fall back to im2col and GEMM. Building with the tag purego
// leaves oneDNN out altogether.
//
// A Conv is one convolution geometry for a fixed batch size, run on the
// calling thread alone (oneDNN's OpenMP team is held to one thread): dsgd
// splits a batch across its own goroutines, one Conv each, so results do
// not depend on oneDNN's threading and a given thread count gives the same
// numbers run after run. Tensors are in Caffe's layouts (NCHW data, OIHW
// weights, GOIHW with groups); a Conv reorders them to the blocked layouts
// oneDNN's kernels want and back, inside each call, and ReorderTime says
// how long those reorders took. A Softmax runs on the plain layout.
package dnnl
