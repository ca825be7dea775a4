package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchCommQuick runs the whole command on tiny sizes, peer disabled:
// every table has its rows, and their numbers parse and are positive.
func TestBenchCommQuick(t *testing.T) {
	var out, errb bytes.Buffer
	t0 := time.Now()
	code := run(context.Background(), []string{"bench-comm", "--quick", "--worlds", "2", "--sizes", "64KiB", "--peer", "none", "--ps-workers", "2"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if d := time.Since(t0); d > 60*time.Second {
		t.Errorf("--quick took %v", d)
	}
	text := out.String()
	for _, want := range []string{"memcpy (copy)", "float32 add", "best = the fastest of ours", "alpha-beta model (PS)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	positive := func(line string, fields []string) {
		t.Helper()
		for _, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("field %q of %q is not a positive number", f, line)
			}
		}
	}
	var allreduce, inproc, tcpRow bool
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 8 && f[0] == "2" && f[1] == "0.0625" && f[6] == "tcp" || len(f) == 8 && f[0] == "2" && f[1] == "0.0625" && f[6] == "shm":
			// world MiB alg tcp shm inproc best ok (--quick: paths tcp,shm,inproc)
			allreduce = true
			if f[2] != "ring" && f[2] != "rd" {
				t.Errorf("auto resolved to %q: %q", f[2], line)
			}
			positive(line, f[3:6]) // tcp, shm and inproc bus bandwidth
			if f[7] != "ok" {
				t.Errorf("result not ok: %q", line)
			}
		case len(f) >= 19 && (f[0] == "inproc" || f[0] == "tcp") && f[1] == "2":
			if f[0] == "inproc" {
				inproc = true
			} else {
				tcpRow = true
			}
			nums := []string{}
			for _, x := range f[2:] {
				if x != "|" {
					nums = append(nums, x)
				}
			}
			positive(line, nums)
			if f[3] != "1.00" || f[5] != "1.00" {
				t.Errorf("p=2 is its own reference, rel should be 1.00: %q", line)
			}
		}
	}
	if !allreduce || !inproc || !tcpRow {
		t.Errorf("rows missing (allreduce %v, inproc PS/tree %v, tcp PS/tree %v):\n%s", allreduce, inproc, tcpRow, text)
	}
}

func TestBenchCommFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--peer", "none", "--sizes", "3B"}, "whole number of float32s"},
		{[]string{"--peer", "none", "--sizes", "1,x"}, "want a number"},
		{[]string{"--peer", "none", "--worlds", "1"}, "out of range"},
		{[]string{"--peer", "none", "--alg", "butterfly"}, "unknown allreduce algorithm"},
		{[]string{"--peer", "none", "--parts", "mem,gpu"}, "unknown part"},
		{[]string{"--peer", "none", "--reps", "0"}, "at least 1"},
		{[]string{"--peer", "none", "extra"}, "unexpected argument"},
		{[]string{"--child"}, "exactly one argument"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"bench-comm"}, c.args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), c.want)
			}
		})
	}
}

func TestBenchCommParseByteSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  string
	}{
		{"1", 1 << 20, ""},
		{"240", 240 << 20, ""},
		{"64KiB", 64 << 10, ""},
		{" 1.5 mib", 3 << 19, ""},
		{"0.0625", 64 << 10, ""},
		{"1GiB", 1 << 30, ""},
		{"4096B", 4096, ""},
		{"3B", 0, "float32s"},
		{"0", 0, "out of range"},
		{"-1", 0, "out of range"},
		{"3GiB", 0, "out of range"},
		{"NaN", 0, "want a number"},
		{"KiB", 0, "want a number"},
		{"", 0, "want a number"},
	}
	for _, c := range cases {
		got, err := parseByteSize(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%q: got %d, %v; want error %q", c.in, got, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if got, err := parseByteSizes("1,4,64KiB"); err != nil || len(got) != 3 || got[2] != 64<<10 {
		t.Errorf("list: %v %v", got, err)
	}
	if fmtMiB(64<<10) != "0.0625" || fmtMiB(240<<20) != "240" {
		t.Errorf("fmtMiB: %s %s", fmtMiB(64<<10), fmtMiB(240<<20))
	}
}

// peerSample is torch_allreduce.py's output format.
const peerSample = `torch 1.13.0a0, gloo over loopback (127.0.0.1), threads/proc=1, reps=10 (+2 warmup)
world        bytes        MiB     med ms  r0 med ms     min ms     algbw     busbw   ok
    2      1048576      1.000      0.900      0.850      0.800     1.165     1.165 True
    4    251658240    240.000    380.000    379.000    370.000     0.662     0.993 False
algbw/busbw in GB/s (1e9 B/s); med = median over reps of max-over-ranks time
`

func TestBenchCommParsePeer(t *testing.T) {
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

func TestBenchCommAggregate(t *testing.T) {
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

func TestBenchCommMedianBusBW(t *testing.T) {
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
func TestBenchCommRankInproc(t *testing.T) {
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
func TestBenchCommTCPGroupFailure(t *testing.T) {
	o := &benchCommOpts{timeout: 2 * time.Minute, commWait: time.Minute}
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
func TestBenchCommChildExitsWhenParentGoes(t *testing.T) {
	addr, err := freeLoopbackAddr() // nobody listens: rank 1 keeps dialling
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(commChild{commJob: commJob{Task: taskAllreduce, Alg: "auto", Sizes: []int64{64}, Reps: 1},
		Rank: 1, World: 2, Rendezvous: addr, Token: "t", CommTimeout: time.Minute, Deadline: time.Minute, WatchStdin: true})
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "bench-comm", "--child", string(spec))
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

func TestBenchCommDecodeChild(t *testing.T) {
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

func TestBenchCommMemBandwidth(t *testing.T) {
	c, a := memBandwidth(1<<20, 3)
	if !(c > 0) || !(a > 0) || math.IsInf(c, 0) || math.IsInf(a, 0) {
		t.Errorf("copy %v add %v", c, a)
	}
}

func FuzzBenchCommSizes(f *testing.F) {
	for _, s := range []string{"1,4,16,64,240", "64KiB", "1.5MiB", "4096B", "1e3", "-0", "0x10", ",", "1GiB,2GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := parseByteSizes(s)
		if err != nil {
			return
		}
		for _, b := range sizes {
			if b <= 0 || b%4 != 0 || b > maxBenchBytes {
				t.Fatalf("%q gave %d", s, b)
			}
		}
	})
}

func FuzzBenchCommPeerOutput(f *testing.F) {
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

func FuzzBenchCommChildSpec(f *testing.F) {
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

func FuzzBenchCommResult(f *testing.F) {
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
