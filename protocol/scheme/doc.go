// Package scheme owns the parallel SGD schemes as pure logic, in the
// manner of etcd's raft: each rank's scheme is a state machine (Rank) that
// consumes events (start, a layer's gradients are final, compute done, a
// transfer done) and returns actions (compute the next batch, allreduce
// this range, send that buffer to rank 3, scale, update, iteration done).
// It never touches memory, the network, the clock or the model; a driver
// (package node, or the simulator) carries the actions out and reports
// back. The same scheme code therefore runs over goroutines, TCP and a
// virtual clock.
//
// New(cfg) returns the Rank for every rank of a scheme:
//
//	ranks, err := scheme.New(scheme.Config{Name: "sync-tree", Workers: 4, MaxIter: 1000, Layout: layout})
//
// Ranks 0..Workers-1 are workers; a scheme with a parameter server
// (sync-ps) adds one more rank, Workers, for the server.
//
// The catalogue (registry.go, one family_*.go file per family of
// schemes) lists every scheme as an Info: its paper, its ranks, what it
// asks of a center, what it alone does, and how to build its ranks.
// Callers ask it (Lookup, Config.Info) instead of comparing names, and so
// does this package: no scheme name is compared outside the catalogue.
//
// Every scheme, synchronous or asynchronous, is written the same way: as
// a program (program.go), a sequence of steps (an action that is or is
// not waited for, a callback, a barrier, a wait for a condition) that a
// rank runs in order as events answer them. A scheme gives its opening
// steps and its iteration; the program's loop reports each iteration and
// ends the run. config.go holds Config and its checks; sync.go,
// localsgd.go, diloco.go and streaming.go the synchronous schemes;
// async.go the center schemes' shared worker and sync-easgd; weedout.go
// weed-out.
package scheme
