//go:build amd64 && !purego

package simd

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestISACapHoldsKernels runs this test binary again under
// ONEDNN_MAX_CPU_ISA caps and checks that dsgd's kernels follow them: at
// SSE41 and AVX the pooling and Winograd kernels are the SSE2 and Go ones
// and DotRows4x3 is not fused; at AVX2 and with no cap they are the AVX2
// ones (where the CPU has AVX2 and FMA).
func TestISACapHoldsKernels(t *testing.T) {
	if os.Getenv("DSGD_SIMD_CAP_CHILD") != "" {
		// The child: print what runs.
		t.Logf("kernels: pool %s, wino %v, fused %v", PoolImpl(), winoAVX2, DotRowsFused)
		os.Stdout.WriteString("KERNELS " + PoolImpl() + " " + boolWord(winoAVX2) + " " + boolWord(DotRowsFused) + "\n")
		return
	}
	full := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	for _, tc := range []struct {
		isa  string
		avx2 bool
	}{{"SSE41", false}, {"AVX", false}, {"AVX2", full}, {"", full}} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestISACapHoldsKernels$", "-test.v")
		cmd.Env = append(os.Environ(), "DSGD_SIMD_CAP_CHILD=1", "ONEDNN_MAX_CPU_ISA="+tc.isa, "DNNL_MAX_CPU_ISA=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cap %q: child: %v\n%s", tc.isa, err, out)
		}
		want := "KERNELS SSE2 assembly no no"
		if tc.avx2 {
			want = "KERNELS AVX2 assembly yes yes"
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("cap %q: child says %q, want %q", tc.isa, firstLine(string(out), "KERNELS"), want)
		}
	}
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func firstLine(s, prefix string) string {
	for l := range strings.Lines(s) {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
