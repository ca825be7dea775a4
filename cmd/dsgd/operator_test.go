package main

import (
	"strings"
	"testing"
)

// TestHelpAndFlagErrors: -h is output (stdout, exit 0); a bad flag is one
// line on stderr saying how to get help, not the whole usage.
func TestHelpAndFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"train", "-h"}, {"--help"}, {"ps", "--help"}} {
		code, out, errs := runCmd(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage: dsgd") || errs != "" {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want the usage on stdout", args, code, len(out), errs)
		}
	}
	for _, args := range [][]string{{"train", "--nope"}, {"train", "--iters", "x"}, {"fly"}} {
		code, _, errs := runCmd(t, "", args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errs, "help") && !strings.Contains(errs, "-h") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and one line saying how to get help", args, code, errs)
		}
	}
}

// TestLogOutput: with the output not a terminal, progress is plain lines
// (no carriage returns or escapes), and the closing line names the time
// its images/s divides by beside the wall time.
func TestLogOutput(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--iters", "60", "--display", "20")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("terminal control characters in a log:\n%q", out)
	}
	if !strings.Contains(out, "images/s over ") || !strings.Contains(out, "of training; ") || !strings.Contains(out, "wall with tests and snapshots") {
		t.Errorf("closing line does not name its time bases:\n%s", out)
	}
}
