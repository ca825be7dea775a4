package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"dsgd/training/job"
)

// runTest scores a snapshot's weights on the TEST net, as `caffe test
// -weights` does: the mean of each scalar output (accuracy, loss) over
// --test-iter batches of the test split. With a net file and no solver
// (--model NET.prototxt or --net NET.prototxt), it is `caffe test -model
// -weights -iterations`: see testNetOnly. Its errors name the flags,
// the snapshot as --weights.
func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	defer func() { err = asFlags(err, testFlagNames) }()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var m modelFlags
	m.register(fs)
	m.netOnly, m.testOnly = true, true
	weights := fs.String("weights", "", "`FILE` whose weights to test: a .caffemodel, or a dsgd snapshot (.dsgdsnap) (required)")
	iters := fs.Int("test-iter", 0, fmt.Sprintf("test batches (default: the solver's test_iter, else 100; without a solver %d, as caffe test)", job.CaffeTestIterations))
	fs.IntVar(iters, "iterations", 0, "the same as --test-iter, by caffe test's name for it")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := m.validate(); err != nil {
		fmt.Fprintf(stderr, "dsgd test: %v\n", err)
		return errUsage
	}
	if *weights == "" {
		fmt.Fprintln(stderr, "dsgd test: --weights FILE is required: the snapshot to test")
		return errUsage
	}
	if *iters < 0 {
		fmt.Fprintf(stderr, "dsgd test: --test-iter must not be negative, got %d\n", *iters)
		return errUsage
	}
	if err := m.checkGPU("test", stderr); err != nil {
		return err
	}
	j, err := m.load()
	if err != nil {
		return err
	}
	defer j.Close()
	if j.NoSolver {
		return testNetOnly(ctx, j, &m, *weights, *iters, stdout, stderr)
	}
	res, n, err := j.TestWeights(ctx, job.WeightsTest{Weights: *weights, Iters: *iters, Threads: m.threads, GPUs: m.gpuIDs, TF32: m.tf32, Out: stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dsgd test: %s, %d batches of the test split\n", *weights, n)
	var bad []string
	for _, o := range res.Outputs {
		fmt.Fprintf(stdout, "  %-10s %.4f\n", o.Name, o.Value)
		if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) {
			bad = append(bad, o.Name)
		}
	}
	return notFinite(*weights, bad)
}

// notFinite refuses the outputs named bad, which are not finite; nil if
// there are none.
func notFinite(weights string, bad []string) error {
	if len(bad) > 0 {
		return fmt.Errorf("--weights %s: %s is not finite: the weights are not a usable model", weights, strings.Join(bad, ", "))
	}
	return nil
}
