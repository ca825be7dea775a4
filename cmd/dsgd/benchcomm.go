package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"dsgd/collective"
	"dsgd/transport"
	"dsgd/transport/tcp"
)

// runBenchComm measures communication in one invocation: memory
// bandwidth for scale; allreduce bus bandwidth of our TCP transport (one
// process per rank over loopback) and of the in-process one, beside
// gloo's from the PyTorch peer; and the parameter-server pattern against
// the reduction tree (FireCaffe Fig. 4) beside the α-β prediction from
// the schedules' Cost.
//
// The ranks of a TCP group are child processes of this executable running
// the hidden "bench-comm --child SPEC", which report their timings as JSON
// lines on stdout.
func runBenchComm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "--child" || args[0] == "-child") {
		if len(args) != 2 {
			fmt.Fprintln(stderr, "dsgd bench-comm: --child takes exactly one argument (internal: the spec the parent passes)")
			return errUsage
		}
		return runBenchCommChild(ctx, args[1], stdout)
	}
	o, err := parseBenchCommFlags(args, stderr)
	if err != nil {
		return err
	}
	return benchComm(ctx, o, stdout, stderr)
}

// benchCommOpts are bench-comm's flags, parsed.
type benchCommOpts struct {
	parts             map[string]bool
	worlds            []int
	sizes             []int64 // bytes
	alg               collective.Algorithm
	reps, warmup      int
	inprocMax         int64
	memBytes          int64
	psWorkers         []int
	psFloats          int
	psReps, psWarmup  int
	tcpMaxWorkers     int
	peer, python      string
	timeout, commWait time.Duration
	paths             map[string]bool // the allreduce table's columns (arPaths)
	mpiPeer           string          // Open MPI's peer script, or "none"
	glooHeader        string          // the gloo peer's version line, once run
}

// benchCommQuick are the --quick values of the flags not given explicitly.
var benchCommQuick = map[string]string{
	"worlds": "2", "sizes": "64KiB", "reps": "2", "warmup": "1", "mem": "4MiB",
	"ps-workers": "2", "ps-floats": "65536", "ps-reps": "2", "ps-warmup": "1",
	"peer": "none", "timeout": "1m", "comm-timeout": "20s",
	"paths": "tcp,shm,inproc", "mpi-peer": "none",
}

func parseBenchCommFlags(args []string, stderr io.Writer) (*benchCommOpts, error) {
	fs := flag.NewFlagSet("bench-comm", flag.ContinueOnError)
	parts := fs.String("parts", "mem,allreduce,ps", "comma-separated parts to run: mem (memcpy and add bandwidth), allreduce, ps (parameter server vs tree)")
	worlds := fs.String("worlds", "2,4", "comma-separated group sizes for the allreduce part")
	sizes := fs.String("sizes", "1,4,16,64,240", "comma-separated allreduce sizes; a bare number is MiB, or give a unit: 64KiB, 1.5MiB, 1GiB, 4096B")
	algName := fs.String("alg", "auto", "allreduce algorithm: auto, ring, tree, rd")
	reps := fs.Int("reps", 10, "timed allreduce repetitions per size (the peer gets the same)")
	warmup := fs.Int("warmup", 2, "untimed allreduce repetitions before them")
	inprocMax := fs.String("inproc-max", "64MiB", "largest size run in-process (every rank's buffer lives in this one process)")
	mem := fs.String("mem", "64MiB", "buffer size for the memcpy and add bandwidth")
	psWorkers := fs.String("ps-workers", "2,4,8,16", "comma-separated worker counts p for the parameter server vs tree part")
	psFloats := fs.Int("ps-floats", 7_500_000, "model size in float32 for the parameter server vs tree part (7.5M = FireCaffe's 30 MB)")
	psReps := fs.Int("ps-reps", 10, "timed iterations per point of the parameter server vs tree part")
	psWarmup := fs.Int("ps-warmup", 1, "untimed iterations before them")
	tcpMax := fs.Int("tcp-max-workers", 8, "largest p run over TCP in the parameter server vs tree part (the PS adds one process: the server)")
	peer := fs.String("peer", "../shared/peer/torch_allreduce.py", "the peer's gloo allreduce script (\"none\" to run ours only)")
	python := fs.String("python", "/usr/bin/python3", "the Python that has torch")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit for each group of processes (and for the peer): past it they are killed")
	commWait := fs.Duration("comm-timeout", 60*time.Second, "a TCP rank that makes no progress on a message, or on joining, for this long fails")
	paths := fs.String("paths", arPathNames(), "comma-separated columns of the allreduce table: tcp, inproc, mpi (dsgd's schedules over MPI, mpirun), mpi-own (MPI_Allreduce through dsgd's MPI transport), ompi (Open MPI's peer), gloo (PyTorch's peer)")
	mpiPeer := fs.String("mpi-peer", "../shared/peer/mpi_allreduce.py", "the Open MPI peer's allreduce script, run under mpirun with --python (\"none\" to skip)")
	quick := fs.Bool("quick", false, "tiny run for tests: "+quickSummary())
	if err := parseFlags(fs, args, stderr); err != nil {
		return nil, err
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range benchCommQuick {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					panic("bench-comm: bad --quick value for " + name + ": " + err.Error())
				}
			}
		}
	}
	bad := func(format string, a ...any) (*benchCommOpts, error) {
		fmt.Fprintf(stderr, "dsgd bench-comm: "+format+"\n", a...)
		return nil, errUsage
	}
	o := &benchCommOpts{parts: map[string]bool{}, reps: *reps, warmup: *warmup, psFloats: *psFloats,
		psReps: *psReps, psWarmup: *psWarmup, tcpMaxWorkers: *tcpMax, peer: *peer, python: *python,
		timeout: *timeout, commWait: *commWait, mpiPeer: *mpiPeer}
	for _, p := range strings.Split(*parts, ",") {
		p = strings.TrimSpace(p)
		if p != "mem" && p != "allreduce" && p != "ps" {
			return bad("--parts: unknown part %q (choose from mem, allreduce, ps)", p)
		}
		o.parts[p] = true
	}
	var err error
	if o.paths, err = parsePaths(*paths); err != nil {
		return bad("--paths: %v", err)
	}
	if o.worlds, err = parseIntList(*worlds, 2); err != nil {
		return bad("--worlds: %v", err)
	}
	if o.psWorkers, err = parseIntList(*psWorkers, 2); err != nil {
		return bad("--ps-workers: %v", err)
	}
	if o.sizes, err = parseByteSizes(*sizes); err != nil {
		return bad("--sizes: %v", err)
	}
	if o.alg, err = collective.ParseAlgorithm(*algName); err != nil {
		return bad("--alg: %v", err)
	}
	if o.inprocMax, err = parseByteSize(*inprocMax); err != nil {
		return bad("--inproc-max: %v", err)
	}
	if o.memBytes, err = parseByteSize(*mem); err != nil {
		return bad("--mem: %v", err)
	}
	switch {
	case o.reps < 1 || o.psReps < 1:
		return bad("--reps and --ps-reps must be at least 1")
	case o.warmup < 0 || o.psWarmup < 0:
		return bad("--warmup and --ps-warmup must not be negative")
	case o.psFloats < 1 || o.psFloats > maxBenchBytes/4:
		return bad("--ps-floats %d out of range [1, %d]", o.psFloats, maxBenchBytes/4)
	case o.timeout <= 0 || o.commWait <= 0:
		return bad("--timeout and --comm-timeout must be positive")
	}
	if o.mpiPeer != "none" && o.parts["allreduce"] && o.paths["ompi"] {
		if _, err := os.Stat(o.mpiPeer); err != nil {
			return nil, fmt.Errorf("--mpi-peer: %w (run from the repository root, or pass --mpi-peer PATH, or --mpi-peer none)", err)
		}
	}
	if o.peer != "none" && o.parts["allreduce"] && o.paths["gloo"] {
		if _, err := os.Stat(o.peer); err != nil {
			return nil, fmt.Errorf("--peer: %w (run from the repository root, or pass --peer PATH, or --peer none)", err)
		}
	}
	return o, nil
}

func quickSummary() string {
	keys := make([]string, 0, len(benchCommQuick))
	for k := range benchCommQuick {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "--%s %s", k, benchCommQuick[k])
	}
	return b.String() + " (flags given explicitly win)"
}

// maxBenchBytes bounds one benchmark buffer: every rank allocates one.
const maxBenchBytes = 2 << 30

// parseIntList parses "2,4,8": positive integers, each at least lo.
func parseIntList(s string, lo int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		if v < lo || v > 64 {
			return nil, fmt.Errorf("%d out of range [%d, 64]", v, lo)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseByteSizes parses a comma-separated list of sizes (see parseByteSize).
func parseByteSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := parseByteSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parseByteSize parses a buffer size: a number with an optional unit B,
// KiB, MiB or GiB (case-insensitive); a bare number is MiB. The result must
// be a whole number of float32s, positive and at most maxBenchBytes.
func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, mult := s, float64(1<<20)
	lower := strings.ToLower(s)
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			num, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a number with an optional unit B, KiB, MiB or GiB (bare numbers are MiB)", s)
	}
	b := v * mult
	if b <= 0 || b > maxBenchBytes {
		return 0, fmt.Errorf("size %q out of range (0, 2GiB]", s)
	}
	if b != math.Trunc(b) || int64(b)%4 != 0 {
		return 0, fmt.Errorf("size %q is %g bytes, not a whole number of float32s (4 bytes each)", s, b)
	}
	return int64(b), nil
}

// fmtMiB renders a byte count in MiB with no trailing zeros: 1, 0.0625, 240.
func fmtMiB(b int64) string {
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
	// Shm lets ranks on this host use shared memory (benchcomm_shm.go);
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
		if b <= 0 || b > maxBenchBytes || b%4 != 0 {
			return fmt.Errorf("size %d bytes: want a positive multiple of 4 up to %d", b, maxBenchBytes)
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

// runBenchCommChild is one rank of a TCP group: join, run the job, print
// one JSON line per size.
func runBenchCommChild(ctx context.Context, spec string, stdout io.Writer) error {
	c, err := decodeCommChild(spec)
	if err != nil {
		return err
	}
	if c.Transport == "mpi" {
		return runBenchCommMPIChild(ctx, c)
	}
	if c.WatchStdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			fmt.Fprintf(os.Stderr, "dsgd bench-comm: rank %d: the parent has gone (stdin closed); exiting\n", c.Rank)
			os.Exit(3)
		}()
	}
	ctx, cancel := context.WithTimeout(ctx, c.Deadline)
	defer cancel()
	ep, err := tcp.Connect(ctx, tcp.Config{Rank: c.Rank, Size: c.World, Rendezvous: c.Rendezvous, Token: c.Token, Timeout: c.CommTimeout, Shm: shmMode(c.Shm)})
	if err != nil {
		return fmt.Errorf("rank %d of %d: %w", c.Rank, c.World, err)
	}
	defer ep.Close()
	enc := json.NewEncoder(stdout)
	if err := benchCommRank(ctx, ep, c.commJob, func(r commResult) error { return enc.Encode(r) }); err != nil {
		return fmt.Errorf("rank %d of %d: %w", c.Rank, c.World, err)
	}
	return nil
}

// benchCommRank runs job on one rank and emits one result per size. On
// error it closes ep, so that the other ranks fail at once instead of
// waiting for their timeouts.
func benchCommRank(ctx context.Context, ep transport.Endpoint, job commJob, emit func(commResult) error) error {
	ex := collective.NewExecutor(ep)
	defer ex.Close()
	for _, nb := range job.Sizes {
		res := commResult{Task: job.Task, Rank: ep.Rank(), Bytes: nb}
		var err error
		switch job.Task {
		case taskAllreduce, taskTree:
			alg := collective.Tree
			if job.Task == taskAllreduce {
				alg, _ = collective.ParseAlgorithm(job.Alg)
			}
			res.Alg = alg.Resolve(ep.Size(), int(nb/4)).String()
			res.Times, res.OK, err = benchAllreduceRank(ctx, ex, int(nb/4), alg, job.Reps, job.Warmup)
		case taskPS:
			res.Times, res.OK, err = benchPSRank(ctx, ex, int(nb/4), job.Reps, job.Warmup)
		case taskPingPong:
			res.Times, res.OK, err = benchPingPongRank(ctx, ex, int(nb/4), job.Reps, job.Warmup)
		default:
			err = fmt.Errorf("unknown task %q", job.Task)
		}
		if err != nil {
			ep.Close()
			return fmt.Errorf("%s of %s MiB: %w", job.Task, fmtMiB(nb), err)
		}
		if err := emit(res); err != nil {
			ep.Close()
			return err
		}
		debug.FreeOSMemory() // the next size allocates afresh; give this one back
	}
	return nil
}

// timeReps runs body warmup+reps times, each after a barrier, and returns
// the durations of the last reps runs in seconds.
func timeReps(ctx context.Context, ex *collective.Executor, reps, warmup int, body func() error) ([]float64, error) {
	times := make([]float64, 0, reps)
	for i := range warmup + reps {
		if err := ex.Barrier(ctx); err != nil {
			return nil, fmt.Errorf("barrier: %w", err)
		}
		t0 := time.Now()
		if err := body(); err != nil {
			return nil, err
		}
		if i >= warmup {
			times = append(times, time.Since(t0).Seconds())
		}
	}
	return times, nil
}

// fillF32 sets every element of b to v (and so touches every page).
func fillF32(b []float32, v float32) {
	for i := range b {
		b[i] = v
	}
}

// allEqual reports whether every element of b is v.
func allEqual(b []float32, v float32) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}

func benchAllreduceRank(ctx context.Context, ex *collective.Executor, n int, alg collective.Algorithm, reps, warmup int) ([]float64, bool, error) {
	rank, p := ex.Endpoint().Rank(), ex.Endpoint().Size()
	buf := make([]float32, n)
	fillF32(buf, float32(rank+1)) // stays positive and finite for dozens of reps
	times, err := timeReps(ctx, ex, reps, warmup, func() error { return ex.Allreduce(ctx, buf, alg) })
	if err != nil {
		return nil, false, err
	}
	fillF32(buf, float32(rank+1))
	if err := ex.Allreduce(ctx, buf, alg); err != nil {
		return nil, false, fmt.Errorf("check: %w", err)
	}
	return times, allEqual(buf, float32(p*(p+1)/2)), nil
}

// Tags of the benchmark's parameter-server messages, below
// collective.TagBase as schemes' are.
const (
	benchTagGrads  uint32 = 1 << 20
	benchTagParams uint32 = 2 << 20
)

// benchPSRank is scheme sync-ps's communication (psWorker, psServer): each
// worker sends its gradient to the server, the last rank, then receives
// the weights; the server receives the gradients in rank order, summing
// them, then sends the sum back to each worker in turn.
func benchPSRank(ctx context.Context, ex *collective.Executor, n, reps, warmup int) ([]float64, bool, error) {
	ep := ex.Endpoint()
	rank, server := ep.Rank(), ep.Size()-1
	workers := ep.Size() - 1
	want := float32(workers * (workers + 1) / 2)
	if rank == server {
		sum, in := make([]float32, n), make([]float32, n)
		times, err := timeReps(ctx, ex, reps, warmup, func() error {
			for wk := range workers {
				dst := sum
				if wk > 0 {
					dst = in
				}
				if err := ep.Recv(ctx, wk, benchTagGrads, dst); err != nil {
					return fmt.Errorf("server: gradient from worker %d: %w", wk, err)
				}
				if wk > 0 {
					addF32(sum, in)
				}
			}
			for wk := range workers {
				if err := ep.Send(ctx, wk, benchTagParams, sum); err != nil {
					return fmt.Errorf("server: weights to worker %d: %w", wk, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		return times, allEqual(sum, want), nil
	}
	grads, params := make([]float32, n), make([]float32, n)
	fillF32(grads, float32(rank+1))
	times, err := timeReps(ctx, ex, reps, warmup, func() error {
		if err := ep.Send(ctx, server, benchTagGrads, grads); err != nil {
			return fmt.Errorf("worker %d: gradient to the server: %w", rank, err)
		}
		if err := ep.Recv(ctx, server, benchTagParams, params); err != nil {
			return fmt.Errorf("worker %d: weights from the server: %w", rank, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return times, allEqual(params, want), nil
}

// benchPingPongRank: rank 0 sends n floats to rank 1, which sends them
// back. Times are one-way: half the round trip.
func benchPingPongRank(ctx context.Context, ex *collective.Executor, n, reps, warmup int) ([]float64, bool, error) {
	ep := ex.Endpoint()
	buf := make([]float32, n)
	if ep.Rank() == 0 {
		fillF32(buf, 7)
	}
	peer := 1 - ep.Rank()
	times, err := timeReps(ctx, ex, reps, warmup, func() error {
		if ep.Rank() == 0 {
			if err := ep.Send(ctx, peer, benchTagGrads, buf); err != nil {
				return err
			}
			return ep.Recv(ctx, peer, benchTagGrads, buf)
		}
		if err := ep.Recv(ctx, peer, benchTagGrads, buf); err != nil {
			return err
		}
		return ep.Send(ctx, peer, benchTagGrads, buf)
	})
	if err != nil {
		return nil, false, err
	}
	for i := range times {
		times[i] /= 2
	}
	return times, allEqual(buf, 7), nil
}

// addF32 is the plain Go float32 add, dst[i] += src[i]: the parameter
// server's sum, and the add bandwidth reported for scale.
func addF32(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// runInprocGroup runs job on world goroutines joined by transport.NewInproc.
func runInprocGroup(ctx context.Context, world int, job commJob, timeout time.Duration) ([]commResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	eps := transport.NewInproc(world)
	var (
		mu      sync.Mutex
		results []commResult
		errs    = make([]error, world)
		wg      sync.WaitGroup
	)
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer eps[r].Close()
			errs[r] = benchCommRank(ctx, eps[r], job, func(res commResult) error {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, res)
				return nil
			})
		}()
	}
	wg.Wait()
	debug.FreeOSMemory()
	if err := firstRankError(errs); err != nil {
		return nil, fmt.Errorf("in-process %s, %d ranks: %w", job.Task, world, err)
	}
	return results, nil
}

// firstRankError picks the error to show from a failed group: the first
// that is not a consequence of another rank's failure, else the first.
func firstRankError(errs []error) error {
	var first error
	for r, err := range errs {
		if err == nil {
			continue
		}
		err = fmt.Errorf("rank %d: %w", r, err)
		var pe *transport.PeerError
		if !errors.As(err, &pe) && !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// runTCPGroup runs job on world child processes of this executable joined
// over loopback TCP, and collects their results. The group is bounded by
// timeout; when one child fails the others get two seconds to report
// their own view, then all are killed. It returns only once every child
// has been waited for. tweak, if not nil, edits each child's spec (tests
// use it to make one fail).
func runTCPGroup(ctx context.Context, o *benchCommOpts, world int, job commJob, tweak func(*commChild)) ([]commResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this program to start the ranks: %w", err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	type proc struct {
		out, errb bytes.Buffer
		err       error
	}
	procs := make([]*proc, world)
	var wg sync.WaitGroup
	defer wg.Wait() // every child is reaped before we return, whatever happens
	defer cancel()  // runs first: kills what is still running
	for r := range world {
		c := commChild{commJob: job, Rank: r, World: world, Rendezvous: addr, Token: hex.EncodeToString(tok),
			CommTimeout: o.commWait, Deadline: o.timeout, WatchStdin: true}
		if tweak != nil {
			tweak(&c)
		}
		spec, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, exe, "bench-comm", "--child", string(spec))
		cmd.Env = append(os.Environ(), "DSGD_CHILD=1")
		cmd.WaitDelay = 5 * time.Second
		p := &proc{}
		procs[r] = p
		cmd.Stdout, cmd.Stderr = &p.out, &p.errb
		// The child reads its stdin until EOF: we hold the write end open
		// until Wait, so if we die the child follows.
		if _, err := cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting rank %d: %w", r, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				p.err = err
				time.AfterFunc(2*time.Second, cancel)
			}
		}()
	}
	wg.Wait()
	errs := make([]error, world)
	failed := false
	for r, p := range procs {
		if p.err == nil {
			continue
		}
		failed = true
		text := strings.TrimSpace(p.errb.String())
		if text == "" {
			text = p.err.Error()
		}
		if ctx.Err() == context.DeadlineExceeded {
			text += fmt.Sprintf(" (the group ran past --timeout %v)", o.timeout)
		}
		errs[r] = errors.New(text)
	}
	if failed {
		// Prefer a rank that failed on its own over one we killed.
		var msgs []string
		for r, err := range errs {
			if err != nil && !strings.Contains(err.Error(), "signal: killed") {
				msgs = append(msgs, fmt.Sprintf("rank %d: %v", r, err))
			}
		}
		if len(msgs) == 0 {
			msgs = append(msgs, firstRankError(errs).Error())
		}
		return nil, fmt.Errorf("tcp %s, %d processes: %s", job.Task, world, strings.Join(msgs, "\n"))
	}
	var results []commResult
	for r, p := range procs {
		sc := bufio.NewScanner(&p.out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			res, err := decodeCommResult(sc.Bytes())
			if err != nil {
				return nil, fmt.Errorf("tcp %s: rank %d: %w", job.Task, r, err)
			}
			if res.Rank != r {
				return nil, fmt.Errorf("tcp %s: process %d reported rank %d", job.Task, r, res.Rank)
			}
			results = append(results, res)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("tcp %s: rank %d's output: %w", job.Task, r, err)
		}
	}
	return results, nil
}

// commStat summarises one task and size over a group.
type commStat struct {
	Alg   string
	Med   float64 // seconds: median over reps of the max over ranks
	R0Med float64 // seconds: median of rank 0's own times
	Min   float64 // seconds: fastest rep (max over ranks)
	OK    bool
}

type commKey struct {
	task  string
	bytes int64
}

// aggregateComm groups results by task and size; every one of world ranks
// must have reported the same number of repetitions.
func aggregateComm(results []commResult, world int) (map[commKey]commStat, error) {
	byKey := map[commKey][]*commResult{}
	for i := range results {
		r := &results[i]
		if r.Rank < 0 || r.Rank >= world {
			return nil, fmt.Errorf("result from rank %d in a group of %d", r.Rank, world)
		}
		k := commKey{r.Task, r.Bytes}
		if byKey[k] == nil {
			byKey[k] = make([]*commResult, world)
		}
		if byKey[k][r.Rank] != nil {
			return nil, fmt.Errorf("%s %d bytes: rank %d reported twice", r.Task, r.Bytes, r.Rank)
		}
		byKey[k][r.Rank] = r
	}
	out := map[commKey]commStat{}
	for k, ranks := range byKey {
		reps := -1
		st := commStat{OK: true}
		for r, res := range ranks {
			if res == nil {
				return nil, fmt.Errorf("%s %d bytes: rank %d did not report", k.task, k.bytes, r)
			}
			if reps >= 0 && len(res.Times) != reps {
				return nil, fmt.Errorf("%s %d bytes: rank %d reported %d reps, rank 0 %d", k.task, k.bytes, r, len(res.Times), reps)
			}
			reps = len(res.Times)
			st.OK = st.OK && res.OK
		}
		perRep := make([]float64, reps)
		for _, res := range ranks {
			for i, t := range res.Times {
				perRep[i] = max(perRep[i], t)
			}
		}
		st.Alg = ranks[0].Alg
		st.Med = medianF64(perRep)
		st.R0Med = medianF64(ranks[0].Times)
		st.Min = slices.Min(perRep)
		out[k] = st
	}
	return out, nil
}

// medianF64 is the median (the mean of the middle two for an even count),
// as numpy's; NaN for none.
func medianF64(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// busBW is the allreduce bus bandwidth in GB/s: 2(p-1)/p · bytes / time.
func busBW(world int, bytes int64, seconds float64) float64 {
	return 2 * float64(world-1) / float64(world) * float64(bytes) / seconds / 1e9
}

// peerRow is one line of the peer's table.
type peerRow struct {
	World       int
	Bytes       int64
	Med, R0Med  float64 // seconds
	AlgBW, Bus  float64 // GB/s as it printed them
	OK          bool
	TorchHeader string
}

// parsePeerAllreduce reads torch_allreduce.py's output: a header line
// "torch VERSION, gloo ..." and rows "world bytes MiB med_ms r0_ms min_ms
// algbw busbw ok". Other lines are ignored; a row that starts like one but
// does not parse is an error naming its line.
func parsePeerAllreduce(r io.Reader) (rows []peerRow, header string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "torch ") && header == "" {
			header = text
			continue
		}
		f := strings.Fields(text)
		if len(f) != 9 {
			continue
		}
		world, err1 := strconv.Atoi(f[0])
		nb, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue // the column header, or chatter
		}
		var v [6]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[2+i], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return nil, header, fmt.Errorf("peer output line %d: field %d %q is not a non-negative number: %q", line, 3+i, f[2+i], text)
			}
			v[i] = x
		}
		if world < 1 || nb <= 0 || v[1] <= 0 {
			return nil, header, fmt.Errorf("peer output line %d: world %d, %d bytes, %v ms: %q", line, world, nb, v[1], text)
		}
		rows = append(rows, peerRow{World: world, Bytes: nb, Med: v[1] / 1e3, R0Med: v[2] / 1e3, AlgBW: v[4], Bus: v[5], OK: f[8] == "True"})
	}
	if err := sc.Err(); err != nil {
		return nil, header, fmt.Errorf("peer output: %v", err)
	}
	return rows, header, nil
}

// runPeer runs the gloo peer over the worlds and sizes and returns its
// rows by (world, bytes). A Python without torch is reported through
// noTorch, not as an error.
func runPeer(ctx context.Context, o *benchCommOpts) (rows map[[2]int64]peerRow, header, noTorch string, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	probe := peerCommand(ctx, o.python, "-c", "import torch")
	if out, err := probe.CombinedOutput(); err != nil {
		return nil, "", fmt.Sprintf("%s cannot import torch (%v: %s)", o.python, err, strings.TrimSpace(truncate(string(out), 300))), nil
	}
	args := []string{o.peer, "--worlds"}
	for _, w := range o.worlds {
		args = append(args, strconv.Itoa(w))
	}
	args = append(args, "--sizes-mib")
	for _, b := range o.sizes {
		args = append(args, fmtMiB(b))
	}
	args = append(args, "--big-mib", "0", "--reps", strconv.Itoa(o.reps), "--warmup", strconv.Itoa(o.warmup), "--extra-bytes")
	cmd := peerCommand(ctx, o.python, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, "", "", fmt.Errorf("peer %s %s: %w\n%s", o.python, strings.Join(args, " "), err, truncate(out.String(), 3000))
	}
	list, header, err := parsePeerAllreduce(&out)
	if err != nil {
		return nil, "", "", err
	}
	rows = map[[2]int64]peerRow{}
	for _, r := range list {
		rows[[2]int64{int64(r.World), r.Bytes}] = r
	}
	return rows, header, "", nil
}

// peerCommand starts Python in its own process group, so that a cancelled
// run kills the workers torch.multiprocessing spawned too.
func peerCommand(ctx context.Context, python string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// memBandwidth measures copy and the plain Go add over buffers of nbytes,
// median of reps, in GB/s of buffer bytes (the memory traffic is twice
// that for copy, three times for add).
func memBandwidth(nbytes int64, reps int) (copyGBs, addGBs float64) {
	n := int(nbytes / 4)
	src, dst := make([]float32, n), make([]float32, n)
	fillF32(src, 1)
	fillF32(dst, 0)
	ct, at := make([]float64, reps), make([]float64, reps)
	for i := range reps {
		t0 := time.Now()
		copy(dst, src)
		ct[i] = time.Since(t0).Seconds()
	}
	for i := range reps {
		t0 := time.Now()
		addF32(dst, src)
		at[i] = time.Since(t0).Seconds()
	}
	return float64(nbytes) / medianF64(ct) / 1e9, float64(nbytes) / medianF64(at) / 1e9
}

// psModel and treeModel are the collective package's patterns for the
// PS-vs-tree table; the schedules are fixed and verified by its tests.
func psModel(p, n int) collective.Pattern   { return mustPattern(collective.ParamServerPattern(p, n)) }
func treeModel(p, n int) collective.Pattern { return mustPattern(collective.TreePattern(p, n)) }

func mustPattern(m collective.Pattern, err error) collective.Pattern {
	if err != nil {
		panic("bench-comm: " + err.Error())
	}
	return m
}

// loadAvg returns /proc/loadavg's first three fields, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// benchComm runs the parts and prints their tables.
func benchComm(ctx context.Context, o *benchCommOpts, stdout, stderr io.Writer) error {
	start := time.Now()
	fmt.Fprintf(stdout, "bench-comm: %s, %d CPUs, GOMAXPROCS %d, %s %s/%s, load average %s\n",
		start.Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, loadAvg())
	if o.parts["mem"] {
		c, a := memBandwidth(o.memBytes, 10)
		fmt.Fprintf(stdout, "\nmemory, %s MiB buffers, one goroutine, median of 10:\n", fmtMiB(o.memBytes))
		fmt.Fprintf(stdout, "  memcpy (copy)             %7.2f GB/s  (bytes copied per s; memory traffic is twice that)\n", c)
		fmt.Fprintf(stdout, "  float32 add dst += src    %7.2f GB/s  (bytes of dst per s, plain Go loop; %.2f Gadd/s)\n", a, a/4)
	}
	var peerErr error
	if o.parts["allreduce"] {
		if err := benchCommAllreduce(ctx, o, stdout, stderr, &peerErr); err != nil {
			return err
		}
	}
	if o.parts["ps"] {
		if err := benchCommPS(ctx, o, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nbench-comm: done in %.0f s, load average %s\n", time.Since(start).Seconds(), loadAvg())
	if peerErr != nil {
		return fmt.Errorf("the peer failed (ours are above): %w", peerErr)
	}
	return nil
}

func benchCommAllreduce(ctx context.Context, o *benchCommOpts, stdout, stderr io.Writer, peerErr *error) error {
	return benchCommTable(ctx, o, stdout, stderr, peerErr)
}

// psPoint is one measured p of the PS-vs-tree part.
type psPoint struct {
	p        int
	ps, tree float64 // seconds; NaN when not run
}

func benchCommPS(ctx context.Context, o *benchCommOpts, stdout, stderr io.Writer) error {
	n := o.psFloats
	nb := int64(4 * n)
	fmt.Fprintf(stdout, "\nparameter server vs reduction tree (FireCaffe Fig. 4): communication per iteration, %.1f MB model (%d float32)\n", float64(nb)/1e6, n)
	fmt.Fprintf(stdout, "PS: each of p workers sends its gradient to a server (one more rank: p+1 in all), which receives them in rank order summing as it goes, then sends the sum to each worker in turn (scheme sync-ps's messages)\n")
	fmt.Fprintf(stdout, "tree: collective.Tree allreduce over the p workers (binomial reduce to rank 0, then broadcast)\n")
	fmt.Fprintf(stdout, "time: median over %d iterations (after %d warm-up) of the max over ranks; rel = time / time at p=%d\n", o.psReps, o.psWarmup, o.psWorkers[0])
	fmt.Fprintf(stdout, "model: alpha*msgs + beta*bytes, msgs = sequential messages on the critical path and bytes = bytes sent+received by the busiest rank, both from the schedules (Verify, Cost); alpha, beta fitted from a 2-rank ping-pong (4 B and the model) on the same transport\n")
	fmt.Fprintf(stdout, "tcp runs p up to %d (PS: p+1 processes); every rank shares this machine's %d cores, so transfers the tree runs in parallel compete for the same CPUs and memory bus\n", o.tcpMaxWorkers, runtime.NumCPU())
	for _, tr := range []string{"inproc", "tcp"} {
		run := func(world int, job commJob) (map[commKey]commStat, error) {
			var res []commResult
			var err error
			if tr == "tcp" {
				res, err = runTCPGroup(ctx, o, world, job, nil)
			} else {
				res, err = runInprocGroup(ctx, world, job, o.timeout)
			}
			if err != nil {
				return nil, err
			}
			st, err := aggregateComm(res, world)
			if err != nil {
				return nil, fmt.Errorf("%s %s, %d ranks: %w", tr, job.Task, world, err)
			}
			for k, s := range st {
				if !s.OK {
					return nil, fmt.Errorf("%s %s, %d ranks, %d bytes: wrong result", tr, k.task, world, k.bytes)
				}
			}
			return st, nil
		}
		fmt.Fprintf(stderr, "bench-comm: ping-pong %s...\n", tr)
		pp, err := run(2, commJob{Task: taskPingPong, Sizes: []int64{4, nb}, Reps: max(o.psReps, 5), Warmup: max(o.psWarmup, 1)})
		if err != nil {
			return err
		}
		alpha := pp[commKey{taskPingPong, 4}].R0Med
		beta := max((pp[commKey{taskPingPong, nb}].R0Med-alpha)/float64(nb), 1e-15)
		var pts []psPoint
		for _, p := range o.psWorkers {
			pt := psPoint{p: p, ps: math.NaN(), tree: math.NaN()}
			if tr == "tcp" && p > o.tcpMaxWorkers {
				pts = append(pts, pt)
				continue
			}
			job := commJob{Sizes: []int64{nb}, Reps: o.psReps, Warmup: o.psWarmup}
			fmt.Fprintf(stderr, "bench-comm: %s p=%d tree and PS...\n", tr, p)
			job.Task = taskTree
			st, err := run(p, job)
			if err != nil {
				return err
			}
			pt.tree = st[commKey{taskTree, nb}].Med
			job.Task = taskPS
			if st, err = run(p+1, job); err != nil {
				return err
			}
			pt.ps = st[commKey{taskPS, nb}].Med
			pts = append(pts, pt)
		}
		fmt.Fprintf(stdout, "\n%s: alpha %.1f us, beta^-1 %.2f GB/s (one-way ping-pong: 4 B %.3f ms, %.1f MB %.3f ms)\n",
			tr, alpha*1e6, 1/beta/1e9, alpha*1e3, float64(nb)/1e6, pp[commKey{taskPingPong, nb}].R0Med*1e3)
		fmt.Fprintf(stdout, "%-7s %3s %9s %6s %9s %6s %7s | %8s %8s %8s %6s | %9s %8s %8s %6s | %9s %9s\n",
			"", "p", "PS_ms", "rel", "tree_ms", "rel", "PS/tree",
			"PS_msgs", "PS_MB", "PS_ms", "rel", "tree_msgs", "tree_MB", "tree_ms", "rel", "PS_totMB", "tree_totMB")
		fmt.Fprintf(stdout, "%-7s %3s %9s %6s %9s %6s %7s | %33s | %34s | %19s\n", "", "", "measured", "", "", "", "", "alpha-beta model (PS)", "alpha-beta model (tree)", "all ranks' bytes")
		base := pts[0]
		bpm, btm := psModel(base.p, n), treeModel(base.p, n)
		for _, pt := range pts {
			pm, tm := psModel(pt.p, n), treeModel(pt.p, n)
			meas := fmt.Sprintf("%9s %6s %9s %6s %7s", "-", "-", "-", "-", "-")
			if !math.IsNaN(pt.ps) {
				meas = fmt.Sprintf("%9.2f %6.2f %9.2f %6.2f %7.2f", pt.ps*1e3, pt.ps/base.ps, pt.tree*1e3, pt.tree/base.tree, pt.ps/pt.tree)
			}
			fmt.Fprintf(stdout, "%-7s %3d %s | %8d %8.1f %8.2f %6.2f | %9d %8.1f %8.2f %6.2f | %9.1f %9.1f\n",
				tr, pt.p, meas,
				pm.Msgs, float64(pm.MaxBytes)/1e6, pm.Predict(alpha, beta)*1e3, pm.Predict(alpha, beta)/bpm.Predict(alpha, beta),
				tm.Msgs, float64(tm.MaxBytes)/1e6, tm.Predict(alpha, beta)*1e3, tm.Predict(alpha, beta)/btm.Predict(alpha, beta),
				float64(pm.TotalBytes)/1e6, float64(tm.TotalBytes)/1e6)
		}
	}
	return nil
}
