package job

import (
	"context"
	"errors"
	"io"

	"dsgd/caffe/caffemodel"
	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// DefaultTestIter is the test batches TestWeights runs when neither the
// caller nor the solver (test_iter) gives a number.
const DefaultTestIter = 100

// WeightsTest is how TestWeights tests: the weights, the batches, and
// the trainer's threads and GPUs.
type WeightsTest struct {
	// Weights is a Caffe model file (copied in by layer name) or a dsgd
	// snapshot (resumed from; the trainer's errors name it
	// Config.Resume).
	Weights string
	// Iters is the test batches (0: the solver's test_iter, else
	// DefaultTestIter).
	Iters   int
	Threads int
	GPUs    []int
	TF32    bool
	// Out receives a Caffe model's copy report (which layers were
	// copied); a snapshot's run writes nothing.
	Out io.Writer
}

// TestWeights scores t.Weights on the job's TEST net through a trainer
// of the job's solver, as `caffe test -weights` does: the mean of each
// scalar output (accuracy, loss) over the test batches of the test
// split, whose number it returns beside the result. It opens the job's
// data (one worker; the caller closes the job) and checks the labels
// against both nets.
func (j *Job) TestWeights(ctx context.Context, t WeightsTest) (train.TestResult, int, error) {
	if len(j.Test.Spec.Layers) == 0 {
		return train.TestResult{}, 0, errors.New("the net has no TEST phase to test with")
	}
	n := t.Iters
	if n == 0 {
		n = j.Solver.TestIter
	}
	if n == 0 {
		n = DefaultTestIter
	}
	if err := j.OpenData(true, 1); err != nil {
		return train.TestResult{}, n, err
	}
	// A solver without base_lr or lr_policy (SolverDef.CheckTrain) tests,
	// as in Caffe: the trainer's solver makes no step here, so the rate
	// that stands in is never used.
	sc := j.Solver.Solver
	if sc.BaseLR == 0 {
		sc.BaseLR = 1
	}
	if sc.LRPolicy == "" {
		sc.LRPolicy = "fixed"
	}
	cfg := train.Config{
		Train: j.Train.Spec, Test: j.Test.Spec, Solver: sc,
		TrainShapes: j.TrainShapes, TrainFeeds: j.TrainFeeds,
		TestShapes: j.TestShapes, TestFeeds: j.TestFeeds,
		Config: scheme.Config{MaxIter: 1}, TestIter: n, Seed: j.Seed, Threads: t.Threads, Out: io.Discard,
		GPUs: t.GPUs, TF32: t.TF32,
	}
	if caffemodel.IsModel(t.Weights) {
		cfg.Weights = []string{t.Weights}
		cfg.Out = t.Out
	} else {
		cfg.Resume = t.Weights
	}
	tr, err := train.New(cfg)
	if err != nil {
		return train.TestResult{}, n, err
	}
	if err := j.CheckLabels(tr.Net(), j.Train.Spec, j.Test.Spec); err != nil {
		return train.TestResult{}, n, err
	}
	res, err := tr.Test(ctx, tr.StartIter())
	return res, n, err
}
