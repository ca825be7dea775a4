package main

import (
	"strings"
	"testing"
)

// TestResumeRestoresRun: --resume alone continues the run the snapshot
// came from (scheme, workers, iterations), says so, and a flag given
// again overrides the recorded one, saying that too.
func TestResumeRestoresRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--scheme", "easgd", "--workers", "3", "--iters", "40", "--test-interval", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--resume", "out/tiny_iter_20.dsgdsnap")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"restoring the snapshot's run:", "--iters 40", "--scheme easgd", "--workers 3", "scheme easgd, 3 worker(s)", "done: 20 iterations (from 20)"} {
		if !strings.Contains(out, want) {
			t.Errorf("resume output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--resume", "out/tiny_iter_20.dsgdsnap", "--workers", "2")
	if code != 0 {
		t.Fatalf("resume with --workers 2: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"overriding the snapshot's run: --workers 2 (the snapshot's run: 3)", "scheme easgd, 2 worker(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("override output lacks %q:\n%s", want, out)
		}
	}
}
