// Package tensor owns dsgd's numeric leaf: shapes, blobs (data plus
// gradient), the single-precision GEMM that every heavy layer calls, and a
// small parallel-for used to split work across goroutines.
//
// GEMM goes through OpenBLAS (Debian's libopenblas-dev) via cgo by default.
// Building with the tag purego selects gonum's pure-Go sgemm instead; both
// builds pass the same tests. OpenBLAS is pinned to one thread: dsgd
// parallelises above BLAS (ParallelGemm, per-image work in layers), which
// keeps the thread count under one knob and avoids two thread pools fighting
// over the cores.
//
// Shape mismatches are programmer errors and panic with a "tensor: …"
// message; nothing here returns an error.
package tensor
