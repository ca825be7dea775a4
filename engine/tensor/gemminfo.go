package tensor

import (
	"fmt"
	"strings"
)

// GemmInfo says which GEMM kernel a process runs and why: what the run
// header prints.
type GemmInfo struct {
	// Library is "openblas" or "gonum" (pure Go).
	Library string
	// Version is the library's own build description (OpenBLAS's
	// openblas_get_config), when it has one.
	Version string
	// Kernel is the kernel in use: OpenBLAS's core name ("SkylakeX",
	// "Haswell", ...) or "pure Go".
	Kernel string
	// CPU is the widest vector ISA this CPU and OS support for float32
	// FMA ("AVX-512", "AVX2+FMA", "AVX", "SSE").
	CPU string
	// Note explains a choice dsgd made or was told to make; empty when
	// the library's own choice stands.
	Note string
	// Warning, when set, says the GEMM is slower than the chip allows and
	// how to fix it.
	Warning string
}

// String is the one-line description: "openblas SkylakeX (AVX-512)".
func (g GemmInfo) String() string {
	s := g.Library
	if g.Kernel != "" && g.Kernel != "pure Go" {
		s += " " + g.Kernel
	}
	return s + " (CPU: " + g.CPU + ")"
}

var gemmInfo GemmInfo

// Info describes the GEMM back end chosen when the package was initialised.
func Info() GemmInfo { return gemmInfo }

// Backend is the GEMM library in use, "openblas" or "gonum", set when the
// package is initialised (see Info for the kernel and why).
var Backend string

// coreLevel is the vector ISA level (as dsgd_cpu_level counts) of an
// OpenBLAS x86-64 core name, or -1 for a name it does not know.
func coreLevel(core string) int {
	switch strings.ToLower(core) {
	case "skylakex", "cooperlake", "sapphirerapids":
		return 3
	case "haswell", "zen", "excavator":
		return 2
	case "sandybridge", "bulldozer", "piledriver", "steamroller":
		return 1
	case "prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "barcelona",
		"bobcat", "opteron", "opteron_sse3", "athlon", "katmai", "coppermine", "northwood", "banias", "nano":
		return 0
	}
	return -1
}

// levelCore is the OpenBLAS core that serves each ISA level best.
var levelCore = [...]string{0: "Prescott", 1: "Sandybridge", 2: "Haswell", 3: "SkylakeX"}

// checkGemm64 runs f on every transpose combination over shapes that hit
// the edge cases of blocked kernels (1, odd, just past a vector or block)
// and compares with a float64 reference. It is how a kernel dsgd selected
// itself is vetted before it is trusted.
func checkGemm64(f func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) error {
	dims := [][3]int{{1, 1, 1}, {7, 5, 3}, {17, 33, 9}, {64, 64, 64}, {129, 31, 70}, {5, 200, 257}}
	seed := uint32(12345)
	next := func() float32 {
		seed = seed*1664525 + 1013904223
		return float32(int32(seed>>8)%2001-1000) / 1000
	}
	for _, d := range dims {
		m, n, k := d[0], d[1], d[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			c := make([]float32, m*n)
			for i := range a {
				a[i] = next()
			}
			for i := range b {
				b[i] = next()
			}
			for i := range c {
				c[i] = next()
			}
			lda, ldb := k, n
			if tr[0] {
				lda = m
			}
			if tr[1] {
				ldb = k
			}
			want := make([]float64, m*n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var s float64
					for p := 0; p < k; p++ {
						var av, bv float32
						if tr[0] {
							av = a[p*lda+i]
						} else {
							av = a[i*lda+p]
						}
						if tr[1] {
							bv = b[j*ldb+p]
						} else {
							bv = b[p*ldb+j]
						}
						s += float64(av) * float64(bv)
					}
					want[i*n+j] = 1.5*s + 0.5*float64(c[i*n+j])
				}
			}
			f(tr[0], tr[1], m, n, k, 1.5, a, lda, b, ldb, 0.5, c, n)
			for i, w := range want {
				if d := float64(c[i]) - w; d > 1e-3*float64(k) || d < -1e-3*float64(k) || d != d {
					return fmt.Errorf("%dx%dx%d transA=%v transB=%v: element %d is %g, want %g", m, n, k, tr[0], tr[1], i, c[i], w)
				}
			}
		}
	}
	return nil
}
