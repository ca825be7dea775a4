package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"dsgd/cmd/internal/enginebench"
	"dsgd/engine/model"
	"dsgd/simulator/calib"
	"dsgd/training/job"
)

func runTime(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("time", flag.ContinueOnError)
	var m modelFlags
	m.register(fs)
	m.netOnly = true
	iters := fs.Int("iters", 50, "timed forward-backward iterations")
	fs.IntVar(iters, "iterations", 50, "the same as --iters, by caffe time's name for it")
	warmup := fs.Int("warmup", 5, "untimed iterations first")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := m.validate(); err != nil {
		fmt.Fprintf(stderr, "dsgd time: %v\n", err)
		return errUsage
	}
	if *iters <= 0 {
		fmt.Fprintln(stderr, "dsgd time: --iters must be positive")
		return errUsage
	}
	if err := m.checkGPU("time", stderr); err != nil {
		return err
	}
	j, net, err := job.TrainNet(ctx, m.options(), m.threads)
	if err != nil {
		return err
	}
	defer j.Close()
	printNotes(stderr, j)
	j.WriteHeader(stdout, stderr, net, m.threads, *iters, j.Solver.Solver, trainFlagNames.Replace)
	if len(m.gpuIDs) > 0 {
		return enginebench.TimeOnGPU(stdout, m.gpuSpec(), net, max(*warmup, 0), *iters)
	}
	probe := model.NewReorderProbe(net, max(*warmup, 0))
	tm, err := calib.Time(ctx, net, max(*warmup, 0), *iters)
	if err != nil {
		return err
	}
	n := float64(*iters)
	perIter := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	fmt.Fprintf(stdout, "\naverage over %d iterations (after %d warm-up), ms:\n", *iters, *warmup)
	fmt.Fprintf(stdout, "  %-16s %-16s %-20s %9s %9s  %s\n", "layer", "type", "top shape", "forward", "backward", "kernel")
	var fwd, bwd time.Duration
	for _, li := range tm.Layers {
		shape := ""
		if len(li.Tops) > 0 {
			shape = fmt.Sprint([]int(li.Tops[0]))
		}
		b := "-"
		if li.Backprop {
			b = fmt.Sprintf("%9.3f", perIter(li.Backward))
		}
		fmt.Fprintf(stdout, "  %-16s %-16s %-20s %9.3f %9s  %s\n", li.Name, li.Type, shape, perIter(li.Forward), b, li.Kernel)
		fwd += li.Forward
		bwd += li.Backward
	}
	fmt.Fprintf(stdout, "  %-54s %9.3f %9.3f\n", "total", perIter(fwd), perIter(bwd))
	fmt.Fprintf(stdout, "forward-backward: %.3f ms per iteration (wall)\n", perIter(tm.Wall))
	printReorders(stdout, probe, *iters, m.threads, perIter(tm.Wall))
	return nil
}
