package collective

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"dsgd/comm/shm"
	"dsgd/comm/transport"
	"dsgd/engine/tensor"
)

// HostShared is implemented by endpoints whose ranks can all map one
// shared-memory group (every rank on this host: the tcp transport with
// shared memory on). HostGroup returns the group, or nil when the ranks
// are not all on one host or shared memory is off; every rank of the
// endpoint gets the same answer.
//
// An Executor over such an endpoint runs Allreduce and Barrier in the
// group instead of as messages: each rank copies the parts of its
// buffer the others reduce into its slot once, reduces its own part
// reading the others' slots in place, and copies the others' results
// out, a Sync between the phases. The sums are the message schedules'
// own, bitwise: each element is added in the order the chosen algorithm
// (ring, tree, recursive doubling) adds it. The schedules and the
// schemes above them never know which way it went.
type HostShared interface {
	HostGroup() *shm.Group
}

// Operation descriptors of the group collectives, checked across ranks
// at their first Sync.
const (
	hostOpAllreduce = 1
)

// hostPiece is how many floats of the buffer one round of the group
// allreduce takes at most (each rank's slot holds one round's piece).
// Smaller rounds keep a round's data in the caches between the copy in
// and the reads; larger ones pay fewer Syncs.
func hostPiece(g *shm.Group) int { return len(g.Slot(0)) }

// allreduce is the group allreduce of buf, with alg's summation order.
// Each rank publishes where its buffer lies (Expose) at the first Sync;
// when every rank's lies in the group's shared buffers it runs
// allreduceShared, else allreduceSlots. In each round of the slots, of
// up to hostPiece floats: every rank copies the sub-ranges of the piece
// the others own (Chunk of the piece) into its slot; Sync; each rank
// sums its own sub-range from its buffer and the others' slots, into
// its slot's sub-range and its buffer; Sync; each copies the others'
// sums out of their slots. The next round's copy in overwrites only what
// the readers of this round are done with (they passed the second Sync),
// and its sums go where no one reads until the next round's first Sync:
// two Syncs per round.
func (h *hostState) allreduce(ctx context.Context, buf []float32, alg Algorithm) error {
	n := len(buf)
	if n == 0 {
		return nil // as the schedules: nothing to do, no one to wait for
	}
	g := h.g
	if err := h.begin(ctx); err != nil {
		return err
	}
	defer g.End()
	order := h.order(alg, n)
	op := uint64(hostOpAllreduce) | uint64(alg)<<4 | uint64(n)<<8
	mine := g.Expose(buf)
	if !mine {
		// As good as sure to go through the slots: copy the first
		// round in before the first Sync, which then serves as the
		// round's.
		h.copyIn(buf, 0, min(hostPiece(g), n))
	}
	err := g.Sync(ctx, true, op)
	switch {
	case err != nil:
	case !h.shared():
		return h.allreduceSlots(ctx, buf, order, !mine, h.anyShared())
	default:
		err = h.allreduceShared(ctx, buf, order)
	}
	if err != nil && g.Holds(buf) {
		// The peers may still be writing this buffer (some may have
		// passed the first Sync this rank failed in): let them stop
		// before it goes back to the caller.
		g.Break()
		if qerr := g.Quiesce(); qerr != nil {
			err = fmt.Errorf("%w (and %v)", err, qerr)
		}
	}
	return peerErr(err)
}

// shared says whether every rank's buffer of the operation in progress
// lies in the group's shared buffers (Executor.Buffer), and if so sets
// h.views to them. Every rank gets the same answer.
func (h *hostState) shared() bool {
	for r := range h.views {
		if h.views[r] = h.g.View(r); h.views[r] == nil {
			return false
		}
	}
	return true
}

// anyShared says whether some rank's buffer of the operation in
// progress lies in the group's shared buffers.
func (h *hostState) anyShared() bool {
	for r := range h.views {
		if h.g.View(r) != nil {
			return true
		}
	}
	return false
}

// allreduceShared is the group allreduce over buffers in shared memory,
// after the first Sync: each rank sums its own Chunk of the buffer
// reading every rank's buffer in place, a block at a time, and writes
// each block of sums into every rank's buffer; one Sync ends it. Each
// rank reads n floats and writes n, and nothing is copied through the
// slots. No two ranks touch the same part of any buffer: rank c alone
// reads and writes Chunk c everywhere.
func (h *hostState) allreduceShared(ctx context.Context, buf []float32, order []orderRange) error {
	g := h.g
	p, me := g.Size(), g.Rank()
	lo, hi := Chunk(me, p, len(buf))
	srcs, out := h.ev.srcsIO, h.out
	g.Access(true)
	defer g.Access(false)
	for s := lo; s < hi; s += len(out) {
		t := min(s+len(out), hi)
		if err := g.Failed(); err != nil {
			return peerErr(err)
		}
		for r := range p {
			srcs[r] = h.views[r][s:t]
		}
		o := out[:t-s]
		h.ev.sumRange(order, srcs, s, o, buf[s:t])
		for r := range p {
			if r != me {
				copy(h.views[r][s:t], o)
			}
		}
	}
	g.Access(false)
	// What crossed: this rank's Chunk read from and written to each
	// peer, and, as the peers do the same with theirs, its values of
	// their parts out and their sums in: 2(p-1)/p of the buffer each
	// way, as a ring's messages.
	x := int64((p-1)*(hi-lo) + len(buf) - (hi - lo))
	g.Count(4*x, 4*x)
	return peerErr(g.Sync(ctx, false, 0))
}

// sharedBlock is how many floats of its Chunk a rank sums at a time in
// the shared allreduce before writing them to the peers: the block of
// sums stays in the second-level cache.
const sharedBlock = 16 << 10

// copyIn copies the sub-ranges of the round at base (m floats) that
// the other ranks reduce into this rank's slot.
func (h *hostState) copyIn(buf []float32, base, m int) {
	p, me := h.g.Size(), h.g.Rank()
	piece := hostPiece(h.g)
	mine := h.slots[me]
	for c := range p {
		if c != me {
			lo, hi := sub(c, p, piece, m)
			copy(mine[lo:hi], buf[base+lo:base+hi])
		}
	}
}

// allreduceSlots is the group allreduce through the slots, after the
// first Sync (the operation is checked). A rank whose buffer is its own
// memory copied the first round in before that Sync (copied); where
// some rank's is shared (late), those copy it now and all Sync once
// more.
func (h *hostState) allreduceSlots(ctx context.Context, buf []float32, order []orderRange, copied, late bool) error {
	g := h.g
	n := len(buf)
	p, me := g.Size(), g.Rank()
	piece := hostPiece(g)
	slots, ev := h.slots, &h.ev
	var sent, recv int64
	for base := 0; base < n; base += piece {
		m := min(piece, n-base)
		lo, hi := sub(me, p, piece, m)
		if base > 0 || !copied {
			h.copyIn(buf, base, m)
		}
		sent += int64(m - (hi - lo)) // the others' sub-ranges
		if base > 0 || late {
			if err := g.Sync(ctx, false, 0); err != nil {
				g.Count(4*sent, 4*recv)
				return peerErr(err)
			}
		}
		ev.reduce(order, slots, buf, base, lo, hi, me)
		sent += int64(hi - lo)
		recv += int64((p - 1) * (hi - lo))
		if err := g.Sync(ctx, false, 0); err != nil {
			g.Count(4*sent, 4*recv)
			return peerErr(err)
		}
		for c := range p {
			if c == me {
				continue
			}
			lo, hi := sub(c, p, piece, m)
			copy(buf[base+lo:base+hi], slots[c][lo:hi])
			recv += int64(hi - lo)
		}
	}
	g.Count(4*sent, 4*recv)
	return nil
}

// Buffer returns a buffer of n floats, zeroed, for this rank's
// collectives; every rank must call it at the same point with the same
// n. Where the endpoint's ranks share a host group, the ranks' buffers
// lie in shared memory that all of them map, and an Allreduce of the
// buffer (or of the same part of it on every rank) reads and writes the
// peers' buffers in place: no copy in and out of the group's slots, half
// the memory traffic. Otherwise, or when the shared memory cannot be
// had (a full /dev/shm), it is ordinary memory and collectives go as
// they would for any buffer; the error is then nil and the reason is
// left for Shared to tell.
//
// A shared buffer stays mapped until the process exits, whatever
// happens to the endpoint: ask for the long-lived buffers of a job (a
// model's gradients), once.
func (e *Executor) Buffer(ctx context.Context, n int) ([]float32, error) {
	if _, ok := e.ep.(Native); ok || n <= 0 {
		return make([]float32, max(n, 0)), nil
	}
	h := e.host()
	if h == nil {
		return make([]float32, n), nil
	}
	e.bufErr = nil
	b, err := h.g.Alloc(ctx, (4*n+63)&^63)
	if err != nil {
		var re *shm.RankError
		if !errors.As(err, &re) || h.g.Failed() != nil {
			return nil, peerErr(err)
		}
		e.bufErr = err
		return make([]float32, n), nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)[:n:n], nil
}

// Shared says whether buf lies in the shared memory of this
// Executor's host group (Buffer), and, when it does not, why the last
// Buffer could not be shared (nil where there is no host group at all).
func (e *Executor) Shared(buf []float32) (bool, error) {
	h := e.host()
	if h == nil {
		return false, nil
	}
	if h.g.Holds(buf) {
		return true, nil
	}
	return false, e.bufErr
}

// peerErr makes a group wait's failure on a rank (shm.RankError) a
// *transport.PeerError naming it, as a schedule's failure names its
// peer; errors.Is still sees a context's error inside.
func peerErr(err error) error {
	if err == nil {
		return nil
	}
	var re *shm.RankError
	if errors.As(err, &re) {
		return &transport.PeerError{Rank: re.Rank, Err: re.Err}
	}
	return err
}

// sub is rank c's sub-range of a round of m floats: its Chunk of a full
// round (piece floats), cut at m. Every round places the sub-ranges
// alike, so a round's copy in never writes where a slower rank may
// still copy the last round's sums from.
func sub(c, p, piece, m int) (lo, hi int) {
	lo, hi = Chunk(c, p, piece)
	return min(lo, m), min(hi, m)
}

// barrier is Barrier in the group: one Sync.
func (h *hostState) barrier(ctx context.Context) error {
	if err := h.begin(ctx); err != nil {
		return err
	}
	defer h.g.End()
	return peerErr(h.g.Sync(ctx, false, 0))
}

// begin starts a group collective, refused when ctx has ended already
// (as a schedule's Run refuses it): the group is then broken, so the
// other ranks fail at once instead of waiting for this one.
func (h *hostState) begin(ctx context.Context) error {
	if err := h.g.Begin(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		h.g.Break()
		h.g.End()
		return err
	}
	return nil
}

// hostState is an Executor's state for its endpoint's host group: the
// slots' views, the evaluator, the summation orders by algorithm and
// size. Made once per Executor, so that a steady loop allocates nothing.
type hostState struct {
	g      *shm.Group
	slots  [][]float32
	ev     evaluator
	orders map[orderKey][]orderRange
	// views are the ranks' buffers of the shared allreduce in progress,
	// out its block of sums.
	views [][]float32
	out   []float32
}

type orderKey struct {
	alg Algorithm
	n   int
}

// host returns the Executor's host-group state, or nil when its
// endpoint has no host group.
func (e *Executor) host() *hostState {
	if e.hostChecked {
		return e.hs
	}
	e.hostChecked = true
	h, ok := e.ep.(HostShared)
	if !ok {
		return nil
	}
	g := h.HostGroup()
	if g == nil {
		return nil
	}
	hs := &hostState{g: g, orders: map[orderKey][]orderRange{}}
	for r := range g.Size() {
		hs.slots = append(hs.slots, g.Slot(r))
	}
	hs.ev.init(g.Size())
	hs.views = make([][]float32, g.Size())
	hs.out = make([]float32, sharedBlock)
	e.hs = hs
	return hs
}

// order returns the cached summation order of an allreduce of n floats.
func (h *hostState) order(alg Algorithm, n int) []orderRange {
	k := orderKey{alg, n}
	if o, ok := h.orders[k]; ok {
		return o
	}
	if len(h.orders) >= maxCache {
		clear(h.orders)
	}
	o := sumOrder(alg, h.g.Size(), n)
	h.orders[k] = o
	return o
}

// sumExpr is how one element's sum is formed from the ranks' values: a
// rank's value (leaf >= 0) or the sum of two sub-expressions.
type sumExpr struct {
	leaf int
	l, r *sumExpr
}

// orderRange is a range of elements whose sums are formed alike.
type orderRange struct {
	lo, hi int
	e      *sumExpr
}

// sumOrder returns, for an allreduce of n floats over p ranks with alg,
// the ranges of elements and the order in which each is summed by the
// message schedule (see RingAllreduce, TreeAllreduce,
// RecursiveDoublingAllreduce). Float addition is commutative, so only
// the grouping matters.
func sumOrder(alg Algorithm, p, n int) []orderRange {
	leaf := func(r int) *sumExpr { return &sumExpr{leaf: r} }
	add := func(a, b *sumExpr) *sumExpr { return &sumExpr{leaf: -1, l: a, r: b} }
	switch alg.Resolve(p, n) {
	case Ring:
		// Chunk c starts at rank c+1, and each next rank adds its own:
		// ((x[c+1] + x[c+2]) + ...) + x[c].
		var out []orderRange
		for c := range p {
			lo, hi := Chunk(c, p, n)
			e := leaf((c + 1) % p)
			for k := 2; k <= p; k++ {
				e = add(e, leaf((c+k)%p))
			}
			out = append(out, orderRange{lo, hi, e})
		}
		return out
	case Tree:
		// Binomial reduction to rank 0: rank r, after the rounds below
		// k, holds its value plus, round by round, what rank r+2^j
		// held after the rounds below j.
		var at func(r, k int) *sumExpr
		at = func(r, k int) *sumExpr {
			e := leaf(r)
			for j := range k {
				if r+1<<j < p {
					e = add(e, at(r+1<<j, j))
				}
			}
			return e
		}
		return []orderRange{{0, n, at(0, ceilLog2(p))}}
	case RecursiveDoubling:
		// Ranks q+i fold into ranks i, then the butterfly over the q
		// ranks pairs blocks of doubling size.
		q := 1
		for q*2 <= p {
			q *= 2
		}
		var block func(lo, size int) *sumExpr
		block = func(lo, size int) *sumExpr {
			if size == 1 {
				if lo+q < p {
					return add(leaf(lo), leaf(lo+q))
				}
				return leaf(lo)
			}
			return add(block(lo, size/2), block(lo+size/2, size/2))
		}
		return []orderRange{{0, n, block(0, q)}}
	}
	panic(fmt.Sprintf("collective: unknown algorithm %d", alg))
}

// evalBlock is the block the evaluator works through at a time: its
// temporaries stay in the first-level cache.
const evalBlock = 2048

// evaluator sums sub-ranges by their sumExpr, a block at a time.
type evaluator struct {
	tmp    [][]float32 // one per level of nesting on the right
	srcs   [][]float32 // each rank's values for the current block
	srcsIO [][]float32 // the sources of sumRange's caller
}

func (v *evaluator) init(p int) {
	depth := 1
	for 1<<depth < p {
		depth++
	}
	v.tmp = make([][]float32, depth+1)
	for i := range v.tmp {
		v.tmp[i] = make([]float32, evalBlock)
	}
	v.srcs = make([][]float32, p)
	v.srcsIO = make([][]float32, p)
}

// reduce forms the sums of elements [base+lo, base+hi) of the
// allreduce: rank me's values from buf, the others' from their slots
// (offset by base), into slot me and buf.
func (v *evaluator) reduce(order []orderRange, slots [][]float32, buf []float32, base, lo, hi, me int) {
	srcs := v.srcsIO
	for r := range slots {
		if r == me {
			srcs[r] = buf[base+lo : base+hi]
		} else {
			srcs[r] = slots[r][lo:hi]
		}
	}
	v.sumRange(order, srcs, base+lo, slots[me][lo:hi], buf[base+lo:base+hi])
}

// sumRange forms the sums of elements [off, off+len(out)) of the
// allreduce into out, srcs[r] holding rank r's values of those
// elements, a block at a time; each block of sums is also copied into
// also (of out's length) while it is in the cache.
func (v *evaluator) sumRange(order []orderRange, srcs [][]float32, off int, out, also []float32) {
	end := off + len(out)
	for _, o := range order {
		a, b := max(off, o.lo), min(end, o.hi)
		for s := a; s < b; s += evalBlock {
			t := min(s+evalBlock, b)
			for r := range v.srcs {
				v.srcs[r] = srcs[r][s-off : t-off]
			}
			dst := out[s-off : t-off]
			v.eval(o.e, dst, 0)
			copy(also[s-off:t-off], dst)
		}
	}
}

// eval writes e's value into dst, using the temporaries from level d.
func (v *evaluator) eval(e *sumExpr, dst []float32, d int) {
	if e.leaf >= 0 {
		copy(dst, v.srcs[e.leaf])
		return
	}
	v.eval(e.l, dst, d)
	if e.r.leaf >= 0 {
		tensor.AddTo(dst, v.srcs[e.r.leaf])
		return
	}
	t := v.tmp[d][:len(dst)]
	v.eval(e.r, t, d+1)
	tensor.AddTo(dst, t)
}
