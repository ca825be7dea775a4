package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/cmd/internal/tiny"
	"dsgd/engine/cuda"
)

// runCmd runs the command line in dir and returns the exit status and
// what it printed.
func runCmd(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The tiny net and solver the fault matrix trains too (cmd/internal/tiny).
var tinyNet, tinySolver = tiny.Net, tiny.Solver

func TestTrainFromPrototxt(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// solver_mode: GPU asks for GPU 0; what was decided is noted on
	// stderr (not mixed with the progress), naming the solver's line.
	checkSolverModeNote(t, out, errs, "solver.prototxt:")
	for _, want := range []string{
		"iter 50 test:",
		"final test:", "accuracy 1.0000",
		"phase", "forward", "backward", "update",
		"snapshot: out/tiny_iter_150.dsgdsnap",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"out/tiny_iter_100.dsgdsnap", "out/tiny_iter_150.dsgdsnap"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("snapshot missing: %v", err)
		}
	}
	// Resume from the first snapshot and run to 200.
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--resume", "out/tiny_iter_100.dsgdsnap", "--iters", "200")
	if code != 0 || !strings.Contains(out, "done: 100 iterations (from 100)") {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestTimeCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "time", "--solver", "solver.prototxt", "--iters", "3", "--warmup", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"ip1", "InnerProduct", "relu", "loss", "forward-backward:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	write(t, dir, "badnet.prototxt", strings.Replace(tinyNet, `type: "ReLU"`, `type: "Frobnicate"`, 1))
	write(t, dir, "badsolver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\nmax_iter: 10\nmomentum_typo: 3\n")
	write(t, dir, "syntax.prototxt", "layer { name: \"x\" \n")
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown command", []string{"fly"}, 2, []string{"unknown command"}},
		{"bad flag", []string{"train", "--nope"}, 2, []string{"nope"}},
		{"stray argument", []string{"train", "lenet"}, 2, []string{"unexpected argument"}},
		{"unknown model", []string{"train", "--model", "resnet9000"}, 1, []string{"resnet9000", "lenet"}},
		{"missing solver", []string{"train", "--solver", "nope.prototxt"}, 1, []string{"nope.prototxt"}},
		{"net without solver", []string{"train", "--net", "net.prototxt"}, 1, []string{"--solver"}},
		{"unknown layer", []string{"train", "--solver", "solver.prototxt", "--net", "badnet.prototxt"}, 1, []string{"badnet.prototxt:", "Frobnicate"}},
		{"unknown solver field", []string{"train", "--solver", "badsolver.prototxt"}, 1, []string{"badsolver.prototxt:5:", "momentum_typo"}},
		{"syntax error", []string{"train", "--solver", "solver.prototxt", "--net", "syntax.prototxt"}, 1, []string{"syntax.prototxt:"}},
		{"missing data", []string{"train", "--solver", "solver.prototxt", "--data", filepath.Join(dir, "nodata")}, 1, []string{"--data", "nodata"}},
		{"unwritable snapshot", []string{"train", "--solver", "solver.prototxt", "--snapshot-prefix", "net.prototxt/x/snap"}, 1, []string{"snapshot_prefix"}},
		{"corrupt resume", []string{"train", "--solver", "solver.prototxt", "--resume", "net.prototxt"}, 1, []string{"--resume", "net.prototxt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCmd(t, dir, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

func TestDivergenceKeepsLastSnapshot(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, "base_lr: 0.1", "base_lr: 1e35", 1))
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1")
	if code != 1 || !strings.Contains(errs, "loss is") || !strings.Contains(errs, "iteration") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "out"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("half-written file %s left", e.Name())
		}
	}
}

func TestTrainWorkersAndMetrics(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, sch := range []string{"sync-tree", "sync-ps", "overlap"} {
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", sch, "--workers", "3", "--iters", "20", "--snapshot-prefix", "none", "--metrics", "m.jsonl", "--lr-scale", "linear")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", sch, code, out, errs)
		}
		for _, want := range []string{"scheme " + sch + ", 3 worker(s)", "replicas identical at the end: true", "communication (rank 0)", "comm (exposed)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", sch, want, out)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "m.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var lines, tests []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(l, `"kind":"test"`) {
				tests = append(tests, l)
			} else {
				lines = append(lines, l)
			}
		}
		if len(lines) != 60 || !strings.Contains(lines[0], `"comm_exposed_ms"`) || !strings.Contains(lines[0], `"kind":"train"`) {
			t.Fatalf("%s: %d train records, want 60 (20 iterations x 3 workers); first: %s", sch, len(lines), lines[0])
		}
		// test_initialization's, and the final test at 20 iterations of
		// 3 workers' batches of 16 (3.75 epochs of 256 images).
		if len(tests) != 2 || !strings.Contains(tests[0], `"iter":0,"net":0,"images":0,`) || !strings.Contains(tests[1], `"iter":20,"net":0,"epoch":3.75,"images":960,`) {
			t.Fatalf("%s: test records %q", sch, tests)
		}
	}
	code, _, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", "gossip", "--workers", "2")
	if code != 2 || !strings.Contains(errs, `--scheme "gossip": unknown`) {
		t.Fatalf("unknown scheme: exit %d: %s", code, errs)
	}
	code, _, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--allreduce", "butterfly")
	if code != 2 || !strings.Contains(errs, "butterfly") {
		t.Fatalf("bad --allreduce: exit %d: %s", code, errs)
	}
}

// TestHelpVersionSuggestions: dsgd help CMD is CMD's help on stdout;
// version names the build; a mistyped command or flag gets the nearest
// one suggested and exit 2, and a word far from any gets none.
func TestHelpVersionSuggestions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args    []string
		code    int
		out     string // in stdout
		errs    string // in stderr
		notErrs string
	}{
		{[]string{"help", "convert-mnist"}, 0, "usage: dsgd convert-mnist", "", ""},
		{[]string{"help"}, 0, "commands:", "", ""},
		{[]string{"version"}, 0, "dsgd ", "", ""},
		{[]string{"--version"}, 0, "go1.", "", ""},
		{[]string{"trian"}, 2, "", `unknown command "trian", did you mean "train"?`, ""},
		{[]string{"tset"}, 2, "", `did you mean "test"?`, ""},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`, "did you mean"},
		{[]string{"train", "--iter", "5"}, 2, "", `did you mean "--iters"?`, ""},
		{[]string{"train", "--snapshot-prefx", "x"}, 2, "", `did you mean "--snapshot-prefix"?`, ""},
		{[]string{"train", "--zzzzzzzzzz", "x"}, 2, "", "flag provided but not defined", "did you mean"},
	} {
		code, out, errs := runCmd(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.errs) || (tc.notErrs != "" && strings.Contains(errs, tc.notErrs)) {
			t.Errorf("%v: exit %d (want %d)\nstdout %q\nstderr %q", tc.args, code, tc.code, out, errs)
		}
	}
}

// checkSolverModeNote checks that a run whose solver (file) says
// solver_mode: GPU trains on GPU 0 where there is one (the trainer's
// header names it), and elsewhere (CI) on the CPU with a warning on
// stderr alone that says why.
func checkSolverModeNote(t *testing.T, out, errs, file string) {
	t.Helper()
	if _, err := cuda.Probe(); err == nil {
		if !strings.Contains(out, "on GPU 0:") {
			t.Errorf("a GPU is here, but the run does not say it trains on GPU 0:\n%s", out)
		}
		return
	}
	i := strings.Index(errs, "dsgd: warning: "+file)
	if i < 0 || !strings.Contains(errs[i:], "solver_mode: GPU (device_id 0), but ") || strings.Contains(out, "solver_mode") {
		t.Errorf("no solver_mode warning on stderr alone:\nstdout:\n%s\nstderr:\n%s", out, errs)
		return
	}
	if line, _, _ := strings.Cut(errs[i:], "\n"); !strings.HasSuffix(line, "training on the CPU") {
		t.Errorf("the solver_mode warning does not say the run is on the CPU: %s", line)
	}
}
