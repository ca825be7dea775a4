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
// Train is where a training run is assembled (dsgd train, worker, ps,
// compare): from a plain RunOptions value (every train setting as a
// typed field, checked once by RunOptions.Check) and the RunDeps the
// caller passes in (its writers, how it names the fields, the snapshot's
// run record, and on a rank of a multi-process group the Group with the
// servers' center factories), it makes the train.Config, opens the
// files and data, plans the sums and the compressor, joins an elastic
// group or the group's endpoint (tcp or MPI, JoinMPI), serves the
// metrics, builds and checks the trainer, prints the header
// (WriteHeader, WriteEngine, CompressHeader) and after the run the
// summary (WriteSummary, WriteCompressed, WriteTraffic, WriteLinks).
//
// TrainNet is a job's TRAIN net alone, filled with one batch (dsgd time,
// dsgd simulate's calibration); Config, Place, ResumeAt and Open assemble
// the parts of a train.Config that come from the job (Train uses them).
//
// It sits in the training group above train, whose Config it fills; only
// the commands use it. Its messages name its inputs by their fields
// (Options.Data, Sums.Atom, RunOptions.Workers) and the run's settings by
// train.Config's (Config.Exact), as train's do; the command maps them to
// its flags when it prints (RunDeps.Names for what Train prints itself).
package job
