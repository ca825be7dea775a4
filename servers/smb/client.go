package smb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"dsgd/comm/rpc"
)

// Client is a connection pool to a shared buffer server. It implements
// Buffers with the Store's semantics and errors (errors.Is works with
// ErrUnknownKey and the others), and is safe for concurrent use:
// concurrent calls use up to Config.MaxConns connections. A connection
// that fails (timeout, cancelled context, server gone) is dropped and the
// next call dials a fresh one.
type Client struct {
	addr  string
	cfg   Config
	rcfg  rpc.Config
	chunk int           // most float32 values per request
	sem   chan struct{} // one token per connection in use

	// mu guards idle and closed.
	mu     sync.Mutex
	idle   []*conn
	closed bool

	shmc shmClient // the server's buffers mapped here (shm.go)
	hold claimHold // the ranks this client claimed (claim.go)
}

// conn is one connection with its reusable request and response.
type conn struct {
	c    *rpc.Client
	req  rpc.Request
	resp rpc.Response
	half []float32 // control slots as float32 halves
}

var _ Buffers = (*Client)(nil)

// requestOverhead is what a request or response needs beside its payload
// (the rpc header fields and the keys), rounded up.
const requestOverhead = 1024

// Dial connects to the server at addr and says hello; a wrong token is an
// error wrapping rpc.ErrRefused.
func Dial(ctx context.Context, addr string, cfg Config) (*Client, error) {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 4
	}
	if cfg.WaitSlice <= 0 {
		cfg.WaitSlice = 5 * time.Second
	}
	cfg.WaitSlice = min(cfg.WaitSlice, maxWaitSlice)
	rcfg := cfg.rpc()
	maxFrame := rcfg.MaxFrame
	if maxFrame == 0 {
		maxFrame = rpc.DefaultMaxFrame
	}
	if maxFrame < requestOverhead+64 {
		return nil, fmt.Errorf("smb: max frame of %d bytes; need at least %d", maxFrame, requestOverhead+64)
	}
	cl := &Client{
		addr:  addr,
		cfg:   cfg,
		rcfg:  rcfg,
		chunk: (maxFrame - requestOverhead) / 8 * 2, // even: whole control slots
		sem:   make(chan struct{}, cfg.MaxConns),
	}
	c, err := cl.dial(ctx)
	if err != nil {
		return nil, err
	}
	cl.idle = append(cl.idle, c)
	return cl, nil
}

func (cl *Client) dial(ctx context.Context) (*conn, error) {
	c, err := rpc.Dial(ctx, cl.addr, cl.rcfg)
	if err != nil {
		return nil, fmt.Errorf("smb: %w", err)
	}
	return &conn{c: c}, nil
}

// Close closes every idle connection; connections in use close when
// their calls return.
func (cl *Client) Close() error {
	cl.mu.Lock()
	idle := cl.idle
	cl.idle, cl.closed = nil, true
	cl.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
	cl.closeShm()
	cl.closeClaims()
	return nil
}

// get takes a connection: an idle one, or a new one when fewer than
// MaxConns are in use.
func (cl *Client) get(ctx context.Context) (*conn, error) {
	select {
	case cl.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("smb: server %s: %w", cl.addr, ctx.Err())
	}
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		<-cl.sem
		return nil, fmt.Errorf("smb: client of %s is closed", cl.addr)
	}
	if n := len(cl.idle); n > 0 {
		c := cl.idle[n-1]
		cl.idle = cl.idle[:n-1]
		cl.mu.Unlock()
		return c, nil
	}
	cl.mu.Unlock()
	c, err := cl.dial(ctx)
	if err != nil {
		<-cl.sem
		return nil, err
	}
	return c, nil
}

// put returns c after a call that ended with err: a connection the rpc
// layer gave up on is closed, not kept.
func (cl *Client) put(c *conn, err error) {
	var re *rpc.RemoteError
	keep := err == nil || errors.As(err, &re)
	cl.mu.Lock()
	if keep && !cl.closed {
		cl.idle = append(cl.idle, c)
	} else {
		keep = false
	}
	cl.mu.Unlock()
	if !keep {
		c.c.Close()
	}
	<-cl.sem
}

// call runs one request on a pooled connection; the response is in
// c.resp until put.
func (c *conn) call(ctx context.Context, op uint32, text string, ints [rpc.NumInts]int64, data []float32) error {
	c.req = rpc.Request{Op: op, Ints: ints, Text: text, Data: data}
	err := c.c.Call(ctx, &c.req, &c.resp)
	c.req.Data = nil
	return remoteError(err)
}

// sentinels are the errors a server's message may carry.
var sentinels = []error{ErrUnknownKey, ErrBounds, ErrSize, ErrLimit, ErrInvalid, ErrRank}

// remoteErr is a server's error with the sentinel its message names.
type remoteErr struct {
	err  *rpc.RemoteError
	kind error
}

func (e *remoteErr) Error() string   { return e.err.Error() }
func (e *remoteErr) Unwrap() []error { return []error{e.err, e.kind} }

// remoteError gives a server's error its sentinel back: the Store's
// messages read "smb: <sentinel>...".
func remoteError(err error) error {
	var re *rpc.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	for _, s := range sentinels {
		if strings.Contains(re.Msg, "smb: "+s.Error()) {
			return &remoteErr{err: re, kind: s}
		}
	}
	return err
}

// do runs f on a pooled connection.
func (cl *Client) do(ctx context.Context, f func(c *conn) error) error {
	c, err := cl.get(ctx)
	if err != nil {
		return ctxCause(ctx, err)
	}
	err = f(c)
	cl.put(c, err)
	return ctxCause(ctx, err)
}

// ctxCause makes a failure that came from ctx ending (a connection's
// deadline taken from it, while dialling or waiting) wrap ctx's error, so
// callers can tell it with errors.Is.
func ctxCause(ctx context.Context, err error) error {
	if err == nil {
		return err
	}
	cause := ctx.Err()
	if d, ok := ctx.Deadline(); cause == nil && ok && !time.Now().Before(d) {
		// The connection's deadline can fire before ctx's timer.
		cause = context.DeadlineExceeded
	}
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%v)", cause, err)
}

// Create implements Buffers.
func (cl *Client) Create(ctx context.Context, key string, n int) (created bool, err error) {
	err = cl.do(ctx, func(c *conn) error {
		err := c.call(ctx, opCreate, key, [rpc.NumInts]int64{int64(n)}, nil)
		created = c.resp.Ints[0] == 1
		return err
	})
	return created, err
}

// Free implements Buffers.
func (cl *Client) Free(ctx context.Context, key string) error {
	return cl.do(ctx, func(c *conn) error {
		return c.call(ctx, opFree, key, [rpc.NumInts]int64{}, nil)
	})
}

// Attach implements Buffers.
func (cl *Client) Attach(ctx context.Context, key string) (n int, err error) {
	err = cl.do(ctx, func(c *conn) error {
		err := c.call(ctx, opAttach, key, [rpc.NumInts]int64{}, nil)
		n = int(c.resp.Ints[0])
		return err
	})
	return n, err
}

// Read implements Buffers. A read longer than a frame is split into
// several requests; a write or accumulate may land between them.
func (cl *Client) Read(ctx context.Context, key string, off int, dst []float32) error {
	if done, err := cl.shmAccess(ctx, key, off, dst, false); done {
		return err
	}
	return cl.do(ctx, func(c *conn) error {
		for done := 0; done == 0 || done < len(dst); {
			part := dst[done:min(len(dst), done+cl.chunk)]
			c.resp.Data = part[:0]
			err := c.call(ctx, opRead, key, [rpc.NumInts]int64{int64(off + done), int64(len(part)), int64(off), int64(len(dst))}, nil)
			if err != nil {
				return err
			}
			if len(c.resp.Data) != len(part) {
				return fmt.Errorf("smb: server %s answered a read of %d values of %q with %d", cl.addr, len(part), key, len(c.resp.Data))
			}
			if len(part) > 0 && &c.resp.Data[0] != &part[0] {
				copy(part, c.resp.Data)
			}
			c.resp.Data = nil
			done += len(part)
			if len(part) == 0 {
				break
			}
		}
		return nil
	})
}

// Write implements Buffers. A write longer than a frame is split into
// several requests, each checked against the whole write's bounds, so an
// out-of-bounds write writes nothing; a read may see the parts land one
// by one.
func (cl *Client) Write(ctx context.Context, key string, off int, src []float32) error {
	if done, err := cl.shmAccess(ctx, key, off, src, true); done {
		return err
	}
	return cl.do(ctx, func(c *conn) error {
		for done := 0; done == 0 || done < len(src); {
			part := src[done:min(len(src), done+cl.chunk)]
			if err := c.call(ctx, opWrite, key, [rpc.NumInts]int64{int64(off + done), 0, int64(off), int64(len(src))}, part); err != nil {
				return err
			}
			done += len(part)
			if len(part) == 0 {
				break
			}
		}
		return nil
	})
}

// Accumulate implements Buffers.
func (cl *Client) Accumulate(ctx context.Context, dst, src string) error {
	return cl.do(ctx, func(c *conn) error {
		return c.call(ctx, opAccumulate, dst+src, [rpc.NumInts]int64{int64(len(dst))}, nil)
	})
}

func (cl *Client) version(ctx context.Context, op uint32, key string) (v uint64, err error) {
	err = cl.do(ctx, func(c *conn) error {
		err := c.call(ctx, op, key, [rpc.NumInts]int64{}, nil)
		v = uint64(c.resp.Ints[0])
		return err
	})
	return v, err
}

// Version implements Buffers.
func (cl *Client) Version(ctx context.Context, key string) (uint64, error) {
	return cl.version(ctx, opVersion, key)
}

// Notify implements Buffers.
func (cl *Client) Notify(ctx context.Context, key string) (uint64, error) {
	return cl.version(ctx, opNotify, key)
}

// wait asks the server, one slice at a time, until the version differs
// from after or ctx ends.
func (cl *Client) wait(ctx context.Context, op uint32, key string, after uint64) (uint64, error) {
	for {
		slice := cl.cfg.WaitSlice
		if d, ok := ctx.Deadline(); ok {
			slice = min(slice, time.Until(d))
		}
		if slice <= 0 || ctx.Err() != nil {
			if err := ctx.Err(); err != nil {
				return after, err
			}
			return after, context.DeadlineExceeded
		}
		var v uint64
		cctx, end := sliceContext(ctx)
		err := cl.do(cctx, func(c *conn) error {
			err := c.call(cctx, op, key, [rpc.NumInts]int64{int64(after), max(slice.Milliseconds(), 1)}, nil)
			v = uint64(c.resp.Ints[0])
			return err
		})
		end()
		if err != nil {
			if ctx.Err() != nil {
				return after, ctx.Err()
			}
			return after, err
		}
		if v != after {
			return v, nil
		}
	}
}

// sliceContext is the context of one wait request under ctx: cancelled
// with ctx, but not ended by ctx's deadline. The server ends the slice
// itself, and the last slice ends at ctx's deadline: a call ended by that
// deadline too would race the server's "unchanged" and, each time it won,
// close the connection under the answer (a redial per poll). The call
// stays bounded by the rpc Timeout. Call end once the request is done.
func sliceContext(ctx context.Context) (context.Context, func()) {
	if _, ok := ctx.Deadline(); !ok {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return cctx, func() {
		stop()
		cancel()
	}
}

// Wait implements Buffers: it blocks in slices of Config.WaitSlice.
func (cl *Client) Wait(ctx context.Context, key string, after uint64) (uint64, error) {
	return cl.wait(ctx, opWait, key, after)
}

// WaitControl implements Buffers.
func (cl *Client) WaitControl(ctx context.Context, after uint64) (uint64, error) {
	return cl.wait(ctx, opWaitControl, "", after)
}

// CreateControl implements Buffers.
func (cl *Client) CreateControl(ctx context.Context, n int) (created bool, err error) {
	err = cl.do(ctx, func(c *conn) error {
		err := c.call(ctx, opCreateControl, "", [rpc.NumInts]int64{int64(n)}, nil)
		created = c.resp.Ints[0] == 1
		return err
	})
	return created, err
}

// ReadControl implements Buffers. The control area is read in one
// request, so it must fit a frame (65536 slots do).
func (cl *Client) ReadControl(ctx context.Context, off int, dst []int64) (v uint64, err error) {
	err = cl.do(ctx, func(c *conn) error {
		if cap(c.half) < 2*len(dst) {
			c.half = make([]float32, 2*len(dst))
		}
		c.resp.Data = c.half[:0]
		err := c.call(ctx, opReadControl, "", [rpc.NumInts]int64{int64(off), int64(len(dst))}, nil)
		data := c.resp.Data
		c.resp.Data = nil
		if err != nil {
			return err
		}
		if len(data) != 2*len(dst) {
			return fmt.Errorf("smb: server %s answered a read of %d control slots with %d halves", cl.addr, len(dst), len(data))
		}
		for i := range dst {
			dst[i] = slotOf(data[2*i], data[2*i+1])
		}
		v = uint64(c.resp.Ints[0])
		return nil
	})
	return v, err
}

// WriteControl implements Buffers.
func (cl *Client) WriteControl(ctx context.Context, off int, src []int64) error {
	return cl.do(ctx, func(c *conn) error {
		if cap(c.half) < 2*len(src) {
			c.half = make([]float32, 2*len(src))
		}
		half := c.half[:2*len(src)]
		for i, v := range src {
			half[2*i], half[2*i+1] = slotHalves(v)
		}
		return c.call(ctx, opWriteControl, "", [rpc.NumInts]int64{int64(off)}, half)
	})
}
