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
package scheme
