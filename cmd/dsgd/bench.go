package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/engine/cpuinfo"
	"dsgd/engine/layers"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
	"dsgd/simulator/calib"
	"dsgd/training/job"
	"dsgd/training/train"
)

// benchNet is one net of `dsgd bench`: a zoo model, the batch it is timed
// at, its default iteration counts and how its peer runs it.
type benchNet struct {
	name  string // zoo model, and torch_nets.py's --model
	batch int
	// data is the synthetic set dsgd feeds it: the net's input shape
	// (before the zoo file's crop), batch images. "" for LeNet, which
	// trains on its real data set as its peer does.
	data          string
	iters, warmup int // timed and untimed iterations per run
	// net is a prototxt the net is read from, relative to the repository
	// root, for a net the zoo does not have ("" for a zoo model).
	net string
}

// trains says whether the net is timed training (forward, backward, the
// solver's update and the data pipeline: LeNet against torch_lenet.py,
// which trains) rather than forward+backward on one batch of synthetic
// data (the others, against torch_nets.py).
func (n benchNet) trains() bool { return n.data == "" }

// benchNets are the nets `dsgd bench` can compare, in the order it runs
// them. The iteration counts keep a run of all four at 1 and 2 threads,
// three repetitions, to a few minutes.
var benchNets = []benchNet{
	{name: "lenet", batch: 64, iters: 200, warmup: 20},
	{name: "cifar10_quick", batch: 100, data: "synthetic:N=100,C=3,H=32,W=32,classes=10", iters: 10, warmup: 2},
	{name: "caffenet", batch: 32, data: "synthetic:N=32,C=3,H=256,W=256,classes=256", iters: 2, warmup: 1},
	{name: "googlenet", batch: 32, data: "synthetic:N=32,C=3,H=256,W=256,classes=256", iters: 2, warmup: 1},
	{name: "resnet18", batch: 16, data: "synthetic:N=16,C=3,H=256,W=256,classes=1000", iters: 2, warmup: 1, net: "bench/resnet18.prototxt"},
}

func benchNetNames() []string {
	var s []string
	for _, n := range benchNets {
		s = append(s, n.name)
	}
	return s
}

// benchConfig is what `dsgd bench`'s flags ask for.
type benchConfig struct {
	nets      []benchNet // with the iteration counts resolved
	threads   []int
	reps      int
	peerLeNet string // "none" runs dsgd alone
	peerNets  string
	python    string
	data      string // LeNet's data set ("" for its zoo source)
	seed      int64
	peakTime  time.Duration
	// isas are --isa's caps: with any, runBench runs itself once per cap
	// as a child (see runBenchISAs).
	isas []cpuinfo.ISA
	// rowsTo is where a child writes its rows as JSON for its parent.
	rowsTo string
	// gpu, when set, times the nets on that GPU (runBenchGPU); tf32
	// allows TF32 tensor cores there, on both sides.
	gpu      string
	tf32     bool
	fastest  bool
	peerGPUs string // LeNet's GPU peer
}

func parseBenchFlags(args []string, stderr io.Writer) (benchConfig, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	nets := fs.String("nets", strings.Join(benchNetNames(), ","), "comma-separated nets to compare: "+strings.Join(benchNetNames(), ", "))
	threadList := fs.String("thread-list", "1,2", "comma-separated thread counts to compare at (dsgd's --threads, the peer's --threads)")
	reps := fs.Int("reps", 3, "repetitions of each dsgd/peer pair of runs; the table shows their medians and ranges")
	iters := fs.String("iters", "", "timed iterations per run: N for every net, or NET=N,... (defaults: "+perNetDefaults(func(n benchNet) int { return n.iters })+")")
	warmup := fs.String("warmup", "", "untimed iterations before them, the same way (defaults: "+perNetDefaults(func(n benchNet) int { return n.warmup })+")")
	var c benchConfig
	fs.StringVar(&c.peerLeNet, "peer", "../shared/peer/torch_lenet.py", "the PyTorch peer's LeNet script (\"none\": time dsgd alone)")
	fs.StringVar(&c.peerNets, "peer-nets", "../shared/peer/torch_nets.py", "the PyTorch peer's script for the other nets (\"none\": time dsgd alone)")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "the Python that has torch")
	fs.StringVar(&c.data, "data", "", "LeNet's data set (default: its zoo source, fashion-mnist); the other nets get synthetic data of their shape")
	fs.Int64Var(&c.seed, "seed", -1, "random seed for weights and data order (default: each solver's)")
	fs.DurationVar(&c.peakTime, "peak-time", 200*time.Millisecond, "length of each FMA peak run (best of 5)")
	fs.StringVar(&c.gpu, "gpu", "", "time forward+backward on this GPU `ID` instead, against the peers with --device cuda, at the GPU batches (LeNet 64, cifar10_quick 100, CaffeNet 256, GoogLeNet 128, ResNet-18 64)")
	fs.BoolVar(&c.fastest, "gpu-fastest", false, "with --gpu, take cuDNN's fastest convolution algorithms even where they are not deterministic (as the peer's cudnn.benchmark does)")
	fs.BoolVar(&c.tf32, "tf32", false, "with --gpu, allow TF32 tensor cores for float32 products, on both sides")
	fs.StringVar(&c.peerGPUs, "peer-lenet-gpu", "bench/torch_lenet_gpu.py", "with --gpu, LeNet's PyTorch peer")
	isaList := fs.String("isa", "", "comma-separated ISA caps (oneDNN's names: "+strings.Join(cpuinfo.ISANames(), ", ")+
		"): one run of everything per cap, dsgd and its peers under ONEDNN_MAX_CPU_ISA and the matching OPENBLAS_CORETYPE, in one table (default: no cap, in this process)")
	fs.StringVar(&c.rowsTo, "rows-to", "", "internal, for --isa: write the table's rows as JSON to this file")
	if err := parseFlags(fs, args, stderr); err != nil {
		return c, err
	}
	bad := func(format string, a ...any) (benchConfig, error) {
		fmt.Fprintf(stderr, "dsgd bench: "+format+"\n", a...)
		return c, errUsage
	}
	for _, f := range strings.Split(*threadList, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t <= 0 {
			return bad("--thread-list: bad thread count %q", f)
		}
		c.threads = append(c.threads, t)
	}
	if *reps < 1 {
		return bad("--reps %d: want at least 1", *reps)
	}
	c.reps = *reps
	isas, err := parseISAList(*isaList)
	if err != nil {
		return bad("--isa: %v", err)
	}
	c.isas = isas
	if c.peakTime <= 0 {
		return bad("--peak-time %v: want a positive duration", c.peakTime)
	}
	for _, f := range strings.Split(*nets, ",") {
		name := strings.TrimSpace(f)
		i := slices.IndexFunc(benchNets, func(n benchNet) bool { return n.name == name })
		if i < 0 {
			return bad("--nets: no net %q; the nets are %s", name, strings.Join(benchNetNames(), ", "))
		}
		if slices.ContainsFunc(c.nets, func(n benchNet) bool { return n.name == name }) {
			return bad("--nets: %s given twice", name)
		}
		c.nets = append(c.nets, benchNets[i])
	}
	it, err := parsePerNet(*iters, 1)
	if err != nil {
		return bad("--iters: %v", err)
	}
	wu, err := parsePerNet(*warmup, 0)
	if err != nil {
		return bad("--warmup: %v", err)
	}
	for i := range c.nets {
		n := &c.nets[i]
		if v, ok := it[n.name]; ok {
			n.iters = v
		} else if v, ok := it[""]; ok {
			n.iters = v
		}
		if v, ok := wu[n.name]; ok {
			n.warmup = v
		} else if v, ok := wu[""]; ok {
			n.warmup = v
		}
	}
	return c, nil
}

func perNetDefaults(f func(benchNet) int) string {
	var s []string
	for _, n := range benchNets {
		s = append(s, fmt.Sprintf("%s=%d", n.name, f(n)))
	}
	return strings.Join(s, ",")
}

// parsePerNet parses an iteration count given for every net ("5", key "")
// or per net ("caffenet=2,googlenet=2"); every value must be at least min.
// "" gives an empty map.
func parsePerNet(s string, min int) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	atoi := func(v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			return 0, fmt.Errorf("%q is not an integer of at least %d", v, min)
		}
		return n, nil
	}
	if !strings.Contains(s, "=") {
		n, err := atoi(s)
		if err != nil {
			return nil, err
		}
		out[""] = n
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not NET=N", kv)
		}
		if !slices.Contains(benchNetNames(), k) {
			return nil, fmt.Errorf("no net %q; the nets are %s", k, strings.Join(benchNetNames(), ", "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		n, err := atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		out[k] = n
	}
	return out, nil
}

// benchRow collects one net at one thread count over the repetitions.
type benchRow struct {
	net        benchNet
	threads    int
	dsgd, peer []float64 // per repetition: median ms per iteration
	flops      float64   // per iteration, forward+backward
}

// runBench times the nets with dsgd and with the PyTorch peer, same batch,
// same thread counts, interleaved in one invocation, and prints per net
// and thread count the medians, their ratio and the achieved FLOP rate
// against the chip's FMA peak.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	if len(c.isas) > 0 {
		return runBenchISAs(ctx, c, args, stdout, stderr)
	}
	if c.gpu != "" {
		return runBenchGPU(ctx, c, stdout)
	}
	needLeNet, needNets := false, false
	for _, n := range c.nets {
		needLeNet = needLeNet || n.trains()
		needNets = needNets || !n.trains()
		if n.net != "" {
			if _, err := os.Stat(n.net); err != nil {
				return fmt.Errorf("--nets %s: %w (run dsgd bench from the repository root)", n.name, err)
			}
		}
	}
	for _, p := range []struct {
		flag, path string
		need       bool
	}{{"--peer", c.peerLeNet, needLeNet}, {"--peer-nets", c.peerNets, needNets}} {
		if p.need && p.path != "none" {
			if _, err := os.Stat(p.path); err != nil {
				return fmt.Errorf("%s: %w (run from the repository root, or pass %s PATH, or %s none)", p.flag, err, p.flag, p.flag)
			}
		}
	}
	netsBLAS := c.peerNets != "none" && needNets && peerTakesBLASThreads(c.peerNets)

	model := cpuinfo.ModelName()
	if model == "" {
		model = "unknown model"
	}
	fmt.Fprintf(stdout, "bench: %s, CPU %s (%d logical CPUs; %v), GEMM %s, %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), model, runtime.NumCPU(), cpuinfo.Detect(), tensor.Info(), runtime.Version())
	conv, _ := layers.ConvEngine()
	fmt.Fprintf(stdout, "bench: convolution, pooling and LRN: %s\n", conv)
	blasKernel := "" // OpenBLAS's core; the pure-Go GEMM has no ISA to cap
	if tensor.Info().Library == "openblas" {
		blasKernel = tensor.Info().Kernel
	}
	isa := checkCap(stdout, stderr, conv, blasKernel)
	for _, v := range peerUnsetEnv {
		if val, ok := os.LookupEnv(v); ok && !peerKeeps(v) {
			fmt.Fprintf(stdout, "bench: the peers run without %s=%s from this environment, so their OpenBLAS picks its own kernel\n", v, val)
		}
	}
	fmt.Fprintf(stdout, "bench: peers: LeNet %s, other nets %s, with %s\n", c.peerLeNet, c.peerNets, c.python)
	if needNets && c.peerNets != "none" && !netsBLAS {
		fmt.Fprintf(stderr, "bench: warning: %s takes no --blas-threads: at more than one thread its OpenBLAS (fully connected layers) runs as many threads as torch's OpenMP\n", c.peerNets)
	}
	peaks := measurePeaks(c.threads, c.peakTime, stdout)
	gf := gemmPeak()
	fmt.Fprintf(stdout, "bench: sgemm n=512 through tensor.Gemm (%s), one thread: %.1f GFLOP/s", tensor.Backend, gf)
	if p, ok := peaks[1]; ok {
		fmt.Fprintf(stdout, ", %.0f%% of the one-thread FMA peak", 100*gf/p)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "bench: FLOPs per iteration: %s\n", flopsHow)

	var rows []*benchRow
	for _, n := range c.nets {
		what := "forward+backward on one synthetic batch (" + n.data + ")"
		if n.trains() {
			what = "training: forward, backward, update and data"
		}
		fmt.Fprintf(stdout, "\n%s, batch %d: %s; %s after %d untimed, %s\n", n.name, n.batch, what, plural(n.iters, "timed iteration"), n.warmup, plural(c.reps, "repetition"))
		byThreads := map[int]*benchRow{}
		for _, t := range c.threads {
			r := &benchRow{net: n, threads: t}
			byThreads[t] = r
			rows = append(rows, r)
		}
		for rep := 1; rep <= c.reps; rep++ {
			for _, t := range c.threads {
				r := byThreads[t]
				ours, flops, err := benchOurs(ctx, c, n, t)
				if err != nil {
					return fmt.Errorf("%s, %d threads: %w", n.name, t, err)
				}
				r.flops = flops
				r.dsgd = append(r.dsgd, ours.median)
				fmt.Fprintf(stdout, "  rep %d threads %d  dsgd  median %9.3f ms  mean %9.3f  p95 %9.3f\n", rep, t, ours.median, ours.mean, ours.p95)
				var ps stats
				switch {
				case n.trains() && c.peerLeNet != "none":
					ps, err = benchPeerLeNet(ctx, c, n, t)
				case !n.trains() && c.peerNets != "none":
					ps, err = benchPeerNet(ctx, c, n, t, netsBLAS)
				default:
					continue
				}
				if err != nil {
					return fmt.Errorf("%s, %d threads: %w", n.name, t, err)
				}
				r.peer = append(r.peer, ps.median)
				fmt.Fprintf(stdout, "  rep %d threads %d  peer  median %9.3f ms\n", rep, t, ps.median)
			}
		}
	}
	fmt.Fprintln(stdout)
	printBenchTable(stdout, rows, peaks)
	if c.rowsTo != "" {
		return writeBenchRows(c.rowsTo, tableRows(rows, peaks, isa))
	}
	return nil
}

// flopsHow says how the FLOP column is counted, for the output.
const flopsHow = "2 per multiply-add of every Convolution and InnerProduct layer, from its output and weight shapes " +
	"(conv: output elements x in/group x kh x kw; inner product: output elements x inputs); forward once, " +
	"backward twice (weight and input gradients; no input gradient for a layer reading the net's input); " +
	"biases, pooling, LRN, ReLU, concat, dropout and softmax (under 1%) not counted"

// printBenchTable prints the summary: per net and thread count the
// medians over repetitions with their ranges, the ratio of medians, the
// FLOPs of one iteration, dsgd's achieved rate and its share of the FMA
// peak at that thread count.
func printBenchTable(w io.Writer, rows []*benchRow, peaks map[int]float64) {
	printRows(w, tableRows(rows, peaks, capCheck{}))
}

// msRange formats the median of per-repetition medians and their range.
func msRange(v []float64) string {
	if len(v) == 1 {
		return fmt.Sprintf("%.2f", v[0])
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", median(v), slices.Min(v), slices.Max(v))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// measurePeaks measures the FMA peak at each thread count of the list
// that this process can run at once, and at all cores, printing each with
// its formula; it returns GFLOP/s by thread count (empty, with the reason
// printed, where no kernel can run).
func measurePeaks(threads []int, runFor time.Duration, w io.Writer) map[int]float64 {
	out := map[int]float64{}
	counts := append([]int{1}, threads...)
	counts = append(counts, runtime.GOMAXPROCS(0))
	slices.Sort(counts)
	for _, t := range slices.Compact(counts) {
		if t > runtime.GOMAXPROCS(0) {
			fmt.Fprintf(w, "bench: FMA peak at %d threads: not measured (GOMAXPROCS %d)\n", t, runtime.GOMAXPROCS(0))
			continue
		}
		p, err := cpuinfo.MeasurePeak(t, runFor, 5)
		if errors.Is(err, cpuinfo.ErrNoKernel) {
			fmt.Fprintf(w, "bench: FMA peak: not measured: %v\n", err)
			return out
		}
		if err != nil {
			fmt.Fprintf(w, "bench: FMA peak at %d threads: %v\n", t, err)
			continue
		}
		out[t] = p.GFLOPS()
		fmt.Fprintf(w, "bench: FMA peak: %s\n", p.Formula())
	}
	return out
}

type stats struct{ mean, median, p95 float64 }

func summarize(ms []float64) stats {
	s := slices.Clone(ms)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return stats{mean: sum / float64(len(s)), median: median(s), p95: s[len(s)*95/100]}
}

// benchOurs runs one dsgd run of net at threads threads and returns its
// per-iteration times after warm-up and the FLOPs of one iteration.
func benchOurs(ctx context.Context, c benchConfig, n benchNet, threads int) (stats, float64, error) {
	m := modelFlags{model: n.name, net: n.net, netOnly: n.net != "", data: n.data, threads: threads, seed: c.seed, batch: n.batch}
	if n.trains() {
		m.data, m.shuffle = c.data, true
		return benchTrain(ctx, &m, n.iters+n.warmup, n.warmup)
	}
	j, net, err := job.TrainNet(ctx, m.options(), threads)
	if err != nil {
		return stats{}, 0, err
	}
	defer j.Close()
	var ms []float64
	for i := range n.iters {
		w := 0
		if i == 0 {
			w = n.warmup
		}
		tm, err := calib.Time(ctx, net, w, 1)
		if err != nil {
			return stats{}, 0, err
		}
		ms = append(ms, float64(tm.Wall)/float64(time.Millisecond))
	}
	return summarize(ms), iterFlops(j.Train.Spec, net), nil
}

// benchTrain trains the model for iters iterations and returns the
// per-iteration times after warmup and the FLOPs of one iteration's
// forward and backward passes.
func benchTrain(ctx context.Context, m *modelFlags, iters, warmup int) (stats, float64, error) {
	j, err := m.load()
	if err != nil {
		return stats{}, 0, err
	}
	if err := j.OpenData(true, 1); err != nil {
		return stats{}, 0, err
	}
	defer j.Close()
	var times []float64
	cfg := train.Config{
		Train: j.Train.Spec, Test: j.Test.Spec,
		TrainShapes: j.TrainShapes, TestShapes: j.TestShapes,
		TrainFeeds: j.TrainFeeds, TestFeeds: j.TestFeeds,
		Solver: j.Solver.Solver, Config: scheme.Config{MaxIter: iters}, TestIter: 1,
		Seed: j.Seed, Threads: m.threads,
	}
	onIter := func(iter int, _ float64, d time.Duration) {
		if iter >= warmup {
			times = append(times, float64(d)/float64(time.Millisecond))
		}
	}
	tr, err := train.New(cfg)
	if err != nil {
		return stats{}, 0, err
	}
	if _, err := tr.Run(ctx, train.Deps{OnIter: onIter}); err != nil {
		return stats{}, 0, err
	}
	if len(times) == 0 {
		return stats{}, 0, errors.New("no iteration was timed")
	}
	return summarize(times), iterFlops(j.Train.Spec, tr.Net()), nil
}

// gemmPeak measures one-thread sgemm at n=512 through tensor.Gemm, the
// rate the GEMM backend reaches on a square product that fits the caches.
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
	peerLeNetTimes = regexp.MustCompile(`iter ms \(excluding first \d+\): mean ([0-9.]+)\s+median ([0-9.]+)\s+std [0-9.]+\s+p95 ([0-9.]+)`)
	peerNetTimes   = regexp.MustCompile(`fwd\+bwd median ([0-9.]+) ms \(min ([0-9.]+), max ([0-9.]+)\)`)
)

// benchPeerLeNet trains LeNet with torch_lenet.py: the same iterations,
// warm-up and threads, one OpenBLAS thread (the peer README's fair
// setting), on the same data set.
func benchPeerLeNet(ctx context.Context, c benchConfig, n benchNet, threads int) (stats, error) {
	args := []string{c.peerLeNet, "--iters", fmt.Sprint(n.iters + n.warmup), "--warmup", fmt.Sprint(n.warmup), "--threads", fmt.Sprint(threads), "--blas-threads", "1", "--display", "0"}
	if c.data != "" {
		args = append(args, "--data", c.data)
	}
	out, err := runPeerScript(ctx, c.python, args)
	if err != nil {
		return stats{}, err
	}
	return parsePeerLeNet(c.peerLeNet, out)
}

func parsePeerLeNet(script, out string) (stats, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if mm := peerLeNetTimes.FindStringSubmatch(sc.Text()); mm != nil {
			var st stats
			st.mean, _ = strconv.ParseFloat(mm[1], 64)
			st.median, _ = strconv.ParseFloat(mm[2], 64)
			st.p95, _ = strconv.ParseFloat(mm[3], 64)
			return st, nil
		}
	}
	return stats{}, fmt.Errorf("peer %s: no timing line (\"iter ms (excluding first N): mean ... median ...\") in its output:\n%s", script, tail(out, 2000))
}

// benchPeerNet times net in torch_nets.py: forward+backward on random
// data of the same shape, same batch, iterations and threads.
func benchPeerNet(ctx context.Context, c benchConfig, n benchNet, threads int, blasThreads bool) (stats, error) {
	args := []string{c.peerNets, "--model", n.name, "--batch", fmt.Sprint(n.batch), "--threads", fmt.Sprint(threads), "--iters", fmt.Sprint(n.iters), "--warmup", fmt.Sprint(n.warmup)}
	if blasThreads {
		args = append(args, "--blas-threads", "1")
	}
	out, err := runPeerScript(ctx, c.python, args)
	if err != nil {
		return stats{}, err
	}
	return parsePeerNet(c.peerNets, out)
}

func parsePeerNet(script, out string) (stats, error) {
	mm := peerNetTimes.FindStringSubmatch(out)
	if mm == nil {
		return stats{}, fmt.Errorf("peer %s: no timing line (\"fwd+bwd median X ms (min Y, max Z)\") in its output:\n%s", script, tail(out, 2000))
	}
	med, _ := strconv.ParseFloat(mm[1], 64)
	return stats{median: med, mean: med}, nil
}

// peerTakesBLASThreads says whether a peer script has a --blas-threads
// flag (torch_lenet.py does; torch_nets.py did not when this was written).
func peerTakesBLASThreads(script string) bool {
	b, err := os.ReadFile(script)
	return err == nil && bytes.Contains(b, []byte("--blas-threads"))
}

// peerUnsetEnv are the variables a peer runs without: some machines pin
// OpenBLAS's kernel and L2 size in the environment for old builds'
// sake, which slows the peer's own OpenBLAS below what it would pick (here
// Haswell where it picks Cooperlake). dsgd chooses its GEMM kernel itself,
// so the peer gets its best too.
var peerUnsetEnv = []string{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}

// peerEnv is this process's environment less peerUnsetEnv, except that
// under an ISA cap (ONEDNN_MAX_CPU_ISA, as --isa sets) the peers keep
// OPENBLAS_CORETYPE: it is the cap's core, which they must run under too.
func peerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(peerUnsetEnv, name) || peerKeeps(name) {
			env = append(env, kv)
		}
	}
	return env
}

func runPeerScript(ctx context.Context, python string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Env = peerEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("peer %s %s: %w\n%s", python, strings.Join(args, " "), err, tail(out.String(), 2000))
	}
	return out.String(), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
