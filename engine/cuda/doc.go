// Package cuda finds the NVIDIA GPUs of the machine and the CUDA
// libraries a GPU engine needs, opened at run time as OpenBLAS and oneDNN
// are (issue 21): the driver's libcuda.so.1, and cuBLAS and cuDNN from the
// CUDA toolkit or from NVIDIA's Python wheels (their nvidia/*/lib
// folders), searched in the usual places or where DSGD_CUDA_LIBS says.
//
// Probe says which GPUs there are (name, memory, compute capability), the
// driver's CUDA version and the libraries' versions, or, when there is no
// GPU, what is missing and how to get it. ParseIDs reads Caffe's -gpu
// list against the GPUs found.
//
// Open opens a GPU for computing: its primary context, cuBLAS and cuDNN
// handles (fp32 unless TF32 is asked for) and dsgd's kernels. The kernels
// are kernels/kernels.cu compiled to PTX 6.0 for sm_70 by clang (make
// ptx) and embedded; the driver compiles them for the GPU it finds, so
// neither building nor running dsgd needs a CUDA compiler. The C side
// (gpu.c) looks every entry point up by name once and does each
// operation in one cgo call. engine/gpunet runs nets with it.
//
// Under the purego tag nothing is opened: Probe and Open say so.
package cuda
