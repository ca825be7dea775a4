package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// ErrClosed is returned by calls on a Client after its Close.
var ErrClosed = errors.New("redisstore: client closed")

// ErrNotFound is wrapped by the error for a key that does not exist.
var ErrNotFound = errors.New("redisstore: key not found")

// Config tunes a Client. The zero value is valid and means the defaults.
type Config struct {
	// Timeout bounds every single network operation: the dial, and each
	// read and write of a command or reply (it is an idle timeout, so a
	// large value that keeps flowing is not cut off). A context deadline
	// shortens it further. Default 10s.
	Timeout time.Duration
	// MaxValue bounds the bytes of string data the client accepts in one
	// reply (for GET, the value's size); larger replies fail with
	// ErrTooLarge before anything is allocated for them. Default 512 MiB,
	// Redis's own proto-max-bulk-len.
	MaxValue int64
	// PoolSize is the most connections the client holds open at once;
	// calls beyond it wait for a free connection. Default 4.
	PoolSize int
}

const (
	defaultTimeout  = 10 * time.Second
	defaultMaxValue = 512 << 20
	defaultPoolSize = 4
	// bufSize is the size of each connection's read and write buffers,
	// and so the longest status line a reply may have.
	bufSize = 64 << 10
)

// validate fills the defaults and rejects negative settings.
func (c *Config) validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("redisstore: Config.Timeout %v is negative", c.Timeout)
	case c.MaxValue < 0:
		return fmt.Errorf("redisstore: Config.MaxValue %d is negative", c.MaxValue)
	case c.PoolSize < 0:
		return fmt.Errorf("redisstore: Config.PoolSize %d is negative", c.PoolSize)
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	if c.MaxValue == 0 {
		c.MaxValue = defaultMaxValue
	}
	if c.PoolSize == 0 {
		c.PoolSize = defaultPoolSize
	}
	return nil
}

// ServerError is a RESP error reply ("-ERR ...", "-WRONGPASS ..."): the
// server understood the command and refused it. The connection stays
// usable.
type ServerError struct {
	Addr string // server address, HOST:PORT
	Cmd  string // command name, e.g. "GET"
	Msg  string // the server's message, without the leading '-'
}

// Error returns "redisstore: redis ADDR: CMD: MSG".
func (e *ServerError) Error() string {
	return "redisstore: redis " + e.Addr + ": " + e.Cmd + ": " + e.Msg
}

// Client is a minimal RESP2 client of one Redis server. It is safe for
// concurrent use: each call takes a connection from a small pool (at
// most Config.PoolSize), so several workers can share one Client.
// Connections that fail mid-call are closed, never reused; the next call
// dials afresh.
type Client struct {
	ep  Endpoint
	cfg Config

	idle  chan *conn    // open connections not in use
	slots chan struct{} // one token per open connection, in use or idle

	mu     sync.Mutex // mu guards closed, and orders put against Close
	closed bool
}

// Dial parses rawURL (see ParseURL), opens one connection to the server,
// authenticates and selects the database if the URL says so, and checks
// the server answers PING. Errors name the server address and what
// failed.
func Dial(ctx context.Context, rawURL string, cfg Config) (*Client, error) {
	ep, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		ep:    ep,
		cfg:   cfg,
		idle:  make(chan *conn, cfg.PoolSize),
		slots: make(chan struct{}, cfg.PoolSize),
	}
	cn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	err = cn.simple(ctx, "PONG", "PING")
	c.put(cn)
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Endpoint returns the server the client talks to.
func (c *Client) Endpoint() Endpoint { return c.ep }

// Close closes the idle connections and makes later calls fail with
// ErrClosed; connections in use are closed when their call returns.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for {
		select {
		case cn := <-c.idle:
			cn.nc.Close()
			<-c.slots
		default:
			return nil
		}
	}
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// get returns a connection for the caller's exclusive use: an idle one,
// or a new one if fewer than PoolSize are open, or the first to come
// back.
func (c *Client) get(ctx context.Context) (*conn, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	select {
	case cn := <-c.idle:
		return cn, nil
	default:
	}
	select {
	case cn := <-c.idle:
		return cn, nil
	case c.slots <- struct{}{}:
		cn, err := c.dial(ctx)
		if err != nil {
			<-c.slots
			return nil, err
		}
		return cn, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("redisstore: redis %s: waiting for a connection: %w", c.ep.Addr, ctx.Err())
	}
}

// put hands cn back after a call: a connection whose stream may be out
// of step (marked broken by the call) or that outlived Close is closed
// and its slot freed.
func (c *Client) put(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn.broken || c.closed {
		cn.nc.Close()
		<-c.slots
		return
	}
	c.idle <- cn // never blocks: at most PoolSize connections exist
}

// dial opens, authenticates and selects the database of one connection.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	d := net.Dialer{Timeout: c.cfg.Timeout}
	nc, err := d.DialContext(ctx, "tcp", c.ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("redisstore: redis %s: dial: %w", c.ep.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	cn := newConn(nc, c.ep.Addr, c.cfg)
	if c.ep.Password != "" {
		if c.ep.Username != "" {
			err = cn.simple(ctx, "OK", "AUTH", c.ep.Username, c.ep.Password)
		} else {
			err = cn.simple(ctx, "OK", "AUTH", c.ep.Password)
		}
	}
	if err == nil && c.ep.DB != 0 {
		err = cn.simple(ctx, "OK", "SELECT", strconv.Itoa(c.ep.DB))
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return cn, nil
}

// Do sends one request/response command and returns its reply (not for
// commands that change the protocol, such as SUBSCRIBE, MONITOR or
// HELLO 3). An error reply comes back
// as a *ServerError; a reply larger than Config.MaxValue as an error
// wrapping ErrTooLarge. Do allocates the reply; the float paths of Store
// do not.
func (c *Client) Do(ctx context.Context, args ...string) (Reply, error) {
	if len(args) == 0 {
		panic("redisstore: Do without a command")
	}
	cn, err := c.get(ctx)
	if err != nil {
		return Reply{}, err
	}
	v, err := cn.do(ctx, args)
	c.put(cn)
	return v, err
}

// Ping checks the server answers.
func (c *Client) Ping(ctx context.Context) error {
	v, err := c.Do(ctx, "PING")
	if err != nil {
		return err
	}
	if v.Kind != KindSimple || string(v.Str) != "PONG" {
		return fmt.Errorf("redisstore: redis %s: PING: %w: got %s reply %q, want +PONG", c.ep.Addr, ErrProtocol, v.Kind, v.Str)
	}
	return nil
}

// Set stores value under key.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	cn, err := c.get(ctx)
	if err != nil {
		return err
	}
	err = cn.set(ctx, key, value, nil)
	c.put(cn)
	return err
}

// Get returns a fresh copy of the value under key, or an error wrapping
// ErrNotFound.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := c.Do(ctx, "GET", key)
	if err != nil {
		return nil, err
	}
	switch v.Kind {
	case KindBulk:
		return v.Str, nil
	case KindNil:
		return nil, fmt.Errorf("redisstore: redis %s: GET %q: %w", c.ep.Addr, key, ErrNotFound)
	}
	return nil, fmt.Errorf("redisstore: redis %s: GET: %w: got %s reply", c.ep.Addr, ErrProtocol, v.Kind)
}

// Del deletes keys and returns how many existed.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	args := make([]string, 0, 1+len(keys))
	args = append(append(args, "DEL"), keys...)
	v, err := c.Do(ctx, args...)
	if err != nil {
		return 0, err
	}
	if v.Kind != KindInt {
		return 0, fmt.Errorf("redisstore: redis %s: DEL: %w: got %s reply", c.ep.Addr, ErrProtocol, v.Kind)
	}
	return v.Int, nil
}

// deadlineConn sets a fresh deadline before every Read and Write: now
// plus the timeout, or the context's deadline if sooner.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	hard    time.Time // the current call's context deadline; zero if none
}

func (d *deadlineConn) deadline() time.Time {
	t := time.Now().Add(d.timeout)
	if !d.hard.IsZero() && d.hard.Before(t) {
		return d.hard
	}
	return t
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if err := d.Conn.SetReadDeadline(d.deadline()); err != nil {
		return 0, err
	}
	return d.Conn.Read(p)
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	if err := d.Conn.SetWriteDeadline(d.deadline()); err != nil {
		return 0, err
	}
	return d.Conn.Write(p)
}

// conn is one connection, used by one call at a time.
type conn struct {
	nc      *deadlineConn
	addr    string
	br      *bufio.Reader
	bw      *bufio.Writer
	rr      replyReader
	hdr     []byte // scratch for command headers
	scratch []byte // scratch for float conversion on big-endian hosts
	broken  bool   // the stream is out of step; close, do not reuse
}

func newConn(nc net.Conn, addr string, cfg Config) *conn {
	dc := &deadlineConn{Conn: nc, timeout: cfg.Timeout}
	cn := &conn{
		nc:   dc,
		addr: addr,
		br:   bufio.NewReaderSize(dc, bufSize),
		bw:   bufio.NewWriterSize(dc, bufSize),
		hdr:  make([]byte, 0, 256),
	}
	cn.rr = replyReader{br: cn.br, max: cfg.MaxValue}
	return cn
}

// begin arms the connection for one call under ctx; the returned func
// disarms it and must be called before the connection is handed back.
func (cn *conn) begin(ctx context.Context) (end func() bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cn.nc.hard, _ = ctx.Deadline()
	if ctx.Done() == nil {
		return nil, nil
	}
	// Cancellation mid-call: force the pending read or write to fail now.
	return context.AfterFunc(ctx, func() {
		cn.nc.Conn.SetDeadline(time.Unix(1, 0))
	}), nil
}

// finish disarms cancellation and turns an I/O failure into an error
// that names the server, the command and, if the context ended, why.
func (cn *conn) finish(ctx context.Context, stop func() bool, cmd string, err error) error {
	if stop != nil && !stop() {
		// The AfterFunc ran (or is running): the deadline was forced
		// into the past, so the stream cannot be trusted any more.
		cn.broken = true
	}
	if err == nil {
		return nil
	}
	var se *ServerError
	if errors.As(err, &se) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrWrongSize) {
		return err
	}
	cn.broken = true
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The socket deadline may be the context's, or forced by its
		// cancellation: say so, keeping both causes.
		cerr := ctx.Err()
		if cerr == nil && !cn.nc.hard.IsZero() && !time.Now().Before(cn.nc.hard) {
			cerr = context.DeadlineExceeded
		}
		if cerr != nil {
			return fmt.Errorf("redisstore: redis %s: %s: %w (%w)", cn.addr, cmd, cerr, err)
		}
	}
	return fmt.Errorf("redisstore: redis %s: %s: %w", cn.addr, cmd, err)
}

// writeCommand buffers a command made of string arguments.
func (cn *conn) writeCommand(args []string) error {
	b := appendArrayHeader(cn.hdr[:0], len(args))
	for _, a := range args {
		b = appendBulkHeader(b, len(a))
		if len(b)+len(a)+2 > cap(b) {
			if _, err := cn.bw.Write(b); err != nil {
				return err
			}
			if _, err := cn.bw.WriteString(a); err != nil {
				return err
			}
			b = append(b[:0], '\r', '\n')
			continue
		}
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	cn.hdr = b[:0]
	_, err := cn.bw.Write(b)
	return err
}

// do runs one command and reads its whole reply.
func (cn *conn) do(ctx context.Context, args []string) (Reply, error) {
	stop, err := cn.begin(ctx)
	if err != nil {
		return Reply{}, fmt.Errorf("redisstore: redis %s: %s: %w", cn.addr, args[0], err)
	}
	v, err := cn.roundTrip(args)
	return v, cn.finish(ctx, stop, args[0], err)
}

func (cn *conn) roundTrip(args []string) (Reply, error) {
	if err := cn.writeCommand(args); err != nil {
		return Reply{}, err
	}
	if err := cn.bw.Flush(); err != nil {
		return Reply{}, err
	}
	v, err := cn.rr.read()
	if err != nil {
		return Reply{}, err
	}
	if v.Kind == KindError {
		return Reply{}, &ServerError{Addr: cn.addr, Cmd: args[0], Msg: string(v.Str)}
	}
	return v, nil
}

// statusError is a reply other than the simple string a command expects.
type statusError struct{ got string }

func (e *statusError) Error() string { return "unexpected reply " + strconv.Quote(e.got) }

// simple runs a command whose answer is a simple string, and checks it
// is want.
func (cn *conn) simple(ctx context.Context, want string, args ...string) error {
	v, err := cn.do(ctx, args)
	if err != nil {
		return err
	}
	if v.Kind != KindSimple || string(v.Str) != want {
		return fmt.Errorf("redisstore: redis %s: %s: %w: %w", cn.addr, args[0], ErrProtocol, &statusError{got: string(v.Str)})
	}
	return nil
}
