package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareRepeats: compare --repeats trains every scheme that many
// times, interleaved, and prints one row per scheme with images, epochs
// and images/s, medians with their ranges, the machine's load at the
// start and end, a log per run and one plot line per scheme.
func TestCompareRepeats(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "compare", "--solver", "solver.prototxt", "--schemes", "seq,sync-ring,diloco", "--workers", "2",
		"--repeats", "2", "--iters", "6", "--time-budget", "20s", "--test-interval", "3", "--threads", "1", "--logs", "logs", "--plot", "cmp", "--target", "0.5")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s\n%s", code, out, errs)
	}
	for _, w := range []string{"3 schemes, 2 workers (seq: 1)", "2 run(s) each", "load average", "at the end",
		"images", "epochs", "img/s", "clock waits", "each cell is their median", "plot: cmp.png"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "[1/2]") + strings.Count(out, "[2/2]"); n != 6 {
		t.Errorf("%d runs announced, want 3 schemes x 2 repeats:\n%s", n, out)
	}
	var rows int
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[0] == "seq" || f[0] == "sync-ring" || f[0] == "diloco") && (f[1] == "1" || f[1] == "2") {
			rows++
		}
	}
	if rows != 3 {
		t.Errorf("%d table rows, want one per scheme:\n%s", rows, out)
	}
	for _, name := range []string{"seq.1", "seq.2", "sync-ring.1", "sync-ring.2", "diloco.1", "diloco.2"} {
		if _, err := os.Stat(filepath.Join(dir, "logs", name+".log")); err != nil {
			t.Errorf("log of %s: %v", name, err)
		}
	}
	if code, _, errs := runCmd(t, dir, "compare", "--solver", "solver.prototxt", "--repeats", "0"); code != 2 || !strings.Contains(errs, "--repeats 0") {
		t.Errorf("--repeats 0: exit %d, %s", code, errs)
	}
}
