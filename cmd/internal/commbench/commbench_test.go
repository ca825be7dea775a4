package commbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dsgd/internal/spawn"
)

// TestMain makes the test binary a rank of the groups the tests start: a
// child runs as the command does, "bench-comm --child SPEC".
func TestMain(m *testing.M) {
	if os.Getenv("DSGD_CHILD") == "1" && len(os.Args) == len(ChildCommand)+2 && slices.Equal(os.Args[1:1+len(ChildCommand)], ChildCommand) {
		if err := RunChild(context.Background(), os.Args[len(os.Args)-1], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "dsgd bench-comm:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestFmtMiB(t *testing.T) {
	for b, want := range map[int64]string{64 << 10: "0.0625", 240 << 20: "240", 1 << 20: "1", 3 << 19: "1.5"} {
		if got := FmtMiB(b); got != want {
			t.Errorf("FmtMiB(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestParsePaths(t *testing.T) {
	got, err := ParsePaths(" tcp,shm ,,gloo")
	if err != nil || len(got) != 3 || !got["tcp"] || !got["shm"] || !got["gloo"] {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "tcp,nccl"} {
		if _, err := ParsePaths(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if PathNames() != "tcp,shm,shm-own,inproc,mpi,mpi-own,ompi,gloo" {
		t.Errorf("PathNames() = %q", PathNames())
	}
}

// peerSample is torch_allreduce.py's output format.
const peerSample = `torch 1.13.0a0, gloo over loopback (127.0.0.1), threads/proc=1, reps=10 (+2 warmup)
world        bytes        MiB     med ms  r0 med ms     min ms     algbw     busbw   ok
    2      1048576      1.000      0.900      0.850      0.800     1.165     1.165 True
    4    251658240    240.000    380.000    379.000    370.000     0.662     0.993 False
algbw/busbw in GB/s (1e9 B/s); med = median over reps of max-over-ranks time
`

func TestParsePeer(t *testing.T) {
	rows, header, err := parsePeerAllreduce(strings.NewReader(peerSample))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(header, "torch 1.13.0a0") {
		t.Errorf("header %q", header)
	}
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[1]
	if r.World != 4 || r.Bytes != 240<<20 || r.Med != 0.38 || r.R0Med != 0.379 || r.Bus != 0.993 || r.OK {
		t.Errorf("row %+v", r)
	}
	if !rows[0].OK || math.Abs(busBW(2, rows[0].Bytes, rows[0].Med)-1.165) > 1e-3 {
		t.Errorf("row 0 %+v: busbw %v", rows[0], busBW(2, rows[0].Bytes, rows[0].Med))
	}
	bad := strings.Replace(peerSample, "0.900", "x.900", 1)
	if _, _, err := parsePeerAllreduce(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad row: %v", err)
	}
	if rows, _, err := parsePeerAllreduce(strings.NewReader("Traceback: no module named torch\n")); err != nil || len(rows) != 0 {
		t.Errorf("no rows: %v %v", rows, err)
	}
}

func TestAggregate(t *testing.T) {
	res := []commResult{
		{Task: "allreduce", Rank: 0, Bytes: 64, Alg: "ring", Times: []float64{1, 5, 3}, OK: true},
		{Task: "allreduce", Rank: 1, Bytes: 64, Alg: "ring", Times: []float64{2, 1, 4}, OK: true},
		{Task: "allreduce", Rank: 0, Bytes: 128, Times: []float64{1, 2}, OK: true},
		{Task: "allreduce", Rank: 1, Bytes: 128, Times: []float64{3, 4}, OK: false},
	}
	st, err := aggregateComm(res, 2)
	if err != nil {
		t.Fatal(err)
	}
	// per-rep max: 2, 5, 4 -> median 4; rank 0's median 3; fastest 2.
	if s := st[commKey{"allreduce", 64}]; s.Med != 4 || s.R0Med != 3 || s.Min != 2 || !s.OK || s.Alg != "ring" {
		t.Errorf("64: %+v", s)
	}
	if s := st[commKey{"allreduce", 128}]; s.Med != 3.5 || s.OK {
		t.Errorf("128: %+v", s)
	}
	for name, bad := range map[string][]commResult{
		"missing rank": res[:1],
		"rep count":    {res[0], {Task: "allreduce", Rank: 1, Bytes: 64, Times: []float64{1}}},
		"twice":        {res[0], res[0]},
		"out of range": {{Task: "allreduce", Rank: 2, Bytes: 64, Times: []float64{1}}},
	} {
		if _, err := aggregateComm(bad, 2); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestMedianBusBW(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{4, 1, 2}, 2}, {[]float64{4, 1, 2, 3}, 2.5}} {
		if got := medianF64(c.in); got != c.want {
			t.Errorf("median %v = %v, want %v", c.in, got, c.want)
		}
	}
	if !math.IsNaN(medianF64(nil)) {
		t.Error("median of nothing")
	}
	if got := busBW(4, 1e9, 1); got != 1.5 {
		t.Errorf("busbw %v, want 1.5 (2*3/4)", got)
	}
}

// TestBenchCommRankInproc runs every task in-process and checks that the
// results come back complete and correct.
func TestRankInproc(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		world int
		job   commJob
	}{
		{3, commJob{Task: taskAllreduce, Alg: "auto", Sizes: []int64{4, 4096, 1 << 20}, Reps: 2, Warmup: 1}},
		{4, commJob{Task: taskAllreduce, Alg: "tree", Sizes: []int64{400}, Reps: 3}},
		{5, commJob{Task: taskTree, Sizes: []int64{4096}, Reps: 2}},
		{4, commJob{Task: taskPS, Sizes: []int64{4096, 8}, Reps: 2, Warmup: 1}},
		{2, commJob{Task: taskPingPong, Sizes: []int64{4, 4096}, Reps: 2}},
	} {
		if err := c.job.validate(c.world); err != nil {
			t.Fatal(err)
		}
		res, err := runInprocGroup(ctx, c.world, c.job, time.Minute)
		if err != nil {
			t.Fatalf("%s on %d: %v", c.job.Task, c.world, err)
		}
		st, err := aggregateComm(res, c.world)
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != len(c.job.Sizes) {
			t.Errorf("%s: %d results for %d sizes", c.job.Task, len(st), len(c.job.Sizes))
		}
		for k, s := range st {
			if !s.OK || !(s.Med > 0) {
				t.Errorf("%s on %d, %d bytes: %+v", c.job.Task, c.world, k.bytes, s)
			}
			if c.job.Task == taskTree && s.Alg != "tree" {
				t.Errorf("tree task ran %q", s.Alg)
			}
		}
	}
}

// TestBenchCommTCPGroupFailure: when one child fails (here refused at the
// rendezvous for a wrong token), the group is torn down at once instead of
// waiting out rank 0's rendezvous timeout, and no child is left running.
func TestTCPGroupFailure(t *testing.T) {
	o := &Options{Timeout: 2 * time.Minute, CommWait: time.Minute}
	var token string
	tweak := func(c *commChild) {
		token = c.Token
		if c.Rank == 1 {
			c.Token = "wrong"
		}
	}
	t0 := time.Now()
	_, err := runTCPGroup(context.Background(), o, 2, commJob{Task: taskAllreduce, Alg: "auto", Sizes: []int64{64}, Reps: 1}, tweak)
	if err == nil || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "bad token") {
		t.Fatalf("got %v, want rank 1's refusal", err)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("took %v: rank 0 was not killed", d)
	}
	if strays := processesWith(t, token); len(strays) > 0 {
		t.Errorf("children still running: %v", strays)
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	if len(cmdlines) == 0 {
		t.Skip("no /proc to look for stray processes in")
	}
	var out []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, filepath.Base(filepath.Dir(f)))
		}
	}
	return out
}

// TestBenchCommChildExitsWhenParentGoes: a child whose stdin closes (its parent
// died) exits at once, even while it waits for a rendezvous.
func TestChildExitsWhenParentGoes(t *testing.T) {
	addrs, err := spawn.LoopbackAddrs(1) // nobody listens: rank 1 keeps dialling
	if err != nil {
		t.Fatal(err)
	}
	addr := addrs[0]
	spec, _ := json.Marshal(commChild{commJob: commJob{Task: taskAllreduce, Alg: "auto", Sizes: []int64{64}, Reps: 1},
		Rank: 1, World: 2, Rendezvous: addr, Token: "t", CommTimeout: time.Minute, Deadline: time.Minute, WatchStdin: true})
	exe, _ := os.Executable()
	cmd := exec.Command(exe, ChildArgs(string(spec))...)
	cmd.Env = append(os.Environ(), "DSGD_CHILD=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(errb.String(), "parent has gone") {
			t.Errorf("exit %v, stderr %q", err, errb.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the child kept running after its stdin closed")
	}
}

func TestDecodeChild(t *testing.T) {
	good := commChild{commJob: commJob{Task: taskPS, Sizes: []int64{8}, Reps: 1}, Rank: 2, World: 3, CommTimeout: time.Second, Deadline: time.Second}
	b, _ := json.Marshal(good)
	if c, err := decodeCommChild(string(b)); err != nil || c.Rank != 2 || c.Task != taskPS {
		t.Fatalf("%+v %v", c, err)
	}
	for name, edit := range map[string]func(*commChild){
		"rank":     func(c *commChild) { c.Rank = 3 },
		"task":     func(c *commChild) { c.Task = "gossip" },
		"size":     func(c *commChild) { c.Sizes = []int64{6} },
		"no sizes": func(c *commChild) { c.Sizes = nil },
		"reps":     func(c *commChild) { c.Reps = 0 },
		"timeout":  func(c *commChild) { c.Deadline = 0 },
		"pingpong": func(c *commChild) { c.Task = taskPingPong },
		"alg":      func(c *commChild) { c.Task, c.Alg = taskAllreduce, "x" },
	} {
		c := good
		edit(&c)
		b, _ := json.Marshal(c)
		if _, err := decodeCommChild(string(b)); err == nil {
			t.Errorf("%s: accepted %s", name, b)
		}
	}
	if _, err := decodeCommChild(`{"task":"ps","bogus":1}`); err == nil {
		t.Error("unknown field accepted")
	}
}

func TestMemBandwidth(t *testing.T) {
	c, a := memBandwidth(1<<20, 3)
	if !(c > 0) || !(a > 0) || math.IsInf(c, 0) || math.IsInf(a, 0) {
		t.Errorf("copy %v add %v", c, a)
	}
}

func FuzzPeerOutput(f *testing.F) {
	f.Add(peerSample)
	f.Add("    2 1 1 1 1 1 1 1 True\n")
	f.Add("    2 4 0 0 0 0 0 0 True\n")
	f.Add("x y z\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, _, err := parsePeerAllreduce(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.World < 1 || r.Bytes <= 0 || !(r.Med > 0) {
				t.Fatalf("row %+v from %q", r, s)
			}
		}
	})
}

func FuzzChildSpec(f *testing.F) {
	b, _ := json.Marshal(commChild{commJob: commJob{Task: taskAllreduce, Alg: "ring", Sizes: []int64{8}, Reps: 1}, Rank: 0, World: 2, CommTimeout: 1, Deadline: 1})
	f.Add(string(b))
	f.Add(`{"task":"ps"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCommChild(s)
		if err != nil {
			return
		}
		if c.Rank < 0 || c.Rank >= c.World || len(c.Sizes) == 0 {
			t.Fatalf("accepted %+v", c)
		}
	})
}

func FuzzResult(f *testing.F) {
	f.Add([]byte(`{"task":"allreduce","rank":1,"bytes":64,"alg":"ring","times":[0.1,0.2],"ok":true}`))
	f.Add([]byte(`{"times":[-1]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeCommResult(b)
		if err != nil {
			return
		}
		if len(r.Times) == 0 || r.Bytes <= 0 {
			t.Fatalf("accepted %+v", r)
		}
	})
}
