package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

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
	if cfg.TestIter == 0 {
		cfg.Test.Layers = nil // Caffe: no test_iter, no testing
	}
	if err := j.openData(&m, len(cfg.Test.Layers) > 0); err != nil {
		return err
	}
	defer j.close()
	cfg.TrainShapes, cfg.TrainFeeds = j.trainShapes, j.trainFeeds
	cfg.TestShapes, cfg.TestFeeds = j.testShapes, j.testFeeds
	tr, err := train.New(cfg)
	if err != nil {
		return err
	}
	j.printHeader(stdout, tr.Net(), m.threads, cfg.MaxIter)
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
	fmt.Fprintf(w, "time per training iteration, by phase:\n")
	res.Phases.WriteTable(w)
	for _, s := range res.Snapshots {
		fmt.Fprintf(w, "snapshot: %s\n", s)
	}
}
