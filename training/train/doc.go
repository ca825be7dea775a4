// Package train owns the single-worker training loop, Caffe's
// Solver::Solve: feed the inputs, forward, backward, update, with periodic
// testing, progress, snapshots, resume and a per-phase time account. It is
// what the `seq` scheme runs, and what every other scheme is measured
// against.
//
// The canonical use:
//
//	tr, err := train.New(train.Config{Train: spec, TrainShapes: shapes, TrainFeeds: feeds, Solver: sc, MaxIter: 10000, ...})
//	res, err := tr.Run(ctx)
//	res.Final().Get("accuracy")
//
// Data reaches the net through the Source interface, one per Data layer;
// the data package's loaders implement it through Loader (see source.go).
package train
