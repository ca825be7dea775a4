package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"dsgd/engine/cpuinfo"
	"dsgd/engine/layers"
)

// TestBenchISAEndToEnd runs `dsgd bench --isa avx2` for real: the test
// binary re-executes itself as the child (TestMain's DSGD_CHILD), which
// runs cifar10_quick under ONEDNN_MAX_CPU_ISA=AVX2 and reports oneDNN at
// avx2 and its rows back.
func TestBenchISAEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("times cifar10_quick in a child process")
	}
	if !cpuinfo.Supports(cpuinfo.AVX2) {
		t.Skipf("this CPU lacks AVX2: %v", cpuinfo.Unsupported(cpuinfo.AVX2))
	}
	if conv, why := layers.ConvEngine(); !strings.Contains(conv, "oneDNN") {
		t.Skipf("oneDNN is not loadable here (%s: %s), so there is no cap to check", conv, why)
	}
	t.Setenv("DSGD_CHILD", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"bench", "--isa", "avx2", "--nets", "cifar10_quick", "--iters", "1", "--warmup", "0", "--reps", "1",
		"--thread-list", "1", "--peer", "none", "--peer-nets", "none", "--peak-time", "5ms"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr.String(), out)
	}
	for _, want := range []string{"=== ISA cap AVX2: ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell", "oneDNN 2", "ISA avx2", "(AVX2 YMM, best of 50)", "bench: FMA peak after the nets: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+stderr.String(), "warning") { // warnings are on stderr
		t.Errorf("a warning under the cap:\n%s\n%s", stderr.String(), out)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "cifar10_quick" && f[3] == "AVX2" {
			row = f
		}
	}
	// net batch threads ISA timed dsgd peer ratio GFLOP/it GFLOP/s %peak
	if len(row) != 11 || row[1] != "100" || row[2] != "1" || row[8] != "6.92" || !strings.HasSuffix(row[10], "%") || slices.Contains(row, "NaN") {
		t.Errorf("no AVX2 row for cifar10_quick (got %q) in:\n%s", row, out)
	}
}
