package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestTestCommand: dsgd test scores a snapshot with the same figures the
// training run's final test printed, and refuses a missing or foreign
// snapshot naming --weights.
func TestTestCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "40", "--workers", "1")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	line := regexp.MustCompile(`final test:.*accuracy.*|final test:.*loss.*`).FindString(out)
	if !strings.Contains(line, "accuracy") || !strings.Contains(line, "loss") {
		t.Fatalf("no final test with accuracy and loss in:\n%s", out)
	}
	acc := regexp.MustCompile(`accuracy\s+([0-9.]+)`)
	loss := regexp.MustCompile(`loss\s+([0-9.]+)`)
	final := []string{line, acc.FindStringSubmatch(line)[1], loss.FindStringSubmatch(line)[1]}
	code, out, errs = runCmd(t, dir, "test", "--solver", "solver.prototxt", "--threads", "1", "--weights", "out/tiny_iter_40.dsgdsnap")
	if code != 0 {
		t.Fatalf("test: exit %d\n%s\n%s", code, out, errs)
	}
	got := []string{out, acc.FindStringSubmatch(out)[1], loss.FindStringSubmatch(out)[1]}
	if got[1] != final[1] || got[2] != final[2] {
		t.Fatalf("dsgd test printed %q; the training run's final test was accuracy %s loss %s\n%s", got, final[1], final[2], out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"test", "--solver", "solver.prototxt"}, 2, "--weights FILE is required"},
		{[]string{"test", "--solver", "solver.prototxt", "--weights", "missing.dsgdsnap"}, 1, "--weights: checkpoint"},
		{[]string{"test", "--model", "lenet", "--data", "synthetic", "--weights", "out/tiny_iter_40.dsgdsnap"}, 1, "--weights out/tiny_iter_40.dsgdsnap: the snapshot was taken from a different net"},
	} {
		code, _, errs := runCmd(t, dir, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}
