package rpc

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"dsgd/comm/netguard"
	"dsgd/comm/wire"
)

// Handler serves one request by filling resp, or returns an error that
// the client receives as a *RemoteError. Handlers of different
// connections run concurrently; one connection's calls run one at a time.
// ctx is derived from the one given to Serve, cancelled also when the
// server closes or when a write to the connection fails (a keep-alive to
// a client that died: a handler waiting on its client's behalf learns it
// is gone), and stays valid after the call; ConnFrom(ctx) is the
// connection the request came on.
type Handler func(ctx context.Context, req *Request, resp *Response) error

// Server accepts connections and serves each with the handler on its own
// goroutine. Its methods are safe for concurrent use.
type Server struct {
	cfg Config
	h   Handler
	ln  net.Listener

	// mu guards conns and closed.
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen listens on addr (host:port; an empty host, or an empty addr,
// means the loopback 127.0.0.1, and port 0 a free port) and returns a
// Server that answers with h once Serve runs.
func Listen(addr string, cfg Config, h Handler) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if h == nil {
		panic("rpc: Listen with a nil handler")
	}
	addr, err = loopbackDefault(addr)
	if err != nil {
		return nil, err
	}
	if cfg.Token == "" && !netguard.IsLoopback(addr) {
		return nil, fmt.Errorf("rpc: listening on %s, beyond loopback, needs a token (Config.Token): without one any host could connect", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rpc: listen: %w", err)
	}
	return &Server{cfg: cfg, h: h, ln: ln, conns: map[net.Conn]struct{}{}}, nil
}

// loopbackDefault fills an empty host with 127.0.0.1.
func loopbackDefault(addr string) (string, error) {
	if addr == "" {
		return "127.0.0.1:0", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("rpc: listen address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Addr returns the address the server listens on (host:port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve accepts and serves connections until ctx is done or Close is
// called, then closes every connection, waits for their goroutines and
// returns nil. An accept error (out of file descriptors) is logged and
// retried after a back-off, never the end of the server; at most
// Config.MaxPending connections wait to say their hello at once (the
// oldest is closed to make room), each for at most netguard.HelloTimeout.
func (s *Server) Serve(ctx context.Context) error {
	// Handlers see a context that ends with the server, so that one
	// blocked in a wait lets Serve return.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	var err error
	pending := netguard.NewPending(s.cfg.MaxPending)
	logAccept := func(err error) {
		if s.cfg.ErrorLog != nil {
			s.cfg.ErrorLog(fmt.Errorf("rpc: accept on %s: %w (backing off, still serving)", s.Addr(), err))
		}
	}
	for {
		var c net.Conn
		c, err = netguard.Accept(s.ln, logAccept)
		if err != nil {
			break
		}
		if !s.track(c) {
			c.Close()
			break
		}
		pending.Add(c)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			rc := &Conn{peer: c.RemoteAddr().String()}
			cctx, lost := context.WithCancel(context.WithValue(ctx, connKey{}, rc))
			err := s.serveConn(cctx, lost, c, pending)
			lost()
			s.untrack(c)
			if err != nil && s.cfg.ErrorLog != nil {
				s.cfg.ErrorLog(err)
			}
			rc.closed()
		}()
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	s.Close()
	cancel()
	s.wg.Wait()
	if closed {
		return nil
	}
	return fmt.Errorf("rpc: accept on %s: %w", s.Addr(), err)
}

// Close stops the server: the listener and every connection are closed.
// Serve returns once the connection goroutines have ended.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	return err
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// sconn is the server's state for one connection.
type sconn struct {
	s    *Server
	c    net.Conn
	peer string

	// wmu guards the writing half: wseq, wbuf, busy and the writes.
	wmu  sync.Mutex
	wseq uint64
	wbuf []byte
	busy bool // a handler is running: keep-alives are due
	hb   *time.Timer
	werr error // the first write error
	// lost cancels the handlers' context: a write failed, so the client
	// is gone (a keep-alive to a process that died).
	lost context.CancelFunc
}

// serveConn runs one connection until it fails or closes. It returns nil
// when the client closed the connection between requests.
func (s *Server) serveConn(ctx context.Context, lost context.CancelFunc, c net.Conn, pending *netguard.Pending) error {
	peer := c.RemoteAddr().String()
	err := s.hello(c)
	if !pending.Done(c) && err == nil {
		err = errors.New("closed to make room: too many connections waiting to authenticate")
	}
	if err != nil {
		return fmt.Errorf("rpc: client %s: hello: %w", peer, err)
	}
	sc := &sconn{s: s, c: c, peer: peer, wseq: 1, lost: lost}
	sc.hb = time.AfterFunc(time.Hour, sc.keepAlive)
	sc.hb.Stop()
	defer sc.hb.Stop()
	rd := &reader{r: bufio.NewReaderSize(c, 64<<10), maxFrame: s.cfg.MaxFrame, seq: 1}
	var (
		m    message
		req  Request
		resp Response
	)
	arm := func() { c.SetReadDeadline(time.Now().Add(s.cfg.Timeout)) }
	for {
		c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout)) // idle between requests
		n, err := rd.readHead(&m, arm)
		if err == nil && m.status != statusRequest {
			err = fmt.Errorf("%w: status %d where a request was expected", wire.ErrMalformed, m.status)
		}
		if err == nil {
			req.buf = grow(req.buf, n)
			err = rd.readFloats(req.buf)
		}
		if err != nil {
			if err == io.EOF || isClosed(err) {
				return nil // closed between requests
			}
			if errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrTooLarge) {
				sc.sendError(m.op, err) // best effort: tell the client why
			}
			return fmt.Errorf("rpc: client %s: %w", peer, err)
		}
		req.Op, req.Ints, req.Floats, req.Text, req.Data = m.op, m.ints, m.floats, m.text, req.buf
		resp.Ints, resp.Floats, resp.Text, resp.Data = [NumInts]int64{}, [NumFloats]float64{}, "", nil

		sc.wmu.Lock()
		sc.busy = true
		sc.wmu.Unlock()
		sc.hb.Reset(s.cfg.Timeout / 3)
		herr := s.call(ctx, &req, &resp)
		sc.wmu.Lock()
		sc.busy = false
		out := message{op: req.Op, status: statusOK, ints: resp.Ints, floats: resp.Floats, text: resp.Text, data: resp.Data}
		if herr != nil {
			out = message{op: req.Op, status: statusError, text: truncate(herr.Error())}
		} else if len(resp.Text) > MaxText || frameSize(&out) > s.cfg.MaxFrame {
			out = message{op: req.Op, status: statusError, text: fmt.Sprintf("response of %d bytes (text %d) exceeds the limits (frame %d, text %d)", frameSize(&out), len(resp.Text), s.cfg.MaxFrame, MaxText)}
		}
		err = sc.write(&out)
		sc.wmu.Unlock()
		sc.hb.Stop()
		req.Text, req.Data = "", nil
		resp.Data = nil
		if err != nil {
			return fmt.Errorf("rpc: client %s: %w", peer, err)
		}
	}
}

// call runs the handler, turning a panic into an error so one bad request
// does not take the server down.
func (s *Server) call(ctx context.Context, req *Request, resp *Response) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return s.h(ctx, req, resp)
}

// write sends m; wmu must be held.
func (sc *sconn) write(m *message) error {
	if sc.werr != nil {
		return sc.werr
	}
	sc.c.SetWriteDeadline(time.Now().Add(sc.s.cfg.Timeout))
	err := writeMessage(sc.c, m, sc.wseq, &sc.wbuf)
	sc.wseq++
	if err != nil {
		sc.werr = err
		sc.c.Close()
		sc.lost()
	}
	return err
}

// keepAlive runs on the timer while a handler runs.
func (sc *sconn) keepAlive() {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	if !sc.busy {
		return
	}
	if sc.write(&message{status: statusPending}) == nil {
		sc.hb.Reset(sc.s.cfg.Timeout / 3)
	}
}

// sendError tells the client, best effort, why its connection is closed.
func (sc *sconn) sendError(op uint32, err error) {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.write(&message{op: op, status: statusError, text: truncate(err.Error())})
}

func truncate(s string) string {
	if len(s) > MaxText {
		return s[:MaxText]
	}
	return s
}

// hello checks the client's Hello and answers Welcome or Reject.
func (s *Server) hello(c net.Conn) error {
	deadline := netguard.HelloDeadline(time.Now().Add(s.cfg.Timeout))
	m, err := readControl(c, 0, deadline, wire.MaxHello)
	if err != nil {
		return err
	}
	h, ok := m.(wire.Hello)
	if !ok {
		return fmt.Errorf("%w: %T where a hello was expected", wire.ErrMalformed, m)
	}
	reason := ""
	switch {
	case subtle.ConstantTimeCompare([]byte(h.Token), []byte(s.cfg.Token)) != 1:
		reason = "wrong token"
	case h.Version != Version:
		reason = fmt.Sprintf("client speaks rpc protocol version %d, server %d", h.Version, Version)
	}
	if reason != "" {
		writeControl(c, wire.Reject{Reason: reason}, 0, deadline)
		return fmt.Errorf("refused: %s", reason)
	}
	return writeControl(c, wire.Welcome{}, 0, deadline)
}

// isClosed reports whether err comes from a closed connection.
func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
