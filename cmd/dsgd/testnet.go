package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"dsgd/caffe/caffemodel"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/training/job"
)

// caffeTestIterations is caffe test's default -iterations.
const caffeTestIterations = 50

// testNetOnly is `dsgd test --model NET --weights W.caffemodel`, as
// `caffe test -model NET -weights W -iterations N` runs it: the TEST phase
// of NET alone, fed by its own data layers (or --data; an Input layer's
// blobs hold zeros), with the weights of W copied in by layer name, every
// output averaged over the iterations. No solver and no TRAIN net are
// involved, so a deploy net without a loss can be tested too.
func testNetOnly(ctx context.Context, j *job.Job, m *modelFlags, weights string, iters int, stdout, stderr io.Writer) error {
	if !caffemodel.IsModel(weights) {
		return fmt.Errorf("--weights %s: a net file alone is tested with a .caffemodel or .caffemodel.h5 (as caffe test); a dsgd snapshot is tested with --solver, the solver of the run that wrote it", weights)
	}
	if j.TestErr != nil {
		return j.TestErr
	}
	if len(j.Test.Spec.Layers) == 0 {
		return fmt.Errorf("%s has no layer in the TEST phase to test", j.Name)
	}
	if iters == 0 {
		iters = caffeTestIterations
	}
	printNotes(stderr, j)
	if err := j.OpenTestFeeds(); err != nil {
		return err
	}
	net, err := model.Build(j.Test.Spec, j.TestShapes, model.Options{Phase: layers.Test, Threads: m.threads, Seed: j.Seed})
	if err != nil {
		return err
	}
	src, err := caffemodel.ReadModel(weights)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	netLayers, err := caffemodel.Resolve(caffemodel.SpecLayers(j.Test.Spec), net.Blocks())
	if err != nil {
		return fmt.Errorf("--weights %s: %w", weights, err)
	}
	rep, err := caffemodel.CopyTrainedNet(src, weights, netLayers, net.Params())
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	fmt.Fprintf(stderr, "dsgd test: weights %s: copied %s", weights, strings.Join(rep.Copied, ", "))
	if len(rep.Ignored) > 0 {
		fmt.Fprintf(stderr, "; ignored %s (not in this net)", strings.Join(rep.Ignored, ", "))
	}
	if len(rep.Kept) > 0 {
		fmt.Fprintf(stderr, "; %s keep their fillers (not in the file)", strings.Join(rep.Kept, ", "))
	}
	fmt.Fprintln(stderr)
	if err := j.CheckLabels(net, j.Test.Spec); err != nil {
		return err
	}
	outs := net.Outputs()
	sums := make([][]float64, len(outs))
	var loss float64
	for range iters {
		if err := job.Fill(ctx, net, j.TestFeeds); err != nil {
			return err
		}
		loss += net.Forward()
		for k, o := range outs {
			if sums[k] == nil {
				sums[k] = make([]float64, o.Count())
			}
			for i, v := range o.Data[:o.Count()] {
				sums[k][i] += float64(v)
			}
		}
	}
	fmt.Fprintf(stdout, "dsgd test: %s, TEST phase, %d iterations, weights %s\n", j.Name, iters, weights)
	var bad []string
	report := func(name string, v float64) {
		fmt.Fprintf(stdout, "  %-16s %.6g\n", name, v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, name)
		}
	}
	for k, o := range outs {
		n := float64(iters)
		if len(sums[k]) == 1 {
			report(o.Name, sums[k][0]/n)
			continue
		}
		// Caffe prints every element of a larger output; its mean over
		// the elements keeps the summary to one line.
		var s float64
		for _, v := range sums[k] {
			s += v
		}
		report(fmt.Sprintf("%s %v (mean)", o.Name, []int(o.Shape)), s/n/float64(len(sums[k])))
	}
	if net.HasLoss() {
		report("loss (weighted)", loss/float64(iters))
	}
	if len(bad) > 0 {
		return fmt.Errorf("--weights %s: %s is not finite: the weights are not a usable model", weights, strings.Join(bad, ", "))
	}
	return nil
}
