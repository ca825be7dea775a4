package scripted

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"dsgd/comm/transport"
)

// ErrCrashed is what a crashed rank's peers are told (wrapped in a
// *transport.PeerError naming it).
var ErrCrashed = errors.New("crashed")

// ErrExpired is what a receive that Expire ended returns (wrapped in a
// *transport.PeerError naming the peer it waited on). It wraps
// context.DeadlineExceeded: to the caller, the wait's deadline passed.
var ErrExpired = fmt.Errorf("the script's deadline passed: %w", context.DeadlineExceeded)

// errClosed is what a closed endpoint's own calls return.
var errClosed = errors.New("endpoint closed")

// Msg is one message between two ranks: a copy of what was sent.
type Msg struct {
	From, To int
	Tag      uint32
	// Floats or Bytes holds the payload; IsBytes says which.
	Floats  []float32
	Bytes   []byte
	IsBytes bool
}

// Len is the message's length: floats, or bytes for a byte message.
func (m Msg) Len() int {
	if m.IsBytes {
		return len(m.Bytes)
	}
	return len(m.Floats)
}

// Link is the state of one directed link, as Links reports it.
type Link struct {
	From, To int
	// Queued are the messages sent and not yet delivered, oldest first.
	Queued []Msg
	// Delivered are the messages delivered that the receiver has not
	// taken yet, oldest first.
	Delivered []Msg
	// Held is set while DeliverAll passes the link by (Hold).
	Held bool
}

// Call is a receive blocked waiting for a message, as Blocked reports it.
type Call struct {
	// Rank waits for a message from Peer.
	Rank, Peer int
	// Tag is the tag asked for, Len the floats asked for or, with Bytes
	// set, the largest byte message accepted.
	Tag   uint32
	Len   int
	Bytes bool
}

// call is a Recv in progress.
type call struct {
	Call
	expired bool
}

// link is a directed link's queues.
type link struct {
	queue, inbox []Msg
	held         bool
}

// Net is a group of ranks whose messages wait for the script. Its methods
// are safe for concurrent use with the endpoints'.
type Net struct {
	mu    sync.Mutex
	size  int
	auto  bool
	links [][]link // links[from][to]
	// gone[r] is non-nil once rank r's endpoint has closed: what its
	// peers are told.
	gone  []error
	calls []*call // the receives in progress, oldest first
	// wake is closed and replaced whenever the state changes, waking
	// every waiting receive to look again.
	wake chan struct{}
	eps  []transport.Endpoint
}

// New returns a Net of size ranks whose messages wait in their links'
// queues until the script delivers them.
func New(size int) *Net { return newNet(size, false) }

// NewAuto returns a Net that delivers every message as it is sent.
func NewAuto(size int) *Net { return newNet(size, true) }

func newNet(size int, auto bool) *Net {
	if size <= 0 {
		panic(fmt.Sprintf("scripted: group size %d", size))
	}
	n := &Net{size: size, auto: auto, links: make([][]link, size), gone: make([]error, size), wake: make(chan struct{})}
	for i := range n.links {
		n.links[i] = make([]link, size)
	}
	for r := range size {
		n.eps = append(n.eps, &endpoint{n: n, rank: r})
	}
	return n
}

// Size is the number of ranks.
func (n *Net) Size() int { return n.size }

// Endpoints returns the ranks' endpoints, indexed by rank.
func (n *Net) Endpoints() []transport.Endpoint { return n.eps }

// changed wakes every waiting receive. The caller holds mu.
func (n *Net) changed() {
	close(n.wake)
	n.wake = make(chan struct{})
}

func (n *Net) check(from, to int) error {
	if from < 0 || from >= n.size || to < 0 || to >= n.size || from == to {
		return fmt.Errorf("scripted: no link %d→%d in a group of %d", from, to, n.size)
	}
	return nil
}

// Deliver delivers the count oldest queued messages from rank from to
// rank to, held or not, and returns them. It delivers none and fails
// when fewer are queued.
func (n *Net) Deliver(from, to, count int) ([]Msg, error) {
	if err := n.check(from, to); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	l := &n.links[from][to]
	if len(l.queue) < count {
		return nil, fmt.Errorf("scripted: %d→%d has %d messages queued, not %d", from, to, len(l.queue), count)
	}
	moved := append([]Msg(nil), l.queue[:count]...)
	l.inbox = append(l.inbox, moved...)
	l.queue = l.queue[count:]
	n.changed()
	return moved, nil
}

// DeliverAll delivers every queued message of every link not held, and
// returns them, link by link (by sender, then receiver), oldest first.
func (n *Net) DeliverAll() []Msg {
	n.mu.Lock()
	defer n.mu.Unlock()
	var moved []Msg
	for from := range n.links {
		for to := range n.links[from] {
			l := &n.links[from][to]
			if l.held || len(l.queue) == 0 {
				continue
			}
			moved = append(moved, l.queue...)
			l.inbox = append(l.inbox, l.queue...)
			l.queue = nil
		}
	}
	if len(moved) > 0 {
		n.changed()
	}
	return moved
}

// Drop loses the oldest queued message from rank from to rank to, and
// returns it: its sender was told it was sent, and its receiver waits.
func (n *Net) Drop(from, to int) (Msg, error) {
	if err := n.check(from, to); err != nil {
		return Msg{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	l := &n.links[from][to]
	if len(l.queue) == 0 {
		return Msg{}, fmt.Errorf("scripted: %d→%d has nothing queued to drop", from, to)
	}
	m := l.queue[0]
	l.queue = l.queue[1:]
	return m, nil
}

// Hold makes DeliverAll pass the link from→to by (on) or deliver it
// again (off): its messages arrive later than the other links', in the
// order they were sent. Deliver still delivers them.
func (n *Net) Hold(from, to int, on bool) error {
	if err := n.check(from, to); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[from][to].held = on
	return nil
}

// Expire ends rank's receives now blocked as if their deadline passed:
// each returns a *transport.PeerError wrapping ErrExpired that names the
// peer it waited on. It returns how many it ended.
func (n *Net) Expire(rank int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, c := range n.calls {
		if c.Rank == rank && !c.expired {
			c.expired = true
			k++
		}
	}
	if k > 0 {
		n.changed()
	}
	return k
}

// Crash closes rank's endpoint as a process that died would: its peers'
// waiting and later calls with it fail with a *transport.PeerError
// wrapping ErrCrashed, its own calls fail, and its messages not yet
// delivered are lost.
func (n *Net) Crash(rank int) {
	n.close(rank, ErrCrashed)
}

// close closes rank's endpoint; its peers are told why. The first close
// wins.
func (n *Net) close(rank int, why error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gone[rank] != nil {
		return
	}
	n.gone[rank] = why
	for p := range n.size {
		if p != rank {
			n.links[rank][p].queue = nil
			n.links[p][rank] = link{}
		}
	}
	n.changed()
}

// Links returns the links that hold a message or are held, by sender,
// then receiver.
func (n *Net) Links() []Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Link
	for from := range n.links {
		for to := range n.links[from] {
			l := &n.links[from][to]
			if len(l.queue) > 0 || len(l.inbox) > 0 || l.held {
				out = append(out, Link{From: from, To: to, Queued: append([]Msg(nil), l.queue...), Delivered: append([]Msg(nil), l.inbox...), Held: l.held})
			}
		}
	}
	return out
}

// Blocked returns the receives waiting for a message, by rank, then peer.
func (n *Net) Blocked() []Call {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Call, 0, len(n.calls))
	for _, c := range n.calls {
		out = append(out, c.Call)
	}
	slices.SortStableFunc(out, func(a, b Call) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Peer, b.Peer)) })
	return out
}

// peerGone is the error for calls with closed rank r. The caller holds mu.
func (n *Net) peerGone(r int) error {
	why := n.gone[r]
	if why != errClosed && why != ErrCrashed {
		why = fmt.Errorf("aborted: %w", why)
	}
	return &transport.PeerError{Rank: r, Err: why}
}

// endpoint is one rank's view of the Net.
type endpoint struct {
	n     *Net
	rank  int
	stats struct{ bs, br, ms, mr atomic.Int64 }
}

func (e *endpoint) Rank() int { return e.rank }
func (e *endpoint) Size() int { return e.n.size }

func (e *endpoint) Stats() transport.Stats {
	return transport.Stats{BytesSent: e.stats.bs.Load(), BytesRecv: e.stats.br.Load(), MsgsSent: e.stats.ms.Load(), MsgsRecv: e.stats.mr.Load()}
}

// Close closes the endpoint; peers are told it closed.
func (e *endpoint) Close() error {
	e.n.close(e.rank, errClosed)
	return nil
}

// Abort closes the endpoint; peers are told reason (nil: as Close).
func (e *endpoint) Abort(reason error) error {
	if reason == nil {
		reason = errClosed
	}
	e.n.close(e.rank, reason)
	return nil
}

// wireBytes is what a message counts for in Stats.
func wireBytes(m Msg) int64 {
	if m.IsBytes {
		return int64(len(m.Bytes))
	}
	return 4 * int64(len(m.Floats))
}

func (e *endpoint) send(ctx context.Context, m Msg) error {
	transport.CheckPeer(e.rank, e.n.size, m.To)
	if err := ctx.Err(); err != nil {
		return err
	}
	n := e.n
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.gone[e.rank] != nil:
		return errClosed
	case n.gone[m.To] != nil:
		return n.peerGone(m.To)
	}
	l := &n.links[e.rank][m.To]
	if n.auto {
		l.inbox = append(l.inbox, m)
	} else {
		l.queue = append(l.queue, m)
	}
	n.changed()
	e.stats.bs.Add(wireBytes(m))
	e.stats.ms.Add(1)
	return nil
}

// recv takes the next delivered message from rank from, waiting while
// there is none.
func (e *endpoint) recv(ctx context.Context, want Call) (Msg, error) {
	transport.CheckPeer(e.rank, e.n.size, want.Peer)
	n := e.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c := &call{Call: want}
	n.calls = append(n.calls, c)
	defer func() {
		for i, o := range n.calls {
			if o == c {
				n.calls = append(n.calls[:i], n.calls[i+1:]...)
				break
			}
		}
	}()
	for {
		l := &n.links[want.Peer][e.rank]
		switch {
		case n.gone[e.rank] != nil:
			return Msg{}, errClosed
		case len(l.inbox) > 0:
			m := l.inbox[0]
			l.inbox = l.inbox[1:]
			return m, nil
		case n.gone[want.Peer] != nil:
			return Msg{}, n.peerGone(want.Peer)
		case c.expired:
			return Msg{}, &transport.PeerError{Rank: want.Peer, Err: ErrExpired}
		case ctx.Err() != nil:
			return Msg{}, ctx.Err()
		}
		wake := n.wake
		n.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
		}
		n.mu.Lock()
	}
}

func (e *endpoint) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	return e.send(ctx, Msg{From: e.rank, To: to, Tag: tag, Floats: append([]float32{}, buf...)})
}

func (e *endpoint) SendBytes(ctx context.Context, to int, tag uint32, b []byte) error {
	return e.send(ctx, Msg{From: e.rank, To: to, Tag: tag, Bytes: append([]byte{}, b...), IsBytes: true})
}

func (e *endpoint) Recv(ctx context.Context, from int, tag uint32, buf []float32) error {
	m, err := e.recv(ctx, Call{Rank: e.rank, Peer: from, Tag: tag, Len: len(buf)})
	if err != nil {
		return err
	}
	if bad := transport.Mismatch(false, tag, len(buf), m.IsBytes, m.Tag, uint64(m.Len())); bad != nil {
		return &transport.PeerError{Rank: from, Err: bad}
	}
	copy(buf, m.Floats)
	e.stats.br.Add(wireBytes(m))
	e.stats.mr.Add(1)
	return nil
}

func (e *endpoint) RecvBytes(ctx context.Context, from int, tag uint32, max int) ([]byte, error) {
	m, err := e.recv(ctx, Call{Rank: e.rank, Peer: from, Tag: tag, Len: max, Bytes: true})
	if err != nil {
		return nil, err
	}
	if bad := transport.Mismatch(true, tag, max, m.IsBytes, m.Tag, uint64(m.Len())); bad != nil {
		return nil, &transport.PeerError{Rank: from, Err: bad}
	}
	e.stats.br.Add(wireBytes(m))
	e.stats.mr.Add(1)
	return m.Bytes, nil
}
