// Package report owns the presentation of a scheme comparison (`dsgd
// compare`): the results table and the plot of test error against wall
// time, one line per scheme, in the manner of SC17 Fig. 8.
//
// It does not train anything itself. [Comparison.Run] runs the schemes
// through the [Trainer] the caller's Prepare gives for each (dsgd compare
// passes dsgd train's path), repeats them round the schemes, writes their
// logs and a line per run, and records one [Point] per test pass plus the
// run's totals in a [Run] ([Run.Fill] copies them from a train.Result).
// The runs are then handed over:
//
//	runs := []report.Run{seqRun, syncEASGDRun, easgdRRRun}
//	if err := report.Table(os.Stdout, runs, "seq", 0.85); err != nil {
//		return err
//	}
//	if err := report.Plot(runs, "LeNet / Fashion-MNIST, 4 workers", 0.85,
//		"compare.png", "compare.svg"); err != nil {
//		return err
//	}
//
// Accuracies are fractions in [0, 1]. The plot's Y axis is the test error
// 1 - accuracy on a log10 scale; an error of 0 (or below [ErrorFloor]) is
// drawn at ErrorFloor, since a log scale cannot show 0. Plot files are
// written atomically: a temporary file in the same directory is renamed
// over the target, so a reader never sees half a plot.
//
// All functions are safe for concurrent use on distinct arguments; the
// package holds no state. [PlotSweep] draws dsgd simulate's sweep
// (iteration time and weak-scaling efficiency against the worker count)
// in the same style.
package report
