package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFlagsValidatedFirst: every bad flag value is refused, naming the
// flag, before any data is loaded (the data source here does not exist,
// so an error about it would mean the check came too late).
func TestFlagsValidatedFirst(t *testing.T) {
	dir := t.TempDir()
	base := []string{"train", "--data", filepath.Join(dir, "no-such-data"), "--threads", "1"}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--iters", "-5"}, "--iters"},
		{[]string{"--threads", "-2"}, "--threads"},
		{[]string{"--threads", "0"}, "--threads"},
		{[]string{"--batch", "-1"}, "--batch"},
		{[]string{"--batch", "1000000000"}, "--batch"},
		{[]string{"--test-iter", "-1"}, "--test-iter"},
		{[]string{"--time-budget", "-1s"}, "--time-budget"},
		{[]string{"--workers", "-3"}, "--workers"},
		{[]string{"--scheme", "nosuch"}, "--scheme \"nosuch\""},
		{[]string{"--allreduce", "fastest"}, "--allreduce"},
		{[]string{"--finish", "never"}, "--finish"},
		{[]string{"--lr-scale", "sqrt"}, "--lr-scale"},
		{[]string{"--compress", "zip"}, "--compress"},
		{[]string{"--transport", "udp"}, "--transport"},
		{[]string{"--comm-timeout", "0s"}, "--comm-timeout"},
		{[]string{"--alpha", "1.5"}, "--alpha"},
		{[]string{"--interval", "0"}, "--interval"},
		{[]string{"--straggle", "x"}, "--straggle"},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			code, out, errs := runCmd(t, "", append(base, tc.flags...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "no-such-data") {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2 naming %s before the data", code, out, errs, tc.want)
			}
		})
	}
}

// TestNoLossInTrain: a TRAIN net without a loss is refused, saying so.
func TestNoLossInTrain(t *testing.T) {
	dir := t.TempDir()
	net := strings.Replace(tinyNet, `layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }`, `layer { name: "prob" type: "Softmax" bottom: "ip2" top: "prob" }`, 1)
	if net == tinyNet {
		t.Fatal("the loss layer was not replaced")
	}
	write(t, dir, "net.prototxt", net)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1")
	if code == 0 || !strings.Contains(errs, "no loss") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant a refusal: no loss", code, out, errs)
	}
}

// TestUnreadableDataDir: a data directory this process may not read is
// reported as permission denied. Root reads every directory, so as root
// (CI) the command runs in a child process as user nobody, from a copy of
// the test binary that user may execute.
func TestUnreadableDataDir(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// t.TempDir's parent is private to root; nobody needs to reach
		// the binary and the data directory's parent.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := filepath.Join(dir, "data")
	if err := os.Mkdir(d, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(d, 0o755)
	args := []string{"train", "--data", d, "--threads", "1", "--iters", "1"}
	if os.Geteuid() != 0 {
		code, _, errs := runCmd(t, "", args...)
		if code == 0 || !strings.Contains(errs, "permission denied") {
			t.Errorf("exit %d, stderr %q; want permission denied", code, errs)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dsgd.test")
	raw, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSGD_CHILD=1", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(errb.String(), "permission denied") || !strings.Contains(errb.String(), d) {
		t.Errorf("as user nobody: %v, stderr %q; want a non-zero exit, permission denied naming %s", err, errb.String(), d)
	}
}

// TestBadModelMessages: labels beyond num_output and batches beyond the
// machine's memory are errors naming the layer and the data source, not
// a panic or a fatal out-of-memory.
func TestBadModelMessages(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"label >= num_output", "num_output: 4 ", "num_output: 3 ", []string{`data layer "d"`, "source synthetic", "3 classes"}},
		{"batch 1e9", "batch_size: 16 }", "batch_size: 1000000000 }", []string{`data layer "d"`, "batch_size 1000000000", "more than"}},
		{"num_output 2e9", "num_output: 16 ", "num_output: 2000000000 ", []string{`layer "ip1"`, "more than"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := strings.Replace(tinyNet, tc.from, tc.to, 1)
			if net == tinyNet {
				t.Fatalf("%q not in the net", tc.from)
			}
			dir := t.TempDir()
			write(t, dir, "net.prototxt", net)
			write(t, dir, "solver.prototxt", tinySolver)
			code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--iters", "3")
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

// TestRanksMustFitTogether: in-process ranks each build a net; when they
// would not fit in memory together the run is refused with the figure.
func TestRanksMustFitTogether(t *testing.T) {
	dir := t.TempDir()
	// With 2000 hidden units the tiny net's parameters take about 2.7 MB
	// a rank (weights, gradients, solver history): 8 MiB fits one rank
	// and every data loader, not eight ranks.
	write(t, dir, "net.prototxt", strings.Replace(tinyNet, "num_output: 16 ", "num_output: 2000 ", 1))
	write(t, dir, "solver.prototxt", tinySolver)
	t.Setenv("DSGD_MEMORY", "8MiB")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "8", "--iters", "2", "--data", "synthetic:N=256,C=1,H=8,W=8,classes=4")
	if code != 1 || !strings.Contains(errs, "8 ranks in this process need") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestMachineMemory: DSGD_MEMORY takes any size a machine has (it once
// shared bench-comm's buffer parser, which refused past 2 GiB), and a
// size that is not one is a warning naming it, the machine's memory
// used instead.
func TestMachineMemory(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int64
		warn bool
	}{
		{"8GiB", 8 << 30, false},
		{"1TiB", 1 << 40, false},
		{"512MiB", 512 << 20, false},
		{"3", 3 << 20, false},
		{"lots", memTotal(), true},
		{"-1GiB", memTotal(), true},
	} {
		t.Setenv("DSGD_MEMORY", c.env)
		var errs strings.Builder
		got := machineMemory(&errs)
		if got != c.want || (errs.Len() > 0) != c.warn || c.warn && !strings.Contains(errs.String(), c.env) {
			t.Errorf("DSGD_MEMORY=%s: %d, warning %q; want %d, a warning %v", c.env, got, errs.String(), c.want, c.warn)
		}
	}
}
