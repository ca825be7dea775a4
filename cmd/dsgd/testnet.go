package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"dsgd/caffe/caffemodel"
	"dsgd/training/job"
)

// testNetOnly is `dsgd test --model NET --weights W.caffemodel`, as
// `caffe test -model NET -weights W -iterations N` runs it (job.TestNet):
// the TEST phase of NET alone, with the weights of W copied in by layer
// name, every output averaged over the iterations.
func testNetOnly(ctx context.Context, j *job.Job, m *modelFlags, weights string, iters int, stdout, stderr io.Writer) error {
	if err := j.CheckTestNet(weights); err != nil {
		return err
	}
	j.WriteNotes(stderr)
	res, err := j.TestNet(ctx, weights, iters, m.threads, copyReport(stderr, "test", weights))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dsgd test: %s, TEST phase, %d iterations, weights %s\n", j.Name, res.Iters, weights)
	var bad []string
	report := func(name string, v float64) {
		fmt.Fprintf(stdout, "  %-16s %.6g\n", name, v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, name)
		}
	}
	for _, o := range res.Outputs {
		if o.Elements == 1 {
			report(o.Name, o.Value)
			continue
		}
		report(fmt.Sprintf("%s %v (mean)", o.Name, o.Shape), o.Value)
	}
	if res.HasLoss {
		report("loss (weighted)", res.Loss)
	}
	return notFinite(weights, bad)
}

// copyReport prints on w, for dsgd cmd, which layers of the Caffe model
// file weights were copied, ignored, and left with their fillers.
func copyReport(w io.Writer, cmd, weights string) func(caffemodel.Report) {
	return func(rep caffemodel.Report) {
		fmt.Fprintf(w, "dsgd %s: weights %s: copied %s", cmd, weights, strings.Join(rep.Copied, ", "))
		if len(rep.Ignored) > 0 {
			fmt.Fprintf(w, "; ignored %s (not in this net)", strings.Join(rep.Ignored, ", "))
		}
		if len(rep.Kept) > 0 {
			fmt.Fprintf(w, "; %s keep their fillers (not in the file)", strings.Join(rep.Kept, ", "))
		}
		fmt.Fprintln(w)
	}
}
