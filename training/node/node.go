package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/compress"
	"dsgd/comm/transport"
	"dsgd/engine/tensor"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// Computer runs one forward-backward pass of a rank's model on its next
// batch, writing the gradients into the Grads buffer, calling ready(lo,
// hi) from its own goroutine as soon as Grads[lo:hi] is final, and
// returning the loss. A parameter server rank has none.
type Computer interface {
	Compute(ctx context.Context, ready func(lo, hi int)) (loss float64, err error)
}

// Accumulator is a gradient accumulator the workers of one process share
// (package accum).
type Accumulator interface {
	// Add adds src into iteration iter's sum of the block at lo.
	Add(ctx context.Context, iter, lo int, src []float32) error
	// Gather waits for every worker's Add of the block and copies the
	// sum into dst.
	Gather(ctx context.Context, iter, lo int, dst []float32) error
}

// Phase indices of a rank's time account (Stats.Phase). Compute time is
// the Computer's to account.
const (
	PhaseComm   = iota // exposed communication: waiting with no compute running
	PhaseUpdate        // scale, update and copies
	// PhaseWait is exposed time in the center operations that wait for
	// other workers by design (SSP's clock, a weed-out round): time lost
	// to slower workers rather than to moving data. A synchronous
	// collective's wait for a straggler cannot be told apart from its
	// transfers and stays in PhaseComm.
	PhaseWait
)

// Rank is everything a driver needs to run one rank of a scheme.
type Rank struct {
	// Scheme is the rank's scheme logic.
	Scheme scheme.Rank
	// Ep connects the rank to the others; nil for a group of one.
	Ep transport.Endpoint
	// Buffers are the rank's Params and Grads. The scratch buffers (Aux,
	// Delta, Spare, Wire) may be left nil: the rank allocates one, as long
	// as Params, the first time its scheme names it.
	Params, Grads, Aux, Delta, Spare, Wire []float32
	// Center is the shared state of an asynchronous scheme, and CenterID
	// this rank's worker id there; nil for the other schemes.
	Center   center.Center
	CenterID int
	// Accum is the shared gradient accumulator of overlap's TRL variant
	// (scheme.Config.Accumulate); nil for the other schemes.
	Accum Accumulator
	// Computer computes gradients; nil on a server rank.
	Computer Computer
	// Update applies the solver at iteration iter to Params from Grads.
	Update func(iter int)
	// OnIter is called after every IterDone with the iteration and the
	// rank's loss; an error ends the run. May be nil.
	OnIter func(iter int, loss float64) error
	// OnSkip is called after an IterDone marked Skipped: iteration iter
	// of the run is over without this rank's gradient (weedout). May be
	// nil.
	OnSkip func(iter int)
	// Compress, when set, carries out every allreduce of the Grads buffer
	// (the synchronous schemes' gradient sum), and every Send of it (a
	// sync-ps worker's push), through the worker's gradient compressor
	// instead of moving the floats as they are.
	Compress *compress.Reducer
	// Decompress, on a sync-ps server whose workers compress their
	// pushes, decodes every Recv into the Grads buffer.
	Decompress *compress.Decoder
	// Algo maps the scheme's allreduce choice to a collective algorithm;
	// nil picks collective.Auto for every choice.
	Algo func(scheme.Algo) collective.Algorithm
	// Timeout bounds a wait for a peer (0: none beyond ctx).
	Timeout time.Duration
	// Trace, when set, is told of each span of the rank's own work, for a
	// timeline: every communication action when it finishes (cat "comm",
	// or "center" for a center operation; the name is the op and its
	// range, as in "allreduce grads[0:431080]"), every local action but
	// IterDone (cat "update"), and every exposed wait for communication
	// or the center (cat "wait", named "wait " and the op waited for).
	// It is called from the rank's loop and from its communication
	// goroutine, possibly at once. nil (the default) turns tracing off at
	// no cost.
	Trace func(name, cat string, start time.Time, dur time.Duration)

	// Stats accumulates the rank's time account.
	Stats Stats

	groups map[string]*collective.Executor // sub-group executors, by member list
}

// Stats is a rank's time account.
type Stats struct {
	// Time per phase (PhaseComm, PhaseUpdate, PhaseWait).
	Phase [3]time.Duration
	// CommBusy is the time the communication goroutine spent working,
	// hidden or not.
	CommBusy time.Duration
	// Iters counts IterDone actions.
	Iters int
}

type event struct {
	ev   scheme.Event
	err  error
	busy time.Duration // communication time behind a Done
	side bool          // the Done of a side op, outside the queue
}

// answer is what a communication action reports back to its scheme.
type answer struct {
	iter          int
	dropped, stop bool
}

// Run drives the rank until its scheme finishes, an action fails, or ctx
// is cancelled. Errors name the rank.
func (r *Rank) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan event, 64)
	comm := make(chan scheme.Action, 256)
	commDone := make(chan struct{})
	go func() {
		defer close(commDone)
		r.commLoop(ctx, comm, events)
	}()
	// computeWG tracks the compute goroutine, which Run waits for before
	// returning, so the caller may read what Compute wrote; sideWG the
	// side ops' goroutines.
	var computeWG, sideWG sync.WaitGroup
	defer func() {
		close(comm)
		cancel()
		<-commDone
		computeWG.Wait()
		sideWG.Wait()
	}()
	// abort cancels the running compute (Abort).
	abort := context.CancelFunc(func() {})
	defer func() { abort() }()
	side := map[int]bool{} // IDs of the side ops in flight

	computing := false
	pendingComm := 0
	var inFlight []scheme.Op // pending communication, oldest (running) first
	// outbox holds communication actions not yet handed to the
	// communication goroutine: a Step may issue any number, and blocking
	// on a full comm channel while that goroutine blocks on a full events
	// channel would deadlock.
	var outbox []scheme.Action
	var ctxDone <-chan struct{} = ctx.Done()
	dispatch := func(acts []scheme.Action) (bool, error) {
		for _, a := range acts {
			switch {
			case a.Op == scheme.Finish:
				return true, nil
			case a.Op == scheme.Compute:
				if r.Computer == nil {
					return false, fmt.Errorf("scheme asked a rank with no model to compute")
				}
				computing = true
				watch := a.WatchGrads
				computeWG.Add(1)
				cctx, cancelCompute := context.WithCancel(ctx)
				abort = cancelCompute
				go func() {
					defer computeWG.Done()
					defer cancelCompute()
					var ready func(lo, hi int)
					if watch {
						ready = func(lo, hi int) {
							select {
							case events <- event{ev: scheme.Event{Kind: scheme.GradsReady, Lo: lo, Hi: hi}}:
							case <-ctx.Done():
							}
						}
					}
					loss, err := r.Computer.Compute(cctx, ready)
					aborted := err != nil && cctx.Err() != nil && ctx.Err() == nil
					if aborted {
						err = nil
					}
					select {
					case events <- event{ev: scheme.Event{Kind: scheme.ComputeDone, Loss: loss, Aborted: aborted}, err: err}:
					case <-ctx.Done():
					}
				}()
			case a.Op == scheme.Abort:
				abort()
			case a.Op.IsSide():
				side[a.ID] = true
				sideWG.Add(1)
				go func() {
					defer sideWG.Done()
					var ans answer
					var err error
					if a.Op == scheme.Gather {
						err = r.gather(ctx, a)
					} else {
						ans, err = r.center(ctx, a)
					}
					select {
					case events <- event{ev: scheme.Event{Kind: scheme.Done, ID: a.ID, Iter: ans.iter}, err: err, side: true}:
					case <-ctx.Done():
					}
				}()
			case a.Op.IsComm():
				pendingComm++
				inFlight = append(inFlight, a.Op)
				outbox = append(outbox, a)
			default:
				t0 := time.Now()
				err := r.local(a)
				if a.Op != scheme.IterDone { // the hook's tests and snapshots are not update time
					d := time.Since(t0)
					r.Stats.Phase[PhaseUpdate] += d
					if r.Trace != nil {
						r.Trace(ActionName(a), "update", t0, d)
					}
				}
				if err != nil {
					return false, err
				}
			}
		}
		return false, nil
	}
	if fin, err := dispatch(r.Scheme.Step(scheme.Event{Kind: scheme.Start})); fin || err != nil {
		return err
	}
	for {
		t0 := time.Now()
		var e event
		var send chan<- scheme.Action
		var next scheme.Action
		if len(outbox) > 0 {
			send, next = comm, outbox[0]
		}
		select {
		case send <- next:
			n := copy(outbox, outbox[1:])
			outbox = outbox[:n]
			continue
		case e = <-events:
		case <-ctxDone:
			return ctx.Err()
		}
		if e.side {
			delete(side, e.ev.ID)
			if e.err != nil {
				return e.err
			}
			fin, err := dispatch(r.Scheme.Step(e.ev))
			if fin || err != nil {
				return err
			}
			continue
		}
		if !computing && pendingComm > 0 {
			ph := PhaseComm
			if op := inFlight[0]; op == scheme.Clock || op == scheme.Round {
				ph = PhaseWait
			}
			d := time.Since(t0)
			r.Stats.Phase[ph] += d
			if r.Trace != nil {
				r.Trace("wait "+inFlight[0].String(), "wait", t0, d)
			}
		}
		if e.err != nil {
			return e.err
		}
		switch e.ev.Kind {
		case scheme.ComputeDone:
			computing = false
		case scheme.Done:
			pendingComm--
			// Shift rather than reslice, so the backing array is reused
			// and the steady state does not allocate.
			n := copy(inFlight, inFlight[1:])
			inFlight = inFlight[:n]
			r.Stats.CommBusy += e.busy
		}
		fin, err := dispatch(r.Scheme.Step(e.ev))
		if fin || err != nil {
			return err
		}
	}
}

// Algorithm is the collective algorithm that carries out a scheme's
// allreduce choice a: override unless it is collective.Auto, else the
// tree or ring the scheme asks for, else collective.Auto (chosen by
// size). It is what Rank.Algo does in a run.
func Algorithm(override collective.Algorithm, a scheme.Algo) collective.Algorithm {
	if override != collective.Auto {
		return override
	}
	switch a {
	case scheme.AlgoTree:
		return collective.Tree
	case scheme.AlgoRing:
		return collective.Ring
	}
	return collective.Auto
}

// CenterConfig is what scheme sc fixes of the configuration of its
// center with n workers (sc.UsesCenter) starting from weights: the
// serialisation policy, round-robin's interval, where the iterations
// start, and whether reads are at the global clock (ssp with s = 0 is BSP
// whatever the timing). The run sets the rest (finish rule, limits, the
// center's own solver).
func CenterConfig(sc scheme.Config, n int, weights []float32) center.Config {
	cc := center.Config{Workers: n, Weights: weights, StartIter: sc.StartIter, ClockedReads: sc.ClockedReads()}
	if cc.Policy = center.Policy(sc.Info().Policy); cc.Policy == center.RoundRobin {
		cc.Interval = sc.Interval
	}
	return cc
}

// local runs a local action.
func (r *Rank) local(a scheme.Action) error {
	if a.Arith(r.slice, vecOps) {
		return nil
	}
	switch a.Op {
	case scheme.Update:
		r.Update(a.Iter)
	case scheme.IterDone:
		if a.Skipped {
			if r.OnSkip != nil {
				r.OnSkip(a.Iter)
			}
			return nil
		}
		r.Stats.Iters++
		if r.OnIter != nil {
			return r.OnIter(a.Iter, a.Loss)
		}
	default:
		return fmt.Errorf("node: unexpected action %v", a.Op)
	}
	return nil
}

// vecOps are the engine's kernels for the local actions' arithmetic.
var vecOps = scheme.VecOps{Scale: tensor.Scale, Axpy: tensor.Axpy}

func (r *Rank) slice(rg scheme.Range) []float32 {
	var b *[]float32
	switch rg.Buf {
	case scheme.Params:
		b = &r.Params
	case scheme.Grads:
		b = &r.Grads
	case scheme.Aux:
		b = &r.Aux
	case scheme.Delta:
		b = &r.Delta
	case scheme.Spare:
		b = &r.Spare
	case scheme.Wire:
		b = &r.Wire
	default:
		panic(fmt.Sprintf("node: unknown buffer %v", rg.Buf))
	}
	if *b == nil {
		*b = make([]float32, len(r.Params))
	}
	return (*b)[rg.Lo:rg.Hi]
}

// commLoop runs communication actions one at a time, in issue order.
func (r *Rank) commLoop(ctx context.Context, in <-chan scheme.Action, events chan<- event) {
	var scratch []float32
	var exec *collective.Executor
	if r.Ep != nil {
		exec = collective.NewExecutor(r.Ep)
		defer exec.Close()
	}
	defer func() {
		for _, e := range r.groups {
			e.Close()
		}
	}()
	for a := range in {
		t0 := time.Now()
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if r.Timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, r.Timeout)
		}
		ans, err := r.comm(cctx, exec, a, &scratch)
		cancel()
		busy := time.Since(t0)
		if r.Trace != nil {
			cat := "comm"
			if a.Op.IsCenter() {
				cat = "center"
			}
			r.Trace(ActionName(a), cat, t0, busy)
		}
		if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			if cause := r.probeStalled(ctx, a, err); cause != nil {
				err = fmt.Errorf("%v %v: %w", a.Op, a.R.Buf, cause)
			} else {
				err = fmt.Errorf("%v %v: no answer from %s within %v: %w", a.Op, a.R.Buf, stalledPeer(a, err), r.Timeout, err)
			}
		}
		select {
		case events <- event{ev: scheme.Event{Kind: scheme.Done, ID: a.ID, Iter: ans.iter, Dropped: ans.dropped, Stop: ans.stop}, err: err, busy: busy}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (r *Rank) comm(ctx context.Context, exec *collective.Executor, a scheme.Action, scratch *[]float32) (answer, error) {
	if a.Op.IsCenter() {
		return r.center(ctx, a)
	}
	if a.Op == scheme.Accumulate {
		if r.Accum == nil {
			return answer{}, fmt.Errorf("node: the scheme accumulates but the rank has no accumulator")
		}
		return answer{}, r.Accum.Add(ctx, a.Iter, a.R.Lo, r.slice(a.R))
	}
	buf := r.slice(a.R)
	if a.Group != nil && r.Ep != nil {
		var err error
		if exec, err = r.groupExecutor(a.Group); err != nil {
			return answer{}, err
		}
	}
	switch a.Op {
	case scheme.Allreduce:
		if r.Ep == nil {
			return answer{}, nil
		}
		alg := collective.Auto
		if r.Algo != nil {
			alg = r.Algo(a.Algo)
		}
		if r.Compress != nil && a.R.Buf == scheme.Grads && a.Group == nil {
			return answer{}, r.Compress.Reduce(ctx, a.R.Lo, buf, execCollective{exec, alg})
		}
		return answer{}, exec.Allreduce(ctx, buf, alg)
	case scheme.Broadcast:
		if r.Ep == nil {
			return answer{stop: a.Flag && len(buf) > 0 && buf[0] != 0}, nil
		}
		err := exec.Broadcast(ctx, r.groupRank(a.Group, a.Peer), buf)
		// A flag broadcast tells the ranks the root's stop decision.
		return answer{stop: err == nil && a.Flag && len(buf) > 0 && buf[0] != 0}, err
	case scheme.Reduce:
		if r.Ep == nil {
			return answer{}, nil
		}
		return answer{}, exec.Reduce(ctx, r.groupRank(a.Group, a.Peer), buf)
	case scheme.Send:
		if r.Compress != nil && a.R.Buf == scheme.Grads {
			return answer{}, r.Compress.Push(ctx, a.R.Lo, buf, pusher{r.Ep, a.Peer, a.Tag})
		}
		return answer{}, r.Ep.Send(ctx, a.Peer, a.Tag, buf)
	case scheme.Recv:
		if r.Decompress != nil && a.R.Buf == scheme.Grads {
			return answer{}, r.Decompress.Pull(ctx, a.Peer, a.R.Lo, buf, a.Add, func(ctx context.Context, payload []float32) error {
				return r.Ep.Recv(ctx, a.Peer, a.Tag, payload)
			})
		}
		if !a.Add {
			return answer{}, r.Ep.Recv(ctx, a.Peer, a.Tag, buf)
		}
		if cap(*scratch) < len(buf) {
			*scratch = make([]float32, len(buf))
		}
		s := (*scratch)[:len(buf)]
		if err := r.Ep.Recv(ctx, a.Peer, a.Tag, s); err != nil {
			return answer{}, err
		}
		tensor.AddTo(buf, s)
		return answer{}, nil
	}
	return answer{}, fmt.Errorf("node: %v is not a communication action", a.Op)
}

// execCollective is the rank's executor as a compressor's collectives.
type execCollective struct {
	exec *collective.Executor
	alg  collective.Algorithm
}

func (c execCollective) Allreduce(ctx context.Context, buf []float32) error {
	return c.exec.Allreduce(ctx, buf, c.alg)
}

func (c execCollective) Allgather(ctx context.Context, buf []float32) error {
	return c.exec.Allgather(ctx, buf)
}

// Sent counts the endpoint's bytes; the host group's shared-memory
// allreduce and MPI's own collectives move their data outside them.
func (c execCollective) Sent() int64 {
	ep := c.exec.Endpoint()
	if h, ok := ep.(collective.HostShared); ok && h.HostGroup() != nil {
		return -1
	}
	if _, ok := ep.(collective.Native); ok {
		return -1
	}
	return ep.Stats().BytesSent
}

// pusher is a Send to the server as a compressor's push.
type pusher struct {
	ep   transport.Endpoint
	peer int
	tag  uint32
}

func (p pusher) Send(ctx context.Context, payload []float32) error {
	return p.ep.Send(ctx, p.peer, p.tag, payload)
}

func (p pusher) Sent() int64 { return p.ep.Stats().BytesSent }

// tagProbe is a tag no rank sends: probeStalled receives on it only to
// read the peer's next frame, a note or an abort.
const tagProbe uint32 = 0x7a9e00f0

// probeStalled finds whom to blame when a transfer from peer timed out: a
// healthy peer may itself be waiting on another (a frozen rank further
// along a ring or tree) and time out at the same moment. Every rank that
// times out first tells all the others whom it waits on
// (transport.Notifier: their next receive from it fails with that), then
// waits for the peer's own word, up to half the timeout past the moment
// the peer must itself have timed out (probeWindow). The peer's note
// names the rank it waits on; a peer that says nothing is the one that
// stopped. It returns the cause to report, or nil when the peer stayed
// silent (or the transport cannot tell).
func (r *Rank) probeStalled(ctx context.Context, a scheme.Action, err error) error {
	var pe *transport.PeerError
	nt, ok := r.Ep.(transport.Notifier)
	if !ok || r.Timeout <= 0 || !errors.As(err, &pe) {
		return nil
	}
	peer := pe.Rank
	if a.Group != nil && peer >= 0 && peer < len(a.Group) {
		peer = a.Group[peer]
	}
	me := r.Ep.Rank()
	if peer < 0 || peer >= r.Ep.Size() || peer == me {
		return nil
	}
	// The error names the transfer that failed first, which is not
	// always the one that held the collective up: a step sends and
	// receives at once, and a peer whose bytes were still flowing is
	// alive. The endpoint knows which unfinished transfer has moved
	// nothing for the longest; that peer is the one to ask and to name.
	if st, ok := r.Ep.(transport.Staller); ok {
		if sp, _, ok := st.Stalled(); ok && sp != peer && sp != me {
			if cause := r.probePeer(ctx, nt, me, sp, nil); cause != nil {
				return cause
			}
			return fmt.Errorf("no answer from rank %d within %v (rank %d, whose transfer failed first, was still moving bytes): %w", sp, r.Timeout, peer, err)
		}
	}
	return r.probePeer(ctx, nt, me, peer, pe)
}

// probePeer tells every peer that this rank waits on peer and waits for
// peer's own word (probeWindow): the cause to report, or nil when peer
// stayed silent. pe is the timeout's error when it came from peer itself
// (nil when peer was found through the endpoint's stalls).
func (r *Rank) probePeer(ctx context.Context, nt transport.Notifier, me, peer int, pe *transport.PeerError) error {
	stuck := nt.Notify(fmt.Errorf("rank %d: no answer from rank %d within %v", me, peer, r.Timeout))
	pctx, cancel := context.WithDeadline(ctx, r.probeWindow(peer, time.Now()))
	defer cancel()
	_, perr := r.Ep.RecvBytes(pctx, peer, tagProbe, 16)
	var gone *transport.PeerError
	mid := pe != nil && midMessage(pe)
	switch {
	case perr != nil && !errors.Is(perr, context.DeadlineExceeded) && errors.As(perr, &gone) && gone.Rank == peer && !mid && !strings.Contains(gone.Err.Error(), "unusable"):
		return fmt.Errorf("rank %d gave up waiting too: %w", peer, gone.Err)
	case mid && len(stuck) > 0 && !slices.Contains(stuck, peer):
		// The peer stalled in the middle of a message (it was sending,
		// so alive, and held up by another), while our data to these
		// ranks stays stuck: they are the ones that stopped.
		return fmt.Errorf("no answer from rank %d within %v: a send to it is stuck, and rank %d stalled mid-message, waiting on it too: %w", stuck[0], r.Timeout, peer, pe)
	}
	return nil
}

// probeWindow is until when, from now, a rank that timed out waits for
// peer's word about whom peer waits on: half the timeout (at most 10 s)
// past the moment peer must itself have timed out if it is waiting too.
// A peer's timeout runs from the start of its own collective, which is no
// later than the last bytes we had from it (transport.Hearer): a healthy
// peer that began late (a straggler; one that had sent us a step before it
// blocked on a third rank) times out that much after us, and a window
// counted from our own timeout alone would close before its word came and
// name it instead of the rank it waits on (issue 23 item 3).
func (r *Rank) probeWindow(peer int, now time.Time) time.Time {
	from := now
	if h, ok := r.Ep.(transport.Hearer); ok {
		if t := h.Heard(peer).Add(r.Timeout); t.After(from) {
			from = t
		}
	}
	return from.Add(min(r.Timeout/2, 10*time.Second))
}

// midMessage reports whether a timeout came in the middle of a peer's
// message: the peer was sending, so it was alive a moment ago.
func midMessage(pe *transport.PeerError) bool {
	return strings.Contains(pe.Err.Error(), "mid-message")
}

// gather carries out a Gather.
func (r *Rank) gather(ctx context.Context, a scheme.Action) error {
	if r.Accum == nil {
		return fmt.Errorf("node: the scheme gathers but the rank has no accumulator")
	}
	return r.Accum.Gather(ctx, a.Iter, a.R.Lo, r.slice(a.R))
}

// center carries out a center operation.
func (r *Rank) center(ctx context.Context, a scheme.Action) (answer, error) {
	c, w := r.Center, r.CenterID
	if c == nil {
		return answer{}, fmt.Errorf("node: the scheme asked for %v but the rank has no center", a.Op)
	}
	var ans answer
	var err error
	switch a.Op {
	case scheme.Join:
		ans.iter, err = c.Join(ctx, w)
	case scheme.Pull:
		err = c.Pull(ctx, w, r.slice(a.R))
	case scheme.Push:
		err = c.Push(ctx, w, r.slice(a.R))
	case scheme.Elastic:
		err = c.Elastic(ctx, w, r.slice(a.R), a.Factor)
	case scheme.Round:
		ans.iter, ans.dropped, err = c.Round(ctx, w, a.Iter, r.slice(a.R))
	case scheme.Clock:
		ans.stop, err = c.Clock(ctx, w, a.Iter, a.Staleness)
	case scheme.Closed:
		ans.iter, err = c.Closed(ctx, w, a.Iter)
	case scheme.Leave:
		err = c.Leave(ctx, w, nil)
	}
	if err != nil {
		err = fmt.Errorf("center %v: %w", a.Op, err)
	}
	return ans, err
}

// groupRank maps rank peer of the whole group to its index in group.
func (r *Rank) groupRank(group []int, peer int) int {
	if group == nil {
		return peer
	}
	for i, g := range group {
		if g == peer {
			return i
		}
	}
	panic(fmt.Sprintf("node: rank %d is not in group %v", peer, group))
}

// groupExecutor returns the executor of a sub-group, made on first use.
func (r *Rank) groupExecutor(group []int) (*collective.Executor, error) {
	key := fmt.Sprint(group)
	if e, ok := r.groups[key]; ok {
		return e, nil
	}
	ep, err := transport.Sub(r.Ep, group)
	if err != nil {
		return nil, err
	}
	if r.groups == nil {
		r.groups = map[string]*collective.Executor{}
	}
	e := collective.NewExecutor(ep)
	r.groups[key] = e
	return e, nil
}

// ActionName names an action for a timeline or a log (scheme.Action's
// Name): the op, the range it works on, and the peer of a transfer, as in
// "allreduce grads[0:431080]", "send grads[0:10] to 3" or "clock".
func ActionName(a scheme.Action) string { return a.Name() }

// RunAll runs every rank of a group in this process, each on its own
// goroutine, until all have returned; the first rank to fail cancels the
// others. It returns each rank's error.
func RunAll(ctx context.Context, ranks []*Rank) []error {
	return RunAllIsolated(ctx, ranks, nil)
}
