package main

import (
	"flag"

	"dsgd/engine/layers"
)

// registerKernels adds --kernels, which takes effect as it is parsed.
func registerKernels(fs *flag.FlagSet) {
	fs.Func("kernels", "convolution and pooling kernels: auto (oneDNN where it loads, else dsgd's own), onednn, or own (im2col+GEMM and Go loops) (default auto)", layers.SetKernels)
}
