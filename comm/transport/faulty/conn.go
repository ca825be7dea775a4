package faulty

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
)

// ErrBroken is returned by the write that a Conn breaks.
var ErrBroken = errors.New("faulty: connection broken")

// Conn is a net.Conn whose writes a test can corrupt or break from some
// point on. Reads are untouched. It is safe for concurrent use.
type Conn struct {
	net.Conn
	mu      sync.Mutex // guards the fields below
	left    int64      // bytes still written intact; -1: no fault armed
	corrupt *rand.Rand // non-nil: garbage after left; nil: break after left
}

// WrapConn returns c with no fault armed.
func WrapConn(c net.Conn) *Conn { return &Conn{Conn: c, left: -1} }

// CorruptAfter lets n more bytes through intact and replaces every byte
// written after them with garbage drawn from rng.
func (c *Conn) CorruptAfter(n int64, rng *rand.Rand) {
	c.mu.Lock()
	c.left, c.corrupt = max(n, 0), rng
	c.mu.Unlock()
}

// BreakAfter lets n more bytes through and then closes the connection:
// the write that reaches the limit writes what fits and fails with
// ErrBroken, as if the process had died mid-message.
func (c *Conn) BreakAfter(n int64) {
	c.mu.Lock()
	c.left, c.corrupt = max(n, 0), nil
	c.mu.Unlock()
}

// Write writes b, applying the armed fault.
func (c *Conn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left < 0 || int64(len(b)) < c.left {
		if c.left > 0 {
			c.left -= int64(len(b))
		}
		return c.Conn.Write(b)
	}
	keep := int(c.left)
	n, err := c.Conn.Write(b[:keep])
	c.left -= int64(n)
	if err != nil {
		return n, err
	}
	if c.corrupt == nil {
		c.Conn.Close()
		return n, ErrBroken
	}
	junk := make([]byte, len(b)-keep)
	for i := range junk {
		junk[i] = byte(c.corrupt.Uint32())
	}
	m, err := c.Conn.Write(junk)
	return n + m, err
}

// StreamLayer is the shape of tcp.StreamLayer, declared here so that this
// package needs no network transport.
type StreamLayer interface {
	Listen(addr string) (net.Listener, error)
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// Stream wraps a stream layer so that every connection it dials or
// accepts is a *Conn the test can reach through Conns. It satisfies
// tcp.StreamLayer.
type Stream struct {
	Inner StreamLayer
	mu    sync.Mutex // guards conns
	conns []*Conn
}

// Conns returns the connections made so far, in order.
func (s *Stream) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Conn(nil), s.conns...)
}

func (s *Stream) wrap(c net.Conn) *Conn {
	w := WrapConn(c)
	s.mu.Lock()
	s.conns = append(s.conns, w)
	s.mu.Unlock()
	return w
}

// Listen listens through the inner layer.
func (s *Stream) Listen(addr string) (net.Listener, error) {
	ln, err := s.Inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	return listener{ln, s}, nil
}

// Dial dials through the inner layer.
func (s *Stream) Dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := s.Inner.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return s.wrap(c), nil
}

type listener struct {
	net.Listener
	s *Stream
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.s.wrap(c), nil
}
