// Package job is a Caffe job made ready to train, test or time: it loads
// the net and solver an Options names (prototxt files, or a built-in
// model of package zoo), merges their NetStates, and opens every data
// layer's source as train.Feeds — one shard per worker of the TRAIN set,
// the TEST set, the solver's further test nets — with the figures the
// header prints (DataDesc, Warnings, Notes) and the checks a run needs
// before it starts (CheckLabels).
//
// The canonical use:
//
//	j, err := job.Load(job.Options{Model: "lenet", Seed: -1, Shuffle: true})
//	err = j.OpenData(true, workers)
//	defer j.Close()
//	tr, err := train.New(train.Config{Train: j.Train.Spec, TrainShapes: j.TrainShapes, TrainFeeds: j.TrainFeeds, ...})
//
// TrainNet is a job's TRAIN net alone, filled with one batch (dsgd time,
// dsgd simulate's calibration); Config, Place, ResumeAt and Open assemble
// the parts of a train.Config that come from the job (dsgd train).
//
// It sits in the training group above train, whose Config it fills; only
// the commands use it. Its messages name its inputs by their fields
// (Options.Data, Sums.Atom) and the run's settings by train.Config's
// (Config.Exact), as train's do; the command maps them to its flags when
// it prints.
package job
