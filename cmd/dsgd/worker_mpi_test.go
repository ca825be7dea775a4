package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dsgd/engine/tensor"
	"dsgd/training/checkpoint"
)

// mpirunDsgd runs this test binary as dsgd under mpirun with np ranks, in
// dir, bounded in time. Root needs Open MPI's consent, given on the
// command line and in the environment here (not taken from the caller's).
func mpirunDsgd(t *testing.T, dir string, np int, args ...string) (int, string) {
	t.Helper()
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not installed (Debian openmpi-bin; .ci/run installs it)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np), "-x", "DSGD_CHILD=1", exe}, args...)
	cmd := exec.CommandContext(ctx, mpirun, full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSGD_CHILD=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_plm_rsh_agent=false")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun %v: still running after 90 s\n%s", args, out)
	}
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return code, string(out)
}

// TestWorkerOverMPI: `mpirun -np 2 dsgd worker --transport mpi` trains
// sync-tree to seq's weights bit for bit (same global batch: the data order does not
// depend on the worker count), with dsgd's schedules over MPI messages and
// with MPI's own allreduce; a --workers that disagrees with MPI's size is
// refused.
func TestWorkerOverMPI(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", fashionSubset(t, dir))
	write(t, dir, "solver.prototxt", fashionSolver)
	base := []string{"--solver", "solver.prototxt", "--threads", "1", "--test-interval", "0"}
	params := func(prefix string) []float32 {
		t.Helper()
		st, err := checkpoint.Read(filepath.Join(dir, prefix+"_iter_30.dsgdsnap"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Params
	}
	code, out, errs := runCmd(t, dir, append([]string{"train", "--scheme", "seq", "--batch", "64", "--snapshot-prefix", "seq"}, base...)...)
	if code != 0 {
		t.Fatalf("seq: exit %d\n%s\n%s", code, out, errs)
	}
	seq := params("seq")
	for _, c := range []struct {
		name, prefix, banner string
		extra                []string
	}{
		{"schedules", "sched", "over mpi (Open MPI", nil},
		{"MPI's allreduce", "native", "MPI's own collectives", []string{"--allreduce", "mpi"}},
	} {
		args := append([]string{"worker", "--transport", "mpi", "--scheme", "sync-tree", "--batch", "32", "--snapshot-prefix", c.prefix}, base...)
		code, out := mpirunDsgd(t, dir, 2, append(args, c.extra...)...)
		if code != 0 {
			t.Fatalf("%s: mpirun exit %d\n%s", c.name, code, out)
		}
		if !strings.Contains(out, "scheme sync-tree, 2 worker(s) over mpi") || !strings.Contains(out, c.banner) {
			t.Errorf("%s: the run header does not say %q:\n%s", c.name, c.banner, out)
		}
		// Exact sums (the default): seq's bits, whatever order MPI adds in.
		if got := params(c.prefix); !tensor.SameBits(got, seq) {
			t.Errorf("%s: sync-tree over MPI ends away from seq with the same global batch (largest difference %.2g)", c.name, maxDiff(got, seq))
		}
	}
	code, out = mpirunDsgd(t, dir, 2, append([]string{"worker", "--transport", "mpi", "--workers", "3", "--snapshot-prefix", "none"}, base...)...)
	if code == 0 || !strings.Contains(out, "--workers 3 disagrees with a world of 2 ranks") {
		t.Errorf("--workers 3 under mpirun -np 2: exit %d, want a refusal naming both:\n%s", code, out)
	}
}

// TestMPIFlagsRefused: the flag combinations --transport mpi cannot serve
// are refused before MPI is touched, saying what to use instead.
func TestMPIFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--transport", "mpi", "--scheme", "async"}, "use --transport tcp"},
		{[]string{"worker", "--transport", "mpi", "--scheme", "seasgd"}, "MPI ends the whole job"},
		{[]string{"worker", "--transport", "mpi", "--scheme", "hybrid", "--groups", "2", "--workers", "4"}, "keeps its center"},
		{[]string{"worker", "--transport", "mpi", "--compress", "fp16"}, "--compress works with --transport tcp"},
		{[]string{"worker", "--allreduce", "mpi", "--rank", "0", "--world", "2", "--rendezvous", "127.0.0.1:1"}, "needs --transport mpi"},
		{[]string{"train", "--transport", "mpi", "--workers", "2"}, "mpirun -np N dsgd worker --transport mpi"},
		{[]string{"train", "--allreduce", "mpi", "--workers", "2"}, "--allreduce mpi needs"},
	}
	for _, c := range cases {
		code, out, errs := runCmd(t, dir, append(c.args, "--solver", "solver.prototxt", "--iters", "1")...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr lacks %q:\n%s%s", c.args, code, c.want, out, errs)
		}
	}
}
