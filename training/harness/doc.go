// Package harness runs the ranks of a scheme deterministically, for
// golden scripts: every rank is a real node.Rank running its real scheme
// program (scheme.New) over fixed gradients, on its own goroutines, and
// the ranks talk over a scripted transport (comm/transport/scripted)
// whose messages move only when the script says so. Between commands the
// harness waits, under testing/synctest, until every rank has gone as far
// as it can (each is waiting for a message, straggling in a compute the
// script holds, or done), then prints what happened. No command waits
// on the wall clock: the bubble's clock is virtual and moves only when
// the script ticks it (a center's round deadline fires then), so a
// script's output depends only on the scheme's semantics and the
// script.
//
// A Harness reads datadriven commands (Harness.Cmd), one group of ranks at
// a time:
//
//	ranks n=N scheme=NAME iters=I [params=P] [layers=L] [pack=false]
//	      [interval=H] [bucket=B] [variant=V] [groups=G] [alpha=A]
//	      [staleness=S] [deadline=D] [straggle=R|straggle=(R,...)]
//	      [computes=order|bsp|shared]
//	    starts N workers (plus sync-ps's server, sync-easgd's master)
//	    from the same weights, and a center.Local when the scheme's
//	    workers use one (hybrid, ssp, easgd, ...): its calls wait at a
//	    gate, and the harness lets them in one at a time once the ranks
//	    are quiescent, the lowest rank's first; every worker's k-th compute gives fixed
//	    integer gradients that depend on its rank and k, and every update
//	    is plain SGD, so that the synchronous schemes' sums are exact and
//	    their weights can equal seq's bit for bit (the workers of a
//	    scheme that shares its weights in memory, hogwild, share one
//	    slice); deadline=D is a weed-out round's (center.Config's
//	    Deadline, on the bubble's clock); straggle=R makes worker R (or
//	    each one listed) straggle from its first compute; computes=
//	    notes every compute as it runs (after any hold): order, its
//	    index only; bsp, the hash of the weights it runs on and whether
//	    compute k runs on bsp k, the start weights stepped by every
//	    worker's gradients of the k iterations before (SSP with
//	    staleness 0 is BSP); shared, whether it runs on the start
//	    weights stepped by every update that ran so far, every rank's
//	    (hogwild's claim)
//	deliver from=A to=B [n=K]   the K (1) oldest A→B messages arrive
//	deliver-all                 every queued message of a link not held
//	stabilize                   deliver-all until nothing more moves
//	drop from=A to=B            the oldest queued A→B message is lost
//	delay from=A to=B           deliver-all and stabilize pass A→B by
//	                            (it reorders against the other links)
//	release from=A to=B         ends a delay
//	straggle rank=R             R's computes do not end ...
//	release rank=R              ... until released
//	release rank=R n=K          the compute R is held in and its next
//	                            K−1 run, later ones are held again (an
//	                            error if R is not held in a compute:
//	                            a script that steps the computes one
//	                            at a time lets none run unheld)
//	crash rank=R                R's endpoint closes as a dead process's
//	timeout rank=R              R's waits for a message time out now
//	tick d=D                    the bubble's clock moves on by D: the
//	                            timers due meanwhile fire (a weed-out
//	                            round's deadline), no wall-clock time
//	                            passes; it prints the clock since the
//	                            ranks started (clock +250ms)
//	status                      who waits on whom, what is in flight
//	results                     each rank's outcome and weights, and
//	                            whether they all equal seq's; the
//	                            center's weights, its rounds and the
//	                            gradients it dropped (weed-out), and
//	                            when it dropped some, seq over the
//	                            workers that never straggled; with
//	                            computes=bsp, whether the center ends on
//	                            bsp I (SSP with staleness 0 ends where
//	                            BSP does); the most
//	                            computes held at once at a quiescent
//	                            point (every compute held, the most
//	                            that could run at once)
//	compare ref=NAME            each worker's weights and the center's,
//	                            and whether they equal, bit for bit,
//	                            those the Reference NAME of
//	                            Harness.References computes by hand
//	                            (a paper's algorithm written out in a
//	                            test: the harness's tests give alg1,
//	                            Original EASGD's Algorithm 1)
//
// Each command's output lists the messages it moved and then, rank by
// rank, what the ranks did as a result (center calls let in, computes
// run when computes= asks, iterations done or skipped, a finish with
// the weights' hash, a failure with the rank it blames: the innermost
// *transport.PeerError of its error). A rank that fails aborts its
// endpoint with its error, as a run's rank does, so its peers' errors
// carry the first cause. A rank's aborted computes come last in its
// list: a compute ends on a goroutine of its own, in no fixed order with
// what its rank does meanwhile.
package harness
