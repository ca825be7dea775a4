package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/checkpoint"
)

// TestNoSnapshotOfExplodedWeights: a run whose weights explode (exp
// policy with gamma 1.5) writes no snapshot of them and fails naming the
// weight; the snapshots before the explosion stay.
func TestNoSnapshotOfExplodedWeights(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	solver := strings.Replace(tinySolver, `lr_policy: "fixed"`, `lr_policy: "exp" gamma: 1.5`, 1)
	solver = strings.Replace(solver, "snapshot: 100", "snapshot: 20", 1)
	write(t, dir, "solver.prototxt", solver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--test-interval", "0")
	if code == 0 {
		t.Fatalf("an exploding run succeeded:\n%s", out)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "out", "*.dsgdsnap"))
	for _, p := range snaps {
		st, err := checkpoint.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range st.Params {
			if f := float64(v); math.IsNaN(f) || math.Abs(f) > 1e8 {
				t.Fatalf("%s holds weight %d = %g", p, i, v)
			}
		}
	}
	if !strings.Contains(errs, "diverged") {
		t.Errorf("stderr does not say the run diverged:\n%s", errs)
	}
}

// TestNaNWeightsRefused: dsgd test and --resume refuse a snapshot whose
// weights are not finite, instead of scoring NaN as accuracy 1.
func TestNaNWeightsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	if code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--workers", "1"); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	good := filepath.Join(dir, "out", "tiny_iter_20.dsgdsnap")
	st, err := checkpoint.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	for i := range st.Params {
		st.Params[i] = float32(math.NaN())
	}
	if err := checkpoint.Write(filepath.Join(dir, "nan.dsgdsnap"), st); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"test", "--solver", "solver.prototxt", "--threads", "1", "--weights", "nan.dsgdsnap"},
		{"train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--resume", "nan.dsgdsnap"},
	} {
		code, out, errs := runCmd(t, dir, args...)
		if code == 0 || !strings.Contains(errs, "nan.dsgdsnap") || !strings.Contains(errs, "NaN") {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s\nwant a refusal naming the file and the NaN", args, code, out, errs)
		}
	}
}

// TestStaleTempsCleaned: a .tmp left by a snapshot write that was killed
// is removed when the next run starts.
func TestStaleTempsCleaned(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := write(t, filepath.Join(dir, "out"), ".tiny_iter_100.dsgdsnap.tmp4242", "half")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "5", "--workers", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s still there", stale)
	}
	if !strings.Contains(out, "removed") {
		t.Errorf("the removal was not reported:\n%s", out)
	}
}
