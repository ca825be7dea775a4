package smb

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"dsgd/comm/rpc"
	"dsgd/comm/shm"
)

// Shared memory, as ShmCaffe's SMB serves its buffers (III.B, Fig. 2):
// a store made by NewShmStore keeps every buffer in a shared-memory
// segment of its own, created under a directory (/dev/shm) and unlinked
// at once, so that nothing is left in the file system whoever dies. A
// client on the server's own host (the same shm.HostID) asks for a
// buffer's segment (opShmMap: the server's /proc/PID/fd path, the size
// and a generation number), maps it, and from then on reads and writes
// the buffer by copying to or from the mapping directly: one memory
// copy, no bytes over the connection. The connection keeps the control:
// each read or write is bracketed by opShmBegin, which takes the
// buffer's lock on the server (shared for a read, exclusive for a write)
// and checks the bounds and the generation, and opShmEnd, which releases
// it (and, after a write, advances the version and wakes the waiters).
// So the Store's rules hold across processes: a write or accumulate
// excludes every other operation on its buffer. A lease whose client
// dies is released when its connection ends (rpc.Conn.OnClose), an idle
// one when the rpc server's idle timeout closes it.
//
// Accumulate, Version, Wait and the control area go over the connection
// as before; so does everything from clients on other hosts, and from
// any client with Config.NoShm or whose mapping fails (another user, a
// PID namespace that cannot see the server's /proc).

// The shared-memory operations (rpc op codes after the others).
const (
	// opShmMap: Text key → Text the segment's /proc path, Ints[0] the
	// buffer's values, Ints[1] its generation; Floats unused. An error
	// when the store does not share memory.
	opShmMap uint32 = 100 + iota
	// opShmBegin: Text key, Ints[0] 1 for a write, Ints[1] offset,
	// Ints[2] count, Ints[3] generation → the lease is held.
	opShmBegin
	// opShmEnd: Text key → the lease is released.
	opShmEnd
	// opShmHost: → Text the server's shm.HostID ("" when it shares no
	// memory).
	opShmHost
)

// errStale says a client's mapping is not the buffer's current segment
// (freed and created again).
var errStale = errors.New("stale shared-memory mapping")

// shmAlloc is a sharing store's allocator and lease table.
type shmAlloc struct {
	dir  string
	host string
	// mu guards gen, leases and hooked.
	mu     sync.Mutex
	gen    uint64
	leases map[*rpc.Conn]*lease
	hooked map[*rpc.Conn]bool // conns whose close releases their lease
}

// lease is a buffer lock a client holds between opShmBegin and opShmEnd.
type lease struct {
	b     *buffer
	write bool
}

// shmMem is where a sharing store's buffer lies: its segment and
// generation. Zero for a heap buffer.
type shmMem struct {
	seg *shm.Segment
	gen uint64
}

// NewShmStore returns an empty store, limited as NewStore's, whose
// buffers lie in shared memory under dir ("" for /dev/shm), so that a
// Server of it serves clients on its host through shared memory. A
// buffer that cannot be created there (a full /dev/shm) is an error
// wrapping ErrLimit that names the path and the cause.
func NewShmStore(maxBytes int64, dir string) *Store {
	s := NewStore(maxBytes)
	if dir == "" {
		dir = shm.DefaultDir
	}
	shm.Sweep(dir) // a dead server's leftovers, best effort
	s.shm = &shmAlloc{dir: dir, host: shm.HostID(""), leases: map[*rpc.Conn]*lease{}, hooked: map[*rpc.Conn]bool{}}
	return s
}

// newBuffer allocates the buffer of n values under key: on the heap, or
// in a segment of its own for a sharing store.
func (s *Store) newBuffer(key string, n int) (*buffer, error) {
	if s.shm == nil {
		return &buffer{key: key, data: make([]float32, n)}, nil
	}
	seg, err := shm.Create(s.shm.dir, "smb", 4*n)
	if err != nil {
		return nil, fmt.Errorf("smb: %w: create %q with %d values: %v", ErrLimit, key, n, err)
	}
	seg.Unlink() // clients open it through /proc: nothing stays behind
	s.shm.mu.Lock()
	s.shm.gen++
	gen := s.shm.gen
	s.shm.mu.Unlock()
	b := &buffer{key: key, data: floats(seg.Data), mem: shmMem{seg: seg, gen: gen}}
	// The mapping goes when the buffer does: after Free, once no
	// operation still holds it.
	runtime.AddCleanup(b, func(seg *shm.Segment) { seg.Close() }, seg)
	return b, nil
}

// floats views mapped memory as float32 values (little-endian hosts;
// the mapping is page aligned).
func floats(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// dispatch serves the shared-memory operations and hands the others to
// handle.
func (s *Server) dispatch(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	switch req.Op {
	case opShmHost:
		if s.store.shm != nil {
			resp.Text = s.store.shm.host
		}
		return nil
	case opShmMap, opShmBegin, opShmEnd:
		return s.store.serveShm(ctx, req, resp)
	}
	return s.handle(ctx, req, resp)
}

func (s *Store) serveShm(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	a := s.shm
	if a == nil {
		return fmt.Errorf("smb: %w: this server does not share memory", ErrInvalid)
	}
	key := req.Text
	conn := rpc.ConnFrom(ctx)
	if conn == nil {
		return fmt.Errorf("smb: %w: shared-memory operation outside a connection", ErrInvalid)
	}
	switch req.Op {
	case opShmMap:
		b, err := s.get(key)
		if err != nil {
			return err
		}
		path := b.mem.seg.ProcPath()
		if path == "" {
			return unknownKey(key) // freed under us
		}
		resp.Text, resp.Ints[0], resp.Ints[1] = path, int64(len(b.data)), int64(b.mem.gen)
		return nil
	case opShmBegin:
		write, off, n, gen := req.Ints[0] == 1, intArg(req.Ints[1]), intArg(req.Ints[2]), uint64(req.Ints[3])
		b, err := s.get(key)
		if err != nil {
			return err
		}
		op := "read"
		if write {
			op = "write"
		}
		if b.mem.gen != gen {
			return fmt.Errorf("smb: %w of buffer %q", errStale, key)
		}
		if !inBounds(off, n, len(b.data)) {
			return boundsErr(op, key, off, n, len(b.data))
		}
		a.mu.Lock()
		_, held := a.leases[conn]
		a.mu.Unlock()
		if held {
			return fmt.Errorf("smb: %w: a %s of %q begun while this connection holds a lease", ErrInvalid, op, key)
		}
		if write {
			b.mu.Lock()
		} else {
			b.mu.RLock()
		}
		a.mu.Lock()
		a.leases[conn] = &lease{b: b, write: write}
		first := !a.hooked[conn]
		a.hooked[conn] = true
		a.mu.Unlock()
		if first {
			conn.OnClose(func() {
				a.release(conn)
				a.mu.Lock()
				delete(a.hooked, conn)
				a.mu.Unlock()
			})
		}
		return nil
	case opShmEnd:
		a.mu.Lock()
		l := a.leases[conn]
		a.mu.Unlock()
		if l == nil || l.b.key != key {
			return fmt.Errorf("smb: %w: end of a shared-memory access to %q that this connection did not begin", ErrInvalid, key)
		}
		a.release(conn)
		return nil
	}
	return nil
}

// release gives up conn's lease, if any: after a write the version
// advances (a client that died mid-write may have written part).
func (a *shmAlloc) release(conn *rpc.Conn) {
	a.mu.Lock()
	l := a.leases[conn]
	delete(a.leases, conn)
	a.mu.Unlock()
	if l == nil {
		return
	}
	if l.write {
		l.b.mu.Unlock()
		l.b.ver.bump()
	} else {
		l.b.mu.RUnlock()
	}
}

// ---- client side ----

// shmClient is a Client's shared-memory state.
type shmClient struct {
	// mu guards the fields below.
	mu     sync.Mutex
	state  int // 0 unknown, 1 on (same host), -1 off
	maps   map[string]*mapping
	closed bool
}

// mapping is a buffer's segment mapped in the client.
type mapping struct {
	seg  *shm.Segment
	data []float32
	gen  uint64
	refs int  // calls using it
	dead bool // unmap when refs drops to 0
}

// shmOn reports whether the client may use shared memory with its
// server, asking the server's host identity the first time.
func (cl *Client) shmOn(ctx context.Context) bool {
	if cl.cfg.NoShm {
		return false
	}
	sc := &cl.shmc
	sc.mu.Lock()
	st := sc.state
	sc.mu.Unlock()
	if st != 0 {
		return st > 0
	}
	var host string
	err := cl.do(ctx, func(c *conn) error {
		err := c.call(ctx, opShmHost, "", [rpc.NumInts]int64{}, nil)
		host = c.resp.Text
		return err
	})
	if err != nil {
		return false // try again next time: the call itself failed
	}
	on := host != "" && host == shm.HostID("")
	sc.mu.Lock()
	if sc.state == 0 {
		sc.state = -1
		if on {
			sc.state = 1
		}
	}
	sc.mu.Unlock()
	return on
}

// acquire returns key's mapping, mapping it first if needed, with a
// reference the caller gives back with put; nil when the buffer cannot
// be mapped (then the caller goes over the connection).
func (cl *Client) acquire(ctx context.Context, key string) (*mapping, error) {
	sc := &cl.shmc
	sc.mu.Lock()
	if m := sc.maps[key]; m != nil && !sc.closed {
		m.refs++
		sc.mu.Unlock()
		return m, nil
	}
	sc.mu.Unlock()
	var path string
	var n int
	var gen uint64
	err := cl.do(ctx, func(c *conn) error {
		err := c.call(ctx, opShmMap, key, [rpc.NumInts]int64{}, nil)
		path, n, gen = c.resp.Text, int(c.resp.Ints[0]), uint64(c.resp.Ints[1])
		return err
	})
	if err != nil {
		return nil, err // unknown key and the like: the caller's error
	}
	seg, err := shm.OpenProc(path, 4*n)
	if err != nil {
		sc.mu.Lock()
		sc.state = -1 // cannot see the server's memory: never again
		sc.mu.Unlock()
		return nil, nil
	}
	m := &mapping{seg: seg, data: floats(seg.Data), gen: gen, refs: 1}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		m.dead = true
		return m, nil
	}
	if old := sc.maps[key]; old != nil {
		sc.retire(old)
	}
	if sc.maps == nil {
		sc.maps = map[string]*mapping{}
	}
	sc.maps[key] = m
	return m, nil
}

// retire drops m from use: unmapped now or by its last user. mu held.
func (sc *shmClient) retire(m *mapping) {
	m.dead = true
	if m.refs == 0 {
		m.seg.Close()
	}
}

// unref gives back a reference from acquire; stale drops the mapping
// (its buffer was freed and made again).
func (cl *Client) unref(m *mapping, key string, stale bool) {
	sc := &cl.shmc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	m.refs--
	if stale && sc.maps[key] == m {
		delete(sc.maps, key)
		m.dead = true
	}
	if m.dead && m.refs == 0 {
		m.seg.Close()
	}
}

// closeShm unmaps every mapping no call uses; the others go with their
// calls.
func (cl *Client) closeShm() {
	sc := &cl.shmc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.closed = true
	for k, m := range sc.maps {
		sc.retire(m)
		delete(sc.maps, k)
	}
}

// shmAccess reads (write false) or writes buffer key's values [off,
// off+len(v)) through shared memory. done false means it could not (no
// shared memory with this server, or the buffer cannot be mapped): the
// caller goes over the connection.
func (cl *Client) shmAccess(ctx context.Context, key string, off int, v []float32, write bool) (done bool, err error) {
	if !cl.shmOn(ctx) {
		return false, nil
	}
	for attempt := 0; attempt < 2; attempt++ {
		m, err := cl.acquire(ctx, key)
		if err != nil || m == nil {
			return err != nil, err
		}
		err = cl.do(ctx, func(c *conn) error {
			mode := int64(0)
			if write {
				mode = 1
			}
			if err := c.call(ctx, opShmBegin, key, [rpc.NumInts]int64{mode, int64(off), int64(len(v)), int64(m.gen)}, nil); err != nil {
				return err
			}
			// Bounds checked by the server against this generation's
			// size, which is the mapping's; checked here too, so that
			// a confused server cannot make this process fault.
			if !inBounds(off, len(v), len(m.data)) {
				c.call(ctx, opShmEnd, key, [rpc.NumInts]int64{}, nil)
				return fmt.Errorf("smb: server %s granted %d values at offset %d of %q, whose mapping holds %d", cl.addr, len(v), off, key, len(m.data))
			}
			if write {
				copy(m.data[off:off+len(v)], v)
			} else {
				copy(v, m.data[off:off+len(v)])
			}
			return c.call(ctx, opShmEnd, key, [rpc.NumInts]int64{}, nil)
		})
		stale := err != nil && isStale(err)
		cl.unref(m, key, stale)
		if !stale {
			return true, err
		}
	}
	return false, nil // freed and made again twice in a row: use the connection
}

func isStale(err error) bool {
	var re *rpc.RemoteError
	return errors.As(err, &re) && strings.Contains(re.Msg, errStale.Error())
}
