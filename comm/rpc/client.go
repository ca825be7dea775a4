package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"dsgd/comm/wire"
)

// Client is one connection to a Server. It is safe for concurrent use;
// calls are serialised on the connection.
type Client struct {
	cfg  Config
	addr string
	c    net.Conn

	// mu guards everything below and the use of the connection.
	mu   sync.Mutex
	rd   reader
	m    message
	wseq uint64
	wbuf []byte
	err  error // sticky: the connection is unusable
	// expired is signalled by a call's cancellation function once it has
	// forced the connection's deadline into the past (Call).
	expired chan struct{}
}

// Dial connects to the server at addr and says hello with cfg.Token. A
// refused hello gives an error wrapping ErrRefused that says why.
func Dial(ctx context.Context, addr string, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rpc: dial %s: %w", addr, err)
	}
	deadline := time.Now().Add(cfg.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	err = clientHello(c, cfg, deadline)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil && !errors.Is(err, ErrRefused) {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("rpc: server %s: %w", addr, err)
	}
	cl := &Client{cfg: cfg, addr: addr, c: c, wseq: 1, expired: make(chan struct{}, 1)}
	cl.rd = reader{r: bufio.NewReaderSize(c, 64<<10), maxFrame: cfg.MaxFrame, seq: 1}
	return cl, nil
}

func clientHello(c net.Conn, cfg Config, deadline time.Time) error {
	if err := writeControl(c, wire.Hello{Version: Version, Token: cfg.Token}, 0, deadline); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	m, err := readControl(c, 0, deadline, maxControl)
	if err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	switch m := m.(type) {
	case wire.Welcome:
		return nil
	case wire.Reject:
		return fmt.Errorf("%w: %s", ErrRefused, m.Reason)
	}
	return fmt.Errorf("hello: %w: %T where Welcome or Reject was expected", wire.ErrMalformed, m)
}

// Addr returns the server's address as given to Dial.
func (cl *Client) Addr() string { return cl.addr }

// LocalAddr returns this end's address (host:port), as the server sees
// the client.
func (cl *Client) LocalAddr() string { return cl.c.LocalAddr().String() }

// Close closes the connection; calls in progress fail.
func (cl *Client) Close() error {
	err := cl.c.Close()
	cl.mu.Lock()
	if cl.err == nil {
		cl.err = fmt.Errorf("rpc: connection to %s closed", cl.addr)
	}
	cl.mu.Unlock()
	return err
}

// Call sends req and waits for the answer, which it puts in resp (see
// Response for where the payload goes). The wait ends with an error after
// Timeout without an answer or a keep-alive, or when ctx is done. An
// error the handler returned is a *RemoteError and leaves the client
// usable; any other error makes it unusable.
func (cl *Client) Call(ctx context.Context, req *Request, resp *Response) error {
	out := message{op: req.Op, status: statusRequest, ints: req.Ints, floats: req.Floats, text: req.Text, data: req.Data}
	if len(req.Text) > MaxText || frameSize(&out) > cl.cfg.MaxFrame {
		return fmt.Errorf("rpc: call op %d to %s: request of %d bytes (text %d) exceeds the limits (frame %d, text %d)",
			req.Op, cl.addr, frameSize(&out), len(req.Text), cl.cfg.MaxFrame, MaxText)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.err != nil {
		return cl.err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rpc: call op %d to %s: %w", req.Op, cl.addr, err)
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			cl.c.SetDeadline(time.Unix(1, 0))
			cl.expired <- struct{}{}
		})
		defer func() {
			// ctx may end just as the answer has been read: the function
			// has started and will force the deadline into the past. Wait
			// for it (before mu is released), so that it cannot land on
			// the next call, which sets its own deadlines first; otherwise
			// that call, with no deadline of its own, failed with a bare
			// i/o timeout.
			if !stop() {
				<-cl.expired
			}
		}()
	}
	err := cl.roundTrip(ctx, &out, resp)
	if err == nil {
		return nil
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return err
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	} else if cd, ok := ctx.Deadline(); ok && !time.Now().Before(cd) {
		err = context.DeadlineExceeded // the read deadline was ctx's
	}
	cl.err = fmt.Errorf("rpc: call op %d to %s: %w", req.Op, cl.addr, err)
	cl.c.Close()
	return cl.err
}

// deadline returns now+Timeout, or ctx's deadline when that is earlier.
func (cl *Client) deadline(ctx context.Context) time.Time {
	d := time.Now().Add(cl.cfg.Timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

func (cl *Client) roundTrip(ctx context.Context, out *message, resp *Response) error {
	cl.c.SetWriteDeadline(cl.deadline(ctx))
	if err := writeMessage(cl.c, out, cl.wseq, &cl.wbuf); err != nil {
		return err
	}
	cl.wseq++
	m := &cl.m
	for {
		cl.c.SetReadDeadline(cl.deadline(ctx))
		n, err := cl.rd.readHead(m, nil)
		if err != nil {
			return err
		}
		switch m.status {
		case statusPending:
			if n != 0 {
				return fmt.Errorf("%w: keep-alive with a payload", wire.ErrMalformed)
			}
			continue
		case statusError:
			if n != 0 {
				return fmt.Errorf("%w: error response with a payload", wire.ErrMalformed)
			}
			return &RemoteError{Addr: cl.addr, Op: out.op, Msg: m.text}
		case statusOK:
		default:
			return fmt.Errorf("%w: status %d in a response", wire.ErrMalformed, m.status)
		}
		if m.op != out.op {
			return fmt.Errorf("%w: answer to op %d for a call of op %d", wire.ErrMalformed, m.op, out.op)
		}
		resp.Data = grow(resp.Data, n)
		if err := cl.rd.readFloats(resp.Data); err != nil {
			return err
		}
		resp.Ints, resp.Floats, resp.Text = m.ints, m.floats, m.text
		return nil
	}
}
