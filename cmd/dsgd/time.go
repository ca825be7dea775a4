package main

import (
	"context"
	"flag"
	"fmt"
	"io"

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
	j.WriteNotes(stderr)
	j.WriteHeader(stdout, stderr, net, m.threads, *iters, j.Solver.Solver, trainFlagNames.Replace)
	if len(m.gpuIDs) > 0 {
		return enginebench.TimeOnGPU(stdout, m.gpuSpec(), net, max(*warmup, 0), *iters)
	}
	probe := model.NewReorderProbe(net, max(*warmup, 0))
	tm, err := calib.Time(ctx, net, max(*warmup, 0), *iters)
	if err != nil {
		return err
	}
	wall := enginebench.PrintTimes(stdout, tm, *warmup)
	enginebench.PrintReorders(stdout, probe, *iters, m.threads, wall)
	return nil
}
