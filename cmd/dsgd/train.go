package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"dsgd/collective"
	"dsgd/scheme"
	"dsgd/train"
)

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var m modelFlags
	m.register(fs)
	iters := fs.Int("iters", 0, "iterations to train (default: the solver's max_iter)")
	resume := fs.String("resume", "", "continue from this snapshot `FILE`")
	prefix := fs.String("snapshot-prefix", "", "write snapshots to `PREFIX`_iter_N.dsgdsnap (default: the solver's snapshot_prefix; \"none\" disables them)")
	testInterval := fs.Int("test-interval", -1, "test every N iterations (default: the solver's test_interval; 0: only at the end)")
	testIter := fs.Int("test-iter", 0, "test batches per test pass (default: the solver's test_iter)")
	display := fs.Int("display", -1, "print progress every N iterations (default: the solver's display)")
	schemeName := fs.String("scheme", "", "parallel scheme: "+strings.Join(scheme.Names(), ", ")+" (default: seq for one worker, sync-tree for more)")
	workers := fs.Int("workers", 1, "number of workers (each reads its shard of the training set, with the solver's batch_size)")
	transportName := fs.String("transport", "inproc", "how workers talk: inproc (goroutines in this process)")
	pack := fs.Bool("pack", true, "send all layers as one contiguous message (off: one message per layer)")
	algoName := fs.String("allreduce", "auto", "allreduce algorithm: auto (the scheme's choice), tree, ring, rd (recursive doubling)")
	metricsPath := fs.String("metrics", "", "write one JSON line per iteration per worker to `FILE`")
	lrScale := fs.String("lr-scale", "none", "learning rate scaling with the global batch: none, or linear (base_lr x workers, FireCaffe 7.2)")
	warmup := fs.Int("warmup", 0, "ramp the learning rate linearly from 0 over the first N iterations")
	commTimeout := fs.Duration("comm-timeout", time.Minute, "give up on a peer that does not answer within this")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	j, err := m.load()
	if err != nil {
		return err
	}
	sd := j.solver
	cfg := train.Config{
		Train:              j.train.Spec,
		Test:               j.test.Spec,
		Solver:             sd.Solver,
		MaxIter:            sd.MaxIter,
		TestInterval:       sd.TestInterval,
		TestIter:           sd.TestIter,
		TestInitialization: sd.TestInitialization,
		Display:            sd.Display,
		Snapshot:           sd.Snapshot,
		SnapshotPrefix:     sd.SnapshotPrefix,
		Resume:             *resume,
		Seed:               j.seed,
		Threads:            m.threads,
		Out:                stdout,
		TTY:                isTerminal(stdout),
	}
	if *iters > 0 {
		cfg.MaxIter = *iters
	}
	switch *prefix {
	case "":
	case "none":
		cfg.SnapshotPrefix = ""
	default:
		cfg.SnapshotPrefix = *prefix
	}
	if *testInterval >= 0 {
		cfg.TestInterval = *testInterval
	}
	if *testIter > 0 {
		cfg.TestIter = *testIter
	}
	if *display >= 0 {
		cfg.Display = *display
	}
	if *workers < 1 {
		fmt.Fprintf(stderr, "dsgd train: --workers must be at least 1, got %d\n", *workers)
		return errUsage
	}
	if *transportName != "inproc" {
		fmt.Fprintf(stderr, "dsgd train: --transport %q is not available yet; use inproc\n", *transportName)
		return errUsage
	}
	algo, err := collective.ParseAlgorithm(*algoName)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd train: --allreduce: %v\n", err)
		return errUsage
	}
	cfg.Scheme, cfg.Workers, cfg.Pack, cfg.Algo, cfg.CommTimeout = *schemeName, *workers, *pack, algo, *commTimeout
	switch *lrScale {
	case "none":
	case "linear":
		cfg.Solver.BaseLR *= float64(cfg.Workers)
	default:
		fmt.Fprintf(stderr, "dsgd train: --lr-scale %q: choose none or linear\n", *lrScale)
		return errUsage
	}
	if *warmup < 0 {
		fmt.Fprintf(stderr, "dsgd train: --warmup must not be negative, got %d\n", *warmup)
		return errUsage
	}
	if *warmup > 0 {
		cfg.Solver.WarmupIters = *warmup
	}
	if *metricsPath != "" {
		f, err := os.Create(*metricsPath)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		bw := bufio.NewWriter(f)
		defer func() {
			bw.Flush()
			f.Close()
		}()
		cfg.Metrics = bw
	}
	if cfg.Scheme == "" {
		cfg.Scheme = "seq"
		if cfg.Workers > 1 {
			cfg.Scheme = "sync-tree"
		}
	}
	if cfg.TestIter == 0 {
		cfg.Test.Layers = nil // Caffe: no test_iter, no testing
	}
	if err := j.openData(&m, len(cfg.Test.Layers) > 0, cfg.Workers); err != nil {
		return err
	}
	defer j.close()
	cfg.TrainShapes, cfg.TrainFeeds, cfg.WorkerFeeds = j.trainShapes, j.trainFeeds, j.workerFeeds
	cfg.TestShapes, cfg.TestFeeds = j.testShapes, j.testFeeds
	tr, err := train.New(cfg)
	if err != nil {
		return err
	}
	j.printHeader(stdout, tr.Net(), m.threads, cfg.MaxIter)
	fmt.Fprintf(stdout, "dsgd: scheme %s, %d worker(s) over %s, %d thread(s) each, pack %v\n", cfg.Scheme, cfg.Workers, *transportName, max(1, m.threads/cfg.Workers), cfg.Pack)
	if cfg.Resume != "" {
		fmt.Fprintf(stdout, "dsgd: resuming from %s\n", cfg.Resume)
	}
	res, err := tr.Run(ctx)
	if err != nil {
		return err
	}
	printSummary(stdout, res)
	return nil
}

func printSummary(w io.Writer, res *train.Result) {
	fmt.Fprintf(w, "\ndone: %d iterations (from %d) in %s, %.0f images/s\n", res.Iters, res.Start, res.Wall.Round(time.Millisecond), res.ImagesPerSec)
	if f := res.Final(); len(f.Outputs) > 0 {
		fmt.Fprintf(w, "final test:")
		for _, o := range f.Outputs {
			fmt.Fprintf(w, "  %s %.4f", o.Name, o.Value)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "time per training iteration, by phase (rank 0):\n")
	res.Phases.WriteTable(w)
	if res.Workers > 1 && res.Iters > 0 {
		it := float64(res.Iters)
		busy := float64(res.CommBusy) / float64(time.Millisecond) / it
		exposed := float64(res.CommExposed) / float64(time.Millisecond) / it
		total := float64(res.Phases.Sum()) / float64(time.Millisecond) / it
		fmt.Fprintf(w, "communication (rank 0): %.3f ms/iter busy, %.3f ms/iter exposed; communication ratio %.1f%% (exposed / iteration)\n", busy, exposed, 100*exposed/total)
		fmt.Fprintf(w, "replicas identical at the end: %v\n", res.Identical)
	}
	for _, s := range res.Snapshots {
		fmt.Fprintf(w, "snapshot: %s\n", s)
	}
}
