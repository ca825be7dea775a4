package commbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dsgd/comm/collective"
)

// MaxBytes bounds one benchmark buffer: every rank allocates one.
const MaxBytes = 2 << 30

// FmtMiB renders a byte count in MiB with no trailing zeros: 1, 0.0625, 240.
func FmtMiB(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'g', -1, 64)
}

// The tasks a benchmark group runs.
const (
	taskAllreduce = "allreduce" // collective allreduce with the job's algorithm, every size
	taskTree      = "tree"      // collective.Tree allreduce
	taskPS        = "ps"        // ranks 0..World-2 push to rank World-1 and pull the sum back
	taskPingPong  = "pingpong"  // rank 0 sends, rank 1 echoes: one-way time = round trip / 2
)

// commJob is what every rank of a benchmark group runs.
type commJob struct {
	Task   string  `json:"task"`
	Sizes  []int64 `json:"sizes"` // bytes, whole float32s
	Alg    string  `json:"alg,omitempty"`
	Reps   int     `json:"reps"`
	Warmup int     `json:"warmup"`
	// OwnBuf makes each rank allreduce a buffer of its own memory, not
	// one from Executor.Buffer (which a host group puts in shared memory).
	OwnBuf bool `json:"own_buf,omitempty"`
}

// commChild is the spec a parent passes to one child process.
type commChild struct {
	commJob
	Rank       int    `json:"rank"`
	World      int    `json:"world"`
	Rendezvous string `json:"rendezvous"`
	Token      string `json:"token"`
	// CommTimeout is tcp.Config.Timeout; Deadline bounds the whole child.
	CommTimeout time.Duration `json:"comm_timeout"`
	Deadline    time.Duration `json:"deadline"`
	// WatchStdin makes the child exit when its stdin reaches end of file:
	// the parent holds the other end, so its death (even by SIGKILL)
	// ends the child.
	WatchStdin bool `json:"watch_stdin"`
	// Shm lets ranks on this host use shared memory (shmMode);
	// false measures loopback TCP.
	Shm bool `json:"shm,omitempty"`
	// Transport "mpi": the child is a rank of an mpirun job (its rank is
	// MPI's), Native hands the collectives to MPI, and results go to
	// OutDir/rank-R.jsonl (mpirun mixes the ranks' stdout).
	Transport string `json:"transport,omitempty"`
	Native    bool   `json:"native,omitempty"`
	OutDir    string `json:"out_dir,omitempty"`
}

// commResult is one rank's timings of one task and size: a JSON line on
// a child's stdout.
type commResult struct {
	Task  string    `json:"task"`
	Rank  int       `json:"rank"`
	Bytes int64     `json:"bytes"`
	Alg   string    `json:"alg,omitempty"` // the algorithm that ran (Auto resolved)
	Times []float64 `json:"times"`         // seconds, one per timed repetition
	OK    bool      `json:"ok"`            // the result checked out
}

// validate checks a job as received; the parent builds only valid ones.
func (j *commJob) validate(world int) error {
	switch j.Task {
	case taskAllreduce, taskTree:
		if _, err := collective.ParseAlgorithm(j.Alg); j.Task == taskAllreduce && err != nil {
			return err
		}
	case taskPS:
		if world < 2 {
			return fmt.Errorf("task ps needs at least 2 ranks, got %d", world)
		}
	case taskPingPong:
		if world != 2 {
			return fmt.Errorf("task pingpong needs 2 ranks, got %d", world)
		}
	default:
		return fmt.Errorf("unknown task %q", j.Task)
	}
	if j.Reps < 1 || j.Reps > 1_000_000 || j.Warmup < 0 || j.Warmup > 1_000_000 {
		return fmt.Errorf("reps %d, warmup %d out of range", j.Reps, j.Warmup)
	}
	if len(j.Sizes) == 0 {
		return errors.New("no sizes")
	}
	for _, b := range j.Sizes {
		if b <= 0 || b > MaxBytes || b%4 != 0 {
			return fmt.Errorf("size %d bytes: want a positive multiple of 4 up to %d", b, MaxBytes)
		}
	}
	return nil
}

// decodeCommChild parses and checks a child's spec.
func decodeCommChild(spec string) (commChild, error) {
	var c commChild
	dec := json.NewDecoder(strings.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return commChild{}, fmt.Errorf("child spec: %v", err)
	}
	if c.World < 1 || c.World > 1024 || c.Rank < 0 || c.Rank >= c.World {
		return commChild{}, fmt.Errorf("child spec: rank %d of %d", c.Rank, c.World)
	}
	if c.CommTimeout <= 0 || c.Deadline <= 0 {
		return commChild{}, fmt.Errorf("child spec: timeouts %v, %v must be positive", c.CommTimeout, c.Deadline)
	}
	if err := c.commJob.validate(c.World); err != nil {
		return commChild{}, fmt.Errorf("child spec: %v", err)
	}
	switch {
	case c.Transport != "" && c.Transport != "mpi":
		return commChild{}, fmt.Errorf("child spec: transport %q", c.Transport)
	case c.Transport == "mpi" && !filepath.IsAbs(c.OutDir):
		return commChild{}, fmt.Errorf("child spec: an MPI rank needs an absolute out_dir, got %q", c.OutDir)
	case c.Transport == "" && (c.Native || c.OutDir != ""):
		return commChild{}, fmt.Errorf("child spec: native and out_dir are for transport mpi")
	}
	return c, nil
}

// decodeCommResult parses one line of a child's stdout.
func decodeCommResult(line []byte) (commResult, error) {
	var r commResult
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return commResult{}, fmt.Errorf("result line %q: %v", truncate(string(line), 200), err)
	}
	if r.Bytes <= 0 || r.Rank < 0 || len(r.Times) == 0 {
		return commResult{}, fmt.Errorf("result line %q: no timings", truncate(string(line), 200))
	}
	for _, t := range r.Times {
		if !(t >= 0) || math.IsInf(t, 0) {
			return commResult{}, fmt.Errorf("result line %q: time %v", truncate(string(line), 200), t)
		}
	}
	return r, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
