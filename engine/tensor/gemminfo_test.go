package tensor

import (
	"strings"
	"testing"
)

func TestCoreLevel(t *testing.T) {
	for _, tc := range []struct {
		core string
		want int
	}{
		{"SkylakeX", 3}, {"COOPERLAKE", 3}, {"Haswell", 2}, {"Zen", 2},
		{"Sandybridge", 1}, {"Prescott", 0}, {"Nehalem", 0}, {"", -1}, {"NoSuchCore", -1},
	} {
		if got := coreLevel(tc.core); got != tc.want {
			t.Errorf("coreLevel(%q) = %d, want %d", tc.core, got, tc.want)
		}
	}
	for level, core := range levelCore {
		if coreLevel(core) != level {
			t.Errorf("levelCore[%d] = %q has level %d", level, core, coreLevel(core))
		}
	}
}

func TestCheckGemm64(t *testing.T) {
	if err := checkGemm64(gonumSgemm); err != nil {
		t.Fatalf("the pure-Go GEMM fails the kernel check: %v", err)
	}
	// Kernels wrong in the ways a broken SIMD path is: beta ignored, the
	// last row (a remainder) left unwritten, a transpose ignored.
	broken := map[string]func(bool, bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int){
		"beta ignored": func(ta, tb bool, m, n, k int, al float32, a []float32, lda int, b []float32, ldb int, be float32, c []float32, ldc int) {
			gonumSgemm(ta, tb, m, n, k, al, a, lda, b, ldb, 0, c, ldc)
		},
		"remainder row": func(ta, tb bool, m, n, k int, al float32, a []float32, lda int, b []float32, ldb int, be float32, c []float32, ldc int) {
			if m > 1 && m%2 == 1 {
				m--
			}
			gonumSgemm(ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc)
		},
		"transpose": func(ta, tb bool, m, n, k int, al float32, a []float32, lda int, b []float32, ldb int, be float32, c []float32, ldc int) {
			if ta && tb && m == k && k == n {
				ta = false
			}
			gonumSgemm(ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc)
		},
	}
	for name, f := range broken {
		if err := checkGemm64(f); err == nil {
			t.Errorf("%s: the kernel check passed a wrong GEMM", name)
		}
	}
}

func TestInfoString(t *testing.T) {
	g := GemmInfo{Library: "openblas", Kernel: "SkylakeX", CPU: "AVX-512"}
	if got, want := g.String(), "openblas SkylakeX (CPU: AVX-512)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if Backend != Info().Library || Backend == "" {
		t.Errorf("Backend %q, Info().Library %q", Backend, Info().Library)
	}
	if !strings.Contains(Info().String(), Info().CPU) {
		t.Errorf("Info().String() %q does not name the CPU", Info())
	}
}
