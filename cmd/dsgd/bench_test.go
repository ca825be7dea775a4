package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/cmd/internal/enginebench"
	"dsgd/engine/cpuinfo"
)

func TestParseBenchFlags(t *testing.T) {
	iters := func(c enginebench.Config) map[string][2]int {
		m := map[string][2]int{}
		for _, n := range c.Nets {
			m[n.Name] = [2]int{n.Iters, n.Warmup}
		}
		return m
	}
	defaults := map[string][2]int{"lenet": {200, 20}, "cifar10_quick": {10, 2}, "caffenet": {2, 1}, "googlenet": {2, 1}, "resnet18": {2, 1}}
	tests := []struct {
		args    []string
		iters   map[string][2]int // net -> iters, warmup
		threads []int
		reps    int
		isas    []cpuinfo.ISA // --isa's caps
		err     string        // in stderr
	}{
		{args: nil, iters: defaults, threads: []int{1, 2}, reps: 3},
		{args: []string{"--nets", "googlenet,caffenet", "--thread-list", "2", "--reps", "1"},
			iters: map[string][2]int{"googlenet": {2, 1}, "caffenet": {2, 1}}, threads: []int{2}, reps: 1},
		{args: []string{"--iters", "5", "--warmup", "0"},
			iters: map[string][2]int{"lenet": {5, 0}, "cifar10_quick": {5, 0}, "caffenet": {5, 0}, "googlenet": {5, 0}, "resnet18": {5, 0}}, threads: []int{1, 2}, reps: 3},
		{args: []string{"--iters", "caffenet=2, googlenet=1", "--warmup", "lenet=0"},
			iters: map[string][2]int{"lenet": {200, 0}, "cifar10_quick": {10, 2}, "caffenet": {2, 1}, "googlenet": {1, 1}, "resnet18": {2, 1}}, threads: []int{1, 2}, reps: 3},
		{args: []string{"--isa", ""}, iters: defaults, threads: []int{1, 2}, reps: 3},
		{args: []string{"--isa", "avx2,AVX512_CORE"}, iters: defaults, threads: []int{1, 2}, reps: 3, isas: []cpuinfo.ISA{cpuinfo.AVX2, cpuinfo.AVX512Core}},
		{args: []string{"--isa=sse41, avx ,all"}, iters: defaults, threads: []int{1, 2}, reps: 3, isas: []cpuinfo.ISA{cpuinfo.SSE41, cpuinfo.AVX, cpuinfo.All}},
		{args: []string{"--isa", "avx3"}, err: `--isa: unknown ISA "avx3"; the levels are SSE41, AVX, AVX2, AVX2_VNNI, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL`},
		{args: []string{"--isa", "avx2,"}, err: `--isa: unknown ISA ""`},
		{args: []string{"--isa", "avx2,AVX2"}, err: "--isa: AVX2 given twice"},
		{args: []string{"--nets", "resnet"}, err: `no net "resnet"`},
		{args: []string{"--nets", "lenet,lenet"}, err: "lenet given twice"},
		{args: []string{"--nets", ""}, err: `no net ""`},
		{args: []string{"--thread-list", "1,0"}, err: `bad thread count "0"`},
		{args: []string{"--thread-list", "two"}, err: `bad thread count "two"`},
		{args: []string{"--reps", "0"}, err: "--reps 0"},
		{args: []string{"--iters", "0"}, err: "--iters: \"0\" is not an integer of at least 1"},
		{args: []string{"--iters", "caffenet=0"}, err: "--iters: caffenet:"},
		{args: []string{"--iters", "alexnet=2"}, err: `--iters: no net "alexnet"`},
		{args: []string{"--iters", "3,caffenet=2"}, err: `"3" is not NET=N`},
		{args: []string{"--iters", "caffenet=2,caffenet=3"}, err: "caffenet given twice"},
		{args: []string{"--warmup", "-1"}, err: "--warmup:"},
		{args: []string{"--peak-time", "0s"}, err: "--peak-time"},
		{args: []string{"--model", "lenet"}, err: "flag provided but not defined: -model"},
		{args: []string{"lenet"}, err: `unexpected argument "lenet"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			c, err := parseBenchFlags(tt.args, &stderr)
			if tt.err != "" {
				if err != errUsage || !strings.Contains(stderr.String(), tt.err) {
					t.Fatalf("err %v, stderr %q; want usage error with %q", err, stderr.String(), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if got := iters(c); !reflect.DeepEqual(got, tt.iters) {
				t.Errorf("nets %v, want %v", got, tt.iters)
			}
			if !reflect.DeepEqual(c.Threads, tt.threads) || c.Reps != tt.reps {
				t.Errorf("threads %v reps %d", c.Threads, c.Reps)
			}
			if !reflect.DeepEqual(c.ISAs, tt.isas) {
				t.Errorf("isas %v, want %v", c.ISAs, tt.isas)
			}
			if c.PeerLeNet != "../shared/peer/torch_lenet.py" || c.PeerNets != "../shared/peer/torch_nets.py" || c.Python != "/usr/bin/python3" {
				t.Errorf("peers %q %q %q", c.PeerLeNet, c.PeerNets, c.Python)
			}
		})
	}
	// The nets run in the order given, with their batches.
	c, err := parseBenchFlags([]string{"--nets", "googlenet,lenet"}, &bytes.Buffer{})
	if err != nil || len(c.Nets) != 2 || c.Nets[0].Name != "googlenet" || c.Nets[0].Batch != 32 || c.Nets[1].Batch != 64 || !c.Nets[1].Trains() || c.Nets[0].Trains() {
		t.Errorf("nets %+v, err %v", c.Nets, err)
	}
}

// TestBenchEndToEnd runs the whole command on cifar10_quick with a fake
// peer (a shell script printing torch_nets.py's line), one iteration.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("times cifar10_quick")
	}
	// cifar10_quick at batch 4 rather than 100: the same code, a 25th of
	// the time (this test runs under the race detector too).
	saved := slices.Clone(enginebench.Nets)
	defer func() { enginebench.Nets = saved }()
	enginebench.Nets[1].Batch, enginebench.Nets[1].Data = 4, "synthetic:N=4,C=3,H=32,W=32,classes=10"
	dir := t.TempDir()
	peer := filepath.Join(dir, "peer.sh")
	if err := os.WriteFile(peer, []byte("echo \"$2 batch $4 threads $6: fwd+bwd median 100.00 ms (min 99.00, max 101.00)\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"bench", "--nets", "cifar10_quick", "--reps", "2", "--iters", "1", "--warmup", "0", "--thread-list", "1",
		"--peer-nets", peer, "--python", "/bin/sh", "--peak-time", "1ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr.String(), stdout.String())
	}
	out := stdout.String()
	// Warnings go to stderr, apart from the results (issue 25 item 9).
	if !strings.Contains(stderr.String(), "takes no --blas-threads") || strings.Contains(out, "takes no --blas-threads") {
		t.Errorf("the peer's --blas-threads warning is not on stderr alone:\nstdout %s\nstderr %s", out, stderr.String())
	}
	for _, want := range []string{"FMA peak", "sgemm n=512", "FLOPs per iteration: 2 per multiply-add",
		"rep 2 threads 1  peer  median   100.000 ms", "cifar10_quick      4       1 fwd+bwd"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The table row: dsgd's median, the peer's 100 ms, their ratio and
	// cifar10_quick's 0.28 GFLOP per iteration (6.92 at batch 100).
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "cifar10_quick ") {
			continue
		}
		// name batch threads timed dsgd (range) peer (range) ratio GFLOP/it GFLOP/s %peak
		f := strings.Fields(line)
		if len(f) != 12 {
			t.Fatalf("table row %q", line)
		}
		ours, err1 := strconv.ParseFloat(f[4], 64)
		ratio, err2 := strconv.ParseFloat(f[8], 64)
		if err1 != nil || err2 != nil || f[6] != "100.00" || f[7] != "(100.00-100.00)" || math.Abs(ratio-ours/100) > 0.0011 || f[9] != "0.28" {
			t.Errorf("table row %q", line)
		}
	}
	// A missing peer script is named, with the fix.
	stderr.Reset()
	code = run(ctx, []string{"bench", "--nets", "caffenet", "--peer-nets", filepath.Join(dir, "missing.py")}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--peer-nets") || !strings.Contains(stderr.String(), "missing.py") {
		t.Errorf("missing peer: exit %d, %q", code, stderr.String())
	}
}
