package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"dsgd/cmd/internal/enginebench"
	"dsgd/engine/cpuinfo"
)

// runBench is `dsgd bench`: it parses the flags and runs package
// enginebench, which times the nets with dsgd and with the PyTorch peer,
// same batch, same thread counts, interleaved in one invocation, and
// prints per net and thread count the medians, their ratio and the
// achieved FLOP rate against the chip's FMA peak (once per cap with
// --isa; on a GPU with --gpu).
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	if len(c.ISAs) > 0 {
		return enginebench.RunISAs(ctx, c, args, stdout, stderr)
	}
	if c.GPU != "" {
		m := modelFlags{gpu: c.GPU, tf32: c.TF32, fastest: c.Fastest}
		if err := m.checkGPU("bench", stdout); err != nil {
			return err
		}
		if len(m.gpuIDs) != 1 {
			return fmt.Errorf("--gpu %s: bench times one GPU", c.GPU)
		}
		c.GPUIDs = m.gpuIDs
		return enginebench.RunGPU(ctx, c, stdout)
	}
	return enginebench.Run(ctx, c, stdout, stderr)
}

func parseBenchFlags(args []string, stderr io.Writer) (enginebench.Config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	nets := fs.String("nets", strings.Join(enginebench.NetNames(), ","), "comma-separated nets to compare: "+strings.Join(enginebench.NetNames(), ", "))
	threadList := fs.String("thread-list", "1,2", "comma-separated thread counts to compare at (dsgd's --threads, the peer's --threads)")
	reps := fs.Int("reps", 3, "repetitions of each dsgd/peer pair of runs; the table shows their medians and ranges")
	iters := fs.String("iters", "", "timed iterations per run: N for every net, or NET=N,... (defaults: "+perNetDefaults(func(n enginebench.Net) int { return n.Iters })+")")
	warmup := fs.String("warmup", "", "untimed iterations before them, the same way (defaults: "+perNetDefaults(func(n enginebench.Net) int { return n.Warmup })+")")
	var c enginebench.Config
	fs.StringVar(&c.PeerLeNet, "peer", "../shared/peer/torch_lenet.py", "the PyTorch peer's LeNet script (\"none\": time dsgd alone)")
	fs.StringVar(&c.PeerNets, "peer-nets", "../shared/peer/torch_nets.py", "the PyTorch peer's script for the other nets (\"none\": time dsgd alone)")
	fs.StringVar(&c.Python, "python", "/usr/bin/python3", "the Python that has torch")
	fs.StringVar(&c.Data, "data", "", "LeNet's data set (default: its zoo source, fashion-mnist); the other nets get synthetic data of their shape")
	fs.Int64Var(&c.Seed, "seed", -1, "random seed for weights and data order (default: each solver's)")
	fs.DurationVar(&c.PeakTime, "peak-time", 200*time.Millisecond, "length of each FMA peak run (best of 5)")
	fs.StringVar(&c.GPU, "gpu", "", "time forward+backward on this GPU `ID` instead, against the peers with --device cuda, at the GPU batches (LeNet 64, cifar10_quick 100, CaffeNet 256, GoogLeNet 128, ResNet-18 64)")
	fs.BoolVar(&c.Fastest, "gpu-fastest", false, "with --gpu, take cuDNN's fastest convolution algorithms even where they are not deterministic (as the peer's cudnn.benchmark does)")
	fs.BoolVar(&c.TF32, "tf32", false, "with --gpu, allow TF32 tensor cores for float32 products, on both sides")
	fs.StringVar(&c.PeerLeNetGPU, "peer-lenet-gpu", "bench/torch_lenet_gpu.py", "with --gpu, LeNet's PyTorch peer")
	isaList := fs.String("isa", "", "comma-separated ISA caps (oneDNN's names: "+strings.Join(cpuinfo.ISANames(), ", ")+
		"): one run of everything per cap, dsgd and its peers under ONEDNN_MAX_CPU_ISA and the matching OPENBLAS_CORETYPE, in one table (default: no cap, in this process)")
	fs.StringVar(&c.RowsTo, "rows-to", "", "internal, for --isa: write the table's rows as JSON to this file")
	if err := parseFlags(fs, args, stderr); err != nil {
		return c, err
	}
	bad := func(format string, a ...any) (enginebench.Config, error) {
		fmt.Fprintf(stderr, "dsgd bench: "+format+"\n", a...)
		return c, errUsage
	}
	for _, f := range strings.Split(*threadList, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t <= 0 {
			return bad("--thread-list: bad thread count %q", f)
		}
		c.Threads = append(c.Threads, t)
	}
	if *reps < 1 {
		return bad("--reps %d: want at least 1", *reps)
	}
	c.Reps = *reps
	isas, err := parseISAList(*isaList)
	if err != nil {
		return bad("--isa: %v", err)
	}
	c.ISAs = isas
	if c.PeakTime <= 0 {
		return bad("--peak-time %v: want a positive duration", c.PeakTime)
	}
	for _, f := range strings.Split(*nets, ",") {
		name := strings.TrimSpace(f)
		i := slices.IndexFunc(enginebench.Nets, func(n enginebench.Net) bool { return n.Name == name })
		if i < 0 {
			return bad("--nets: no net %q; the nets are %s", name, strings.Join(enginebench.NetNames(), ", "))
		}
		if slices.ContainsFunc(c.Nets, func(n enginebench.Net) bool { return n.Name == name }) {
			return bad("--nets: %s given twice", name)
		}
		c.Nets = append(c.Nets, enginebench.Nets[i])
	}
	it, err := parsePerNet(*iters, 1)
	if err != nil {
		return bad("--iters: %v", err)
	}
	wu, err := parsePerNet(*warmup, 0)
	if err != nil {
		return bad("--warmup: %v", err)
	}
	for i := range c.Nets {
		n := &c.Nets[i]
		if v, ok := it[n.Name]; ok {
			n.Iters = v
		} else if v, ok := it[""]; ok {
			n.Iters = v
		}
		if v, ok := wu[n.Name]; ok {
			n.Warmup = v
		} else if v, ok := wu[""]; ok {
			n.Warmup = v
		}
	}
	return c, nil
}

func perNetDefaults(f func(enginebench.Net) int) string {
	var s []string
	for _, n := range enginebench.Nets {
		s = append(s, fmt.Sprintf("%s=%d", n.Name, f(n)))
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
		if !slices.Contains(enginebench.NetNames(), k) {
			return nil, fmt.Errorf("no net %q; the nets are %s", k, strings.Join(enginebench.NetNames(), ", "))
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

// parseISAList parses --isa: comma-separated oneDNN ISA names, each at
// most once; "" is no list.
func parseISAList(s string) ([]cpuinfo.ISA, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []cpuinfo.ISA
	for _, f := range strings.Split(s, ",") {
		l, err := cpuinfo.ParseISA(f)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, l) {
			return nil, fmt.Errorf("%s given twice", l)
		}
		out = append(out, l)
	}
	return out, nil
}
