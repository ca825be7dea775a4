package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/model"
	"dsgd/tensor"
	"dsgd/train"
)

// runBench trains LeNet with dsgd and with the PyTorch peer, same batch,
// same thread counts, interleaved in one invocation, and prints the ratio
// of per-iteration times.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var m modelFlags
	m.register(fs)
	peer := fs.String("peer", "../shared/peer/torch_lenet.py", "the peer's LeNet script (\"none\" to run dsgd only)")
	python := fs.String("python", "/usr/bin/python3", "the Python that has torch")
	iters := fs.Int("iters", 1000, "iterations per run")
	warmup := fs.Int("warmup", 20, "iterations excluded from timing (as the peer)")
	threadList := fs.String("thread-list", "1,2", "comma-separated thread counts to compare at")
	reps := fs.Int("reps", 1, "repeat each pair of runs this many times")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if m.model != "lenet" || m.net != "" || m.solver != "" {
		fmt.Fprintln(stderr, "dsgd bench: the peer trains LeNet only; bench takes no --model, --net or --solver")
		return errUsage
	}
	var threads []int
	for _, f := range strings.Split(*threadList, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t <= 0 {
			fmt.Fprintf(stderr, "dsgd bench: --thread-list: bad thread count %q\n", f)
			return errUsage
		}
		threads = append(threads, t)
	}
	if *iters <= *warmup {
		fmt.Fprintln(stderr, "dsgd bench: --iters must exceed --warmup")
		return errUsage
	}
	if *peer != "none" {
		if _, err := os.Stat(*peer); err != nil {
			return fmt.Errorf("--peer: %w (run from the repository root, or pass --peer PATH, or --peer none)", err)
		}
	}
	fmt.Fprintf(stdout, "bench: LeNet, batch 64, %d iterations per run (first %d untimed), GEMM %s; peer %s\n", *iters, *warmup, tensor.Backend, *peer)
	gf := gemmPeak()
	fmt.Fprintf(stdout, "bench: OpenBLAS-path sgemm peak, one thread, n=512: %.1f GFLOP/s\n", gf)
	type row struct {
		threads          int
		ours, peer       stats
		oursFlops, peerA float64
		oursAcc          float64
	}
	var rows []row
	for r := 0; r < *reps; r++ {
		for _, t := range threads {
			m.threads = t
			ours, flops, acc, err := benchOurs(ctx, &m, *iters, *warmup)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "dsgd  threads %d: mean %.3f ms  median %.3f ms  p95 %.3f ms  (%.1f GFLOP/s, %.1f%% of one-thread peak x %d)  test acc %.4f\n",
				t, ours.mean, ours.median, ours.p95, flops/ours.median/1e6, 100*flops/ours.median/1e6/(gf*float64(t)), t, acc)
			rw := row{threads: t, ours: ours, oursFlops: flops, oursAcc: acc}
			if *peer != "none" {
				ps, acc, err := benchPeer(ctx, *python, *peer, t, *iters, *warmup, m.data)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "torch threads %d: mean %.3f ms  median %.3f ms  p95 %.3f ms  test acc %.4f\n", t, ps.mean, ps.median, ps.p95, acc)
				rw.peer, rw.peerA = ps, acc
			}
			rows = append(rows, rw)
		}
	}
	if *peer == "none" {
		return nil
	}
	fmt.Fprintf(stdout, "\n%-8s %12s %12s %14s %12s\n", "threads", "dsgd ms", "torch ms", "ratio (median)", "ratio (mean)")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-8d %12.3f %12.3f %14.3f %12.3f\n", r.threads, r.ours.median, r.peer.median, r.ours.median/r.peer.median, r.ours.mean/r.peer.mean)
	}
	fmt.Fprintln(stdout, "ratio = dsgd time / torch time per iteration: below 1 means dsgd is faster")
	return nil
}

type stats struct{ mean, median, p95 float64 }

func summarize(ms []float64) stats {
	s := slices.Clone(ms)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return stats{mean: sum / float64(len(s)), median: s[len(s)/2], p95: s[len(s)*95/100]}
}

// benchOurs trains LeNet for iters iterations and returns the per-iteration
// times after warmup, the FLOPs of one iteration and the test accuracy.
func benchOurs(ctx context.Context, m *modelFlags, iters, warmup int) (stats, float64, float64, error) {
	j, err := m.load()
	if err != nil {
		return stats{}, 0, 0, err
	}
	if err := j.openData(m, true, 1); err != nil {
		return stats{}, 0, 0, err
	}
	defer j.close()
	var times []float64
	cfg := train.Config{
		Train: j.train.Spec, Test: j.test.Spec,
		TrainShapes: j.trainShapes, TestShapes: j.testShapes,
		TrainFeeds: j.trainFeeds, TestFeeds: j.testFeeds,
		Solver: j.solver.Solver, MaxIter: iters, TestIter: 100,
		Seed: j.seed, Threads: m.threads,
		OnIter: func(iter int, _ float64, d time.Duration) {
			if iter >= warmup {
				times = append(times, float64(d)/float64(time.Millisecond))
			}
		},
	}
	tr, err := train.New(cfg)
	if err != nil {
		return stats{}, 0, 0, err
	}
	res, err := tr.Run(ctx)
	if err != nil {
		return stats{}, 0, 0, err
	}
	acc, _ := res.Final().Get("accuracy")
	return summarize(times), iterFlops(tr.Net()), acc, nil
}

// iterFlops estimates the floating-point operations of one training
// iteration from the convolution and inner-product layers: 2 per
// multiply-add forward, and twice that backward (weight and data
// gradients), less the data gradient of a first layer that reads the input.
func iterFlops(net *model.Net) float64 {
	blocks := net.Blocks()
	var total float64
	first := true
	for _, li := range net.Layers() {
		if li.Type != "Convolution" && li.Type != "InnerProduct" {
			continue
		}
		var w tensor.Shape
		for _, b := range blocks {
			if b.Layer == li.Name {
				w = b.Shape
				break
			}
		}
		if w == nil || len(li.Tops) == 0 {
			continue
		}
		top := li.Tops[0]
		var macs float64
		if li.Type == "Convolution" {
			macs = float64(top.Count()) * float64(w.CountFrom(1))
		} else {
			macs = float64(top.Count()) * float64(w.Count()) / float64(top[len(top)-1])
		}
		f := 2 * macs * 3
		if first {
			f = 2 * macs * 2
			first = false
		}
		total += f
	}
	return total
}

// gemmPeak measures one-thread sgemm at n=512, the reference the GEMM
// efficiency is reported against.
func gemmPeak() float64 {
	const n = 512
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7)*0.1+0.1, float32(i%5)*0.1+0.1
	}
	best := 0.0
	for r := 0; r < 5; r++ {
		t0 := time.Now()
		tensor.Gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		best = max(best, 2*n*n*n/time.Since(t0).Seconds()/1e9)
	}
	return best
}

var (
	peerTimes = regexp.MustCompile(`iter ms \(excluding first \d+\): mean ([0-9.]+)\s+median ([0-9.]+)\s+std [0-9.]+\s+p95 ([0-9.]+)`)
	peerAcc   = regexp.MustCompile(`final TEST acc ([0-9.]+)`)
)

func benchPeer(ctx context.Context, python, script string, threads, iters, warmup int, dataDir string) (stats, float64, error) {
	args := []string{script, "--iters", fmt.Sprint(iters), "--warmup", fmt.Sprint(warmup), "--threads", fmt.Sprint(threads), "--blas-threads", "1", "--display", "0"}
	if dataDir != "" {
		args = append(args, "--data", dataDir)
	}
	cmd := exec.CommandContext(ctx, python, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return stats{}, 0, fmt.Errorf("peer %s %s: %w\n%s", python, script, err, tail(out.String(), 2000))
	}
	var st stats
	var acc float64
	sc := bufio.NewScanner(&out)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if mm := peerTimes.FindStringSubmatch(line); mm != nil {
			st.mean, _ = strconv.ParseFloat(mm[1], 64)
			st.median, _ = strconv.ParseFloat(mm[2], 64)
			st.p95, _ = strconv.ParseFloat(mm[3], 64)
			found = true
		}
		if mm := peerAcc.FindStringSubmatch(line); mm != nil {
			acc, _ = strconv.ParseFloat(mm[1], 64)
		}
	}
	if !found {
		return stats{}, 0, fmt.Errorf("peer %s: no timing line in its output:\n%s", script, tail(out.String(), 2000))
	}
	return st, acc, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
