package smb

import (
	"context"
	"fmt"
	"math"
	"time"

	"dsgd/comm/rpc"
)

// The operations of the protocol: the rpc op codes. Every request names
// its buffer in Text; the Ints say the rest.
const (
	// opCreate: Text key, Ints[0] n → Ints[0] created (0 or 1).
	opCreate uint32 = iota + 1
	// opAttach: Text key → Ints[0] n.
	opAttach
	// opRead: Text key, Ints[0] offset, Ints[1] count, Ints[2:4] the
	// whole read this one is a part of (offset, count) → Data.
	opRead
	// opWrite: Text key, Ints[0] offset, Data, Ints[2:4] the whole write.
	opWrite
	// opAccumulate: Text dst+src, Ints[0] len(dst).
	opAccumulate
	// opVersion, opNotify: Text key → Ints[0] version.
	opVersion
	opNotify
	// opWait: Text key, Ints[0] after, Ints[1] the longest wait in
	// milliseconds → Ints[0] version (after if the wait timed out).
	opWait
	// opCreateControl: Ints[0] n → Ints[0] created.
	opCreateControl
	// opReadControl: Ints[0] offset, Ints[1] count → Ints[0] version,
	// Data the slots, each as two float32 bit patterns (low, high half).
	opReadControl
	// opWriteControl: Ints[0] offset, Data the slots as above.
	opWriteControl
	// opWaitControl: Ints[0] after, Ints[1] the longest wait in ms →
	// Ints[0] version.
	opWaitControl
	// opFree: Text key.
	opFree
	// opClaim: Ints[0] rank, Ints[1] the job's worker count → Ints[0]
	// how often to renew, in ms (claim.go).
	opClaim
)

// maxWaitSlice bounds one Wait or WaitControl request on the server; a
// client waiting longer sends another.
const maxWaitSlice = 10 * time.Second

// Config configures a server (Listen, Serve) and a client (Dial). Both
// ends of a connection must agree on Token and should on MaxFrame.
type Config struct {
	// Token is the shared secret a client presents and the server demands.
	Token string
	// Timeout bounds every read and write of a message (rpc.Config); 0
	// means rpc.DefaultTimeout.
	Timeout time.Duration
	// MaxFrame is the largest message payload in bytes; 0 means
	// rpc.DefaultMaxFrame. The client splits longer reads and writes into
	// several requests.
	MaxFrame int
	// MaxConns (client) is the number of connections a Client opens at
	// most, so that concurrent calls (a push beside an SSP wait) do not
	// queue behind each other. 0 means 4.
	MaxConns int
	// WaitSlice (client) is the longest a single Wait request blocks on
	// the server before the client asks again; 0 means 5s, and more
	// than 10s is cut to 10s.
	WaitSlice time.Duration
	// ErrorLog (server), when set, receives each error that closed a
	// connection.
	ErrorLog func(error)
	// Workers (server) is the job's worker count: a rank claimed with
	// another count is refused (claim.go). 0 means the first claim's.
	Workers int
	// Run (client) is the worker's run settings (runcfg.Fields' String),
	// sent with its rank claims: the first claim's settings are the job's,
	// and a worker with another value of one is refused, naming it.
	Run string
	// NoShm (client) never maps a server's buffers: every read and write
	// crosses the connection, even from the server's own host (shm.go).
	NoShm bool
}

func (c Config) rpc() rpc.Config {
	return rpc.Config{Token: c.Token, Timeout: c.Timeout, MaxFrame: c.MaxFrame, ErrorLog: c.ErrorLog}
}

// Server serves a Store over TCP.
type Server struct {
	srv    *rpc.Server
	store  *Store
	claims *claims
}

// Listen listens on addr (an empty host means the loopback 127.0.0.1,
// port 0 a free port) and returns a server of store; call Serve.
func Listen(addr string, store *Store, cfg Config) (*Server, error) {
	s := &Server{store: store, claims: newClaims(cfg)}
	srv, err := rpc.Listen(addr, cfg.rpc(), s.dispatch)
	if err != nil {
		return nil, fmt.Errorf("smb: %w", err)
	}
	s.srv = srv
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.srv.Addr() }

// Serve serves until ctx is done or Close is called; see rpc.Server.Serve.
func (s *Server) Serve(ctx context.Context) error { return s.srv.Serve(ctx) }

// Close stops the server and closes every connection.
func (s *Server) Close() error { return s.srv.Close() }

// Serve listens on addr and serves store until ctx is done.
func Serve(ctx context.Context, addr string, store *Store, cfg Config) error {
	s, err := Listen(addr, store, cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// intArg converts a request integer to an int, saturating, so that a
// hostile value cannot wrap into range.
func intArg(v int64) int {
	if int64(int(v)) == v {
		return int(v)
	}
	if v < 0 {
		return math.MinInt
	}
	return math.MaxInt
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// handle serves one request against the store. Errors reach the client
// as their message, from which it recovers the sentinel (remoteError).
func (s *Server) handle(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	st := s.store
	key := req.Text
	switch req.Op {
	case opCreate:
		created, err := st.Create(ctx, key, intArg(req.Ints[0]))
		resp.Ints[0] = boolInt(created)
		return err
	case opAttach:
		n, err := st.Attach(ctx, key)
		resp.Ints[0] = int64(n)
		return err
	case opFree:
		return st.Free(ctx, key)
	case opClaim:
		resp.Ints[0] = max(s.claims.ping.Milliseconds(), 1)
		return s.claims.claim(ctx, intArg(req.Ints[0]), intArg(req.Ints[1]), key)
	case opRead, opWrite:
		return s.readWrite(ctx, req, resp)
	case opAccumulate:
		n := req.Ints[0]
		if n < 0 || n > int64(len(key)) {
			return fmt.Errorf("smb: %w: accumulate request with a %d-byte destination key in %d bytes of keys", ErrInvalid, n, len(key))
		}
		return st.Accumulate(ctx, key[:n], key[n:])
	case opVersion:
		v, err := st.Version(ctx, key)
		resp.Ints[0] = int64(v)
		return err
	case opNotify:
		v, err := st.Notify(ctx, key)
		resp.Ints[0] = int64(v)
		return err
	case opWait, opWaitControl:
		after := uint64(req.Ints[0])
		d := min(time.Duration(max(req.Ints[1], 0))*time.Millisecond, maxWaitSlice)
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var v uint64
		var err error
		if req.Op == opWait {
			v, err = st.Wait(wctx, key, after)
		} else {
			v, err = st.WaitControl(wctx, after)
		}
		if err != nil && wctx.Err() != nil && ctx.Err() == nil {
			err = nil // the slice ended: answer "unchanged"
		}
		resp.Ints[0] = int64(v)
		return err
	case opCreateControl:
		created, err := st.CreateControl(ctx, intArg(req.Ints[0]))
		resp.Ints[0] = boolInt(created)
		return err
	case opReadControl:
		off, n := intArg(req.Ints[0]), intArg(req.Ints[1])
		c, err := st.control()
		if err != nil {
			return err
		}
		if !inBounds(off, n, len(c.slots)) {
			return ctlBounds("read", off, n, len(c.slots))
		}
		data := resp.Buffer(2 * n)
		c.mu.Lock()
		for i, v := range c.slots[off : off+n] {
			data[2*i], data[2*i+1] = slotHalves(v)
		}
		resp.Ints[0] = int64(c.ver.load())
		c.mu.Unlock()
		resp.Data = data
		return nil
	case opWriteControl:
		off, data := intArg(req.Ints[0]), req.Data
		if len(data)%2 != 0 {
			return fmt.Errorf("smb: %w: control write of %d halves, not whole slots", ErrInvalid, len(data))
		}
		c, err := st.control()
		if err != nil {
			return err
		}
		n := len(data) / 2
		if !inBounds(off, n, len(c.slots)) {
			return ctlBounds("write", off, n, len(c.slots))
		}
		c.mu.Lock()
		for i := range n {
			c.slots[off+i] = slotOf(data[2*i], data[2*i+1])
		}
		c.ver.bump()
		c.mu.Unlock()
		return nil
	}
	return fmt.Errorf("smb: %w: unknown operation %d", ErrInvalid, req.Op)
}

// slotHalves carries a control slot as two float32 bit patterns (low
// half first); slotOf is its inverse. Only bits are moved, never
// arithmetic, so every pattern survives.
func slotHalves(v int64) (lo, hi float32) {
	return math.Float32frombits(uint32(v)), math.Float32frombits(uint32(uint64(v) >> 32))
}

func slotOf(lo, hi float32) int64 {
	return int64(uint64(math.Float32bits(lo)) | uint64(math.Float32bits(hi))<<32)
}

// readWrite serves opRead and opWrite: the whole operation's bounds are
// checked first, so a write split into parts writes nothing when any
// part would fall outside the buffer.
func (s *Server) readWrite(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	key := req.Text
	off := intArg(req.Ints[0])
	wholeOff, wholeN := intArg(req.Ints[2]), intArg(req.Ints[3])
	b, err := s.store.get(key)
	if err != nil {
		return err
	}
	op, n := "read", intArg(req.Ints[1])
	if req.Op == opWrite {
		op, n = "write", len(req.Data)
	}
	if !inBounds(wholeOff, wholeN, len(b.data)) {
		return boundsErr(op, key, wholeOff, wholeN, len(b.data))
	}
	if !inBounds(off, n, len(b.data)) {
		return boundsErr(op, key, off, n, len(b.data))
	}
	if req.Op == opWrite {
		return s.store.Write(ctx, key, off, req.Data)
	}
	dst := resp.Buffer(n)
	if err := s.store.Read(ctx, key, off, dst); err != nil {
		return err
	}
	resp.Data = dst
	return nil
}
