package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	iters := fs.String("iters", "", "timed iterations per run: N for every net, or NET=N,... (defaults: "+enginebench.Defaults(func(n enginebench.Net) int { return n.Iters })+")")
	warmup := fs.String("warmup", "", "untimed iterations before them, the same way (defaults: "+enginebench.Defaults(func(n enginebench.Net) int { return n.Warmup })+")")
	var c enginebench.Config
	fs.StringVar(&c.PeerLeNet, "peer", "../shared/peer/torch_lenet.py", "the PyTorch peer's LeNet script (\"none\": time dsgd alone)")
	fs.StringVar(&c.PeerNets, "peer-nets", "../shared/peer/torch_nets.py", "the PyTorch peer's script for the other nets (\"none\": time dsgd alone)")
	fs.StringVar(&c.Python, "python", "/usr/bin/python3", "the Python that has torch")
	fs.StringVar(&c.Data, "data", "", "LeNet's data set (default: its zoo source, fashion-mnist); the other nets get synthetic data of their shape")
	fs.Int64Var(&c.Seed, "seed", -1, "random seed for weights and data order (default: each solver's)")
	fs.DurationVar(&c.PeakTime, "peak-time", 20*time.Millisecond, fmt.Sprintf("length of each FMA peak run (the peak is the best of %d, measured before the nets and again after them)", enginebench.PeakTrials))
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
	var err error
	if c.Threads, err = enginebench.ParseThreads(*threadList); err != nil {
		return bad("--thread-list: %v", err)
	}
	if *reps < 1 {
		return bad("--reps %d: want at least 1", *reps)
	}
	c.Reps = *reps
	if c.ISAs, err = enginebench.ParseISAs(*isaList); err != nil {
		return bad("--isa: %v", err)
	}
	if c.PeakTime <= 0 {
		return bad("--peak-time %v: want a positive duration", c.PeakTime)
	}
	if c.Nets, err = enginebench.ParseNets(*nets); err != nil {
		return bad("--nets: %v", err)
	}
	it, err := enginebench.ParsePerNet(*iters, 1)
	if err != nil {
		return bad("--iters: %v", err)
	}
	wu, err := enginebench.ParsePerNet(*warmup, 0)
	if err != nil {
		return bad("--warmup: %v", err)
	}
	enginebench.SetCounts(c.Nets, it, wu)
	return c, nil
}
