package main

import (
	"dsgd/caffe/caffemodel"
	"dsgd/training/train"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"dsgd/training/checkpoint"
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
	// One killed write per format (issue 23: the caffe and hdf5 ones
	// used to stay forever).
	var stale []string
	for _, name := range []string{".tiny_iter_100.dsgdsnap.tmp4242", ".tiny_iter_100.caffemodel.tmp1", ".tiny_iter_100.solverstate.tmp2",
		".tiny_iter_100.caffemodel.h5.tmp3", ".tiny_iter_100.solverstate.h5.tmp4"} {
		stale = append(stale, write(t, filepath.Join(dir, "out"), name, "half"))
	}
	keep := write(t, filepath.Join(dir, "out"), "notes.tmp1", "not a snapshot's")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "5", "--workers", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale %s still there", p)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("%s, not a snapshot's temporary file, was removed: %v", keep, err)
	}
	if !strings.Contains(out, "removed") {
		t.Errorf("the removal was not reported:\n%s", out)
	}
}

// TestSnapshotPrefixHeldByALiveRun: a second run on a prefix a live run
// holds is refused, naming the holder, and the live run's in-flight
// temporary file is left alone (issue 23: the second run deleted it as
// stale and the first died at its rename).
func TestSnapshotPrefixHeldByALiveRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	first := startChild(t, dir, "first", "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "100000", "--snapshot-prefix", "out/run", "--straggle", "0:5ms")
	lock := filepath.Join(dir, "out", "run.lock")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(lock); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(end) || !first.running() {
			t.Fatalf("the first run took no lock:\n%s", first.out)
		}
	}
	inflight := write(t, filepath.Join(dir, "out"), ".run_iter_7.dsgdsnap.tmp99", "the first run's write")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "5", "--snapshot-prefix", "out/run")
	if code == 0 || !strings.Contains(errs, "is in use by a live run") || !strings.Contains(errs, fmt.Sprintf("pid %d", first.cmd.Process.Pid)) {
		t.Fatalf("second run on a held prefix: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(inflight); err != nil {
		t.Fatalf("the live run's temporary file was removed: %v", err)
	}
	// Once the first run is gone, its lock is stale and the prefix free.
	first.kill(t)
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "5", "--snapshot-prefix", "out/run")
	if code != 0 {
		t.Fatalf("a run after the holder died: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(inflight); !os.IsNotExist(err) {
		t.Errorf("the dead run's temporary file is still there")
	}
}

// TestBlownUpWeightsNotSnapshotted: in every format a snapshot of weights
// that have blown up (lr_policy exp with gamma 1.5) is refused and the run
// fails, keeping the last good one (issue 23: the caffe and hdf5 formats
// saved |w| up to 9.6e8 as good).
func TestBlownUpWeightsNotSnapshotted(t *testing.T) {
	for _, format := range []string{"dsgd", "caffe", "hdf5"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "net.prototxt", tinyNet)
			hot := regexp.MustCompile(`lr_policy: *"[a-z]+"`).ReplaceAllString(tinySolver, `lr_policy: "exp" gamma: 1.5`)
			write(t, dir, "solver.prototxt", hot)
			code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "200", "--snapshot-format", format,
				"--snapshot-prefix", "out/hot", "--test-interval", "0")
			if code == 0 {
				t.Fatalf("a run whose weights blew up exited 0\n%s\n%s", out, errs)
			}
			if !strings.Contains(errs, "no snapshot of iteration") && !strings.Contains(errs, "diverged") {
				t.Errorf("the failure does not say why:\n%s", errs)
			}
			matches, _ := filepath.Glob(filepath.Join(dir, "out", "hot_iter_*"))
			t.Logf("%s: kept %v", format, matches)
			// Every snapshot kept holds weights a run can trust.
			for _, m := range matches {
				var w []float32
				switch {
				case strings.HasSuffix(m, ".dsgdsnap"):
					st, err := checkpoint.Read(m)
					if err != nil {
						t.Fatal(err)
					}
					w = st.Params
				case strings.HasSuffix(m, ".caffemodel"), strings.HasSuffix(m, ".caffemodel.h5"):
					n, err := caffemodel.ReadModel(m)
					if err != nil {
						t.Fatal(err)
					}
					for _, l := range n.Layers {
						for _, b := range l.Blobs {
							w = append(w, b.Data...)
						}
					}
				default:
					continue
				}
				for i, v := range w {
					if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > train.MaxSnapshotWeight {
						t.Fatalf("%s keeps weight %d = %g", m, i, v)
					}
				}
			}
		})
	}
}
