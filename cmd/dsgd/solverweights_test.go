//go:build !purego

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSolverWeights: a solver's weights field (Caffe 1.0) starts training
// from those models, and --weights replaces it, as caffe train's flag.
func TestSolverWeights(t *testing.T) {
	dir := t.TempDir()
	// A copy: opening an LMDB writes its lock file beside it.
	copyTree(t, caffeFixtures, filepath.Join(dir, "fx"))
	fx := filepath.Join(dir, "fx")
	model := filepath.Join(fx, "model.caffemodel")
	write(t, dir, "net.prototxt", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"))
	write(t, dir, "solver.prototxt", logregSolver+"weights: \""+model+"\"\n")
	args := []string{"train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--iters", "1", "--snapshot-prefix", "none"}
	code, out, errs := runCmd(t, dir, args...)
	if code != 0 || !strings.Contains(out+errs, "copied ip; ignored unused_fc") {
		t.Fatalf("solver weights: exit %d\n%s\n%s", code, out, errs)
	}
	write(t, dir, "solver.prototxt", logregSolver+"weights: \"missing.caffemodel\"\n")
	code, out, errs = runCmd(t, dir, append(args, "--weights", model)...)
	if code != 0 || !strings.Contains(out+errs, "copied ip") {
		t.Fatalf("--weights over the solver's: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCmd(t, dir, args...)
	if code == 0 || !strings.Contains(errs, "missing.caffemodel") {
		t.Fatalf("missing solver weights: exit %d, stderr %q; want the file named", code, errs)
	}
}
