// Package collective owns the collective operations of data-parallel
// training: allreduce (binomial tree, ring, recursive doubling), reduce and
// broadcast over a binomial tree (FireCaffe §6.2), ring reduce-scatter and
// allgather, and a barrier.
//
// A collective is data first. A generator (TreeReduce, RingAllreduce,
// RecursiveDoublingAllreduce, ...) returns one rank's Schedule: an ordered
// list of Steps, each sending a range of the buffer to one peer and/or
// receiving a range from one peer, with an Op (Copy, or Add for the sum
// reduction). A schedule is pure data, so the simulator costs it without
// running it (Schedule.Cost gives bytes, messages, rounds and floats
// reduced; Verify runs a whole group's schedules without data, checks that
// they match and returns the critical-path depth), and one executor runs
// every algorithm over any transport.Endpoint.
//
// Reductions are bitwise identical on every rank and run to run: each sum
// is computed once, in a fixed order, and copied (tree, ring), or computed
// by partners adding the same two values (recursive doubling).
//
// The canonical use, one Executor per rank, reused across iterations so
// that the hot path allocates nothing:
//
//	ex := collective.NewExecutor(ep)
//	defer ex.Close()
//	for it := range iters {
//		// ... backward into grads ...
//		if err := ex.Allreduce(ctx, grads, collective.Auto); err != nil {
//			ep.Close() // end the run: peers then fail fast
//			return err
//		}
//	}
//
// Where the endpoint offers a host group (HostShared: every rank on one
// host, the tcp transport with shared memory), Allreduce and Barrier run
// in it instead of as messages, with the chosen schedule's summation
// order, so the results are bitwise the same either way.
//
// Built-in collectives use the tags from TagBase up; a scheme that also
// sends its own messages on the same Endpoint uses tags below TagBase and
// must not send to a peer while an Executor is running.
package collective
