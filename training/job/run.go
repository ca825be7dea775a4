package job

import (
	"fmt"
	"io"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/caffemodel"
	"dsgd/engine/layers"
	"dsgd/protocol/scheme"
	"dsgd/training/checkpoint"
	"dsgd/training/train"
)

// Config is the train.Config the job's files give, before the command's
// settings: the phases, the solver with its iterations, tests, display
// and snapshots (in the format the solver's snapshot_format names, else
// dsgd's), and the seed.
func (j *Job) Config() train.Config {
	sd := j.Solver
	cfg := train.Config{
		Train:              j.Train.Spec,
		Test:               j.Test.Spec,
		Solver:             sd.Solver,
		Config:             scheme.Config{MaxIter: sd.MaxIter},
		TestInterval:       sd.TestInterval,
		TestIter:           sd.TestIter,
		TestInitialization: sd.TestInitialization,
		Display:            sd.Display,
		IterSize:           sd.IterSize,
		NoFinalSnapshot:    !sd.SnapshotAfterTrain,
		Snapshot:           sd.Snapshot,
		SnapshotPrefix:     sd.SnapshotPrefix,
		SnapshotFormat:     train.FormatDsgd,
		Seed:               j.Seed,
	}
	if sd.EvalType == caffedef.EvalDetection {
		cfg.Detection = &train.DetectionEval{APVersion: layers.APVersion(sd.APVersion), PerClass: sd.ShowPerClassResult}
	}
	cfg.AverageLoss = sd.AverageLoss // Caffe's window: 1 shows the last iteration's loss
	switch sd.SnapshotFormat {
	case "BINARYPROTO":
		cfg.SnapshotFormat = train.FormatCaffe
	case "HDF5":
		cfg.SnapshotFormat = train.FormatHDF5
	}
	return cfg
}

// PlanTests applies Caffe's rule on testing to cfg: a run without
// test_iter (Config.TestIter 0) does not test; one that tests needs the
// job's TEST net, and is refused with why that net could not be built.
func (j *Job) PlanTests(cfg *train.Config) error {
	if cfg.TestIter == 0 {
		cfg.Test.Layers = nil
		return nil
	}
	if j.TestErr != nil {
		return fmt.Errorf("Config.TestIter %d: %w", cfg.TestIter, j.TestErr)
	}
	return nil
}

// Place makes cfg rank of a multi-process group of world ranks. Outside
// an elastic group (where any worker may become rank 0, which tests,
// prints and snapshots) only rank 0 tests and prints, and only rank 0
// snapshots, or the server that holds the solver state in a scheme whose
// server updates.
func Place(cfg *train.Config, rank, world int, elastic bool) {
	cfg.Group = &train.Group{Rank: rank, Size: world}
	if rank == 0 || elastic {
		return
	}
	prefix := cfg.SnapshotPrefix
	cfg.Out, cfg.Test.Layers, cfg.SnapshotPrefix = io.Discard, nil, ""
	if cfg.Info().ServerUpdates && rank == world-1 {
		cfg.SnapshotPrefix = prefix
	}
}

// ResumeAt makes the TRAIN loaders continue where the run of the
// snapshot at path (Config.Resume) stopped.
func (j *Job) ResumeAt(path string) error {
	start, err := resumeIter(path)
	if err != nil {
		return fmt.Errorf("Config.Resume: %w", err)
	}
	j.Start = start
	return nil
}

// resumeIter is the iteration the snapshot at path was taken at: a dsgd
// snapshot, or Caffe's .solverstate (.solverstate.h5).
func resumeIter(path string) (int, error) {
	if caffemodel.IsState(path) {
		st, err := caffemodel.ReadAnyState(path)
		if err != nil {
			return 0, err
		}
		return st.Iter, nil
	}
	st, err := checkpoint.Read(path)
	if err != nil {
		return 0, err
	}
	return st.Iter, nil
}

// Open opens the data of cfg's ranks and gives cfg its feeds: every
// worker's shard of the TRAIN set when cfg.Group is nil, else the shard
// of cfg.Group.Rank (none for a parameter server's rank past the
// workers); the test nets' data when cfg tests, each testing testIter
// batches when testIter > 0 (else its test_iter).
func (j *Job) Open(cfg *train.Config, testIter int) error {
	needTest := len(cfg.Test.Layers) > 0
	var err error
	if cfg.Group == nil {
		err = j.OpenData(needTest, cfg.Workers)
	} else {
		err = j.OpenShard(needTest, min(cfg.Group.Rank, cfg.Workers-1), cfg.Workers)
	}
	if err != nil {
		return err
	}
	cfg.TrainShapes, cfg.TrainFeeds, cfg.WorkerFeeds = j.TrainShapes, j.TrainFeeds, j.WorkerFeeds
	cfg.TestShapes, cfg.TestFeeds, cfg.ExtraTests = j.TestShapes, j.TestFeeds, j.ExtraTests
	OverrideTestIter(cfg, testIter)
	cfg.TrainSetSize = j.TrainSetSize
	if cfg.Group != nil && cfg.Group.Rank >= cfg.Workers {
		cfg.TrainFeeds = nil // the parameter server computes nothing
	}
	return nil
}

// OverrideTestIter sets every test net's batches per test pass to n (the
// command's --test-iter), the first net's and the solver's further test
// nets' alike; n of 0 keeps each net's test_iter.
func OverrideTestIter(cfg *train.Config, n int) {
	if n <= 0 {
		return
	}
	cfg.TestIter = n
	for i := range cfg.ExtraTests {
		cfg.ExtraTests[i].Iter = n
	}
}
