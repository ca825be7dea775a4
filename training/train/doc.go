// Package train owns a training run on this process's ranks, Caffe's
// Solver::Solve generalised to every scheme: it builds one net and solver
// per local rank, drives each rank with a node.Rank running the scheme's
// state machine (package scheme) over the group's transport, and does
// what Caffe's solver does around the iterations — feed the inputs,
// periodic testing on rank 0, progress, snapshots on the updating rank,
// resume, and a per-phase time account. With one worker and the `seq`
// scheme it is Caffe's single-worker loop, which every other scheme is
// measured against; with Config.Exact the synchronous schemes reproduce
// it bit for bit at any worker count (exact.go).
//
// The canonical use:
//
//	tr, err := train.New(train.Config{Train: spec, TrainShapes: shapes, TrainFeeds: feeds, Solver: sv, Config: scheme.Config{MaxIter: 10000}, ...})
//	res, err := tr.Run(ctx, train.Deps{})
//	res.Final().Get("accuracy")
//
// What exists only once the trainer is built goes to Run in Deps: the
// group's endpoint (connected with tr.LayoutHash()), a parameter
// server's center (joined with tr.JoinFields()) and the hooks.
//
// A parameter server process needs only what a run starts from:
// NewStart builds the TRAIN net with its initial weights and the solver
// as New builds rank 0's, and its NewCenterRange makes the center to
// serve, with no Trainer.
//
// Data reaches the net through the Source interface, one per Data layer;
// the data package's loaders implement it through Loader (see source.go).
package train
