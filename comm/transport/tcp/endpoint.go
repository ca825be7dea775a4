package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"dsgd/comm/transport"
	"dsgd/comm/wire"
)

// ErrClosed is returned by calls on an endpoint after its Close.
var ErrClosed = errors.New("tcp: endpoint closed")

const (
	// rawChunk is how much float32 or byte payload one write or read
	// moves before the deadline is pushed forward: Timeout bounds a
	// stall, not the time a large message takes.
	rawChunk = 8 << 20
	// f16Chunk is the size of the fp16 staging buffer of each direction
	// of each connection, in bytes of halves.
	f16Chunk = 256 << 10
)

// endpoint is one rank's Endpoint over one connection per peer.
type endpoint struct {
	rank, size int
	timeout    time.Duration
	maxFrame   uint64
	fp16       bool
	peers      []*peer // by rank; nil at our own rank
	closed     atomic.Bool
	done       chan struct{} // closed by Close; stops the watchers
	closeOnce  sync.Once
	stats      struct{ bs, br, ms, mr atomic.Int64 }
	links      [numLinkKinds]linkCounters
	grp        *hostGroup // every rank on this host: the collectives' group (group.go)
}

// peer is the connection to one other rank. Its send half is used by at
// most one goroutine at a time, and so is its receive half (the Endpoint
// contract).
type peer struct {
	ep   *endpoint
	rank int
	conn net.Conn
	// mu guards err, the first failure that left the stream unusable.
	mu  sync.Mutex
	err error
	tx  half
	rx  half
	// link, when set, carries the data through shared memory, and conn
	// only control (shm.go); kind says which.
	link *shmLink
	kind linkKind
}

// half is one direction of a connection: its frame header buffer, its
// sequence number, its fp16 staging buffer and its canceller.
type half struct {
	busy    atomic.Bool // a call is using this half
	hdr     [wire.HeaderSize]byte
	seq     uint64
	scratch []byte // fp16 staging, allocated on first use
	iov     [2][]byte
	bufs    net.Buffers
	cancel  canceller
	// stall is when the unfinished call on this half last moved bytes
	// (or began), in Unix nanoseconds; 0 once it finished
	// (transport.Staller).
	stall atomic.Int64
	// moved is when a call on this half last moved bytes, or finished a
	// message, in Unix nanoseconds; 0 before the first
	// (transport.Hearer).
	moved atomic.Int64
}

// begin marks the start of a call on h; ok records its end: a call that
// fails leaves its stall time behind.
func (h *half) begin() { h.stall.Store(time.Now().UnixNano()) }

// progress records that the call on h moved bytes.
func (h *half) progress() {
	now := time.Now().UnixNano()
	h.stall.Store(now)
	h.moved.Store(now)
}

func (h *half) ok(err error) {
	if err == nil {
		h.stall.Store(0)
		h.moved.Store(time.Now().UnixNano())
	}
}

// Heard implements transport.Hearer: when the last bytes (or, over
// shared memory, the last whole message) from peer came in.
func (e *endpoint) Heard(peer int) time.Time {
	if t := e.peer(peer).rx.moved.Load(); t != 0 {
		return time.Unix(0, t)
	}
	return time.Time{}
}

// Stalled implements transport.Staller.
func (e *endpoint) Stalled() (peer int, since time.Time, ok bool) {
	var oldest int64
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		for _, h := range []*half{&p.tx, &p.rx} {
			if t := h.stall.Load(); t != 0 && (oldest == 0 || t < oldest) {
				oldest, peer = t, p.rank
			}
		}
	}
	if oldest == 0 {
		return 0, time.Time{}, false
	}
	return peer, time.Unix(0, oldest), true
}

// newEndpoint makes rank's endpoint over conns, indexed by rank, with nil
// at rank itself. cfg must be validated.
func newEndpoint(cfg *Config, conns []net.Conn) *endpoint {
	e := &endpoint{
		rank: cfg.Rank, size: cfg.Size, timeout: cfg.Timeout,
		maxFrame: uint64(cfg.MaxFrame), fp16: cfg.Compress == CompressFP16,
		peers: make([]*peer, cfg.Size), done: make(chan struct{}),
	}
	for r, c := range conns {
		if r == cfg.Rank {
			continue
		}
		c.SetDeadline(time.Time{})
		p := &peer{ep: e, rank: r, conn: c}
		p.tx.cancel.init(c.SetWriteDeadline, e.done)
		p.rx.cancel.init(c.SetReadDeadline, e.done)
		e.peers[r] = p
	}
	return e
}

func (e *endpoint) Rank() int { return e.rank }
func (e *endpoint) Size() int { return e.size }

// Stats counts payload bytes on the wire, not the frame headers, and
// what the host group's collectives moved (group.go).
func (e *endpoint) Stats() transport.Stats {
	st := transport.Stats{BytesSent: e.stats.bs.Load(), BytesRecv: e.stats.br.Load(), MsgsSent: e.stats.ms.Load(), MsgsRecv: e.stats.mr.Load()}
	if e.grp != nil {
		sent, recv, _ := e.grp.g.Traffic()
		st.BytesSent += sent
		st.BytesRecv += recv
	}
	return st
}

// Close closes every connection: peers blocked on this rank get a
// PeerError, and this endpoint's own blocked calls return ErrClosed.
func (e *endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		for _, p := range e.peers {
			if p != nil {
				p.conn.Close()
			}
		}
		close(e.done)
		e.release()
	})
	return nil
}

// abortTimeout bounds how long Abort tries to reach each peer.
const abortTimeout = 2 * time.Second

// Abort sends reason to every peer as a control frame, best effort and
// for at most abortTimeout each, then closes the endpoint. A peer's
// receive from this rank then fails with a PeerError carrying the reason.
// It must not race with this endpoint's own Sends.
func (e *endpoint) Abort(reason error) error {
	e.Notify(reason)
	return e.Close()
}

// Notify sends reason to every peer as a control frame, as Abort does,
// best effort, but leaves the endpoint open: a peer's next receive from
// this rank fails with a PeerError carrying the reason, while this rank
// may still receive (transport.Notifier). It returns the peers it could
// not tell because a send to them stayed stuck (they take no data). It
// must not race with this endpoint's own Sends.
func (e *endpoint) Notify(reason error) (stuck []int) {
	if reason != nil && !e.closed.Load() {
		text := reason.Error()
		if len(text) > wire.MaxString {
			text = text[:wire.MaxString]
		}
		msg, err := wire.Reject{Reason: text}.AppendBinary(nil)
		if err == nil {
			// Every peer at once; a connection whose send is in
			// progress gets a moment to finish it (a send stuck on a
			// frozen peer does not, and that peer is skipped).
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, p := range e.peers {
				if p == nil {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for end := time.Now().Add(notifyWait); !p.tx.busy.CompareAndSwap(false, true); time.Sleep(5 * time.Millisecond) {
						if time.Now().After(end) {
							mu.Lock()
							stuck = append(stuck, p.rank)
							mu.Unlock()
							return
						}
					}
					ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
					p.send(ctx, wire.KindControl, 0, msg, nil) // best effort: the peer may be gone
					cancel()
					p.tx.busy.Store(false)
				}()
			}
			wg.Wait()
		}
	}
	slices.Sort(stuck)
	return stuck
}

// notifyWait is how long Notify waits for a send in progress on a
// connection before it skips that peer.
const notifyWait = time.Second

func (e *endpoint) peer(r int) *peer {
	transport.CheckPeer(e.rank, e.size, r)
	return e.peers[r]
}

// acquire marks h busy for one call. Two calls on one half at once break
// the Endpoint contract and would interleave frames on the wire: that
// programmer error panics.
func (e *endpoint) acquire(h *half, op string, peer int) {
	if !h.busy.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("tcp: rank %d: two concurrent %s calls with rank %d; the Endpoint contract allows one at a time per peer and direction", e.rank, op, peer))
	}
}

// floatBytes views a float32 slice as its bytes, without copying. The
// wire is little-endian; Connect refuses big-endian hosts.
func floatBytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

func (e *endpoint) Send(ctx context.Context, to int, tag uint32, buf []float32) (err error) {
	p := e.peer(to)
	e.acquire(&p.tx, "Send", to)
	defer p.tx.busy.Store(false)
	defer p.account(time.Now())
	p.tx.begin()
	defer func() { p.tx.ok(err) }()
	if p.link != nil {
		if e.fp16 {
			return p.shmSend(ctx, wire.KindFloat16, tag, nil, buf)
		}
		return p.shmSend(ctx, wire.KindFloat32, tag, floatBytes(buf), nil)
	}
	if e.fp16 {
		return p.send(ctx, wire.KindFloat16, tag, nil, buf)
	}
	return p.send(ctx, wire.KindFloat32, tag, floatBytes(buf), nil)
}

func (e *endpoint) SendBytes(ctx context.Context, to int, tag uint32, b []byte) (err error) {
	p := e.peer(to)
	e.acquire(&p.tx, "Send", to)
	defer p.tx.busy.Store(false)
	defer p.account(time.Now())
	p.tx.begin()
	defer func() { p.tx.ok(err) }()
	if p.link != nil {
		return p.shmSend(ctx, wire.KindBytes, tag, b, nil)
	}
	return p.send(ctx, wire.KindBytes, tag, b, nil)
}

func (e *endpoint) Recv(ctx context.Context, from int, tag uint32, buf []float32) (err error) {
	p := e.peer(from)
	e.acquire(&p.rx, "Recv", from)
	defer p.rx.busy.Store(false)
	defer p.account(time.Now())
	p.rx.begin()
	defer func() { p.rx.ok(err) }()
	var h wire.Header
	if p.link != nil {
		h, err = p.shmRecvHeader(ctx)
	} else {
		if err := p.rx.cancel.begin(ctx); err != nil {
			return err
		}
		defer p.rx.cancel.end()
		h, err = p.recvHeader(ctx)
	}
	if err != nil {
		return err
	}
	if bad := transport.Mismatch(false, tag, len(buf), h.Kind == wire.KindBytes, h.Tag, headerLen(h)); bad != nil {
		return p.fail(&transport.PeerError{Rank: from, Err: bad})
	}
	if p.link != nil {
		err = p.shmRecvPayload(ctx, h, floatBytes(buf), buf)
	} else if h.Kind == wire.KindFloat16 {
		err = p.recvF16(ctx, buf)
	} else {
		err = p.recvPayload(ctx, floatBytes(buf))
	}
	if err != nil {
		return err
	}
	e.stats.br.Add(int64(h.Len))
	e.stats.mr.Add(1)
	if p.link == nil {
		e.links[linkTCP].br.Add(int64(h.Len))
		e.links[linkTCP].mr.Add(1)
	}
	return nil
}

func (e *endpoint) RecvBytes(ctx context.Context, from int, tag uint32, max int) (_ []byte, err error) {
	p := e.peer(from)
	e.acquire(&p.rx, "Recv", from)
	defer p.rx.busy.Store(false)
	defer p.account(time.Now())
	p.rx.begin()
	defer func() { p.rx.ok(err) }()
	var h wire.Header
	if p.link != nil {
		h, err = p.shmRecvHeader(ctx)
	} else {
		if err := p.rx.cancel.begin(ctx); err != nil {
			return nil, err
		}
		defer p.rx.cancel.end()
		h, err = p.recvHeader(ctx)
	}
	if err != nil {
		return nil, err
	}
	if bad := transport.Mismatch(true, tag, max, h.Kind == wire.KindBytes, h.Tag, headerLen(h)); bad != nil {
		return nil, p.fail(&transport.PeerError{Rank: from, Err: bad})
	}
	// h.Len is at most max and MaxFrame: this allocation is bounded by
	// what the caller accepts.
	b := make([]byte, h.Len)
	if p.link != nil {
		err = p.shmRecvPayload(ctx, h, b, nil)
	} else {
		err = p.recvPayload(ctx, b)
	}
	if err != nil {
		return nil, err
	}
	e.stats.br.Add(int64(h.Len))
	e.stats.mr.Add(1)
	if p.link == nil {
		e.links[linkTCP].br.Add(int64(h.Len))
		e.links[linkTCP].mr.Add(1)
	}
	return b, nil
}

// usable returns the error that makes the stream unusable, if any.
func (p *peer) usable() error {
	if p.ep.closed.Load() {
		return ErrClosed
	}
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	if err != nil {
		var pe *transport.PeerError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("connection unusable after an earlier failure: %w", err)}
	}
	return nil
}

// fail records err as the reason the stream is unusable, closes the
// connection (so the peer's blocked calls fail too rather than wait) and
// returns err. After our own Close it returns ErrClosed instead.
func (p *peer) fail(err error) error {
	if p.ep.closed.Load() {
		return ErrClosed
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.conn.Close()
	if p.link != nil {
		p.link.interrupt() // wake the other direction's call
	}
	return err
}

// frameLen checks that the peer can take a frame and returns its payload
// length: the payload's, or two bytes per float sent as a half.
func (p *peer) frameLen(kind wire.Kind, payload []byte, f16 []float32) (int, error) {
	if err := p.usable(); err != nil {
		return 0, err
	}
	total := len(payload)
	if kind == wire.KindFloat16 {
		total = 2 * len(f16)
	}
	if uint64(total) > p.ep.maxFrame {
		return 0, fmt.Errorf("tcp: %d-byte message to rank %d exceeds Config.MaxFrame of %d bytes", total, p.rank, p.ep.maxFrame)
	}
	return total, nil
}

// send writes one frame: the header and payload, or the floats in f16
// converted to halves chunk by chunk.
func (p *peer) send(ctx context.Context, kind wire.Kind, tag uint32, payload []byte, f16 []float32) error {
	total, err := p.frameLen(kind, payload, f16)
	if err != nil {
		return err
	}
	tx := &p.tx
	if err := tx.cancel.begin(ctx); err != nil {
		return err
	}
	defer tx.cancel.end()
	wire.PutHeader(tx.hdr[:], wire.Header{Kind: kind, Tag: tag, Len: uint64(total), Seq: tx.seq})
	if kind == wire.KindFloat16 && tx.scratch == nil {
		tx.scratch = make([]byte, f16Chunk)
	}
	sent := 0 // payload bytes written
	for first := true; first || sent < total; first = false {
		var chunk []byte
		if kind == wire.KindFloat16 {
			i := sent / 2
			n := min(len(f16)-i, len(tx.scratch)/2)
			chunk = tx.scratch[:2*n]
			wire.EncodeF16(chunk, f16[i:i+n])
		} else {
			chunk = payload[sent : sent+min(total-sent, rawChunk)]
		}
		fromCtx, err := tx.cancel.arm(ctx, p.ep.timeout)
		if err != nil {
			return p.ioFailed(ctx, "send", err, fromCtx, !first, sent, total)
		}
		var n int64
		if first {
			tx.iov = [2][]byte{tx.hdr[:], chunk}
			tx.bufs = tx.iov[:]
			n, err = tx.bufs.WriteTo(p.conn)
			tx.iov = [2][]byte{} // retain nothing
			if n > 0 {
				sent += int(n) - min(int(n), wire.HeaderSize)
			}
		} else {
			var m int
			m, err = p.conn.Write(chunk)
			n = int64(m)
			sent += m
		}
		if err != nil {
			return p.ioFailed(ctx, "send", err, fromCtx, !first || n > 0, sent, total)
		}
		tx.progress()
	}
	tx.seq++
	p.ep.stats.bs.Add(int64(total))
	p.ep.stats.ms.Add(1)
	p.ep.links[linkTCP].bs.Add(int64(total))
	p.ep.links[linkTCP].ms.Add(1)
	return nil
}

// recvHeader reads and checks the next frame header from the peer. The
// caller has begun the receive half's canceller, and so for the payload
// functions below.
func (p *peer) recvHeader(ctx context.Context) (wire.Header, error) {
	if err := p.usable(); err != nil {
		return wire.Header{}, err
	}
	rx := &p.rx
	fromCtx, err := rx.cancel.arm(ctx, p.ep.timeout)
	if err != nil {
		return wire.Header{}, err
	}
	n, err := p.readFull(rx.hdr[:])
	if err != nil {
		return wire.Header{}, p.ioFailed(ctx, "receive", err, fromCtx, n > 0, n, wire.HeaderSize)
	}
	h, err := wire.ParseHeader(rx.hdr[:], p.ep.maxFrame)
	if errors.Is(err, wire.ErrTooLarge) {
		err = fmt.Errorf("%w (Config.MaxFrame)", err)
	}
	if err == nil && h.Kind == wire.KindControl {
		err = p.recvAbort(h)
	}
	if err == nil && h.Seq != rx.seq {
		err = fmt.Errorf("%w: sequence number %d, want %d (the stream lost its framing)", wire.ErrMalformed, h.Seq, rx.seq)
	}
	if err != nil {
		return wire.Header{}, p.fail(&transport.PeerError{Rank: p.rank, Err: err})
	}
	rx.seq++
	return h, nil
}

// readFull is io.ReadFull from the connection that records each read
// that brings bytes as the receive half's progress.
func (p *peer) readFull(b []byte) (int, error) {
	got := 0
	for got < len(b) {
		n, err := p.conn.Read(b[got:])
		if n > 0 {
			got += n
			p.rx.progress()
		}
		if err != nil {
			if err == io.EOF && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			return got, err
		}
	}
	return got, nil
}

// recvAbort reads the control frame with header h, which in the data
// stream may only be a peer's abort (a Reject with its reason), and
// returns the error to report. It ends the call's watch of its ctx.
func (p *peer) recvAbort(h wire.Header) error {
	if h.Len > wire.MaxString+16 {
		return fmt.Errorf("%w: control frame of %d bytes in the data stream", wire.ErrMalformed, h.Len)
	}
	// The peer wrote the frame whole, and its header is in: the reason
	// is read even when the call's ctx ends now. A peer's note and this
	// rank's own timeout often come at the same moment (both wait on a
	// third rank), and a frame cut short would lose the note and the
	// connection with it.
	p.rx.cancel.end()
	b := make([]byte, h.Len)
	if err := p.recvPayload(context.Background(), b); err != nil {
		return err
	}
	if c, err := wire.DecodeControl(b); err == nil {
		if r, ok := c.(wire.Reject); ok {
			return fmt.Errorf("aborted: %s", r.Reason)
		}
	}
	return fmt.Errorf("%w: control frame in the data stream", wire.ErrMalformed)
}

// recvPayload reads len(b) payload bytes into b.
func (p *peer) recvPayload(ctx context.Context, b []byte) error {
	rx := &p.rx
	for got := 0; got < len(b); {
		fromCtx, err := rx.cancel.arm(ctx, p.ep.timeout)
		if err != nil {
			return p.ioFailed(ctx, "receive", err, fromCtx, true, got, len(b))
		}
		n, err := p.readFull(b[got : got+min(len(b)-got, rawChunk)])
		got += n
		if err != nil {
			return p.ioFailed(ctx, "receive", err, fromCtx, true, got, len(b))
		}
	}
	return nil
}

// recvF16 reads 2*len(dst) bytes of halves, chunk by chunk through the
// staging buffer, into dst.
func (p *peer) recvF16(ctx context.Context, dst []float32) error {
	rx := &p.rx
	if rx.scratch == nil {
		rx.scratch = make([]byte, f16Chunk)
	}
	for i := 0; i < len(dst); {
		n := min(len(dst)-i, len(rx.scratch)/2)
		if err := p.recvPayload(ctx, rx.scratch[:2*n]); err != nil {
			return err
		}
		wire.DecodeF16(dst[i:i+n], rx.scratch[:2*n])
		i += n
	}
	return nil
}

// ioFailed turns the error of a read or write of a frame into what the
// caller sees. midFrame says whether part of the frame had crossed: then
// the stream has lost its framing and is closed. done and total count
// payload bytes, for the message.
func (p *peer) ioFailed(ctx context.Context, op string, err error, fromCtx, midFrame bool, done, total int) error {
	if err := p.usable(); err != nil {
		// Our Close, or a failure of the other direction that closed
		// the connection under this call.
		return err
	}
	var out error
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
	switch {
	case errors.Is(err, errCancelled) || timeout && ctx.Err() != nil:
		out = ctx.Err()
	case timeout && fromCtx:
		out = context.DeadlineExceeded
	case timeout:
		out = &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("%s timed out: no progress for %v (Config.Timeout)", op, p.ep.timeout)}
	case errors.Is(err, io.EOF) && !midFrame:
		out = &transport.PeerError{Rank: p.rank, Err: errors.New("connection closed by the peer")}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		out = &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("connection closed mid-message, after %d of %d payload bytes", done, total)}
	case errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed):
		out = &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("connection closed: %v", err)}
	default:
		out = &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("%s failed: %v", op, err)}
	}
	if midFrame || !timeout && !errors.Is(err, errCancelled) {
		// Part of a frame crossed, or the connection is broken: nothing
		// more can be read or written on it.
		var pe *transport.PeerError
		if !errors.As(out, &pe) {
			pe = &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("%s interrupted mid-message: %w", op, out)}
		}
		p.fail(pe)
	}
	return out
}

// errCancelled is what arm reports when the call's ctx is done.
var errCancelled = errors.New("cancelled")

// canceller interrupts the blocking I/O of one direction of a connection
// when the ctx of the call in progress is done, by moving the deadline of
// that direction into the past. A watcher goroutine per direction waits on
// the ctx, so a call allocates nothing; a call whose ctx can never be done
// does not involve it.
type canceller struct {
	setDeadline func(time.Time) error
	start       chan context.Context
	stop        chan struct{}
	done        <-chan struct{}
	active      bool // a watch is in progress; used by the calling goroutine only
	// mu guards fired: the ctx of the call in progress is done and the
	// deadline has been moved into the past.
	mu    sync.Mutex
	fired bool
}

func (c *canceller) init(setDeadline func(time.Time) error, done <-chan struct{}) {
	c.setDeadline = setDeadline
	c.start = make(chan context.Context)
	c.stop = make(chan struct{})
	c.done = done
	go c.watch()
}

func (c *canceller) watch() {
	for {
		var ctx context.Context
		select {
		case ctx = <-c.start:
		case <-c.done:
			return
		}
		select {
		case <-ctx.Done():
			c.mu.Lock()
			c.fired = true
			c.setDeadline(time.Unix(1, 0))
			c.mu.Unlock()
			<-c.stop
		case <-c.stop:
		}
	}
}

// begin starts watching ctx for the call in progress, or returns ctx's
// error if it is already done. Nested begins (a payload read inside a
// Recv) are no-ops.
func (c *canceller) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.active || ctx.Done() == nil {
		return nil
	}
	select {
	case c.start <- ctx:
		c.active = true
		return nil
	case <-c.done:
		return ErrClosed
	}
}

// end stops watching; every begin is paired with an end.
func (c *canceller) end() {
	if !c.active {
		return
	}
	c.stop <- struct{}{}
	c.active = false
	c.mu.Lock()
	c.fired = false
	c.mu.Unlock()
}

// arm sets the deadline of the next read or write: timeout from now, or
// ctx's deadline if earlier (fromCtx). It returns errCancelled once ctx is
// done.
func (c *canceller) arm(ctx context.Context, timeout time.Duration) (fromCtx bool, err error) {
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d, fromCtx = cd, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired || ctx.Err() != nil {
		return fromCtx, errCancelled
	}
	c.setDeadline(d)
	return fromCtx, nil
}

// headerLen is a message's length as transport.Mismatch counts it: its
// values (of whatever wire precision), or its bytes.
func headerLen(h wire.Header) uint64 { return h.Len / uint64(h.Kind.ElemSize()) }
