//go:build !purego

package tensor

import (
	"strings"
	"testing"
)

func TestLoadOpenBLASMissingFallsBack(t *testing.T) {
	info := loadOpenBLAS([]string{"libdsgd-no-such-blas.so.0"}, 3, "")
	if info.Library != "gonum" || info.Kernel != "pure Go" {
		t.Errorf("a missing library gave %+v, want the pure-Go fallback", info)
	}
	for _, want := range []string{"libdsgd-no-such-blas.so.0", "apt-get install libopenblas0", "pure-Go"} {
		if !strings.Contains(info.Warning, want) {
			t.Errorf("warning %q does not say %q", info.Warning, want)
		}
	}
	// The process's GEMM is untouched by the failed load.
	if err := checkGemm64(sgemm); err != nil {
		t.Fatal(err)
	}
}

// TestKernelMatchesCPU: on this machine the GEMM in use is the widest the
// CPU supports (or the warning says why not, which fails the test: a
// machine where dsgd cannot do it is one to look at).
func TestKernelMatchesCPU(t *testing.T) {
	g := Info()
	if g.Library != "openblas" {
		t.Skipf("OpenBLAS not loaded here: %s", g.Warning)
	}
	if g.Warning != "" {
		t.Errorf("GEMM kernel %s on a CPU with %s: %s", g.Kernel, g.CPU, g.Warning)
	}
	if err := checkGemm64(sgemm); err != nil {
		t.Errorf("kernel %s: %v", g.Kernel, err)
	}
	t.Logf("%s; %s", g, g.Note)
}
