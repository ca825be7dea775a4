package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dsgd/cmd/internal/report"
	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// defaultCompare is every scheme, seq first as the baseline.
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
	logDir := fs.String("logs", "", "write each scheme's training output to `DIR`/SCHEME.log (default: discard it)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
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
	workers := *f.workers
	if workers < 1 {
		workers = 4
	}
	if *f.timeBudget <= 0 {
		*f.timeBudget = time.Minute
	}
	// Every run gets the flags given, minus compare's own, plus its
	// scheme, worker count and budget; tests come often enough to plot.
	var base []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "schemes", "target", "plot", "logs", "scheme", "workers":
			return
		}
		base = append(base, "--"+fl.Name+"="+fl.Value.String())
	})
	if !set["time-budget"] {
		base = append(base, "--time-budget="+f.timeBudget.String())
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
	fmt.Fprintf(stdout, "dsgd compare: %d schemes, %d workers (seq: 1), %v of training each, target accuracy %.2f%%\n", len(names), workers, *f.timeBudget, 100**target)
	if !set["lr-scale"] {
		fmt.Fprintln(stdout, "  async, ssp and hogwild run with --lr-scale inverse (base_lr / workers): their workers' steps all land in the same weights")
	}
	var runs []report.Run
	for _, name := range names {
		w := workers
		if in, _ := scheme.Lookup(name); in.MaxWorkers == 1 {
			w = 1
		}
		run := report.Run{Scheme: name, Workers: w}
		out, closeOut, err := compareLog(*logDir, name)
		if err != nil {
			return err
		}
		var tf trainFlags
		tfs := flag.NewFlagSet("train", flag.ContinueOnError)
		tf.register(tfs)
		tfs.SetOutput(io.Discard)
		sargs := append(append([]string(nil), base...), "--scheme="+name, "--workers="+strconv.Itoa(w))
		if sharedWeights(name) && !set["lr-scale"] {
			// Every worker's steps land in the same weights: one worker's
			// step size overall (Downpour, Hogwild).
			sargs = append(sargs, "--lr-scale=inverse")
		}
		if err := tfs.Parse(sargs); err != nil {
			return fmt.Errorf("flags for %s: %w", name, err)
		}
		fmt.Fprintf(stdout, "  %-14s ", name)
		t0 := time.Now()
		run.Err = execute(ctx, &tf, nil, out, out)
		closeOut()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res := tf.result; res != nil {
			fillRun(&run, res)
		}
		if run.Err != nil {
			fmt.Fprintf(stdout, "failed after %v: %v\n", time.Since(t0).Round(time.Second), run.Err)
		} else {
			fmt.Fprintf(stdout, "%d iterations, final accuracy %.4f\n", run.Iters, finalAccuracy(run.Points))
		}
		runs = append(runs, run)
	}
	fmt.Fprintln(stdout)
	if err := report.Table(stdout, runs, names[0], *target); err != nil {
		return err
	}
	if *plot != "none" {
		title := fmt.Sprintf("test error vs training time, %d workers", workers)
		if err := report.Plot(runs, title, *plot+".png", *plot+".svg"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s.png, %s.svg\n", *plot, *plot)
	}
	return nil
}

// sharedWeights reports whether every worker of the scheme applies its
// own steps to one set of weights.
func sharedWeights(name string) bool { return scheme.Config{Name: name}.Info().SharedSteps }

// compareLog opens where a scheme's training output goes.
func compareLog(dir, name string) (io.Writer, func(), error) {
	if dir == "" {
		return io.Discard, func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("--logs: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, nil, fmt.Errorf("--logs: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// fillRun copies a training result into a report row.
func fillRun(run *report.Run, res *train.Result) {
	run.Wall, run.Iters = res.Wall, res.Iters
	for _, t := range res.Tests {
		if a, ok := t.Get("accuracy"); ok {
			run.Points = append(run.Points, report.Point{Seconds: t.Elapsed.Seconds(), Iter: t.Iter, Accuracy: a})
		}
	}
	run.CommRatio = -1
	if total := res.Phases.Sum(); total > 0 && res.Workers > 1 {
		// Exposed communication and waiting for other workers (SSP's
		// clock, weed-out's round), as the papers' ratios count them.
		wait := res.Phases.Total(len(train.PhaseNames) + 1)
		run.CommRatio = float64(res.CommExposed+wait) / float64(total)
	}
	run.Dropped, run.Stale = res.Center.Dropped, res.Center.Waits
}

func finalAccuracy(ps []report.Point) float64 {
	if len(ps) == 0 {
		return 0
	}
	return ps[len(ps)-1].Accuracy
}
