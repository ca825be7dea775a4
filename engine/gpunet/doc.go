// Package gpunet runs a built net (engine/model) on an NVIDIA GPU
// (engine/cuda): the GPU engine of issue 21.
//
// New takes a model.Net and becomes its model.Executor: the net's blobs
// get device memory mirroring their host layout, its params and
// gradients one flat device buffer each, and each layer a GPU
// implementation where there is one: convolutions and LRN on cuDNN,
// inner products and Eltwise sums on cuBLAS, pooling, ReLU, Dropout,
// BatchNorm, Scale, Concat, Flatten and Reshape on dsgd's own kernels
// with Caffe's semantics. Any other layer runs its CPU pass with its
// blobs copied across (Fallback names them), so every net that trains
// on the CPU trains here.
//
// At each Forward the params and the inputs go up and the outputs come
// back; at each Backward the gradients come back, layer by layer as each
// is final when the net has a grad hook (TRL's design: the overlap
// scheme exchanges them while the GPU goes on). The solver and the
// schemes work on the host's copies as on the CPU.
package gpunet
