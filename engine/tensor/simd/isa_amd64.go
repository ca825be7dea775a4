//go:build amd64 && !purego

package simd

import (
	"golang.org/x/sys/cpu"

	"dsgd/engine/cpuinfo"
)

// hasAVX2 says the AVX2 kernels may run: the CPU has AVX2, and no ISA cap
// in the environment (ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA, read once at
// start-up by cpuinfo.EnvISA) holds the process below AVX2. A run capped
// at SSE41 or AVX then runs the SSE2 kernels and Go loops an older CPU
// would, dsgd's as oneDNN's and OpenBLAS's, so that one machine stands in
// for the others in tests and benchmarks.
var hasAVX2 = cpu.X86.HasAVX2 && cpuinfo.EnvISA() >= cpuinfo.AVX2
