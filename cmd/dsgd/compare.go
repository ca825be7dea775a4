package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"dsgd/cmd/internal/report"
	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// defaultCompare is every scheme, in the catalogue's order.
var defaultCompare = strings.Join(scheme.Names(), ",")

// runCompare trains each scheme on the same model, data and seed for the
// same time budget and prints one table and a plot of test error against
// training time (SC17 Fig. 8).
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var f trainFlags
	f.register(fs)
	schemes := fs.String("schemes", defaultCompare, "comma-separated schemes to compare (the first is the speedup baseline)")
	target := fs.Float64("target", 0.85, "test accuracy whose time to reach the table reports")
	plot := fs.String("plot", "compare", "write the plot to `PREFIX`.png and PREFIX.svg (\"none\": no plot)")
	logDir := fs.String("logs", "", "write each scheme's training output to `DIR`/SCHEME.log (SCHEME.N.log with --repeats; default: discard it)")
	repeats := fs.Int("repeats", 1, "train each scheme `N` times, interleaved (scheme by scheme, round after round); the table shows each number's median and range")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *repeats < 1 {
		fmt.Fprintf(stderr, "dsgd compare: --repeats %d: give at least 1\n", *repeats)
		return errUsage
	}
	names := strings.Split(*schemes, ",")
	for _, n := range names {
		if err := (scheme.Config{Name: n, Workers: 1}).Validate(); err != nil && strings.Contains(err.Error(), "unknown scheme") {
			fmt.Fprintf(stderr, "dsgd compare: --schemes: %v\n", err)
			return errUsage
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	workers := f.o.Workers
	if workers < 1 {
		workers = 4
	}
	if f.o.TimeBudget <= 0 {
		f.o.TimeBudget = time.Minute
	}
	// Every run gets the flags given, minus compare's own, plus its
	// scheme, worker count and budget; tests come often enough to plot.
	var base []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "schemes", "target", "plot", "logs", "scheme", "workers", "repeats":
			return
		}
		base = append(base, "--"+fl.Name+"="+fl.Value.String())
	})
	if !set["time-budget"] {
		base = append(base, "--time-budget="+f.o.TimeBudget.String())
	}
	if !set["test-interval"] {
		base = append(base, "--test-interval=100")
	}
	if !set["test-iter"] {
		base = append(base, "--test-iter=20")
	}
	if !set["iters"] {
		base = append(base, "--iters=1000000") // the budget ends the run
	}
	if !set["snapshot-prefix"] {
		base = append(base, "--snapshot-prefix=none")
	}
	c := report.Comparison{Schemes: names, Workers: workers, Budget: f.o.TimeBudget, Target: *target, Repeats: *repeats, LogDir: *logDir,
		Prepare: func(name string, workers int) (report.Trainer, error) {
			return compareTrainer(name, workers, base, set)
		}}
	c.Header(stdout)
	if !set["lr-scale"] {
		fmt.Fprintln(stdout, "  async, ssp and hogwild run with --lr-scale inverse (base_lr / workers): their workers' steps all land in the same weights")
	}
	runs, err := c.Run(ctx, stdout)
	if err != nil {
		return asFlags(err, compareFlagNames)
	}
	fmt.Fprintln(stdout)
	if err := report.Table(stdout, runs, names[0], *target); err != nil {
		return err
	}
	if *plot != "none" {
		title := fmt.Sprintf("test error vs wall time, %d workers", workers)
		if err := report.Plot(report.Medians(runs), title, *target, *plot+".png", *plot+".svg"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s.png, %s.svg\n", *plot, *plot)
	}
	return nil
}

// compareTrainer readies one scheme's run for compare: train's flags,
// the common ones base with its scheme and workers; it trains through
// execute, as dsgd train does.
func compareTrainer(name string, workers int, base []string, set map[string]bool) (report.Trainer, error) {
	var tf trainFlags
	tfs := flag.NewFlagSet("train", flag.ContinueOnError)
	tf.register(tfs)
	tfs.SetOutput(io.Discard)
	var sargs []string
	for _, a := range base {
		// streaming-diloco's flags are its own; the other schemes
		// refuse them.
		if in, _ := scheme.Lookup(name); !in.Streaming && streamingFlag(a) {
			continue
		}
		sargs = append(sargs, a)
	}
	sargs = append(sargs, "--scheme="+name, "--workers="+strconv.Itoa(workers))
	if sharedWeights(name) && !set["lr-scale"] {
		// Every worker's steps land in the same weights: one worker's
		// step size overall (Downpour, Hogwild).
		sargs = append(sargs, "--lr-scale=inverse")
	}
	if err := tfs.Parse(sargs); err != nil {
		return nil, fmt.Errorf("flags for %s: %w", name, err)
	}
	return func(ctx context.Context, out io.Writer) (*train.Result, error) {
		err := execute(ctx, &tf, nil, out, out)
		return tf.result, err
	}, nil
}

// compareFlagNames names report.Comparison's fields as compare's flags.
var compareFlagNames = strings.NewReplacer("Comparison.LogDir", "--logs")

// sharedWeights reports whether every worker of the scheme applies its
// own steps to one set of weights.
func sharedWeights(name string) bool { return scheme.Config{Name: name}.Info().SharedSteps }
