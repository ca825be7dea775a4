package main

import (
	"fmt"
	"io"

	"dsgd/tensor"
)

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
}
