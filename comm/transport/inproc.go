package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// errClosed is reported when the peer's endpoint, or ours, was closed.
var errClosed = errors.New("endpoint closed")

// inprocMsg is one message in flight between two in-process ranks. The
// sender waits on done until the receiver has copied the payload out: a
// rendezvous, so nothing is copied twice and no buffer is retained. Each
// ordered pair owns one inprocMsg, reused for every message: the contract
// allows one sender per pair at a time, and the sender does not return
// before the receiver is done with it, so a Send allocates nothing.
type inprocMsg struct {
	tag    uint32
	floats []float32
	bytes  []byte
	isByte bool
	done   chan error // receiver's verdict: nil, or the mismatch it saw
}

// len is the message's length: floats, or bytes for a byte message.
func (m *inprocMsg) len() uint64 {
	if m.isByte {
		return uint64(len(m.bytes))
	}
	return uint64(len(m.floats))
}

// inprocGroup holds the channels between every ordered pair of ranks.
type inprocGroup struct {
	size  int
	links [][]chan *inprocMsg // links[from][to]
	msgs  [][]inprocMsg       // msgs[from][to], the message slot of the pair
	// sending[from][to] and receiving[from][to] are set while a call
	// uses that direction of the pair, to catch concurrent calls.
	sending, receiving [][]atomic.Bool
	// closed[r] is closed when rank r's endpoint closes.
	closed []chan struct{}
	once   []sync.Once
	// reasons[r] is why rank r aborted (set before closed[r] closes).
	reasons []error
}

type inproc struct {
	g     *inprocGroup
	rank  int
	stats struct{ bs, br, ms, mr atomic.Int64 }
}

// NewInproc returns the endpoints of a group of size ranks connected by Go
// channels, for ranks that run as goroutines of one process.
func NewInproc(size int) []Endpoint {
	if size <= 0 {
		panic(fmt.Sprintf("transport: group size %d", size))
	}
	g := &inprocGroup{size: size, links: make([][]chan *inprocMsg, size), msgs: make([][]inprocMsg, size), closed: make([]chan struct{}, size), once: make([]sync.Once, size), reasons: make([]error, size)}
	g.sending, g.receiving = make([][]atomic.Bool, size), make([][]atomic.Bool, size)
	for i := range g.links {
		g.links[i] = make([]chan *inprocMsg, size)
		g.msgs[i] = make([]inprocMsg, size)
		g.sending[i], g.receiving[i] = make([]atomic.Bool, size), make([]atomic.Bool, size)
		for j := range g.links[i] {
			g.links[i][j] = make(chan *inprocMsg)
			g.msgs[i][j].done = make(chan error, 1)
		}
		g.closed[i] = make(chan struct{})
	}
	eps := make([]Endpoint, size)
	for r := range eps {
		eps[r] = &inproc{g: g, rank: r}
	}
	return eps
}

func (e *inproc) Rank() int { return e.rank }
func (e *inproc) Size() int { return e.g.size }

func (e *inproc) Stats() Stats {
	return Stats{BytesSent: e.stats.bs.Load(), BytesRecv: e.stats.br.Load(), MsgsSent: e.stats.ms.Load(), MsgsRecv: e.stats.mr.Load()}
}

func (e *inproc) Close() error { return e.Abort(nil) }

// Abort closes the endpoint; peers' receives from this rank fail with
// reason (nil: as for Close).
func (e *inproc) Abort(reason error) error {
	e.g.once[e.rank].Do(func() {
		e.g.reasons[e.rank] = reason // published by the close below
		close(e.g.closed[e.rank])
	})
	return nil
}

// gone is the error for a peer whose endpoint has closed.
func (g *inprocGroup) gone(r int) error {
	if why := g.reasons[r]; why != nil {
		return &PeerError{r, fmt.Errorf("aborted: %w", why)}
	}
	return &PeerError{r, errClosed}
}

// send hands the pair's message slot, holding the payload, to rank to.
func (e *inproc) send(ctx context.Context, to int, tag uint32, floats []float32, bytes []byte, isByte bool) error {
	CheckPeer(e.rank, e.g.size, to)
	busy := &e.g.sending[e.rank][to]
	acquire(busy, e.rank, "Send", to)
	defer busy.Store(false)
	m := &e.g.msgs[e.rank][to]
	m.tag, m.floats, m.bytes, m.isByte = tag, floats, bytes, isByte
	defer func() { m.floats, m.bytes = nil, nil }() // retain nothing
	n := int64(len(bytes))
	if !isByte {
		n = 4 * int64(len(floats))
	}
	select {
	case e.g.links[e.rank][to] <- m:
	case <-e.g.closed[to]:
		return e.g.gone(to)
	case <-e.g.closed[e.rank]:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// The receiver has the message; it copies and answers at once, so
	// this wait is short and needs no cancellation.
	if err := <-m.done; err != nil {
		return &PeerError{to, err}
	}
	e.stats.bs.Add(n)
	e.stats.ms.Add(1)
	return nil
}

// acquire marks a direction of a pair busy. Two calls on it at once break
// the Endpoint contract (and would share the pair's message slot): that
// programmer error panics.
func acquire(busy *atomic.Bool, rank int, op string, peer int) {
	if !busy.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("transport: rank %d: two concurrent %s calls with rank %d; the Endpoint contract allows one at a time per peer and direction", rank, op, peer))
	}
}

// recv takes the next message from rank from. The caller holds the
// pair's receiving flag until it has answered on the message's done.
func (e *inproc) recv(ctx context.Context, from int) (*inprocMsg, error) {
	select {
	case m := <-e.g.links[from][e.rank]:
		return m, nil
	case <-e.g.closed[from]:
		// Drain a message sent just before the close.
		select {
		case m := <-e.g.links[from][e.rank]:
			return m, nil
		default:
		}
		return nil, e.g.gone(from)
	case <-e.g.closed[e.rank]:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *inproc) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	return e.send(ctx, to, tag, buf, nil, false)
}

func (e *inproc) SendBytes(ctx context.Context, to int, tag uint32, b []byte) error {
	return e.send(ctx, to, tag, nil, b, true)
}

func (e *inproc) Recv(ctx context.Context, from int, tag uint32, buf []float32) error {
	CheckPeer(e.rank, e.g.size, from)
	busy := &e.g.receiving[from][e.rank]
	acquire(busy, e.rank, "Recv", from)
	defer busy.Store(false)
	m, err := e.recv(ctx, from)
	if err != nil {
		return err
	}
	bad := Mismatch(false, tag, len(buf), m.isByte, m.tag, m.len())
	if bad == nil {
		copy(buf, m.floats)
	}
	m.done <- bad
	if bad != nil {
		return &PeerError{from, bad}
	}
	e.stats.br.Add(4 * int64(len(buf)))
	e.stats.mr.Add(1)
	return nil
}

func (e *inproc) RecvBytes(ctx context.Context, from int, tag uint32, max int) ([]byte, error) {
	CheckPeer(e.rank, e.g.size, from)
	busy := &e.g.receiving[from][e.rank]
	acquire(busy, e.rank, "Recv", from)
	defer busy.Store(false)
	m, err := e.recv(ctx, from)
	if err != nil {
		return nil, err
	}
	var out []byte
	bad := Mismatch(true, tag, max, m.isByte, m.tag, m.len())
	if bad == nil {
		out = append([]byte(nil), m.bytes...)
	}
	m.done <- bad
	if bad != nil {
		return nil, &PeerError{from, bad}
	}
	e.stats.br.Add(int64(len(out)))
	e.stats.mr.Add(1)
	return out, nil
}
