package main

import (
	"flag"
	"fmt"
	"io"

	"dsgd/cmd/internal/enginebench"
	"dsgd/engine/cpuinfo"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// registerKernels adds --kernels, which takes effect as it is parsed.
func registerKernels(fs *flag.FlagSet) {
	fs.Func("kernels", "convolution and pooling kernels: auto (oneDNN where it loads, else dsgd's own), onednn, or own (im2col+GEMM and Go loops) (default auto)", layers.SetKernels)
}

// printEngine prints the kernels this process computes with, why they
// were chosen, and a warning with the fix when one is slower than the chip
// allows: the part of the run header that says where compute time goes.
// The warnings go to ew (the standard error), the rest to w.
func printEngine(w, ew io.Writer) {
	g := tensor.Info()
	fmt.Fprintf(w, "dsgd: GEMM %s\n", g)
	if g.Note != "" {
		fmt.Fprintf(w, "dsgd:   %s\n", g.Note)
	}
	if g.Warning != "" {
		fmt.Fprintf(ew, "dsgd: warning: %s\n", g.Warning)
	}
	if g.CPU == "SSE" || g.CPU == "AVX" {
		fmt.Fprintf(ew, "dsgd: warning: this CPU has no AVX2/FMA (widest: %s): every kernel runs at a fraction of a current CPU's speed\n", g.CPU)
	}
	fmt.Fprintf(w, "dsgd: %s\n", tensor.WaitPolicyNote())
	conv, why := layers.ConvEngine()
	fmt.Fprintf(w, "dsgd: convolution, pooling and LRN: %s\n", conv)
	printISACap(w, ew)
	fmt.Fprintf(w, "dsgd: %s\n", layers.NormEngine())
	switch {
	case why == "--kernels own":
		fmt.Fprintf(w, "dsgd:   dsgd's own kernels, as --kernels own asks\n")
	case why != "":
		fmt.Fprintf(ew, "dsgd: warning: %s; dsgd's own kernels run instead, several times slower on convolutional nets\n", why)
	}
}

// printISACap says what an instruction-set cap in the environment does
// (ONEDNN_MAX_CPU_ISA, which oneDNN and dsgd's GEMM choice obey), and warns
// when it cannot be honoured: a name oneDNN does not know (it then ignores
// the variable) or a level this CPU lacks (oneDNN runs the CPU's own).
// It also warns on a CPU below SSE4.1, where oneDNN has no kernels. The
// warnings go to ew, the note to w.
func printISACap(w, ew io.Writer) {
	if err := cpuinfo.CheckFloor(); err != nil {
		fmt.Fprintf(ew, "dsgd: warning: %v\n", err)
		return
	}
	l, ok, err := cpuinfo.EnvCap()
	switch {
	case err != nil:
		fmt.Fprintf(ew, "dsgd: warning: %v; oneDNN ignores it and runs at this CPU's level, %s\n", err, cpuinfo.CPUISA())
	case !ok:
	case cpuinfo.Unsupported(l) != nil:
		fmt.Fprintf(ew, "dsgd: warning: ONEDNN_MAX_CPU_ISA=%v: %v; the cap changes nothing and the CPU's own %s kernels run\n",
			l, cpuinfo.Unsupported(l), cpuinfo.EffectiveISA(l))
	default:
		fmt.Fprintf(w, "dsgd:   capped at %v by ONEDNN_MAX_CPU_ISA (this CPU has %v): oneDNN and the GEMM kernel run %v code\n",
			l, cpuinfo.CPUISA(), cpuinfo.EffectiveISA(l))
	}
}

// printLayerKernels prints, per layer type that chooses its kernels
// (convolution, pooling, LRN), which implementation each of the net's
// layers of that type runs and, where it is dsgd's own, why: one line per
// distinct choice, with the number of layers that made it.
func printLayerKernels(w io.Writer, net *model.Net) {
	type choice struct{ typ, kernel string }
	count := map[choice]int{}
	var order []choice
	for _, li := range net.Layers() {
		if li.Kernel == "" {
			continue
		}
		c := choice{li.Type, li.Kernel}
		if count[c] == 0 {
			order = append(order, c)
		}
		count[c]++
	}
	for _, c := range order {
		fmt.Fprintf(w, "dsgd:   %s: %s (%s)\n", c.typ, c.kernel, enginebench.Plural(count[c], "layer"))
	}
}
