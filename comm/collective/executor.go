package collective

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"dsgd/comm/transport"
	"dsgd/engine/tensor"
)

// errAborted is the sender's context error when the step it serves failed
// on the receiving side.
var errAborted = errors.New("collective: step aborted")

// Executor runs schedules for one rank over its Endpoint. It owns the
// scratch buffer for Add receives, a cache of generated schedules, and a
// helper goroutine that performs the send of each step that both sends and
// receives; in steady state (same collectives, same sizes) a collective
// allocates nothing here.
//
// An Executor runs one collective at a time and is not safe for
// concurrent use; nothing else may send to or receive from the ranks it
// talks to while it runs (the Endpoint's one-sender-per-peer rule). After
// a collective fails (a peer error, a tag mismatch, a cancelled context)
// the streams may hold half a message, so every later call returns an
// error; as the transport contract says, end the run (Close the Endpoint,
// so peers fail fast instead of waiting for their contexts).
type Executor struct {
	ep      transport.Endpoint
	scratch []float32
	h       *sender // started on the first step that sends and receives
	err     error   // sticky: set by the first failure
	cache   map[schedKey]Schedule
	closed  bool
	// hs is the host group's state (hostlocal.go), looked up once.
	hs          *hostState
	hostChecked bool
	bufErr      error // why the last Buffer is not shared
}

// schedKey names a cached schedule; the group is fixed per Executor.
type schedKey struct {
	kind kind
	root int
	n    int
}

// kind numbers a built-in collective in the tag layout.
type kind uint32

const (
	kindTreeAllreduce kind = 1 + iota
	kindRingAllreduce
	kindRDAllreduce
	kindReduce
	kindBroadcast
	kindReduceScatter
	kindAllgather
	kindBarrier
)

// TagBase is the start of the tag range the built-in collectives use:
// tags TagBase to 0xFFFFFFFF belong to this package. A built-in collective
// tags its messages TagBase + kind<<20 + round, so two ranks running
// different collectives, or out of step inside one, see a tag mismatch.
// Schemes choose their own tags below TagBase.
const TagBase uint32 = 0xC000_0000

// maxCache bounds the schedule cache (one entry per collective and size,
// so a per-layer allreduce of a deep net still fits).
const maxCache = 256

// NewExecutor returns an Executor for ep. Close it when done to stop its
// helper goroutine (it is also stopped once the Executor is garbage).
func NewExecutor(ep transport.Endpoint) *Executor {
	return &Executor{ep: ep}
}

// Close stops the helper goroutine. The Endpoint stays open: it belongs to
// the caller.
func (e *Executor) Close() error {
	e.closed = true
	if e.h != nil {
		e.h.stop()
		e.h = nil
	}
	return nil
}

// Endpoint returns the Endpoint the executor runs over.
func (e *Executor) Endpoint() transport.Endpoint { return e.ep }

// Run executes s on buf: steps in order, each step's send and receive
// concurrently (segment by segment when s.Segment is set), and received
// floats copied into buf or, with Add, received into scratch and added
// into buf once both the send and the receive of the segment are done (so
// a step may send the range it adds into). Messages are tagged
// tagBase + step.Round.
//
// A schedule for another rank or group, or a buf of another length than
// s.N, is a programmer error and panics. Transport errors and context
// errors are returned, wrapped with the step and peer; see Executor for
// what to do after one.
func (e *Executor) Run(ctx context.Context, s Schedule, buf []float32, tagBase uint32) error {
	if e.closed {
		panic("collective: Run on a closed Executor")
	}
	if e.err != nil {
		return fmt.Errorf("collective: executor unusable after an earlier failure: %w", e.err)
	}
	if s.Rank != e.ep.Rank() || s.Size != e.ep.Size() {
		panic(fmt.Sprintf("collective: schedule for rank %d of %d run on rank %d of %d", s.Rank, s.Size, e.ep.Rank(), e.ep.Size()))
	}
	if len(buf) != s.N {
		panic(fmt.Sprintf("collective: buffer of %d floats for a schedule over %d", len(buf), s.N))
	}
	if err := s.Validate(); err != nil {
		panic(err.Error())
	}
	if need := s.Cost().ScratchLen; len(e.scratch) < need {
		e.scratch = make([]float32, need)
	}
	if err := ctx.Err(); err != nil {
		e.err = err
		return err
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		tag := tagBase + uint32(st.Round)
		ns, nr := s.Segments(st.Send), s.Segments(st.Recv)
		for k := range max(ns, nr) {
			var snd, rcv Transfer = none, none
			if k < ns {
				lo, hi := s.segment(st.Send, k)
				snd = Transfer{st.Send.Peer, lo, hi}
			}
			if k < nr {
				lo, hi := s.segment(st.Recv, k)
				rcv = Transfer{st.Recv.Peer, lo, hi}
			}
			if err := e.transfer(ctx, snd, rcv, st.Op, buf, tag); err != nil {
				e.err = err
				return fmt.Errorf("collective: step %d (%v): %w", i, *st, err)
			}
		}
	}
	return nil
}

// transfer moves one message each way (either may be inactive), the two
// concurrently, and then reduces what it received if op is Add.
func (e *Executor) transfer(ctx context.Context, snd, rcv Transfer, op Op, buf []float32, tag uint32) error {
	if !rcv.Active() {
		return onPeer(snd.Peer, e.ep.Send(ctx, snd.Peer, tag, buf[snd.Lo:snd.Hi]))
	}
	dst := buf[rcv.Lo:rcv.Hi]
	in := dst
	if op == Add {
		in = e.scratch[:len(dst)]
	}
	if !snd.Active() {
		if err := e.ep.Recv(ctx, rcv.Peer, tag, in); err != nil {
			return onPeer(rcv.Peer, err)
		}
	} else {
		if e.h == nil {
			e.h = startSender(e)
		}
		e.h.actx.setParent(ctx)
		e.h.reqs <- sendReq{to: snd.Peer, tag: tag, buf: buf[snd.Lo:snd.Hi]}
		rerr := e.ep.Recv(ctx, rcv.Peer, tag, in)
		var serr error
		if rerr != nil {
			e.h.actx.abort()
			serr = <-e.h.done
		} else {
			select {
			case serr = <-e.h.done:
			case <-ctx.Done():
				e.h.actx.abort()
				if serr = <-e.h.done; serr == nil {
					serr = ctx.Err()
				}
			}
		}
		if rerr != nil {
			return onPeer(rcv.Peer, rerr)
		}
		if serr != nil {
			return onPeer(snd.Peer, serr)
		}
	}
	if op == Add {
		tensor.AddTo(dst, in)
	}
	return nil
}

// sendReq is one send handed to the helper goroutine.
type sendReq struct {
	to  int
	tag uint32
	buf []float32
}

// sender is the helper goroutine's state. It holds no pointer to the
// Executor, so an abandoned Executor is collected and its cleanup stops
// the goroutine.
type sender struct {
	ep       transport.Endpoint
	reqs     chan sendReq
	done     chan error
	actx     abortCtx
	stopOnce sync.Once
}

func startSender(e *Executor) *sender {
	s := &sender{ep: e.ep, reqs: make(chan sendReq), done: make(chan error, 1)}
	s.actx.done = make(chan struct{})
	go s.loop()
	runtime.AddCleanup(e, func(s *sender) { s.stop() }, s)
	return s
}

func (s *sender) loop() {
	for r := range s.reqs {
		s.done <- s.ep.Send(&s.actx, r.to, r.tag, r.buf)
	}
}

func (s *sender) stop() { s.stopOnce.Do(func() { close(s.reqs) }) }

// abortCtx is the context of the helper's sends: the caller's context,
// plus an abort the step closes when its receive fails or the caller's
// context ends, so that a send blocked on a peer that will never receive
// returns. It is reused from step to step and so allocates nothing; once
// aborted it stays aborted (the Executor is unusable by then anyway).
type abortCtx struct {
	mu     sync.Mutex // guards parent
	parent context.Context
	done   chan struct{}
	once   sync.Once
}

func (a *abortCtx) setParent(ctx context.Context) {
	a.mu.Lock()
	a.parent = ctx
	a.mu.Unlock()
}

func (a *abortCtx) getParent() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.parent
}

func (a *abortCtx) abort() { a.once.Do(func() { close(a.done) }) }

// Deadline is the caller's deadline.
func (a *abortCtx) Deadline() (time.Time, bool) { return a.getParent().Deadline() }

// Done is closed by abort.
func (a *abortCtx) Done() <-chan struct{} { return a.done }

// Err is the caller's context error, or errAborted, once aborted.
func (a *abortCtx) Err() error {
	select {
	case <-a.done:
		if err := a.getParent().Err(); err != nil {
			return err
		}
		return errAborted
	default:
		return nil
	}
}

// Value is the caller's context value.
func (a *abortCtx) Value(key any) any { return a.getParent().Value(key) }

// schedule returns the cached schedule for key, generating it on a miss.
func (e *Executor) schedule(k schedKey, alg Algorithm) Schedule {
	if s, ok := e.cache[k]; ok {
		return s
	}
	rank, size := e.ep.Rank(), e.ep.Size()
	var s Schedule
	switch k.kind {
	case kindTreeAllreduce, kindRingAllreduce, kindRDAllreduce:
		s = AllreduceSchedule(alg, rank, size, k.n)
	case kindReduce:
		s = TreeReduce(rank, size, k.root, k.n)
	case kindBroadcast:
		s = TreeBroadcast(rank, size, k.root, k.n)
	case kindReduceScatter:
		s = RingReduceScatter(rank, size, k.n)
	case kindAllgather:
		s = RingAllgather(rank, size, k.n)
	case kindBarrier:
		s = DisseminationBarrier(rank, size)
	default:
		panic(fmt.Sprintf("collective: unknown kind %d", k.kind))
	}
	if e.cache == nil || len(e.cache) >= maxCache {
		e.cache = make(map[schedKey]Schedule)
	}
	e.cache[k] = s
	return s
}

func (e *Executor) runKind(ctx context.Context, k kind, alg Algorithm, root int, buf []float32) error {
	s := e.schedule(schedKey{kind: k, root: root, n: len(buf)}, alg)
	return e.Run(ctx, s, buf, TagBase+uint32(k)<<20)
}

// Allreduce replaces buf on every rank with the element-wise sum of all
// ranks' buf, bitwise the same on every rank and run to run, scheduled by
// alg (Auto: see Algorithm.Resolve). Every rank must call it with the same
// len(buf) and alg.
func (e *Executor) Allreduce(ctx context.Context, buf []float32, alg Algorithm) error {
	if n, ok := e.ep.(Native); ok {
		return e.native(func() error { return n.NativeAllreduce(ctx, buf) })
	}
	alg = alg.Resolve(e.ep.Size(), len(buf))
	if h := e.host(); h != nil {
		return e.native(func() error { return h.allreduce(ctx, buf, alg) })
	}
	k := kindRDAllreduce
	switch alg {
	case Tree:
		k = kindTreeAllreduce
	case Ring:
		k = kindRingAllreduce
	}
	return e.runKind(ctx, k, alg, 0, buf)
}

// Reduce sums every rank's buf into root's buf over the binomial tree.
// The other ranks' buffers are left holding partial sums.
func (e *Executor) Reduce(ctx context.Context, root int, buf []float32) error {
	checkRoot(root, e.ep.Size())
	if n, ok := e.ep.(Native); ok {
		return e.native(func() error { return n.NativeReduce(ctx, root, buf) })
	}
	return e.runKind(ctx, kindReduce, Auto, root, buf)
}

// Broadcast copies root's buf into every rank's buf over the binomial
// tree.
func (e *Executor) Broadcast(ctx context.Context, root int, buf []float32) error {
	checkRoot(root, e.ep.Size())
	if n, ok := e.ep.(Native); ok {
		return e.native(func() error { return n.NativeBroadcast(ctx, root, buf) })
	}
	return e.runKind(ctx, kindBroadcast, Auto, root, buf)
}

// ReduceScatter leaves in chunk r of rank r's buf (see Chunk) the sum of
// chunk r over all ranks, over the ring; the rest of buf holds partial
// sums.
func (e *Executor) ReduceScatter(ctx context.Context, buf []float32) error {
	return e.runKind(ctx, kindReduceScatter, Auto, 0, buf)
}

// Allgather copies chunk r of rank r's buf (see Chunk) into every rank's
// buf, over the ring.
func (e *Executor) Allgather(ctx context.Context, buf []float32) error {
	return e.runKind(ctx, kindAllgather, Auto, 0, buf)
}

// Barrier returns once every rank has entered it (dissemination barrier,
// ceil(log2 p) rounds of empty messages).
func (e *Executor) Barrier(ctx context.Context) error {
	if n, ok := e.ep.(Native); ok {
		return e.native(func() error { return n.NativeBarrier(ctx) })
	}
	if h := e.host(); h != nil {
		return e.native(func() error { return h.barrier(ctx) })
	}
	return e.runKind(ctx, kindBarrier, Auto, 0, nil)
}

// onPeer makes err, from a transfer with rank peer, a *transport.PeerError
// naming that rank unless it already names one: a timeout or a
// cancellation then still says whom the rank was waiting for (a stalled
// peer), and errors.Is still sees the context's error.
func onPeer(peer int, err error) error {
	if err == nil {
		return nil
	}
	var pe *transport.PeerError
	if errors.As(err, &pe) {
		return err
	}
	return &transport.PeerError{Rank: peer, Err: err}
}
