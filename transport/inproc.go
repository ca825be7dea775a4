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
// rendezvous, so nothing is copied twice and no buffer is retained.
type inprocMsg struct {
	tag    uint32
	floats []float32
	bytes  []byte
	isByte bool
	done   chan error // receiver's verdict: nil, or the mismatch it saw
}

// inprocGroup holds the channels between every ordered pair of ranks.
type inprocGroup struct {
	size  int
	links [][]chan *inprocMsg // links[from][to]
	// closed[r] is closed when rank r's endpoint closes.
	closed []chan struct{}
	once   []sync.Once
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
	g := &inprocGroup{size: size, links: make([][]chan *inprocMsg, size), closed: make([]chan struct{}, size), once: make([]sync.Once, size)}
	for i := range g.links {
		g.links[i] = make([]chan *inprocMsg, size)
		for j := range g.links[i] {
			g.links[i][j] = make(chan *inprocMsg)
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

func (e *inproc) Close() error {
	e.g.once[e.rank].Do(func() { close(e.g.closed[e.rank]) })
	return nil
}

func (e *inproc) send(ctx context.Context, to int, m *inprocMsg, n int64) error {
	CheckPeer(e.rank, e.g.size, to)
	m.done = make(chan error, 1)
	select {
	case e.g.links[e.rank][to] <- m:
	case <-e.g.closed[to]:
		return &PeerError{to, errClosed}
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

func (e *inproc) recv(ctx context.Context, from int) (*inprocMsg, error) {
	CheckPeer(e.rank, e.g.size, from)
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
		return nil, &PeerError{from, errClosed}
	case <-e.g.closed[e.rank]:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *inproc) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	return e.send(ctx, to, &inprocMsg{tag: tag, floats: buf}, 4*int64(len(buf)))
}

func (e *inproc) SendBytes(ctx context.Context, to int, tag uint32, b []byte) error {
	return e.send(ctx, to, &inprocMsg{tag: tag, bytes: b, isByte: true}, int64(len(b)))
}

func (e *inproc) Recv(ctx context.Context, from int, tag uint32, buf []float32) error {
	m, err := e.recv(ctx, from)
	if err != nil {
		return err
	}
	var bad error
	switch {
	case m.isByte:
		bad = fmt.Errorf("expected %d floats with tag %d, got a %d-byte message with tag %d", len(buf), tag, len(m.bytes), m.tag)
	case m.tag != tag || len(m.floats) != len(buf):
		bad = fmt.Errorf("expected %d floats with tag %d, got %d floats with tag %d", len(buf), tag, len(m.floats), m.tag)
	default:
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
	m, err := e.recv(ctx, from)
	if err != nil {
		return nil, err
	}
	var bad error
	var out []byte
	switch {
	case !m.isByte:
		bad = fmt.Errorf("expected a byte message with tag %d, got %d floats with tag %d", tag, len(m.floats), m.tag)
	case m.tag != tag:
		bad = fmt.Errorf("expected a byte message with tag %d, got tag %d", tag, m.tag)
	case len(m.bytes) > max:
		bad = fmt.Errorf("byte message of %d bytes exceeds the limit of %d", len(m.bytes), max)
	default:
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
