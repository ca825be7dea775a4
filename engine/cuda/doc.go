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
// This is the first part of the GPU engine: nothing here computes yet.
// Under the purego tag nothing is opened and Probe says so.
package cuda
