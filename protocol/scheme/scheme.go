package scheme

import "fmt"

// Buffer names a float32 buffer a driver holds for one rank. A scheme
// never sees memory: it names buffers and ranges, and the driver (real or
// simulated) does the work.
type Buffer int

const (
	// Params is the rank's model weights (all layers, one flat buffer).
	Params Buffer = iota
	// Grads is the rank's gradients, laid out as Params.
	Grads
	// Aux is a scratch buffer of the same length that a scheme may use
	// (a parameter server's accumulator, an elastic center).
	Aux
	// Delta and Spare are two more scratch buffers of the same length
	// (an elastic difference, a reduction's operand). A driver allocates
	// a scratch buffer when a scheme first names it.
	Delta
	Spare
	// Wire is a scratch buffer of the same length for packed quantised
	// values (streaming-diloco's pseudo-gradients, QuantWords).
	Wire
	numBuffers
)

func (b Buffer) String() string {
	switch b {
	case Params:
		return "params"
	case Grads:
		return "grads"
	case Aux:
		return "aux"
	case Delta:
		return "delta"
	case Spare:
		return "spare"
	case Wire:
		return "wire"
	}
	return fmt.Sprintf("buffer(%d)", int(b))
}

// Range is a slice [Lo, Hi) of a buffer.
type Range struct {
	Buf    Buffer
	Lo, Hi int
}

// Len is the number of values in the range.
func (r Range) Len() int { return r.Hi - r.Lo }

// Op is the kind of an Action.
type Op int

// The actions a scheme can ask of its driver.
const (
	// Compute runs forward and backward on the rank's next batch,
	// overwriting Grads. The driver answers with GradsReady events as
	// layers finish (when WatchGrads is set) and ComputeDone at the end.
	Compute Op = iota
	// Allreduce sums R over every rank of the group, in place.
	Allreduce
	// Broadcast copies R from rank Peer to every rank.
	Broadcast
	// Send sends R to rank Peer.
	Send
	// Recv receives into R from rank Peer; with Add it sums into R.
	Recv
	// Scale multiplies R by Factor.
	Scale
	// Update applies the solver's rule to Params from Grads at iteration
	// Iter.
	Update
	// Copy copies range Src into R (same length).
	Copy
	// IterDone reports that iteration Iter is complete on this rank, with
	// Loss the rank's training loss: the driver may test, display and
	// snapshot now.
	IterDone
	// Finish ends the rank's run.
	Finish
	// Reduce sums R over every rank of the group into rank Peer's R (the
	// other ranks' R is left undefined).
	Reduce
	// Axpy adds Factor·Src to R (same length).
	Axpy

	// The center operations (package center): a worker of an
	// asynchronous scheme and the shared state it talks to. They run on
	// the communication goroutine, in issue order, like transfers.

	// Join registers the worker with the center; Done carries the
	// iteration to continue from in Iter.
	Join
	// Pull copies the center weights into R.
	Pull
	// Push adds R into the center weights.
	Push
	// Elastic exchanges R (the worker's weights) with the center: both
	// move toward each other by Factor·(R − center).
	Elastic
	// Round hands R (gradients) in for weed-out round Iter; Done carries
	// the next round in Iter and Dropped when they came too late.
	Round
	// Clock reports iteration Iter done and waits while the worker is
	// more than Staleness iterations ahead of the slowest (Staleness < 0:
	// no wait); Done carries Stop when the run should end.
	Clock
	// Leave tells the center this worker is finished.
	Leave

	// Closed waits until weed-out round Iter has closed; Done carries the
	// next round in Iter. It is a side op: the driver runs it beside the
	// communication queue, not in it, so it may be answered at any time
	// (IsSide).
	Closed
	// Abort ends the rank's running Compute early: its ComputeDone comes
	// with Aborted set and the gradients are undefined (SpeeDO 3.4's
	// restart of a straggler). With no compute running it does nothing.
	Abort
	// Accumulate adds R into the shared accumulator's sum of iteration
	// Iter (TRL Alg. 7): a communication op, run in issue order.
	Accumulate
	// Gather waits until every worker has accumulated R for iteration
	// Iter and copies the sum into R (TRL Alg. 6 lines 7–10): a side op.
	Gather
	// Fill sets every value of R to Factor (local): hybrid's root writes
	// its stop decision into the value its group's flag broadcast
	// carries.
	Fill
	// Quantize packs Src quantised to Bits into R (local; R holds
	// QuantWords(Src.Len(), Bits) words; see PackQuantized).
	Quantize
	// Dequantize unpacks R's values from Src, packed by Quantize at
	// Bits, and with Add sums them into R in float32 (local).
	Dequantize
)

var opNames = [...]string{"compute", "allreduce", "broadcast", "send", "recv", "scale", "update", "copy", "iter-done", "finish",
	"reduce", "axpy", "join", "pull", "push", "elastic", "round", "clock", "leave", "closed", "abort", "accumulate", "gather", "fill", "quantize", "dequantize"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// IsComm reports whether the op moves data between ranks. The driver runs
// communication ops one at a time, in issue order, on a communication
// goroutine, so every rank's collectives line up; the others run at once.
func (o Op) IsComm() bool {
	switch o {
	case Allreduce, Broadcast, Send, Recv, Reduce, Accumulate:
		return true
	}
	return o.IsCenter()
}

// IsCenter reports whether the op talks to the center (package center)
// through the communication queue.
func (o Op) IsCenter() bool { return o >= Join && o <= Leave }

// IsSide reports whether the op is a wait the driver runs on its own,
// beside the communication queue, answered by a Done whenever it
// completes (Closed, Gather).
func (o Op) IsSide() bool { return o == Closed || o == Gather }

// Action is one request from a scheme to its driver. Compute is answered
// by ComputeDone, and each communication op by a Done event carrying its
// ID. Local ops (Scale, Update, Copy, IterDone) run at once, in issue
// order, and are not answered; Finish ends the run.
type Action struct {
	Op     Op
	ID     int
	R      Range
	Src    Range   // Copy, Axpy, Quantize, Dequantize
	Peer   int     // Send, Recv, Broadcast and Reduce (root)
	Add    bool    // Recv, Dequantize
	Bits   int     // Quantize, Dequantize
	Tag    uint32  // Send, Recv
	Factor float32 // Scale, Axpy, Elastic (alpha)
	Iter   int     // Update, IterDone, Round, Clock
	Loss   float64 // IterDone
	// Skipped marks an IterDone of a round that closed without this
	// rank's gradient (weedout): the run's iteration Iter is over, but
	// the rank has no loss for it.
	Skipped bool
	// Staleness is Clock's bound.
	Staleness int
	// Group, when set, runs Allreduce, Broadcast or Reduce among these
	// ranks only (ascending; Peer is then a rank of the whole group).
	Group []int
	// Flag, on a Broadcast, makes its Done carry Stop when the first
	// value of R, as broadcast, is non-zero: how a group root's stop
	// decision reaches ranks that do not talk to the center.
	Flag bool
	// WatchGrads asks Compute for GradsReady events.
	WatchGrads bool
	// Algo picks the allreduce algorithm.
	Algo Algo
}

// Algo is an allreduce algorithm a scheme may ask for; the driver maps it
// to the collective package's.
type Algo int

const (
	// AlgoAuto lets the driver choose by message size.
	AlgoAuto Algo = iota
	// AlgoTree is FireCaffe's binomial reduction tree.
	AlgoTree
	// AlgoRing is reduce-scatter plus allgather around a ring.
	AlgoRing
)

// EventKind is the kind of an Event.
type EventKind int

const (
	// Start begins the run.
	Start EventKind = iota
	// GradsReady says Grads[Lo:Hi] is final for the current Compute.
	GradsReady
	// ComputeDone ends a Compute, with its loss.
	ComputeDone
	// Done completes the action with ID.
	Done
)

// Event is what a driver reports to its scheme.
type Event struct {
	Kind   EventKind
	ID     int     // Done
	Lo, Hi int     // GradsReady
	Loss   float64 // ComputeDone
	// Iter answers Join (the iteration to continue from) and Round (the
	// next round).
	Iter int
	// Dropped answers Round: the gradients came after the round closed.
	Dropped bool
	// Stop answers Clock: the run should end now.
	Stop bool
	// Aborted marks a ComputeDone that an Abort cut short.
	Aborted bool
}

// Rank is one rank's scheme logic: a state machine that turns events into
// actions. It does no I/O, keeps no time and touches no memory; a Rank is
// not safe for concurrent use (its driver owns it).
type Rank interface {
	// Step consumes an event and returns the actions it triggers, to be
	// issued in order. The returned slice is valid until the next call.
	Step(ev Event) []Action
}

// Layout is what a scheme knows of the model: the parameter count and the
// blocks (per-layer ranges), in forward order.
type Layout struct {
	N      int
	Blocks []Range // Buf is ignored
}

// VecOps are the vector kernels a driver gives Arith (the engine's SIMD
// ones, which this package may not import).
type VecOps struct {
	Scale func(a float32, x []float32)    // x = a·x
	Axpy  func(a float32, x, y []float32) // y += a·x
}

// Arith carries out a's arithmetic if a is one of the local ops that only
// compute on the rank's buffers (Scale, Copy, Axpy, Fill, Quantize,
// Dequantize), on the ranges
// that buf returns, and reports whether it was. Every driver (the real
// one, the simulator's exact mode) runs them through here, so they mean
// the same everywhere.
func (a Action) Arith(buf func(Range) []float32, ops VecOps) bool {
	switch a.Op {
	case Scale:
		ops.Scale(a.Factor, buf(a.R))
	case Copy:
		copy(buf(a.R), buf(a.Src))
	case Axpy:
		ops.Axpy(a.Factor, buf(a.Src), buf(a.R))
	case Fill:
		dst := buf(a.R)
		for i := range dst {
			dst[i] = a.Factor
		}
	case Quantize:
		PackQuantized(buf(a.R), buf(a.Src), a.Bits)
	case Dequantize:
		UnpackQuantized(buf(a.R), buf(a.Src), a.Bits, a.Add)
	default:
		return false
	}
	return true
}
