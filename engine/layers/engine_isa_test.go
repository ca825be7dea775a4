package layers

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"dsgd/engine/tensor/dnnl"
)

// isaChildEnv names the ISA cap a child of TestEveryISA runs under.
const isaChildEnv = "DSGD_TEST_ISA_CHILD"

// isaLevels are the instruction-set caps TestEveryISA runs the engine's
// tests under: oneDNN's name for each (ONEDNN_MAX_CPU_ISA), the name its
// effective ISA then has, OpenBLAS's core type for the same vectors, and
// whether this CPU has them.
var isaLevels = []struct {
	cap, effective, openblas string
	has                      func() bool
}{
	{"SSE41", "sse41", "Nehalem", func() bool { return cpu.X86.HasSSE41 }},
	{"AVX2", "avx2", "Haswell", func() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }},
	{"AVX512_CORE", "avx512_core", "SkylakeX", func() bool {
		return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL
	}},
}

// TestEveryISA runs the engines' agreement, reference and gradient tests
// again in a child process per instruction-set level this CPU has (SSE4.1,
// AVX2, AVX-512), with oneDNN, OpenBLAS and dsgd's own kernels (package
// simd reads the same cap) capped to it: an AVX-512
// machine checks the kernels an AVX2 or SSE machine would run, and no test
// assumes the ISA of the machine it was written on. The caps are set in
// the child's environment only; oneDNN reads them once, at its first use.
func TestEveryISA(t *testing.T) {
	if os.Getenv(isaChildEnv) != "" {
		t.Skip("a child of TestEveryISA")
	}
	if !dnnlReady() {
		t.Skip("oneDNN not available: only dsgd's own kernels run here, whatever the ISA")
	}
	if testing.Short() {
		t.Skip("-short: one child process per ISA level")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, lv := range isaLevels {
		t.Run(lv.cap, func(t *testing.T) {
			if !lv.has() {
				t.Skipf("this CPU has no %s", lv.cap)
			}
			ran++
			cmd := exec.Command(exe, "-test.run", "^(TestEnginesAgree|TestISAChildEngine|Test.*Gradients|Test.*MatchesReference|TestLayersWithPoolBitIdentical|TestConvThreadsAgree|TestPoolThreadsAgree|TestLRNThreadsAndContract|TestConvPassSplitAgrees|TestWinogradLayer|TestWinogradGrouped|TestThinWeights)$", "-test.count=1")
			cmd.Env = append(os.Environ(), "ONEDNN_MAX_CPU_ISA="+lv.cap, "OPENBLAS_CORETYPE="+lv.openblas, isaChildEnv+"="+lv.effective)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("under ONEDNN_MAX_CPU_ISA=%s: %v\n%s", lv.cap, err, out)
			}
			if !strings.Contains(string(out), "isa child: oneDNN runs "+lv.effective) {
				t.Fatalf("under ONEDNN_MAX_CPU_ISA=%s the child did not confirm its ISA:\n%s", lv.cap, out)
			}
		})
	}
	if ran == 0 {
		t.Fatal("this CPU has none of the ISA levels: SSE4.1 is dsgd's floor")
	}
}

// TestISAChildEngine, in a child of TestEveryISA, checks that oneDNN
// really runs at the cap the parent set, so the child's other tests test
// that ISA's kernels.
func TestISAChildEngine(t *testing.T) {
	want := os.Getenv(isaChildEnv)
	if want == "" {
		t.Skip("only in a child of TestEveryISA")
	}
	_, isa, _ := strings.Cut(dnnl.Info(), "ISA ")
	if isa != want {
		t.Fatalf("ONEDNN_MAX_CPU_ISA=%s: oneDNN runs %q (%s)", os.Getenv("ONEDNN_MAX_CPU_ISA"), isa, dnnl.Info())
	}
	fmt.Printf("isa child: oneDNN runs %s, block %d\n", isa, dnnl.Block())
}
