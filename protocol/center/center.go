package center

import (
	"context"
	"fmt"
)

// Center is the shared state a worker of an asynchronous scheme talks to.
// Worker ids are 0..Workers-1. Every call honours ctx; an implementation
// over a network also bounds each call by its own deadline.
//
// Implementations: Local (in-process), the ps package's client (TCP to a
// parameter server, optionally sharded by parameter range), and the smb
// package's SEASGD adapter (Pull and Push only).
type Center interface {
	// Join registers worker w (again, after a restart) and returns the
	// iteration it should continue from: the control area's count for w.
	// Until it joins, a worker counts as present: turns, rounds and SSP
	// wait for it.
	Join(ctx context.Context, w int) (iter int, err error)
	// Pull copies the center weights into dst (len N).
	Pull(ctx context.Context, w int, dst []float32) error
	// Push adds delta (len N) into the center weights: Downpour's merge
	// (SpeeDO 3.2) and SEASGD's accumulation (ShmCaffe Eq. 7).
	Push(ctx context.Context, w int, delta []float32) error
	// Elastic performs EASGD's exchange with worker weights x (len N): with
	// c the center before the call, the center becomes c + alpha·(x − c)
	// (SC17 Eq. 2) and x becomes x − alpha·(x − c) (Eq. 1's elastic term).
	// Under the round-robin policy the call waits for w's turn.
	Elastic(ctx context.Context, w int, x []float32, alpha float32) error
	// Round hands in worker w's gradients for weed-out round iter and
	// waits until the round closes: when every live worker's gradients are
	// in, or at the deadline after the first arrived. The center then
	// applies the mean of the gradients that arrived in time. It returns
	// the next round; dropped reports that w's gradients came too late and
	// were discarded (w must pull fresh weights and continue from next).
	Round(ctx context.Context, w, iter int, grads []float32) (next int, dropped bool, err error)
	// Closed waits until weed-out round iter has closed (at once if it
	// has) and returns the round open then. A worker asks it while it
	// computes, to learn that the round closed without it and restart
	// (SpeeDO 3.4). It may run at once with the worker's other calls.
	Closed(ctx context.Context, w, iter int) (next int, err error)
	// Clock records that worker w finished iteration iter and, with
	// staleness s >= 0, waits while w is more than s iterations ahead of
	// the slowest live worker (SSP). It returns stop when the run should
	// end now by the finish rule (ShmCaffe III.E).
	Clock(ctx context.Context, w, iter, s int) (stop bool, err error)
	// Leave marks worker w finished (err == nil) or gone; it no longer
	// holds back SSP, rounds or round-robin turns.
	Leave(ctx context.Context, w int, cause error) error
}

// FinalPuller is a Center that can hand out the run's final model: the
// center weights once no worker is present any more, so that it holds
// every worker's last exchange. A worker process that reads the center
// for its final test and snapshot (rank 0 over TCP, where the others are
// processes of their own) uses it instead of an observer's Pull, which
// would miss the exchanges of the workers still running.
type FinalPuller interface {
	PullFinal(ctx context.Context, dst []float32) error
}

// Observer is the worker id of a reader that takes no part in the run
// (tests and snapshots of the center's weights): Pull accepts it and never
// waits for a turn.
const Observer = -1

// Policy is how the center serialises the workers.
type Policy int

const (
	// FCFS serves exchanges first come, first served, one at a time
	// (Async EASGD, SC17 5).
	FCFS Policy = iota
	// RoundRobin serves workers one at a time in rank order (Original
	// EASGD, SC17 Alg. 1): a worker's turn starts with its Pull, which
	// waits for it, and ends with the Clock of its τ-th iteration
	// (Config.Interval), which passes it on; only one worker works at a
	// time.
	RoundRobin
	// Hogwild updates the center with no lock (Hogwild EASGD, SC17 5):
	// concurrent exchanges may interleave element by element.
	Hogwild
)

func (p Policy) String() string {
	switch p {
	case FCFS:
		return "fcfs"
	case RoundRobin:
		return "round-robin"
	case Hogwild:
		return "hogwild"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// Finish is the aligned-termination rule of ShmCaffe III.E.
type Finish int

const (
	// FinishOwn lets every worker run its own iterations (no alignment).
	FinishOwn Finish = iota
	// FinishMaster ends every worker when worker 0 finishes.
	FinishMaster
	// FinishFirst ends every worker when the first one finishes.
	FinishFirst
	// FinishAverage ends every worker when the mean iteration count of all
	// workers reaches MaxIter.
	FinishAverage
)

var finishNames = [...]string{"own", "master", "first", "average"}

func (f Finish) String() string {
	if int(f) < len(finishNames) {
		return finishNames[f]
	}
	return fmt.Sprintf("finish(%d)", int(f))
}

// ParseFinish parses a --finish value.
func ParseFinish(s string) (Finish, error) {
	for i, n := range finishNames {
		if s == n {
			return Finish(i), nil
		}
	}
	return 0, fmt.Errorf("unknown finish rule %q; choose own, master, first or average", s)
}
