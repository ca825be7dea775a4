// Package tensor owns dsgd's numeric leaf: shapes, blobs (data plus
// gradient), the single-precision GEMM that every heavy layer calls, and a
// small parallel-for used to split work across goroutines.
//
// GEMM goes through OpenBLAS (Debian's libopenblas0) via cgo by default.
// The library is opened at run time (dlopen), not linked: when OpenBLAS
// picks a kernel narrower than the CPU's widest vector ISA — a CPU model
// newer than its table, or an OPENBLAS_CORETYPE from the environment —
// dsgd has it select the kernel for that ISA (SkylakeX for AVX-512, Haswell
// for AVX2), checks the kernel against a float64 reference GEMM before
// trusting it, and Info says what it did. Without OpenBLAS the process runs
// on gonum's pure-Go sgemm and Info carries a warning with the fix.
// Building with the tag purego selects gonum's sgemm outright; both builds
// pass the same tests. OpenBLAS is pinned to one thread: dsgd
// parallelises above BLAS (ParallelGemm, per-image work in layers), which
// keeps the thread count under one knob and avoids two thread pools fighting
// over the cores.
//
// Shape mismatches are programmer errors and panic with a "tensor: …"
// message; nothing here returns an error.
package tensor
