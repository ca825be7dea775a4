package job

import (
	"context"
	"fmt"

	"dsgd/caffe/caffemodel"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/training/train"
)

// CaffeTestIterations is caffe test's default -iterations, TestNet's
// when given none.
const CaffeTestIterations = 50

// NetTest is what TestNet measured: each output of the TEST net
// averaged over the iterations, and the weighted loss.
type NetTest struct {
	// Iters is the iterations run.
	Iters int
	// Outputs are the net's outputs, in its order.
	Outputs []NetOutput
	// Loss is the weighted loss averaged over the iterations, when
	// HasLoss (a deploy net has none).
	Loss    float64
	HasLoss bool
}

// NetOutput is one output of a TestNet pass.
type NetOutput struct {
	Name string
	// Shape is the output's shape; Value its mean over the iterations,
	// and for an output of more than one element (Elements), the mean
	// over its elements too, which keeps a summary to one figure (Caffe
	// prints every element).
	Shape    []int
	Elements int
	Value    float64
}

// CheckTestNet refuses what TestNet cannot test: weights that are not a
// Caffe model file (a dsgd snapshot is tested with the solver of the run
// that wrote it), a TEST net that did not build, or one without layers.
func (j *Job) CheckTestNet(weights string) error {
	if !caffemodel.IsModel(weights) {
		return fmt.Errorf("Config.Weights %s: a net file alone is tested with a .caffemodel or .caffemodel.h5 (as caffe test); a dsgd snapshot is tested with --solver, the solver of the run that wrote it", weights)
	}
	if j.TestErr != nil {
		return j.TestErr
	}
	if len(j.Test.Spec.Layers) == 0 {
		return fmt.Errorf("%s has no layer in the TEST phase to test", j.Name)
	}
	return nil
}

// TestNet runs the TEST phase of the job's net alone, as `caffe test
// -model NET -weights W -iterations N` does: fed by its own data layers
// (an Input layer's blobs hold zeros), with the weights of the Caffe
// model file weights copied in by layer name (copied, when not nil, is
// told what was copied before the iterations run), every output
// averaged over iters iterations (0: CaffeTestIterations). No solver
// and no TRAIN net are involved, so a deploy net without a loss can be
// tested too. The caller checks the job first (CheckTestNet).
func (j *Job) TestNet(ctx context.Context, weights string, iters, threads int, copied func(caffemodel.Report)) (*NetTest, error) {
	if iters == 0 {
		iters = CaffeTestIterations
	}
	net, err := j.weightedTestNet(weights, threads, copied)
	if err != nil {
		return nil, err
	}
	outs := net.Outputs()
	sums := make([][]float64, len(outs))
	var loss float64
	// A TEST data layer at batch_size 1 over records of differing shapes
	// reshapes the net to each record, as Caffe's: a net per shape,
	// sharing this one's weights.
	shapes := train.NewNetShapes(net, j.Test.Spec, j.TestShapes, model.Options{Phase: layers.Test, Threads: threads, Seed: j.Seed}, j.TestFeeds, "TEST")
	main := net
	for iter := range iters {
		net := main
		if shapes != nil {
			if net, err = shapes.Pick(ctx); err != nil {
				return nil, err
			}
		}
		if err := Fill(ctx, net, j.TestFeeds); err != nil {
			return nil, err
		}
		loss += net.Forward()
		if err := net.Err(); err != nil {
			return nil, err
		}
		for k, o := range net.Outputs() {
			if sums[k] == nil {
				sums[k] = make([]float64, o.Count())
			}
			if len(sums[k]) != o.Count() {
				return nil, fmt.Errorf("output %q has %d elements at iteration %d but %d before (its input's shape changed with the record): the per-element mean TestNet reports needs one shape; test a net whose outputs do not depend on the input's size (global pooling, a loss, accuracy)", o.Name, o.Count(), iter, len(sums[k]))
			}
			for i, v := range o.Data[:o.Count()] {
				sums[k][i] += float64(v)
			}
		}
	}
	res := &NetTest{Iters: iters, HasLoss: main.HasLoss(), Loss: loss / float64(iters)}
	for k, o := range outs {
		n := float64(iters)
		out := NetOutput{Name: o.Name, Shape: []int(o.Shape), Elements: len(sums[k])}
		if len(sums[k]) == 1 {
			out.Value = sums[k][0] / n
		} else {
			var s float64
			for _, v := range sums[k] {
				s += v
			}
			out.Value = s / n / float64(len(sums[k]))
		}
		res.Outputs = append(res.Outputs, out)
	}
	return res, nil
}
