package launcher

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// openMPI414 is what Debian's Open MPI 4.1.4 set in rank 1 of
// `mpirun --allow-run-as-root -np 2 env` on one host (the variables
// Detect reads, among the 40 OMPI_ and PMIX_ ones).
var openMPI414 = []string{
	"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
	"OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2",
	"OMPI_MCA_orte_num_nodes", "1", "OMPI_MCA_ess_base_jobid", "1094320129",
	"PMIX_NAMESPACE", "1094320129", "PMIX_RANK", "1",
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name      string
		env       []string
		ok        bool
		rank, sz  int
		local     int
		nodes     int
		one       Tri
		job       string
		wantErr   string
		wantHosts string
	}{
		{name: "nothing", env: nil},
		{name: "open mpi 4.1.4, one host", env: openMPI414, ok: true, rank: 1, sz: 2, local: 2, nodes: 1, one: Yes, job: "1094320129", wantHosts: "OMPI_COMM_WORLD_LOCAL_SIZE=2 of OMPI_COMM_WORLD_SIZE=2"},
		{name: "open mpi, two hosts", env: []string{"OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "OMPI_MCA_orte_num_nodes", "2", "OMPI_MCA_ess_base_jobid", "77"},
			ok: true, rank: 3, sz: 4, local: 2, nodes: 2, one: No, job: "77"},
		// Local size decides over the allocation's node count: 4 ranks
		// mapped onto one of two hosts of a hostfile.
		{name: "open mpi, one of two nodes used", env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "OMPI_MCA_orte_num_nodes", "2", "OMPI_MCA_ess_base_jobid", "5"},
			ok: true, rank: 0, sz: 4, local: 4, nodes: 2, one: Yes, job: "5"},
		{name: "open mpi 1.x job id", env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_MCA_orte_ess_jobid", "42"},
			ok: true, rank: 0, sz: 2, local: -1, one: Unknown, job: "42"},
		{name: "open mpi 5 (prrte)", env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "PMIX_NAMESPACE", "prterun-vm-123@1"},
			ok: true, rank: 0, sz: 2, local: 2, one: Yes, job: "prterun-vm-123@1"},
		// mpirun inside an sbatch script: the batch step's SLURM_PROCID
		// is 0 in every rank, Open MPI's rank is the one that counts.
		{name: "mpirun inside slurm", env: []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "9", "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "OMPI_MCA_ess_base_jobid", "8"},
			ok: true, rank: 2, sz: 4, local: 4, one: Yes, job: "8"},
		{name: "mpich hydra", env: []string{"PMI_RANK", "1", "PMI_SIZE", "3", "MPI_LOCALNRANKS", "3", "MPI_LOCALRANKID", "1"},
			ok: true, rank: 1, sz: 3, local: 3, one: Yes, job: ""},
		{name: "mpich under slurm", env: []string{"PMI_RANK", "1", "PMI_SIZE", "4", "SLURM_PROCID", "0", "SLURM_NTASKS", "1", "SLURM_NNODES", "2", "SLURM_JOB_ID", "31", "SLURM_STEP_ID", "2"},
			ok: true, rank: 1, sz: 4, local: -1, nodes: 2, one: No, job: "31.2"},
		{name: "srun one node", env: []string{"SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "2", "SLURM_STEP_NUM_NODES", "1", "SLURM_NNODES", "3", "SLURM_JOB_ID", "1234", "SLURM_STEP_ID", "0"},
			ok: true, rank: 2, sz: 4, local: -1, nodes: 1, one: Yes, job: "1234.0", wantHosts: "SLURM_STEP_NUM_NODES=1"},
		{name: "srun step size beats job size", env: []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "8", "SLURM_STEP_NUM_TASKS", "2", "SLURM_TASKS_PER_NODE", "2", "SLURM_JOBID", "7"},
			ok: true, rank: 1, sz: 2, local: -1, nodes: 1, one: Yes, job: "7"},
		{name: "srun across nodes", env: []string{"SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_TASKS_PER_NODE", "2(x3),2", "SLURM_JOB_ID", "1", "SLURM_STEPID", "4"},
			ok: true, rank: 5, sz: 8, local: -1, nodes: 4, one: No, job: "1.4", wantHosts: "SLURM_TASKS_PER_NODE=2(x3),2"},
		{name: "slurm without node count", env: []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2"},
			ok: true, rank: 0, sz: 2, local: -1, one: Unknown},
		{name: "torchrun", env: []string{"RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2", "GROUP_WORLD_SIZE", "2", "TORCHELASTIC_RUN_ID", "abc"},
			ok: true, rank: 3, sz: 4, local: 2, nodes: 2, one: No, job: "abc"},
		{name: "rank without size", env: []string{"OMPI_COMM_WORLD_RANK", "0"}},
		{name: "bad rank", env: []string{"OMPI_COMM_WORLD_RANK", "x", "OMPI_COMM_WORLD_SIZE", "2"}, wantErr: `Open MPI environment: OMPI_COMM_WORLD_RANK="x" is not a non-negative integer`},
		{name: "negative size", env: []string{"PMI_RANK", "0", "PMI_SIZE", "-2"}, wantErr: `PMI_SIZE="-2"`},
		{name: "zero size", env: []string{"RANK", "0", "WORLD_SIZE", "0"}, wantErr: "WORLD_SIZE=0: a job has at least one rank"},
		{name: "rank out of range", env: []string{"SLURM_PROCID", "4", "SLURM_NTASKS", "4"}, wantErr: "SLURM_PROCID=4 is out of range for SLURM_NTASKS=4"},
		{name: "local size above size", env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "3"}, wantErr: "3 ranks on this host but OMPI_COMM_WORLD_SIZE=2"},
		{name: "zero local size", env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "0"}, wantErr: "OMPI_COMM_WORLD_LOCAL_SIZE=0"},
		{name: "bad tasks per node", env: []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_TASKS_PER_NODE", "2(x"}, wantErr: "SLURM_TASKS_PER_NODE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, ok, err := Detect(envOf(c.env...))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if info.Rank != c.rank || info.Size != c.sz || info.LocalSize != c.local || info.Nodes != c.nodes || info.OneHost() != c.one || info.JobID != c.job {
				t.Fatalf("got %+v one host %v", info, info.OneHost())
			}
			if c.wantHosts != "" && info.Hosts != c.wantHosts {
				t.Errorf("Hosts %q, want %q", info.Hosts, c.wantHosts)
			}
		})
	}
}

func TestPort(t *testing.T) {
	a := Info{Name: "Open MPI", JobID: "1094320129"}
	b := Info{Name: "Open MPI", JobID: "1094320130"}
	// Every rank of the job derives the same port.
	if r1 := (Info{Name: "Open MPI", JobID: "1094320129", Rank: 1, Size: 2}); r1.Port() != a.Port() {
		t.Fatalf("rank 1 derived %d, rank 0 %d", r1.Port(), a.Port())
	}
	if (Info{Name: "Slurm"}).Port() != 0 {
		t.Fatal("a job without an id got a port")
	}
	seen := map[int]bool{}
	for i := range 1000 {
		p := Info{Name: "Slurm", JobID: strings.Repeat("9", i%7) + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}.Port()
		if p < PortBase || p >= PortBase+PortSpan {
			t.Fatalf("port %d outside [%d, %d)", p, PortBase, PortBase+PortSpan)
		}
		seen[p] = true
	}
	// 1000 jobs into 10000 ports: a good hash leaves about 950 distinct.
	if len(seen) < 900 {
		t.Fatalf("1000 job ids gave only %d distinct ports", len(seen))
	}
	if a.Port() == b.Port() {
		t.Logf("neighbouring job ids share port %d (possible, unlikely)", a.Port())
	}
}

func TestParseTasksPerNode(t *testing.T) {
	cases := []struct {
		in           string
		nodes, tasks int
		bad          bool
	}{
		{"4", 1, 4, false},
		{"2(x3),1", 4, 7, false},
		{"1(x4)", 4, 4, false},
		{"3, 1", 2, 4, false},
		{"", 0, 0, true},
		{"0", 0, 0, true},
		{"2(x0)", 0, 0, true},
		{"2(x3", 0, 0, true},
		{"a", 0, 0, true},
		{"1073741824(x1073741824)", 0, 0, true},
	}
	for _, c := range cases {
		n, k, err := ParseTasksPerNode(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || n != c.nodes || k != c.tasks {
			t.Errorf("%q: got %d nodes %d tasks %v, want %d %d", c.in, n, k, err, c.nodes, c.tasks)
		}
	}
}

func FuzzParseTasksPerNode(f *testing.F) {
	for _, s := range []string{"4", "2(x3),1", "1(x4)", "2(x", "", "1073741823(x2)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, k, err := ParseTasksPerNode(s)
		if err != nil {
			return
		}
		if n < 1 || k < n || k > maxTasks {
			t.Fatalf("%q: %d nodes, %d tasks", s, n, k)
		}
	})
}

func FuzzDetect(f *testing.F) {
	f.Add("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "SLURM_TASKS_PER_NODE", "2(x2)")
	f.Add("SLURM_PROCID", "0", "SLURM_NTASKS", "x", "OMPI_COMM_WORLD_LOCAL_SIZE", "3")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		info, ok, err := Detect(envOf(k1, v1, k2, v2, k3, v3))
		if err != nil || !ok {
			return
		}
		if info.Rank < 0 || info.Rank >= info.Size || info.LocalSize > info.Size {
			t.Fatalf("accepted %+v", info)
		}
	})
}

func TestStrip(t *testing.T) {
	got := Strip([]string{"PATH=/bin", "OMPI_COMM_WORLD_RANK=1", "SLURM_PROCID=0", "RANK=3", "RANKS=2", "DSGD_TOKEN=x"})
	if strings.Join(got, " ") != "PATH=/bin RANKS=2 DSGD_TOKEN=x" {
		t.Fatalf("got %v", got)
	}
}

// TestOpenMPIOnThisHost checks Detect against what this machine's mpirun
// really sets: each rank of `mpirun -np 2 env` is detected as itself, on
// one host, with one job id shared by both.
func TestOpenMPIOnThisHost(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not installed (Debian openmpi-bin; .ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	// Each rank writes its environment to a file of its own (named by
	// its pid, not by anything under test).
	cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2",
		"--mca", "btl", "self,tcp", "--mca", "oob_tcp_if_include", "lo",
		"sh", "-c", `env -0 > "$0/env.$$"`, dir)
	// Not the caller's launcher: the test may itself run under one.
	cmd.Env = append(Strip(os.Environ()), "OMPI_MCA_plm_rsh_agent=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mpirun env: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "env.*"))
	var envs []map[string]string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		envs = append(envs, m)
	}
	var infos []Info
	for _, m := range envs {
		info, ok, err := Detect(func(k string) string { return m[k] })
		if err != nil || !ok {
			continue
		}
		infos = append(infos, info)
	}
	if len(infos) != 2 {
		t.Fatalf("detected %d ranks in mpirun's two environments", len(infos))
	}
	if infos[0].Rank == infos[1].Rank || infos[0].JobID == "" || infos[0].JobID != infos[1].JobID {
		t.Fatalf("ranks %+v and %+v", infos[0], infos[1])
	}
	for _, i := range infos {
		if i.Name != "Open MPI" || i.Size != 2 || i.OneHost() != Yes || i.Port() == 0 {
			t.Fatalf("got %+v, one host %v", i, i.OneHost())
		}
	}
}
