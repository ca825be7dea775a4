// Package sim is dsgd's discrete-event simulator: it runs the real scheme
// state machines (package scheme) on a virtual clock, with a cost model in
// place of tensors and sockets, so that a scheme's behaviour at 16, 256 or
// 4,096 workers can be predicted on one machine.
//
// The package owns the event queue (container/heap, ties broken by
// scheduling order, so runs are deterministic), one virtual driver per
// rank that carries out a scheme's actions as node.Rank does, the α-β
// network with per-node link contention (SC17 Table 2; FireCaffe Eq. 3–4),
// the collectives' real schedules run step by step, and the center of the
// asynchronous schemes as a server node of the network.
//
// The canonical use:
//
//	nw, _ := sim.ParseNetwork("fdr-ib")
//	res, err := sim.Run(sim.Config{
//		Scheme:  scheme.Config{Name: "sync-tree", Workers: 64},
//		Model:   sim.Uniform(7_500_000, 50*time.Millisecond),
//		Network: nw,
//	})
//	// res.Iter, res.Compute, res.Comm, res.Wait, res.CommRatio ...
//
// What costs time: Compute (forward, then backward last layer first, with
// GradsReady as each layer with parameters finishes; with Model.Jitter
// each worker's compute is scaled every iteration by a seeded,
// positive-truncated normal draw, so synchronous schemes wait for the
// slowest as real ones do), Update
// (Model.Update), Scale and Axpy (one add per element at Model.AddRate;
// Copy is free), every message (Alpha + Beta·bytes on its links, waiting
// for the sender's out-link and the receiver's in-link), a collective's
// reductions (Model.AddRate), and the center's work. Communication
// actions of a rank run one at a time in issue order; sends are eager (a
// send completes when its last byte has left, whether or not the receive
// was posted) and a receive completes when its message has arrived.
//
// By default no data moves: the simulator allocates no buffers and does
// no arithmetic. With Config.Exact, for at most MaxExactRanks ranks, every
// action also does its arithmetic on real buffers as node.Rank does (the
// data of a message as it was when sent, collectives by their real
// schedules, the center as a center.Local called when each request
// reaches it), and Result.Weights holds the final weights: a synchronous
// scheme's are bitwise those of real ranks (TestExactMatchesNode), which
// checks the numbers as well as the time.
//
// Memory stays bounded at thousands of ranks: a rank's schedule is
// generated when its collective starts and dropped when it ends, and a
// ring allreduce, whose schedules hold O(p) steps per rank, is computed by
// its recurrence over p ranks once all have entered instead of message by
// message (ringRun).
package sim
