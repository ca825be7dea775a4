package main

import (
	"context"
	"dsgd/internal/spawn"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for dsgd when the launcher (or
// mpirun) starts it as a worker.
func TestMain(m *testing.M) {
	if os.Getenv("DSGD_CHILD") == "1" {
		os.Exit(mainStatus(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestResolveGroup(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name      string
		g         groupFlags
		env       func(string) string
		rank, wld int
		rdv, want string
	}{
		{"flags", groupFlags{rank: 1, world: 3, rendezvous: "h:1"}, env(), 1, 3, "h:1", ""},
		{"open mpi", groupFlags{rank: -1}, env("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500"), 2, 4, "10.0.0.1:29500", ""},
		{"slurm", groupFlags{rank: -1}, env("SLURM_PROCID", "0", "SLURM_NTASKS", "8", "DSGD_RENDEZVOUS", "n1:7000"), 0, 8, "n1:7000", ""},
		{"torch", groupFlags{rank: -1}, env("RANK", "3", "WORLD_SIZE", "4", "MASTER_ADDR", "a", "MASTER_PORT", "1"), 3, 4, "a:1", ""},
		{"flag agrees with env", groupFlags{rank: 3, world: 4}, env("RANK", "3", "WORLD_SIZE", "4", "DSGD_RENDEZVOUS", "x:1"), 3, 4, "x:1", ""},
		{"flag disagrees with env", groupFlags{rank: 1, world: 2}, env("RANK", "3", "WORLD_SIZE", "4", "DSGD_RENDEZVOUS", "x:1"), 0, 0, "", "--rank 1 disagrees with torchrun's RANK=3"},
		{"nothing", groupFlags{rank: -1}, env(), 0, 0, "", "no rank"},
		{"bad env", groupFlags{rank: -1}, env("RANK", "x", "WORLD_SIZE", "4"), 0, 0, "", `RANK="x" is not a non-negative integer`},
		{"out of range", groupFlags{rank: 4, world: 4}, env(), 0, 0, "", "out of range"},
		{"no rendezvous", groupFlags{rank: 0, world: 2}, env(), 0, 0, "", "no rendezvous"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.g
			err := g.resolve(c.env)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil || g.rank != c.rank || g.world != c.wld || g.rendezvous != c.rdv {
				t.Fatalf("got rank %d world %d rendezvous %q err %v", g.rank, g.world, g.rendezvous, err)
			}
		})
	}
}

func TestStripFlag(t *testing.T) {
	got := stripFlag([]string{"--transport", "tcp", "--workers", "2", "-transport=tcp", "--iters=3"}, "transport")
	if strings.Join(got, " ") != "--workers 2 --iters=3" {
		t.Fatalf("got %v", got)
	}
}

// TestTrainOverTCP runs workers as separate processes over loopback TCP:
// the numbers match the in-process run up to thread-count rounding.
func TestTrainOverTCP(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	// hybrid needs both a group (inside each group) and a shared buffer
	// server (between the roots); async and sync-easgd one of each.
	for _, run := range [][]string{{"sync-ring"}, {"sync-ring", "--shm", "off"}, {"sync-ps"}, {"overlap", "--compress", "fp16"},
		// sync-easgd keeps the solver's momentum here: this test is of
		// the TCP path, and plain SGD (its default, SC17 Eq. 1) needs
		// more than 30 iterations on this net.
		{"hybrid", "--workers", "4", "--groups", "2"}, {"async"}, {"sync-easgd", "--variant", "1", "--momentum", "0.9"}} {
		sch := run[0]
		args := append([]string{"train", "--solver", "solver.prototxt", "--transport", "tcp", "--scheme", sch, "--workers", "3", "--iters", "30", "--threads", "1"}, run[1:]...)
		code, out, errs := runCmd(t, dir, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", sch, code, out, errs)
		}
		wants := []string{"over tcp", "final test:", "accuracy 1.0000", "communication (rank 0)"}
		if sch == "sync-ring" {
			// Every rank is on this host: shared memory unless turned off.
			link := "link shm (rank 0): 2 peer(s), sent "
			if len(run) > 1 {
				link = "link tcp (rank 0): 2 peer(s), sent "
			}
			wants = append(wants, link)
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", sch, want, out)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "out/tiny_iter_30.dsgdsnap")); err != nil {
			t.Errorf("%s: the updating rank wrote no final snapshot: %v", sch, err)
		}
		os.RemoveAll(filepath.Join(dir, "out"))
	}
}

// TestWorkerRefusedAtRendezvous: a worker whose model differs is refused
// with a message naming the mismatch, and the job fails instead of hanging.
func TestWorkerRefusedAtRendezvous(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "net2.prototxt", strings.Replace(tinyNet, "num_output: 16", "num_output: 17", 1))
	write(t, dir, "solver.prototxt", tinySolver)
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	start := func(rank, net string) *exec.Cmd {
		c := exec.Command(exe, "worker", "--rank", rank, "--world", "2", "--rendezvous", addr, "--solver", "solver.prototxt", "--net", net, "--iters", "5", "--comm-timeout", "10s", "--threads", "1")
		c.Dir, c.Env = dir, append(os.Environ(), "DSGD_CHILD=1")
		return c
	}
	c0, c1 := start("0", "net.prototxt"), start("1", "net2.prototxt")
	var out0, out1 strings.Builder
	c0.Stderr, c1.Stderr = &out0, &out1
	if err := c0.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(); err != nil {
		t.Fatal(err)
	}
	err1 := c1.Wait()
	c0.Process.Kill()
	c0.Wait()
	if err1 == nil || !strings.Contains(out1.String(), "model") {
		t.Fatalf("mismatched worker: %v\n%s", err1, out1.String())
	}
}

// TestMpirun launches 4 workers with Open MPI's mpirun on loopback; the
// ranks come from OMPI_COMM_WORLD_RANK/SIZE.
func TestMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not installed (Debian openmpi-bin; .ci/run installs it)")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	// About 2 s idle (4 s under the race detector); the bound is for a
	// hang, which would otherwise run into the package's time limit
	// with no output.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "4",
		"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
		"-x", "DSGD_CHILD=1",
		exe, "worker", "--rendezvous", addr, "--solver", "solver.prototxt", "--iters", "20", "--threads", "1", "--snapshot-prefix", "none")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OMPI_MCA_plm_rsh_agent=false")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun did not finish within 90 s:\n%s", out)
	}
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	for _, want := range []string{"scheme sync-tree, 4 worker(s) over tcp", "final test:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestMetricsListenWithCenter: --metrics-listen with a parameter-server
// scheme over --transport tcp serves rank 0's metrics; the launcher's
// center does not take the address (issue 25: it did, and rank 0 failed to
// bind).
func TestMetricsListenWithCenter(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	addrs, err := freeLoopbackAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--scheme", "async",
		"--workers", "2", "--iters", "20", "--threads", "1", "--metrics-listen", addrs[0])
	if code != 0 || strings.Contains(errs, "address already in use") || !strings.Contains(out, "final test:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestResumeTCPRunOverTCP: --resume of a snapshot written by a --transport
// tcp run starts its ranks over TCP again (issue 25: it went on in one
// process, silently), and says so.
func TestResumeTCPRunOverTCP(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--scheme", "sync-ring",
		"--workers", "2", "--iters", "10", "--threads", "1", "--snapshot-prefix", "snap/r")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCmd(t, dir, "train", "--resume", "snap/r_iter_10.dsgdsnap", "--iters", "20")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "2 worker(s) over tcp") || !strings.Contains(errs+out, "--transport tcp") {
		t.Errorf("the resumed run is not over tcp:\n%s\n%s", out, errs)
	}
}

func freeLoopbackAddr() (string, error) {
	a, err := freeLoopbackAddrs(1)
	if err != nil {
		return "", err
	}
	return a[0], nil
}

// freeLoopbackAddrs returns n distinct free loopback addresses
// (spawn.LoopbackAddrs).
func freeLoopbackAddrs(n int) ([]string, error) { return spawn.LoopbackAddrs(n) }
