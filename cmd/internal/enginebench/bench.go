package enginebench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
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

// Net is one net of `dsgd bench`: a zoo model, the batch it is timed
// at, its default iteration counts and how its peer runs it.
type Net struct {
	Name  string // zoo model, and torch_nets.py's --model
	Batch int
	// Data is the synthetic set dsgd feeds it: the net's input shape
	// (before the zoo file's crop), batch images. "" for LeNet, which
	// trains on its real data set as its peer does.
	Data          string
	Iters, Warmup int // timed and untimed iterations per run
	// File is a prototxt the net is read from, relative to the repository
	// root, for a net the zoo does not have ("" for a zoo model).
	File string
}

// Trains says whether the net is timed training (forward, backward, the
// solver's update and the data pipeline: LeNet against torch_lenet.py,
// which trains) rather than forward+backward on one batch of synthetic
// data (the others, against torch_nets.py).
func (n Net) Trains() bool { return n.Data == "" }

// Nets are the nets `dsgd bench` can compare, in the order it runs
// them. The iteration counts keep a run of all four at 1 and 2 threads,
// three repetitions, to a few minutes.
var Nets = []Net{
	{Name: "lenet", Batch: 64, Iters: 200, Warmup: 20},
	{Name: "cifar10_quick", Batch: 100, Data: "synthetic:N=100,C=3,H=32,W=32,classes=10", Iters: 10, Warmup: 2},
	{Name: "caffenet", Batch: 32, Data: "synthetic:N=32,C=3,H=256,W=256,classes=256", Iters: 2, Warmup: 1},
	{Name: "googlenet", Batch: 32, Data: "synthetic:N=32,C=3,H=256,W=256,classes=256", Iters: 2, Warmup: 1},
	{Name: "resnet18", Batch: 16, Data: "synthetic:N=16,C=3,H=256,W=256,classes=1000", Iters: 2, Warmup: 1, File: "bench/resnet18.prototxt"},
}

// NetNames are the names of Nets, in order.
func NetNames() []string {
	var s []string
	for _, n := range Nets {
		s = append(s, n.Name)
	}
	return s
}

// Config is what `dsgd bench`'s flags ask for.
type Config struct {
	Nets      []Net // with the iteration counts resolved
	Threads   []int
	Reps      int
	PeerLeNet string // "none" runs dsgd alone
	PeerNets  string
	Python    string
	Data      string // LeNet's data set ("" for its zoo source)
	Seed      int64
	PeakTime  time.Duration
	// ISAs are --isa's caps: with any, the command runs itself once per
	// cap as a child (see RunISAs).
	ISAs []cpuinfo.ISA
	// RowsTo is where a child writes its rows as JSON for its parent.
	RowsTo string
	// GPU, when set, times the nets on that GPU (RunGPU; GPUIDs is it
	// checked, one ID); TF32 allows TF32 tensor cores there, on both
	// sides; Fastest takes cuDNN's fastest algorithms.
	GPU          string
	GPUIDs       []int
	TF32         bool
	Fastest      bool
	PeerLeNetGPU string // LeNet's GPU peer
}

// benchRow collects one net at one thread count over the repetitions.
type benchRow struct {
	net        Net
	threads    int
	dsgd, peer []float64 // per repetition: median ms per iteration
	flops      float64   // per iteration, forward+backward
}

// Run times the nets with dsgd and with the PyTorch peer, same batch,
// same thread counts, interleaved in one invocation, and prints per net
// and thread count the medians, their ratio and the achieved FLOP rate
// against the chip's FMA peak; its progress and warnings go to stderr.
// With c.RowsTo it also writes the table's rows there for an --isa
// parent (see RunISAs).
func Run(ctx context.Context, c Config, stdout, stderr io.Writer) error {
	needLeNet, needNets := false, false
	for _, n := range c.Nets {
		needLeNet = needLeNet || n.Trains()
		needNets = needNets || !n.Trains()
		if n.File != "" {
			if _, err := os.Stat(n.File); err != nil {
				return fmt.Errorf("--nets %s: %w (run dsgd bench from the repository root)", n.Name, err)
			}
		}
	}
	for _, p := range []struct {
		flag, path string
		need       bool
	}{{"--peer", c.PeerLeNet, needLeNet}, {"--peer-nets", c.PeerNets, needNets}} {
		if p.need && p.path != "none" {
			if _, err := os.Stat(p.path); err != nil {
				return fmt.Errorf("%s: %w (run from the repository root, or pass %s PATH, or %s none)", p.flag, err, p.flag, p.flag)
			}
		}
	}
	netsBLAS := c.PeerNets != "none" && needNets && peerTakesBLASThreads(c.PeerNets)

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
	fmt.Fprintf(stdout, "bench: peers: LeNet %s, other nets %s, with %s\n", c.PeerLeNet, c.PeerNets, c.Python)
	if needNets && c.PeerNets != "none" && !netsBLAS {
		fmt.Fprintf(stderr, "bench: warning: %s takes no --blas-threads: at more than one thread its OpenBLAS (fully connected layers) runs as many threads as torch's OpenMP\n", c.PeerNets)
	}
	printSched(stdout, stderr, c.Threads)
	peaks := measurePeaks(c.Threads, c.PeakTime, stdout, "")
	gf := gemmPeak()
	fmt.Fprintf(stdout, "bench: sgemm n=512 through tensor.Gemm (%s), one thread: %.1f GFLOP/s", tensor.Backend, gf)
	if p, ok := peaks[1]; ok {
		fmt.Fprintf(stdout, ", %.0f%% of the one-thread FMA peak", 100*gf/p)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "bench: FLOPs per iteration: %s\n", flopsHow)

	var rows []*benchRow
	for _, n := range c.Nets {
		what := "forward+backward on one synthetic batch (" + n.Data + ")"
		if n.Trains() {
			what = "training: forward, backward, update and data"
		}
		fmt.Fprintf(stdout, "\n%s, batch %d: %s; %s after %d untimed, %s\n", n.Name, n.Batch, what, Plural(n.Iters, "timed iteration"), n.Warmup, Plural(c.Reps, "repetition"))
		byThreads := map[int]*benchRow{}
		for _, t := range c.Threads {
			r := &benchRow{net: n, threads: t}
			byThreads[t] = r
			rows = append(rows, r)
		}
		for rep := 1; rep <= c.Reps; rep++ {
			for _, t := range c.Threads {
				r := byThreads[t]
				ours, flops, err := benchOurs(ctx, c, n, t)
				releaseNet()
				if err != nil {
					return fmt.Errorf("%s, %d threads: %w", n.Name, t, err)
				}
				r.flops = flops
				r.dsgd = append(r.dsgd, ours.Median)
				fmt.Fprintf(stdout, "  rep %d threads %d  dsgd  median %9.3f ms  mean %9.3f  p95 %9.3f%s\n", rep, t, ours.Median, ours.Mean, ours.P95, loadNote())
				warnRealtime(stderr, fmt.Sprintf("after rep %d at %d threads", rep, t))
				var ps Stats
				switch {
				case n.Trains() && c.PeerLeNet != "none":
					ps, err = benchPeerLeNet(ctx, c, n, t)
				case !n.Trains() && c.PeerNets != "none":
					ps, err = benchPeerNet(ctx, c, n, t, netsBLAS)
				default:
					continue
				}
				if err != nil {
					return fmt.Errorf("%s, %d threads: %w", n.Name, t, err)
				}
				r.peer = append(r.peer, ps.Median)
				fmt.Fprintf(stdout, "  rep %d threads %d  peer  median %9.3f ms%s\n", rep, t, ps.Median, loadNote())
			}
		}
	}
	fmt.Fprintln(stdout)
	// A peak measured while another process held the core reads low
	// (and % peak above 100); measured again after the nets, the
	// higher of the two counts.
	for t, p := range measurePeaks(c.Threads, c.PeakTime, stdout, " after the nets") {
		peaks[t] = max(peaks[t], p)
	}
	fmt.Fprintln(stdout)
	printBenchTable(stdout, rows, peaks)
	if c.RowsTo != "" {
		return writeBenchRows(c.RowsTo, tableRows(rows, peaks, isa))
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
	return fmt.Sprintf("%.2f (%.2f-%.2f)", Median(v), slices.Min(v), slices.Max(v))
}

// Plural is "1 what" or "n whats".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Median is the median of v (the mean of the middle two for an even
// length), v left unsorted.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// PeakTrials is how many runs of Config.PeakTime the FMA peak is the
// best of at each thread count: many short runs, so that some run
// whole between another process's time slices on a shared machine (five
// runs of 200 ms read as low as 58 against 88 GFLOP/s on a busy 2-core
// Xeon; fifty of 20 ms did not).
const PeakTrials = 50

// measurePeaks measures the FMA peak at each thread count of the list
// that this process can run at once, and at all cores, printing each with
// its formula and when (when: "" or " after the nets"); it returns
// GFLOP/s by thread count (empty, with the reason printed, where no
// kernel can run).
func measurePeaks(threads []int, runFor time.Duration, w io.Writer, when string) map[int]float64 {
	out := map[int]float64{}
	counts := append([]int{1}, threads...)
	counts = append(counts, runtime.GOMAXPROCS(0))
	slices.Sort(counts)
	for _, t := range slices.Compact(counts) {
		if t > runtime.GOMAXPROCS(0) {
			fmt.Fprintf(w, "bench: FMA peak at %d threads: not measured (GOMAXPROCS %d)\n", t, runtime.GOMAXPROCS(0))
			continue
		}
		p, err := cpuinfo.MeasurePeak(t, runFor, PeakTrials)
		if errors.Is(err, cpuinfo.ErrNoKernel) {
			fmt.Fprintf(w, "bench: FMA peak: not measured: %v\n", err)
			return out
		}
		if err != nil {
			fmt.Fprintf(w, "bench: FMA peak at %d threads: %v\n", t, err)
			continue
		}
		out[t] = p.GFLOPS()
		fmt.Fprintf(w, "bench: FMA peak%s: %s\n", when, p.Formula())
	}
	return out
}

// Stats are a run's per-iteration times in milliseconds: their mean,
// median and 95th percentile.
type Stats struct{ Mean, Median, P95 float64 }

// Summarize is the Stats of ms, a nonempty list of times in
// milliseconds.
func Summarize(ms []float64) Stats {
	s := slices.Clone(ms)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return Stats{Mean: sum / float64(len(s)), Median: Median(s), P95: s[len(s)*95/100]}
}

// releaseNet collects the net of the run just finished and returns its
// memory to the OS before the next run builds another. Without it the
// next net's allocations grew the heap to twice the live one before the
// garbage collector ran: GoogLeNet at batch 32 holds 5.5 GB, and a
// three-repetition run reached 11.4 GB and was killed for memory on the
// shared 24 GB host, and the collection of the old net ran during the
// next run's iterations, on the cores its threads compute on.
func releaseNet() { debug.FreeOSMemory() }

// benchOurs runs one dsgd run of net at threads threads and returns its
// per-iteration times after warm-up and the FLOPs of one iteration.
func benchOurs(ctx context.Context, c Config, n Net, threads int) (Stats, float64, error) {
	o := job.Options{Model: n.Name, Net: n.File, NetOnly: n.File != "", Data: n.Data, Seed: c.Seed, Batch: n.Batch}
	if n.Trains() {
		o.Data, o.Shuffle = c.Data, true
		return benchTrain(ctx, o, threads, n.Iters+n.Warmup, n.Warmup)
	}
	j, net, err := job.TrainNet(ctx, o, threads)
	if err != nil {
		return Stats{}, 0, err
	}
	defer j.Close()
	var ms []float64
	for i := range n.Iters {
		w := 0
		if i == 0 {
			w = n.Warmup
		}
		tm, err := calib.Time(ctx, net, w, 1)
		if err != nil {
			return Stats{}, 0, err
		}
		ms = append(ms, float64(tm.Wall)/float64(time.Millisecond))
	}
	return Summarize(ms), iterFlops(j.Train.Spec, net), nil
}

// benchTrain trains the model for iters iterations and returns the
// per-iteration times after warmup and the FLOPs of one iteration's
// forward and backward passes, at threads threads.
func benchTrain(ctx context.Context, o job.Options, threads, iters, warmup int) (Stats, float64, error) {
	j, err := job.Load(o)
	if err != nil {
		return Stats{}, 0, err
	}
	if err := j.OpenData(true, 1); err != nil {
		return Stats{}, 0, err
	}
	defer j.Close()
	var times []float64
	cfg := train.Config{
		Train: j.Train.Spec, Test: j.Test.Spec,
		TrainShapes: j.TrainShapes, TestShapes: j.TestShapes,
		TrainFeeds: j.TrainFeeds, TestFeeds: j.TestFeeds,
		Solver: j.Solver.Solver, Config: scheme.Config{MaxIter: iters}, TestIter: 1,
		Seed: j.Seed, Threads: threads,
	}
	onIter := func(iter int, _ float64, d time.Duration) {
		if iter >= warmup {
			times = append(times, float64(d)/float64(time.Millisecond))
		}
	}
	tr, err := train.New(cfg)
	if err != nil {
		return Stats{}, 0, err
	}
	if _, err := tr.Run(ctx, train.Deps{OnIter: onIter}); err != nil {
		return Stats{}, 0, err
	}
	if len(times) == 0 {
		return Stats{}, 0, errors.New("no iteration was timed")
	}
	return Summarize(times), iterFlops(j.Train.Spec, tr.Net()), nil
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
func benchPeerLeNet(ctx context.Context, c Config, n Net, threads int) (Stats, error) {
	args := []string{c.PeerLeNet, "--iters", fmt.Sprint(n.Iters + n.Warmup), "--warmup", fmt.Sprint(n.Warmup), "--threads", fmt.Sprint(threads), "--blas-threads", "1", "--display", "0"}
	if c.Data != "" {
		args = append(args, "--data", c.Data)
	}
	out, err := runPeerScript(ctx, c.Python, args)
	if err != nil {
		return Stats{}, err
	}
	return parsePeerLeNet(c.PeerLeNet, out)
}

func parsePeerLeNet(script, out string) (Stats, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if mm := peerLeNetTimes.FindStringSubmatch(sc.Text()); mm != nil {
			var st Stats
			st.Mean, _ = strconv.ParseFloat(mm[1], 64)
			st.Median, _ = strconv.ParseFloat(mm[2], 64)
			st.P95, _ = strconv.ParseFloat(mm[3], 64)
			return st, nil
		}
	}
	return Stats{}, fmt.Errorf("peer %s: no timing line (\"iter ms (excluding first N): mean ... median ...\") in its output:\n%s", script, tail(out, 2000))
}

// benchPeerNet times net in torch_nets.py: forward+backward on random
// data of the same shape, same batch, iterations and threads.
func benchPeerNet(ctx context.Context, c Config, n Net, threads int, blasThreads bool) (Stats, error) {
	args := []string{c.PeerNets, "--model", n.Name, "--batch", fmt.Sprint(n.Batch), "--threads", fmt.Sprint(threads), "--iters", fmt.Sprint(n.Iters), "--warmup", fmt.Sprint(n.Warmup)}
	if blasThreads {
		args = append(args, "--blas-threads", "1")
	}
	out, err := runPeerScript(ctx, c.Python, args)
	if err != nil {
		return Stats{}, err
	}
	return parsePeerNet(c.PeerNets, out)
}

func parsePeerNet(script, out string) (Stats, error) {
	mm := peerNetTimes.FindStringSubmatch(out)
	if mm == nil {
		return Stats{}, fmt.Errorf("peer %s: no timing line (\"fwd+bwd median X ms (min Y, max Z)\") in its output:\n%s", script, tail(out, 2000))
	}
	med, _ := strconv.ParseFloat(mm[1], 64)
	return Stats{Median: med, Mean: med}, nil
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
