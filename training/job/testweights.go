package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"dsgd/caffe/caffemodel"
	"dsgd/data"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
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
// split, whose number it returns beside the result. It opens the TEST
// nets' data (the caller closes the job), not the TRAIN net's, as caffe
// test opens no TRAIN data (but see trainShapes), and checks the labels
// against both nets. Where the TRAIN net does not build (TrainErr, with
// Options.TestOnly), see testModelAlone.
func (j *Job) TestWeights(ctx context.Context, t WeightsTest) (_ train.TestResult, _ int, err error) {
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
	if j.TrainErr != nil {
		return j.testModelAlone(ctx, t, n, "the TRAIN net does not build")
	}
	if py := pythonLayers(j.Train.Spec); py != "" && caffemodel.IsModel(t.Weights) {
		// caffe test builds the TEST net alone: the TRAIN net's Python
		// layers (FCN's data layers, which read their data set in setup)
		// are never run.
		return j.testModelAlone(ctx, t, n, "the TRAIN net's Python layers ("+py+") are not run, as caffe test never builds them")
	}
	// caffe test builds the TEST net alone; dsgd's trainer holds the
	// weights in a TRAIN net (a dsgd snapshot is of that net), which
	// never runs here: its shapes come without its data (trainShapes).
	j.TestShapes, j.TestFeeds, err = j.feeds(j.Test, data.Test, 0, 1)
	if err != nil {
		return train.TestResult{}, n, err
	}
	if err := j.openExtraTests(); err != nil {
		return train.TestResult{}, n, err
	}
	trainShapes, ok := j.trainShapes()
	if !ok {
		// A TRAIN input the TEST net lacks: its shape is its data's.
		if err := j.OpenData(false, 1); err != nil {
			return train.TestResult{}, n, err
		}
		trainShapes = j.TrainShapes
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
		TrainShapes: trainShapes, TrainFeeds: j.TrainFeeds,
		TestShapes: j.TestShapes, TestFeeds: j.TestFeeds,
		Config: scheme.Config{MaxIter: 1}, TestIter: n, Seed: j.Seed, Threads: t.Threads, Out: io.Discard,
		GPUs: t.GPUs, TF32: t.TF32, Detection: j.Config().Detection,
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

// trainShapes is the TRAIN net's input shapes without its data: an Input
// or DummyData layer's own, and for a layer that reads a data set, each
// top's TEST shape with the layer's batch (Options.Batch, else its
// batch_size) as the first axis. The weights, all TestWeights needs of
// the TRAIN net, do not depend on the batch. ok is false when a top has
// no TEST blob of its name to take the shape from.
func (j *Job) trainShapes() (_ map[string]tensor.Shape, ok bool) {
	shapes := map[string]tensor.Shape{}
	for _, dl := range j.Train.Data {
		if dl.Type == "Input" || dl.Type == "DummyData" {
			for k, t := range dl.Tops {
				shapes[t] = tensor.Shape(dl.Shapes[k])
			}
			continue
		}
		batch := dl.BatchSize
		if j.opts.Batch > 0 {
			batch = j.opts.Batch
		}
		for _, t := range dl.Tops {
			s, ok := j.TestShapes[t]
			if !ok || len(s) == 0 {
				return nil, false
			}
			s = slices.Clone(s)
			if batch > 0 {
				s[0] = batch
			}
			shapes[t] = s
		}
	}
	return shapes, true
}

// testModelAlone is TestWeights where the TRAIN net does not build
// (Options.TestOnly; a fork's TRAIN data layer dsgd does not know), or
// where it has Python layers and t.Weights is a Caffe model: a Caffe
// model is tested on the first TEST net alone (TestNet), as caffe test
// does, its scalar outputs averaged over n batches; why is the note
// printed. A dsgd snapshot, which is of the TRAIN net, is refused with
// the TRAIN net's error.
func (j *Job) testModelAlone(ctx context.Context, t WeightsTest, n int, why string) (train.TestResult, int, error) {
	if !caffemodel.IsModel(t.Weights) {
		return train.TestResult{}, n, fmt.Errorf("%w (Config.Resume %s is a snapshot of the TRAIN net, which does not build; a .caffemodel is tested on the TEST net alone)", j.TrainErr, t.Weights)
	}
	if j.Config().Detection != nil {
		return train.TestResult{}, n, fmt.Errorf("the solver's eval_type \"detection\" is evaluated by the trainer's test pass, which needs the TRAIN net, but %s: dsgd does not compute the mAP on the TEST net alone", why)
	}
	res, err := j.TestNet(ctx, t.Weights, n, t.Threads, func(rep caffemodel.Report) {
		if t.Out != nil {
			fmt.Fprintf(t.Out, "weights %s: copied %s into the TEST net alone (%s)\n", t.Weights, strings.Join(rep.Copied, ", "), why)
		}
	})
	if err != nil {
		return train.TestResult{}, n, err
	}
	var tr train.TestResult
	for _, o := range res.Outputs {
		if o.Elements == 1 {
			tr.Outputs = append(tr.Outputs, train.NamedValue{Name: o.Name, Value: o.Value})
		}
	}
	return tr, n, nil
}

// pythonLayers names the Python layers of spec, comma-separated; "" when
// it has none.
func pythonLayers(spec model.Spec) string {
	var names []string
	for _, l := range spec.Layers {
		if l.Config != nil && l.Config.Type() == "Python" {
			names = append(names, l.Name)
		}
	}
	return strings.Join(names, ", ")
}
