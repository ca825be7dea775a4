package netguard

import (
	"container/list"
	"errors"
	"net"
	"sync"
	"time"
)

// Limits of the guards.
const (
	// DefaultPending is how many unauthenticated connections a server
	// lets wait at once.
	DefaultPending = 64
	// HelloTimeout is how long an accepted connection has to say its
	// hello before it is closed.
	HelloTimeout = 10 * time.Second
	// minBackoff and maxBackoff bound the wait after an accept error.
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

// Accept returns the next connection of ln. An error other than the
// listener's closing is passed to logf (when not nil; once per burst of
// errors) and retried after a back-off that doubles from 5 ms to 1 s, so a
// server out of file descriptors waits for some to free instead of
// ending. It returns an error only once ln is closed.
func Accept(ln net.Listener, logf func(error)) (net.Conn, error) {
	var wait time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			return c, nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, err
		}
		if wait == 0 {
			wait = minBackoff
			if logf != nil {
				logf(err)
			}
		} else {
			wait = min(2*wait, maxBackoff)
		}
		time.Sleep(wait)
	}
}

// Pending is a bounded set of connections waiting to authenticate. Its
// methods are safe for concurrent use.
type Pending struct {
	limit int

	// mu guards order and where.
	mu    sync.Mutex
	order *list.List // of net.Conn, oldest first
	where map[net.Conn]*list.Element
	// evicted counts connections closed to make room.
	evicted int
}

// NewPending returns a set that holds at most limit connections (at
// least 1).
func NewPending(limit int) *Pending {
	return &Pending{limit: max(limit, 1), order: list.New(), where: map[net.Conn]*list.Element{}}
}

// Add admits c, closing the oldest waiting connection if the set is full.
func (p *Pending) Add(c net.Conn) {
	p.mu.Lock()
	var victim net.Conn
	if p.order.Len() >= p.limit {
		e := p.order.Front()
		victim = e.Value.(net.Conn)
		p.order.Remove(e)
		delete(p.where, victim)
		p.evicted++
	}
	p.where[c] = p.order.PushBack(c)
	p.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
}

// Done removes c from the set: it has authenticated, been refused, or
// closed. It reports whether c was still there (false: it was evicted,
// and is closed).
func (p *Pending) Done(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.where[c]
	if ok {
		p.order.Remove(e)
		delete(p.where, c)
	}
	return ok
}

// Len is the number of connections waiting.
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.order.Len()
}

// Evicted is the number of connections closed to make room so far.
func (p *Pending) Evicted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.evicted
}

// HelloDeadline is the deadline of a hello read that starts now: now +
// HelloTimeout, or limit if earlier (and not zero).
func HelloDeadline(limit time.Time) time.Time {
	d := time.Now().Add(HelloTimeout)
	if !limit.IsZero() && limit.Before(d) {
		return limit
	}
	return d
}

// IsLoopback reports whether the host:port addr listens only on the
// loopback interface (127.0.0.0/8, ::1, localhost). An empty host or an
// unspecified address (0.0.0.0, ::) listens everywhere: not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
