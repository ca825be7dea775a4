package main

import (
	"flag"
	"fmt"
	"io"

	"dsgd/nn/layers"
	"dsgd/tensor"
)

// registerKernels adds --kernels, which takes effect as it is parsed.
func registerKernels(fs *flag.FlagSet) {
	fs.Func("kernels", "convolution and pooling kernels: auto (oneDNN where it loads, else dsgd's own), onednn, or own (im2col+GEMM and Go loops) (default auto)", layers.SetKernels)
}

// printEngine prints the kernels this process computes with, why they
// were chosen, and a warning with the fix when one is slower than the chip
// allows: the part of the run header that says where compute time goes.
func printEngine(w io.Writer) {
	g := tensor.Info()
	fmt.Fprintf(w, "dsgd: GEMM %s\n", g)
	if g.Note != "" {
		fmt.Fprintf(w, "dsgd:   %s\n", g.Note)
	}
	if g.Warning != "" {
		fmt.Fprintf(w, "dsgd: warning: %s\n", g.Warning)
	}
	conv, why := layers.ConvEngine()
	fmt.Fprintf(w, "dsgd: convolution and pooling: %s\n", conv)
	if why != "" {
		fmt.Fprintf(w, "dsgd:   not oneDNN: %s\n", why)
	}
}
