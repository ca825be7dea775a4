package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolverWithoutRate: a solver without base_lr or lr_policy reads, as
// Caffe reads it, so the commands that need only its nets (test, time,
// upgrade) run with it; train refuses it naming the solver file and the
// field, with a non-zero exit, before it opens any data or writes any
// file.
func TestSolverWithoutRate(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--workers", "1")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	noRate := strings.Replace(tinySolver, `base_lr: 0.1 momentum: 0.9 lr_policy: "fixed"`, "momentum: 0.9", 1)
	noRate = strings.Replace(noRate, `snapshot_prefix: "out/tiny"`, `snapshot_prefix: "out2/tiny"`, 1)
	if noRate == tinySolver || strings.Contains(noRate, "base_lr") {
		t.Fatalf("the tiny solver changed; rewrite this test's edit:\n%s", tinySolver)
	}
	write(t, dir, "norate.prototxt", noRate)
	write(t, dir, "nopolicy.prototxt", strings.Replace(tinySolver, `lr_policy: "fixed"`, "", 1))

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no base_lr", []string{"train", "--solver", "norate.prototxt", "--threads", "1"}, "norate.prototxt:1:1: solver: base_lr is required"},
		// --data names a directory that is not there: a refusal after
		// the data were opened would name it instead.
		{"before the data", []string{"train", "--solver", "norate.prototxt", "--data", filepath.Join(dir, "nodata")}, "norate.prototxt:1:1: solver: base_lr is required"},
		{"no lr_policy", []string{"train", "--solver", "nopolicy.prototxt", "--threads", "1", "--snapshot-prefix", "out3/x"}, "nopolicy.prototxt:1:1: solver: lr_policy is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCmd(t, dir, c.args...)
			if code == 0 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, want non-zero and %q\nstdout:\n%s\nstderr:\n%s", code, c.want, out, errs)
			}
			if out != "" {
				t.Errorf("the refused run printed:\n%s", out)
			}
		})
	}
	for _, d := range []string{"out2", "out3"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			t.Errorf("the refused run made %s", d)
		}
	}

	code, out, errs = runCmd(t, dir, "test", "--solver", "norate.prototxt", "--threads", "1", "--weights", "out/tiny_iter_20.dsgdsnap")
	if code != 0 || !strings.Contains(out, "accuracy") {
		t.Errorf("test: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCmd(t, dir, "time", "--solver", "norate.prototxt", "--iters", "1", "--warmup", "0")
	if code != 0 || !strings.Contains(out, "base_lr (none), lr_policy (none)") {
		t.Errorf("time: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCmd(t, dir, "upgrade", "norate.prototxt", "up.prototxt")
	if code != 0 {
		t.Errorf("upgrade: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestEmptyDataSource: a DIGITS-style net, whose Data layers leave their
// source empty for the tool to fill, trains with --data; without it,
// train refuses it naming the layer and its line, and --data.
func TestEmptyDataSource(t *testing.T) {
	dir := t.TempDir()
	net := strings.ReplaceAll(tinyNet, `source: "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2" `, `source: "" `)
	net = strings.Replace(net, `source: "" `, "", 1) // the TRAIN layer: no source at all
	if strings.Contains(net, "synthetic") {
		t.Fatalf("the tiny net changed; rewrite this test's edit:\n%s", tinyNet)
	}
	write(t, dir, "net.prototxt", net)
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, "max_iter: 150", "max_iter: 2", 1))
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if want := "net.prototxt:3:14: data_param of layer 'd' needs a source (give one with --data)"; code == 0 || !strings.Contains(errs, want) {
		t.Errorf("without --data: exit %d, want non-zero and %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errs)
	}
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none",
		"--data", "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2")
	if code != 0 || !strings.Contains(out, "done: 2 iterations") {
		t.Errorf("with --data: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
