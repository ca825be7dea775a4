package job

import (
	"fmt"
	"io"
	"strconv"

	"dsgd/engine/cpuinfo"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
)

// WriteHeader writes a run's header for the job: the net, the data, the
// solver, the threads and seed, the engine (WriteEngine) and each
// layer's kernel; the job's warnings to ew. names renames the fields the
// data descriptions and warnings name (nil keeps them).
func (j *Job) WriteHeader(w, ew io.Writer, net *model.Net, threads, maxIter int, sc solver.Config, names func(string) string) {
	if names == nil {
		names = func(s string) string { return s }
	}
	fmt.Fprintf(w, "dsgd: net %s, %d parameters in %d blobs\n", j.Name, len(net.Params()), len(net.Blocks()))
	for _, d := range j.DataDesc {
		fmt.Fprintf(w, "dsgd: data %s\n", names(d))
	}
	if !j.NoSolver {
		// A solver read without base_lr or lr_policy (dsgd time) says so.
		lr := "(none)"
		if sc.BaseLR != 0 {
			lr = fmt.Sprintf("%.6g", sc.BaseLR)
		}
		fmt.Fprintf(w, "dsgd: solver %s, base_lr %s, lr_policy %s, momentum %g, weight_decay %g, max_iter %d\n", orDefault(sc.Type, "SGD"), lr, orDefault(sc.LRPolicy, "(none)"), sc.Momentum, sc.WeightDecay, maxIter)
	}
	fmt.Fprintf(w, "dsgd: %d threads, seed %d\n", threads, j.Seed)
	WriteEngine(w, ew)
	writeLayerKernels(w, net)
	for _, wn := range j.Warnings {
		fmt.Fprintf(ew, "dsgd: warning: %s\n", names(wn))
	}
}

// WriteEngine writes the kernels this process computes with, why they
// were chosen, and a warning with the fix when one is slower than the
// chip allows: the part of the run header that says where compute time
// goes. The warnings go to ew (the standard error), the rest to w.
func WriteEngine(w, ew io.Writer) {
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
	WriteISACap(w, ew)
	fmt.Fprintf(w, "dsgd: %s\n", layers.NormEngine())
	switch {
	case why == "--kernels own":
		fmt.Fprintf(w, "dsgd:   dsgd's own kernels, as --kernels own asks\n")
	case why != "":
		fmt.Fprintf(ew, "dsgd: warning: %s; dsgd's own kernels run instead, several times slower on convolutional nets\n", why)
	}
}

// WriteISACap says what an instruction-set cap in the environment does
// (ONEDNN_MAX_CPU_ISA, which oneDNN and dsgd's GEMM choice obey), and
// warns when it cannot be honoured: a name oneDNN does not know (it then
// ignores the variable) or a level this CPU lacks (oneDNN runs the
// CPU's own). It also warns on a CPU below SSE4.1, where oneDNN has no
// kernels. The warnings go to ew, the note to w.
func WriteISACap(w, ew io.Writer) {
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
		own := "AVX2" // dsgd's own kernels go no higher
		if cpuinfo.EffectiveISA(l) < cpuinfo.AVX2 {
			own = "SSE2"
		}
		fmt.Fprintf(w, "dsgd:   capped at %v by ONEDNN_MAX_CPU_ISA (this CPU has %v): oneDNN and the GEMM kernel run %v code, dsgd's own kernels %s\n",
			l, cpuinfo.CPUISA(), cpuinfo.EffectiveISA(l), own)
	}
}

// writeLayerKernels writes, per layer type that chooses its kernels
// (convolution, pooling, LRN), which implementation each of the net's
// layers of that type runs and, where it is dsgd's own, why: one line
// per distinct choice, with the number of layers that made it.
func writeLayerKernels(w io.Writer, net *model.Net) {
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
		n := strconv.Itoa(count[c]) + " layer"
		if count[c] != 1 {
			n += "s"
		}
		fmt.Fprintf(w, "dsgd:   %s: %s (%s)\n", c.typ, c.kernel, n)
	}
}

// WriteNotes writes the job's upgrade notes (Notes), one line each, as
// Caffe logs its upgrades of old files.
func (j *Job) WriteNotes(w io.Writer) {
	for _, n := range j.Notes {
		fmt.Fprintf(w, "dsgd: note: %s\n", n)
	}
}
