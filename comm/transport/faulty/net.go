package faulty

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"dsgd/comm/transport"
)

// ErrCut is wrapped by the PeerErrors of a cut link.
var ErrCut = errors.New("faulty: link cut")

// Msg describes a message offered to a link, for the predicates that
// choose which messages a fault applies to.
type Msg struct {
	From, To int
	Tag      uint32
	// Seq numbers the messages offered to the link from 0, dropped ones
	// included.
	Seq int64
	// Len is the length in floats, or in bytes for a byte message.
	Len     int
	IsBytes bool
}

// All matches every message.
func All(Msg) bool { return true }

// Nth matches the message with Seq k.
func Nth(k int64) func(Msg) bool { return func(m Msg) bool { return m.Seq == k } }

// Tag matches the messages with the given tag.
func Tag(tag uint32) func(Msg) bool { return func(m Msg) bool { return m.Tag == tag } }

// Random matches each message with probability p, drawn from rng. The
// predicates of a Net run under its lock, so rng needs no other guard.
func Random(p float64, rng *rand.Rand) func(Msg) bool {
	return func(Msg) bool { return rng.Float64() < p }
}

// Net holds the fault rules of one group and the endpoints that apply
// them. Rules may change at any time; they apply to messages offered
// afterwards.
type Net struct {
	inner []transport.Endpoint
	eps   []transport.Endpoint
	mu    sync.Mutex // guards links and pairs
	links map[[2]int]*link
	pairs map[[2]int]*pair
}

// link is the state of one directed link.
type link struct {
	drop      func(Msg) bool
	delay     time.Duration
	cutLeft   int64 // messages still allowed before the cut; -1: no cut
	offered   int64
	forwarded int64 // handed to the inner transport; final once cut
	received  int64
	dropped   int64
}

// pair is the state shared by the two directions between two ranks.
type pair struct {
	cut   chan struct{} // closed when the pair is cut
	isCut bool
}

// New wraps the endpoints of a group, indexed by rank.
func New(eps []transport.Endpoint) *Net {
	n := &Net{inner: eps, links: map[[2]int]*link{}, pairs: map[[2]int]*pair{}}
	n.eps = make([]transport.Endpoint, len(eps))
	for r, ep := range eps {
		n.eps[r] = &endpoint{n: n, inner: ep}
	}
	return n
}

// Endpoints returns the wrapped endpoints, indexed by rank.
func (n *Net) Endpoints() []transport.Endpoint { return n.eps }

// link returns the state of from→to; n.mu is held.
func (n *Net) link(from, to int) *link {
	l := n.links[[2]int{from, to}]
	if l == nil {
		l = &link{cutLeft: -1}
		n.links[[2]int{from, to}] = l
	}
	return l
}

// pair returns the state shared by a and b; n.mu is held.
func (n *Net) pair(a, b int) *pair {
	k := [2]int{min(a, b), max(a, b)}
	p := n.pairs[k]
	if p == nil {
		p = &pair{cut: make(chan struct{})}
		n.pairs[k] = p
	}
	return p
}

func (n *Net) check(from, to int) {
	transport.CheckPeer(from, len(n.eps), to)
}

// Drop makes link from→to lose the messages that match reports true for
// (nil: none). The sender's Send returns nil; nothing arrives.
func (n *Net) Drop(from, to int, match func(Msg) bool) {
	n.check(from, to)
	n.mu.Lock()
	n.link(from, to).drop = match
	n.mu.Unlock()
}

// Delay makes every Send on link from→to wait d before it starts.
func (n *Net) Delay(from, to int, d time.Duration) {
	n.check(from, to)
	n.mu.Lock()
	n.link(from, to).delay = d
	n.mu.Unlock()
}

// Cut lets link from→to carry after more messages, then fails the
// connection between from and to, both ways: later Sends between them
// and Recvs beyond the messages that got through return a
// *transport.PeerError wrapping ErrCut.
func (n *Net) Cut(from, to int, after int) {
	n.check(from, to)
	n.mu.Lock()
	n.link(from, to).cutLeft = int64(max(after, 0))
	n.mu.Unlock()
}

// Dropped returns how many messages link from→to has dropped.
func (n *Net) Dropped(from, to int) int64 {
	n.check(from, to)
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.link(from, to).dropped
}

type endpoint struct {
	n     *Net
	inner transport.Endpoint
}

func (e *endpoint) Rank() int              { return e.inner.Rank() }
func (e *endpoint) Size() int              { return e.inner.Size() }
func (e *endpoint) Stats() transport.Stats { return e.inner.Stats() }
func (e *endpoint) Close() error           { return e.inner.Close() }

func (e *endpoint) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	m := Msg{From: e.Rank(), To: to, Tag: tag, Len: len(buf)}
	return e.send(ctx, m, func(ctx context.Context) error { return e.inner.Send(ctx, to, tag, buf) })
}

func (e *endpoint) SendBytes(ctx context.Context, to int, tag uint32, b []byte) error {
	m := Msg{From: e.Rank(), To: to, Tag: tag, Len: len(b), IsBytes: true}
	return e.send(ctx, m, func(ctx context.Context) error { return e.inner.SendBytes(ctx, to, tag, b) })
}

func (e *endpoint) Recv(ctx context.Context, from int, tag uint32, buf []float32) error {
	return e.recv(ctx, from, func(ctx context.Context) error { return e.inner.Recv(ctx, from, tag, buf) })
}

func (e *endpoint) RecvBytes(ctx context.Context, from int, tag uint32, max int) ([]byte, error) {
	var b []byte
	err := e.recv(ctx, from, func(ctx context.Context) error {
		var err error
		b, err = e.inner.RecvBytes(ctx, from, tag, max)
		return err
	})
	return b, err
}

func (e *endpoint) send(ctx context.Context, m Msg, do func(context.Context) error) error {
	n := e.n
	n.check(m.From, m.To)
	n.mu.Lock()
	l, p := n.link(m.From, m.To), n.pair(m.From, m.To)
	if p.isCut {
		n.mu.Unlock()
		return &transport.PeerError{Rank: m.To, Err: ErrCut}
	}
	m.Seq = l.offered
	l.offered++
	if l.cutLeft == 0 {
		p.isCut = true
		close(p.cut)
		n.mu.Unlock()
		return &transport.PeerError{Rank: m.To, Err: ErrCut}
	}
	if l.cutLeft > 0 {
		l.cutLeft--
	}
	if l.drop != nil && l.drop(m) {
		l.dropped++
		n.mu.Unlock()
		return nil
	}
	l.forwarded++
	delay := l.delay
	n.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return do(ctx)
}

func (e *endpoint) recv(ctx context.Context, from int, do func(context.Context) error) error {
	n := e.n
	to := e.Rank()
	n.check(to, from)
	n.mu.Lock()
	l, p := n.link(from, to), n.pair(from, to)
	idx := l.received
	coming := idx < l.forwarded // a message already handed over
	isCut := p.isCut
	n.mu.Unlock()
	if isCut && !coming {
		return &transport.PeerError{Rank: from, Err: ErrCut}
	}
	var err error
	cutHere := false
	if isCut {
		err = do(ctx)
	} else {
		// Wait for the message, or for a cut that means it never comes.
		ctx2, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			select {
			case <-p.cut:
				n.mu.Lock()
				cutHere = idx >= l.forwarded
				n.mu.Unlock()
				if cutHere {
					cancel()
				}
			case <-ctx2.Done():
			}
		})
		err = do(ctx2)
		cancel()
		wg.Wait()
	}
	if cutHere && err != nil {
		return &transport.PeerError{Rank: from, Err: ErrCut}
	}
	if err == nil {
		n.mu.Lock()
		l.received++
		n.mu.Unlock()
	}
	return err
}
