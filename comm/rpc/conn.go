package rpc

import (
	"context"
	"sync"
)

// Conn is the server's side of one client connection as its handlers see
// it (ConnFrom). A handler uses it to tie state to the connection and to
// undo that state when the client goes away without saying so: a process
// killed mid-run closes its connections, and the server learns of it only
// here.
type Conn struct {
	peer string

	// mu guards hooks and done.
	mu    sync.Mutex
	hooks []func()
	done  bool
	// ended is closed once the hooks have run (Done).
	endOnce sync.Once
	ended   chan struct{}
}

// connKey is the context key of the *Conn a handler serves.
type connKey struct{}

// ConnFrom returns the connection whose request the handler holding ctx
// serves, or nil when ctx is not a Handler's.
func ConnFrom(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// RemoteAddr returns the client's address (host:port).
func (c *Conn) RemoteAddr() string { return c.peer }

// OnClose registers f to run once the connection has ended, for whatever
// reason (the client closed it or died, an error, the server closing),
// after its last handler has returned. Hooks run one after the other in
// the order registered, on the connection's goroutine, before Serve
// returns. Registered after the connection ended (by a handler that kept
// the Conn), f runs at once.
func (c *Conn) OnClose(f func()) {
	c.mu.Lock()
	if !c.done {
		c.hooks = append(c.hooks, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

// Done returns a channel closed once the connection has ended and its
// OnClose hooks have run.
func (c *Conn) Done() <-chan struct{} {
	c.endOnce.Do(c.initEnded)
	return c.ended
}

func (c *Conn) initEnded() { c.ended = make(chan struct{}) }

// closed runs the hooks; later registrations run at once.
func (c *Conn) closed() {
	c.mu.Lock()
	hooks := c.hooks
	c.hooks, c.done = nil, true
	c.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	c.endOnce.Do(c.initEnded)
	close(c.ended)
}
