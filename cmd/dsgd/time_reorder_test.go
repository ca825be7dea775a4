package main

import (
	"regexp"
	"strings"
	"testing"

	"dsgd/engine/tensor/dnnl"
)

// TestTimeReorders checks that `dsgd time` attributes oneDNN's layout
// reorders to the convolutions of cifar10_quick (whose 32-channel layers
// run on oneDNN) and to no layer that does not reorder.
func TestTimeReorders(t *testing.T) {
	if err := dnnl.Load(); err != nil {
		t.Skipf("oneDNN not available: %v", err)
	}
	dir := t.TempDir()
	code, out, errs := runCmd(t, dir, "time", "--model", "cifar10_quick", "--data", "synthetic:N=4,C=3,H=32,W=32,classes=10",
		"--batch", "4", "--threads", "1", "--iters", "2", "--warmup", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, section, ok := strings.Cut(out, "activation reorders")
	if !ok {
		t.Fatalf("no reorder section:\n%s", out)
	}
	for _, want := range []string{"conv2", "conv3", "total", "weights"} {
		if !strings.Contains(section, want) {
			t.Errorf("reorder section lacks %q:\n%s", want, section)
		}
	}
	for _, not := range []string{"ip1", "relu", "loss"} {
		if strings.Contains(section, not) {
			t.Errorf("reorder section names %q, which does not reorder:\n%s", not, section)
		}
	}
	if !regexp.MustCompile(`total +[0-9.]+ ms = [0-9.]+% of 1 thread`).MatchString(section) {
		t.Errorf("no total line:\n%s", section)
	}
}
