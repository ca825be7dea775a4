package main

import (
	"dsgd/internal/syncbuf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interruptRun starts `dsgd train args...` in dir in a process group of
// its own, waits for its first progress line, sends sig to the whole
// group (as a terminal's Ctrl-C does) and returns the exit status and
// output.
func interruptRun(t *testing.T, dir string, sig syscall.Signal, args ...string) (int, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "DSGD_CHILD=1", "DSGD_GRACE=20s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "  loss ") {
		if time.Now().After(deadline) {
			t.Fatalf("no progress in 60s:\n%s", out)
		}
		select {
		case err := <-done:
			t.Fatalf("exited before the signal: %v\n%s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case err = <-done:
	case <-time.After(40 * time.Second):
		t.Fatalf("still running 40s after %v:\n%s", sig, out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestCtrlCSnapshots: SIGINT or SIGTERM to a training run, in process and
// over TCP, writes a snapshot, says once that the run was interrupted and
// how to resume (no rank's "context canceled"), and exits 128+N.
func TestCtrlCSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"inproc SIGINT", syscall.SIGINT, []string{"--workers", "2"}},
		{"inproc SIGTERM", syscall.SIGTERM, nil},
		{"tcp SIGINT", syscall.SIGINT, []string{"--transport", "tcp", "--workers", "2"}},
		{"tcp async SIGINT", syscall.SIGINT, []string{"--transport", "tcp", "--workers", "2", "--scheme", "async"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "net.prototxt", tinyNet)
			write(t, dir, "solver.prototxt", tinySolver)
			args := append([]string{"train", "--solver", "solver.prototxt", "--iters", "1000000", "--display", "10", "--threads", "1", "--test-interval", "0"}, tc.args...)
			code, out := interruptRun(t, dir, tc.sig, args...)
			if want := 128 + int(tc.sig); code != want {
				t.Errorf("exit status %d, want %d", code, want)
			}
			t.Logf("exit %d:\n%s", code, out)
			snaps, _ := filepath.Glob(filepath.Join(dir, "out", "tiny_iter_*.dsgdsnap"))
			if len(snaps) == 0 {
				t.Fatalf("no snapshot written:\n%s", out)
			}
			if n := strings.Count(out, "continue with --resume"); n != 1 {
				t.Errorf("output says how to resume %d times, want once:\n%s", n, out)
			}
			// One rank's, or the launcher's, line that the run was
			// interrupted: no rank's "context canceled".
			if strings.Contains(out, "context canceled") {
				t.Errorf("output has a rank's \"context canceled\":\n%s", out)
			}
			if !strings.Contains(out, "dsgd train: interrupted") {
				t.Errorf("output does not say the run was interrupted:\n%s", out)
			}
			if strings.Contains(out, "signal: killed") {
				t.Errorf("a rank was killed instead of stopped:\n%s", out)
			}
		})
	}
}

// TestNohupKeepsSIGHUPIgnored: started with SIGHUP ignored (nohup), a run
// is not stopped by it.
func TestNohupKeepsSIGHUPIgnored(t *testing.T) {
	if _, err := exec.LookPath("nohup"); err != nil {
		t.Skip("no nohup")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nohup", exe, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--iters", "1000000", "--test-interval", "0")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "DSGD_CHILD=1")
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { cmd.Process.Kill(); <-done }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "  loss ") {
		select {
		case <-done:
			t.Fatalf("exited before the signal:\n%s", out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress in 60s:\n%s", out)
		}
	}
	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-done:
		t.Fatalf("SIGHUP under nohup stopped the run:\n%s", out)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestSignalEffectFlags: Caffe's -sigint_effect and -sighup_effect (and
// dsgd's spellings) take stop, snapshot or none; a snapshot while
// training goes on is refused for a run of several processes.
func TestSignalEffectFlags(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, tc := range []struct {
		args []string
		code int
		errs string
	}{
		{[]string{"-sigint_effect", "bogus"}, 2, `--sigint-effect "bogus": want stop, snapshot or none`},
		{[]string{"--sighup-effect", "Snapshot"}, 2, `--sighup-effect "Snapshot": want stop, snapshot or none`},
		{[]string{"-sighup_effect", "snapshot", "--transport", "tcp", "--workers", "2"}, 2, "--sighup-effect snapshot: a run of several processes"},
		{[]string{"-sighup_effect", "snapshot", "-sigint_effect", "none", "--iters", "2"}, 0, ""},
	} {
		args := append([]string{"train", "--solver", "solver.prototxt", "--snapshot-prefix", "none", "--threads", "1"}, tc.args...)
		code, out, errs := runCmd(t, dir, args...)
		if code != tc.code || !strings.Contains(errs, tc.errs) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q\n%s", tc.args, code, errs, tc.code, tc.errs, out)
		}
	}
}
