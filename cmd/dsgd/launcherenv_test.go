package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/internal/launcher"
)

// TestResolveFromLauncher: under a launcher, rank and world come from it,
// flags that disagree are refused naming both, and without an address
// the rendezvous is loopback on the job's port when every rank is on this
// host, an error saying what to pass otherwise.
func TestResolveFromLauncher(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ompi := []string{"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "OMPI_MCA_ess_base_jobid", "1094320129"}
	ompiPort := launcher.Info{Name: "Open MPI", JobID: "1094320129"}.Port()
	with := func(base []string, kv ...string) []string { return append(append([]string{}, base...), kv...) }
	cases := []struct {
		name        string
		g           groupFlags
		env         []string
		rank, world int
		rdv, token  string
		auto        bool
		want        string
	}{
		{name: "open mpi, one host", g: groupFlags{rank: -1}, env: ompi, rank: 1, world: 2,
			rdv: "127.0.0.1:" + strconv.Itoa(ompiPort), token: "dsgd job Open MPI 1094320129", auto: true},
		{name: "the user's token wins", g: groupFlags{rank: -1}, env: with(ompi, "DSGD_TOKEN", "s3cret"), rank: 1, world: 2,
			rdv: "127.0.0.1:" + strconv.Itoa(ompiPort), token: "s3cret", auto: true},
		{name: "an address wins", g: groupFlags{rank: -1}, env: with(ompi, "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500"), rank: 1, world: 2, rdv: "10.0.0.1:29500"},
		{name: "flags that agree", g: groupFlags{rank: 1, world: 2}, env: ompi, rank: 1, world: 2, rdv: "127.0.0.1:" + strconv.Itoa(ompiPort), token: "dsgd job Open MPI 1094320129", auto: true},
		{name: "rank disagrees", g: groupFlags{rank: 0}, env: ompi, want: "--rank 0 disagrees with Open MPI's OMPI_COMM_WORLD_RANK=1"},
		{name: "world disagrees", g: groupFlags{rank: -1, world: 4}, env: ompi, want: "--world 4 disagrees with Open MPI's OMPI_COMM_WORLD_SIZE=2"},
		{name: "across hosts", g: groupFlags{rank: -1}, env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "OMPI_MCA_ess_base_jobid", "3"},
			want: "span several hosts (OMPI_COMM_WORLD_LOCAL_SIZE=2 of OMPI_COMM_WORLD_SIZE=4), so loopback cannot join them: pass --rendezvous HOST:PORT"},
		{name: "hosts not said", g: groupFlags{rank: -1}, env: []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_ID", "5"}, want: "does not say whether its 2 ranks share one host"},
		{name: "no job id", g: groupFlags{rank: -1}, env: []string{"PMI_RANK", "0", "PMI_SIZE", "2", "MPI_LOCALNRANKS", "2"}, want: "MPICH/PMI names no job id"},
		{name: "srun on one node", g: groupFlags{rank: -1}, env: []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_STEP_NUM_NODES", "1", "SLURM_JOB_ID", "77", "SLURM_STEP_ID", "0"},
			rank: 1, world: 2, rdv: "127.0.0.1:" + strconv.Itoa(launcher.Info{Name: "Slurm", JobID: "77.0"}.Port()), token: "dsgd job Slurm 77.0", auto: true},
		{name: "one rank needs no rendezvous", g: groupFlags{rank: -1}, env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "1"}, rank: 0, world: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.g
			err := g.resolve(env(c.env...))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.rank != c.rank || g.world != c.world || g.rendezvous != c.rdv || g.token != c.token || (g.auto != "") != c.auto {
				t.Fatalf("got rank %d world %d rendezvous %q token %q note %q", g.rank, g.world, g.rendezvous, g.token, g.auto)
			}
			if c.auto && !strings.Contains(g.auto, "derived from the job id (OMPI_MCA_ess_base_jobid)") && !strings.Contains(g.auto, "SLURM_JOB_ID.SLURM_STEP_ID") {
				t.Errorf("the log line does not say where the port came from: %q", g.auto)
			}
		})
	}
}

// cleanEnv is this process's environment without what would steer a
// worker from outside the test: a launcher's variables and the
// rendezvous and token defaults.
func cleanEnv() []string {
	var out []string
	for _, kv := range launcher.Strip(os.Environ()) {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MASTER_ADDR", "MASTER_PORT", "DSGD_RENDEZVOUS", "DSGD_TOKEN", "DSGD_TOKEN_FILE":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// TestMpirunNoAddress: `mpirun -np 2 dsgd worker --scheme sync-tree` with
// no address trains over loopback TCP on the port derived from the job;
// a --world that disagrees with mpirun's is refused naming both.
func TestMpirunNoAddress(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not installed (Debian openmpi-bin; .ci/run installs it)")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	exe, _ := os.Executable()
	run := func(extra ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", "2",
			"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
			"-x", "DSGD_CHILD=1",
			exe, "worker", "--scheme", "sync-tree", "--solver", "solver.prototxt", "--iters", "10", "--threads", "1", "--snapshot-prefix", "none"}, extra...)
		cmd := exec.CommandContext(ctx, mpirun, args...)
		cmd.Dir = dir
		cmd.Env = append(cleanEnv(), "OMPI_MCA_plm_rsh_agent=false")
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("mpirun %v did not finish within 90 s:\n%s", extra, out)
		}
		return string(out), err
	}
	out, err := run()
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	for _, want := range []string{"dsgd: rendezvous 127.0.0.1:", "on loopback: all 2 ranks of Open MPI job", "derived from the job id", "scheme sync-tree, 2 worker(s) over tcp", "final test:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = run("--world", "3")
	if err == nil || !strings.Contains(out, "--world 3 disagrees with Open MPI's OMPI_COMM_WORLD_SIZE=2") {
		t.Fatalf("--world 3 under mpirun -np 2: %v\n%s", err, out)
	}
}

// TestTrainTCPUnderLauncher: `srun -n 1 dsgd train --transport tcp
// --workers 2` starts its own ranks; the launcher's variables it
// inherited (rank 0 of 1) must not reach them, whose ranks are 0 and 1
// of 2.
func TestTrainTCPUnderLauncher(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for k, v := range map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0"} {
		t.Setenv(k, v)
	}
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--workers", "2", "--iters", "5", "--threads", "1", "--snapshot-prefix", "none")
	if code != 0 || !strings.Contains(out, "2 worker(s) over tcp") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
