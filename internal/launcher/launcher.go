package launcher

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Tri is a yes, a no, or "the launcher did not say".
type Tri int8

// The values of a Tri.
const (
	Unknown Tri = iota
	Yes
	No
)

// String names t.
func (t Tri) String() string {
	switch t {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "unknown"
}

// The rendezvous port derived from a job identity lies in
// [PortBase, PortBase+PortSpan): below Linux's ephemeral range
// (32768-60999), so no outgoing connection holds it by chance, and above
// the ports of most daemons.
const (
	PortBase = 20000
	PortSpan = 10000
)

// Info is what a launcher told this process.
type Info struct {
	// Name is the launcher: "Open MPI", "MPICH/PMI", "Slurm" or
	// "torchrun".
	Name string
	// Rank and Size are this process's rank and the number of ranks,
	// read from the variables RankVar and SizeVar.
	Rank, Size       int
	RankVar, SizeVar string
	// LocalRank and LocalSize are this process's rank among the ranks
	// on its host and their number (-1 when the launcher did not say).
	LocalRank, LocalSize int
	// Nodes is the number of hosts the job's ranks run on (0 when the
	// launcher did not say).
	Nodes int
	// JobID identifies the job (the same in all its ranks, different
	// from other jobs'); JobVar names where it came from. Both are empty
	// when the launcher did not say.
	JobID, JobVar string
	// Hosts says, in the launcher's variables, how OneHost was decided
	// (for messages), e.g. "OMPI_COMM_WORLD_LOCAL_SIZE=2 of
	// OMPI_COMM_WORLD_SIZE=4".
	Hosts string
	hosts Tri
}

// OneHost reports whether every rank of the job runs on this host.
func (i Info) OneHost() Tri { return i.hosts }

// Port is a TCP port derived from the job identity, the same in every
// rank of the job, in [PortBase, PortBase+PortSpan); 0 without a JobID.
func (i Info) Port() int {
	if i.JobID == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte("dsgd rendezvous\x00" + i.Name + "\x00" + i.JobID))
	return PortBase + int(h.Sum64()%PortSpan)
}

// String describes the job in one line, e.g. "Open MPI job 1094320129
// (rank 1 of 2)".
func (i Info) String() string {
	job := "job"
	if i.JobID != "" {
		job += " " + i.JobID
	}
	return fmt.Sprintf("%s %s (rank %d of %d)", i.Name, job, i.Rank, i.Size)
}

// launchers lists how each launcher is read, in the order they are
// tried: MPI before Slurm, because mpirun or mpiexec inside a Slurm
// allocation also inherits the batch step's SLURM_PROCID (0 in every
// rank); torchrun's generic RANK and WORLD_SIZE last.
var launchers = []struct {
	name       string
	rank, size []string
	read       func(i *Info, e env) error
}{
	{"Open MPI", []string{"OMPI_COMM_WORLD_RANK"}, []string{"OMPI_COMM_WORLD_SIZE"}, readOpenMPI},
	{"MPICH/PMI", []string{"PMI_RANK"}, []string{"PMI_SIZE"}, readPMI},
	{"Slurm", []string{"SLURM_PROCID"}, []string{"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}, readSlurm},
	{"torchrun", []string{"RANK"}, []string{"WORLD_SIZE"}, readTorch},
}

// Vars lists every variable Detect reads. A launcher that starts
// processes of its own with explicit ranks removes them (see Strip).
var Vars = []string{
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
	"OMPI_MCA_orte_num_nodes", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE",
	"PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS", "MPI_LOCALRANKID", "PMI_JOBID", "PMI_KVSNAME",
	"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID",
	"SLURM_STEP_NUM_NODES", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NNODES", "SLURM_JOB_NUM_NODES",
	"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_STEPID",
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
}

// env reads variables, remembering which it found.
type env func(string) string

// first returns the first of names that is set, and its value.
func (e env) first(names ...string) (string, string) {
	for _, n := range names {
		if v := e(n); v != "" {
			return n, v
		}
	}
	return "", ""
}

// count reads the first set variable of names as a non-negative integer;
// -1 when none is set.
func (e env) count(names ...string) (int, string, error) {
	n, v := e.first(names...)
	if n == "" {
		return -1, "", nil
	}
	x, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || x < 0 {
		return -1, n, fmt.Errorf("%s=%q is not a non-negative integer", n, v)
	}
	return x, n, nil
}

// Detect reads the environment through getenv. It returns ok false when
// no launcher's rank and size variables are both set, and an error
// naming the variable at fault when they are set but make no sense.
func Detect(getenv func(string) string) (info Info, ok bool, err error) {
	e := env(getenv)
	for _, l := range launchers {
		rn, _ := e.first(l.rank...)
		sn, _ := e.first(l.size...)
		if rn == "" || sn == "" {
			continue
		}
		i := Info{Name: l.name, LocalRank: -1, LocalSize: -1}
		if i.Rank, i.RankVar, err = e.count(l.rank...); err != nil {
			return Info{}, false, fmt.Errorf("%s environment: %w", l.name, err)
		}
		if i.Size, i.SizeVar, err = e.count(l.size...); err != nil {
			return Info{}, false, fmt.Errorf("%s environment: %w", l.name, err)
		}
		if i.Size < 1 {
			return Info{}, false, fmt.Errorf("%s environment: %s=%d: a job has at least one rank", l.name, i.SizeVar, i.Size)
		}
		if i.Rank >= i.Size {
			return Info{}, false, fmt.Errorf("%s environment: %s=%d is out of range for %s=%d", l.name, i.RankVar, i.Rank, i.SizeVar, i.Size)
		}
		if err := l.read(&i, e); err != nil {
			return Info{}, false, fmt.Errorf("%s environment: %w", l.name, err)
		}
		if i.LocalSize > i.Size {
			return Info{}, false, fmt.Errorf("%s environment: %d ranks on this host but %s=%d", l.name, i.LocalSize, i.SizeVar, i.Size)
		}
		if i.LocalSize >= 0 && i.LocalRank >= i.LocalSize {
			return Info{}, false, fmt.Errorf("%s environment: local rank %d is out of range for %d ranks on this host", l.name, i.LocalRank, i.LocalSize)
		}
		return i, true, nil
	}
	return Info{}, false, nil
}

// local reads a local rank and size and decides OneHost from them.
func (i *Info) local(e env, rankVar, sizeVar string) error {
	var err error
	if i.LocalRank, _, err = e.count(rankVar); err != nil {
		return err
	}
	var n string
	if i.LocalSize, n, err = e.count(sizeVar); err != nil {
		return err
	}
	if i.LocalSize == 0 {
		return fmt.Errorf("%s=0: this rank runs on this host", n)
	}
	if i.LocalSize > 0 {
		i.hosts = No
		if i.LocalSize == i.Size {
			i.hosts = Yes
		}
		i.Hosts = fmt.Sprintf("%s=%d of %s=%d", n, i.LocalSize, i.SizeVar, i.Size)
	}
	return nil
}

// nodes records a node count and, unless the local size decided it
// already, decides OneHost from it.
func (i *Info) nodes(n int, how string) {
	if n <= 0 {
		return
	}
	i.Nodes = n
	if i.hosts == Unknown {
		i.hosts = No
		if n == 1 {
			i.hosts = Yes
		}
		i.Hosts = how
	}
}

func (i *Info) job(e env, names ...string) {
	i.JobVar, i.JobID = e.first(names...)
	i.JobID = strings.TrimSpace(i.JobID)
}

// readOpenMPI reads Open MPI 4.1's variables (checked against Debian's
// 4.1.4): OMPI_COMM_WORLD_LOCAL_SIZE/LOCAL_RANK, OMPI_MCA_orte_num_nodes,
// and the job id OMPI_MCA_ess_base_jobid (OMPI_MCA_orte_ess_jobid before
// 2.0, PMIX_NAMESPACE under Open MPI 5's PRRTE).
func readOpenMPI(i *Info, e env) error {
	if err := i.local(e, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"); err != nil {
		return err
	}
	n, name, err := e.count("OMPI_MCA_orte_num_nodes")
	if err != nil {
		return err
	}
	i.nodes(n, fmt.Sprintf("%s=%d", name, n))
	i.job(e, "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE")
	return nil
}

// readPMI reads MPICH's Hydra and Intel MPI (PMI_RANK, PMI_SIZE,
// MPI_LOCALNRANKS, MPI_LOCALRANKID). Hydra names no job in the
// environment; Slurm's PMI-2 plugin sets PMI_JOBID, a PMIx server
// PMIX_NAMESPACE, and inside a Slurm job its id serves.
func readPMI(i *Info, e env) error {
	if err := i.local(e, "MPI_LOCALRANKID", "MPI_LOCALNRANKS"); err != nil {
		return err
	}
	if err := slurmNodes(i, e); err != nil {
		return err
	}
	i.job(e, "PMI_JOBID", "PMI_KVSNAME", "PMIX_NAMESPACE")
	if i.JobID == "" {
		slurmJob(i, e)
	}
	return nil
}

// readSlurm reads srun's variables: SLURM_LOCALID, the step's node count
// and tasks per node, and the job and step ids.
func readSlurm(i *Info, e env) error {
	var err error
	if i.LocalRank, _, err = e.count("SLURM_LOCALID"); err != nil {
		return err
	}
	if err := slurmNodes(i, e); err != nil {
		return err
	}
	slurmJob(i, e)
	return nil
}

// slurmNodes reads the step's node count: SLURM_STEP_NUM_NODES, else the
// length of SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE, else
// SLURM_NNODES or SLURM_JOB_NUM_NODES.
func slurmNodes(i *Info, e env) error {
	n, name, err := e.count("SLURM_STEP_NUM_NODES")
	if err != nil {
		return err
	}
	if n > 0 {
		i.nodes(n, fmt.Sprintf("%s=%d", name, n))
		return nil
	}
	if name, v := e.first("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"); name != "" {
		nodes, _, err := ParseTasksPerNode(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		i.nodes(nodes, fmt.Sprintf("%s=%s", name, v))
		return nil
	}
	n, name, err = e.count("SLURM_NNODES", "SLURM_JOB_NUM_NODES")
	if err != nil {
		return err
	}
	i.nodes(n, fmt.Sprintf("%s=%d", name, n))
	return nil
}

// slurmJob names the job by SLURM_JOB_ID and, under srun, the step.
func slurmJob(i *Info, e env) {
	i.job(e, "SLURM_JOB_ID", "SLURM_JOBID")
	if i.JobID == "" {
		return
	}
	if sn, s := e.first("SLURM_STEP_ID", "SLURM_STEPID"); sn != "" {
		i.JobID += "." + strings.TrimSpace(s)
		i.JobVar += "." + sn
	}
}

// readTorch reads torchrun's LOCAL_RANK, LOCAL_WORLD_SIZE,
// GROUP_WORLD_SIZE (the number of hosts) and TORCHELASTIC_RUN_ID.
func readTorch(i *Info, e env) error {
	if err := i.local(e, "LOCAL_RANK", "LOCAL_WORLD_SIZE"); err != nil {
		return err
	}
	n, name, err := e.count("GROUP_WORLD_SIZE")
	if err != nil {
		return err
	}
	i.nodes(n, fmt.Sprintf("%s=%d", name, n))
	i.job(e, "TORCHELASTIC_RUN_ID")
	return nil
}

// maxTasks bounds the task count ParseTasksPerNode accepts, so that a
// repeat count cannot overflow.
const maxTasks = 1 << 30

// ParseTasksPerNode parses Slurm's SLURM_TASKS_PER_NODE, a comma-separated
// list of task counts each optionally followed by a repeat "(xN)", e.g.
// "2(x3),1" for three nodes of 2 tasks and one of 1: it returns the
// number of nodes and of tasks.
func ParseTasksPerNode(s string) (nodes, tasks int, err error) {
	if strings.TrimSpace(s) == "" {
		return 0, 0, errors.New("empty")
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		count, rep := item, "1"
		if c, r, ok := strings.Cut(item, "(x"); ok {
			r, closed := strings.CutSuffix(r, ")")
			if !closed {
				return 0, 0, fmt.Errorf("%q: want N or N(xM)", item)
			}
			count, rep = c, r
		}
		c, err1 := strconv.Atoi(count)
		m, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || c < 1 || m < 1 || c > maxTasks || m > maxTasks {
			return 0, 0, fmt.Errorf("%q: want N or N(xM) with positive N and M", item)
		}
		nodes += m
		tasks += c * m
		if nodes > maxTasks || tasks > maxTasks {
			return 0, 0, fmt.Errorf("%q: more than %d tasks", s, maxTasks)
		}
	}
	return nodes, tasks, nil
}

// Strip returns env (KEY=VALUE entries) without the variables Detect
// reads, for a process this one starts with explicit ranks.
func Strip(env []string) []string {
	drop := make(map[string]bool, len(Vars))
	for _, v := range Vars {
		drop[v] = true
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return out
}
