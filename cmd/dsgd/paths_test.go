package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/engine/tensor"
	"dsgd/training/checkpoint"
)

// TestTimelineOfCenterSchemeOverTCP: with a parameter-server scheme over
// TCP, each process writes its own trace (rank 0 FILE, rank N FILE.rankN,
// the center FILE.center: none over another's) and the launcher merges
// them into FILE, one process per rank and one for the center, on one
// clock, and removes the per-process files.
func TestTimelineOfCenterSchemeOverTCP(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--workers", "2", "--scheme", "async",
		"--iters", "4", "--threads", "1", "--snapshot-prefix", "none", "--timeline", "tl.json", "--metrics", "m.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "3 processes' traces merged into tl.json") {
		t.Errorf("no note of the merge on stderr:\n%s", errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("tl.json is not a trace: %v", err)
	}
	spans, names := map[int]int{}, map[int]string{}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Ph == "X":
			spans[e.Pid]++
		case e.Name == "process_name":
			names[e.Pid], _ = e.Args["name"].(string)
		}
	}
	if spans[0] == 0 || spans[1] == 0 {
		t.Errorf("spans per process %v: rank 0's and rank 1's are not both there", spans)
	}
	for pid, want := range map[int]string{0: "rank 0: ", 1: "rank 1: ", 2: "center"} {
		if !strings.HasPrefix(names[pid], want) {
			t.Errorf("process %d is named %q, want %q...", pid, names[pid], want)
		}
	}
	for _, f := range []string{"tl.json.rank1", "tl.json.center"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s left beside the merged trace", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "m.jsonl")); err != nil || len(b) == 0 {
		t.Errorf("rank 0's metrics file is empty or missing (%v)", err)
	}
}

// TestStoreRefusedWithoutCenter: --store on a scheme whose weights never
// pass through a parameter server is refused, naming the flag and the
// schemes it serves, instead of being ignored.
func TestStoreRefusedWithoutCenter(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, name := range []string{"sync-ps", "sync-tree", "seasgd", "hybrid"} {
		code, _, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", name, "--workers", "2", "--iters", "1", "--store", "redis://127.0.0.1:1")
		if code == 0 || !strings.Contains(errs, "--store: "+name) || !strings.Contains(errs, "easgd") {
			t.Errorf("%s with --store: exit %d, stderr %q", name, code, errs)
		}
	}
}

// TestOverlapHandsOffEachLayer: in one process overlap's default is TRL's
// per-layer hand-off (Alg. 6-7): each parameter block is accumulated on
// its own, as backward finishes it, not gathered into 1 MiB buckets.
func TestOverlapHandsOffEachLayer(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	const iters = 3
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", "overlap", "--workers", "2",
		"--iters", strconv.Itoa(iters), "--threads", "2", "--snapshot-prefix", "none", "--timeline", "tl.json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tl.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Tid  int    `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	ranges := map[string]bool{}
	n := 0
	for _, e := range tr.TraceEvents {
		if strings.HasPrefix(e.Name, "accumulate grads[") {
			ranges[e.Name] = true
			n++
		}
	}
	// The tiny net has two InnerProduct layers: four blocks, each its own
	// accumulate, on each of the 2 workers, every iteration.
	if len(ranges) != 4 || n != 4*2*iters {
		t.Fatalf("%d accumulates over %d ranges %v; want one per block (4) per worker per iteration (%d)", n, len(ranges), ranges, 4*2*iters)
	}
}

// TestPSRefusesMismatchedWorker: a worker that joins a parameter server
// with another base_lr, seed or staleness than the server's job is
// refused at join, naming the setting and both values, and the server
// goes on serving the healthy workers (issue 27: one worker with base_lr
// 50 took an async job to NaN).
func TestPSRefusesMismatchedWorker(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	write(t, dir, "hot.prototxt", regexp.MustCompile(`base_lr: *[0-9.e-]+`).ReplaceAllString(tinySolver, "base_lr: 50"))
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	const tok = "mismatch-test"
	model := []string{"--scheme", "ssp", "--iters", "30", "--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0", "--comm-timeout", "20s"}
	server := startChild(t, dir, "ps", append([]string{"ps", "--workers", "2", "--listen", addr, "--token", tok, "--solver", "solver.prototxt"}, model...)...)
	worker := func(rank int, args ...string) *child {
		a := append([]string{"worker", "--rank", strconv.Itoa(rank), "--world", "2", "--center", addr, "--token", tok}, model...)
		return startChild(t, dir, fmt.Sprintf("worker %d", rank), append(a, args...)...)
	}
	for _, c := range []struct {
		args       []string
		name, want string
	}{
		{[]string{"--solver", "hot.prototxt"}, "base_lr", "base_lr 50"},
		{[]string{"--solver", "solver.prototxt", "--seed", "9"}, "--seed", "--seed 9"},
		{[]string{"--solver", "solver.prototxt", "--staleness", "1"}, "--staleness", "--staleness 1"},
	} {
		bad := worker(1, c.args...)
		select {
		case <-bad.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("a worker with %v still runs after 60s:\n%s", c.args, bad.out)
		}
		if bad.err == nil || !strings.Contains(bad.out.String(), c.want) {
			t.Errorf("a worker with %v: exit %v, output lacks %q:\n%s", c.args, bad.err, c.want, bad.out)
		}
	}
	w0, w1 := worker(0, "--solver", "solver.prototxt"), worker(1, "--solver", "solver.prototxt")
	w0.wait(t, 60*time.Second)
	w1.wait(t, 60*time.Second)
	if w0.err != nil || w1.err != nil {
		t.Fatalf("healthy workers failed: %v %v\n%s\n%s\nserver:\n%s", w0.err, w1.err, w0.out, w1.out, server.out)
	}
}

// TestCenterFinalModelOverTCP: over TCP the final model (snapshot and
// test) of a center scheme holds every worker's last exchange, as in one
// process: easgd-rr's turns make both runs the same, bit for bit (rank 0
// used to read the center while the others still exchanged).
func TestCenterFinalModelOverTCP(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	final := func(prefix string, args ...string) []float32 {
		t.Helper()
		base := []string{"train", "--solver", "solver.prototxt", "--scheme", "easgd-rr", "--workers", "3", "--iters", "6", "--threads", "1",
			"--test-interval", "0", "--snapshot-prefix", prefix}
		code, out, errs := runCmd(t, dir, append(base, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
		st, err := checkpoint.Read(filepath.Join(dir, prefix+"_iter_6.dsgdsnap"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Params
	}
	in := final("in")
	tcp := final("tcp", "--transport", "tcp")
	if !tensor.SameBits(in, tcp) {
		t.Fatalf("the final model over TCP differs from the one in process (largest difference %.3g)", maxDiff(in, tcp))
	}
}

// TestStoreKeepsTheCenterOrder: with the weights carried through Redis,
// easgd-rr's turns and ssp --staleness 0's BSP reads hold as on the
// direct path: the final models are the same, bit for bit (issue 27: the
// store path let a worker pull before its turn, and served BSP reads a
// publication older than the clock).
func TestStoreKeepsTheCenterOrder(t *testing.T) {
	url := startRedisServer(t)
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"easgd-rr", []string{"--scheme", "easgd-rr", "--workers", "3"}},
		{"ssp s=0", []string{"--scheme", "ssp", "--staleness", "0", "--workers", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			final := func(prefix string, extra ...string) []float32 {
				t.Helper()
				args := append([]string{"train", "--solver", "solver.prototxt", "--iters", "8", "--threads", "1", "--transport", "tcp",
					"--test-interval", "0", "--snapshot-prefix", prefix}, c.args...)
				code, out, errs := runCmd(t, dir, append(args, extra...)...)
				if code != 0 {
					t.Fatalf("%v: exit %d\n%s\n%s", extra, code, out, errs)
				}
				st, err := checkpoint.Read(filepath.Join(dir, prefix+"_iter_8.dsgdsnap"))
				if err != nil {
					t.Fatal(err)
				}
				return st.Params
			}
			direct := final("direct")
			store := final("store", "--store", url)
			if !tensor.SameBits(direct, store) {
				t.Fatalf("through Redis the final model differs from the direct path's (largest difference %.3g)", maxDiff(direct, store))
			}
		})
	}
}

// TestCenterDeathReportedAtOnce: when the launcher's parameter server dies
// at start, the run ends at once (not after --comm-timeout) with the
// server's own error first (issue 23: only the workers' "connection
// refused" came, a minute later).
func TestCenterDeathReportedAtOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	t0 := time.Now()
	// --shard is the server's alone: a bad one kills it and no worker.
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", "async", "--workers", "2", "--transport", "tcp",
		"--shard", "3/2", "--comm-timeout", "30s", "--snapshot-prefix", "none")
	took := time.Since(t0)
	if code == 0 {
		t.Fatalf("exit 0\n%s\n%s", out, errs)
	}
	first := strings.SplitN(errs, "\n", 2)[0]
	if !strings.Contains(first, "the center (dsgd ps") || !strings.Contains(errs, `--shard "3/2"`) {
		t.Errorf("the server's death is not what the run reports first:\n%s", errs)
	}
	if took > 15*time.Second {
		t.Errorf("the run took %v to report it, near --comm-timeout 30s", took)
	}
}
