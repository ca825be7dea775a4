//go:build !purego

package mpi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"dsgd/comm/transport"
)

// A message is two MPI messages on the pair's stream: a header (MPI_BYTE:
// tag, kind, length) and, unless empty, the payload (MPI_FLOAT or
// MPI_BYTE) straight from and into the caller's slice. MPI keeps messages
// between two ranks on one communicator and tag in order, which gives the
// per-pair FIFO the Endpoint contract asks for; the receiver reads the
// header first and refuses a message of another tag, kind or length
// before any payload lands in its buffer.
const (
	hdrLen = 16
	// hdrCap is the receive buffer of a header: a close notice carries
	// its reason after the header.
	hdrCap = 512

	kindFloats = 1
	kindBytes  = 2
	kindClose  = 3
)

// errClosed is reported by calls on a closed endpoint.
var errClosed = errors.New("endpoint closed")

// Endpoint is one rank's transport.Endpoint over MPI point-to-point
// messages. Made by World (one rank per MPI process) or NewLocalGroup
// (several ranks in this process, for tests).
type Endpoint struct {
	comm       *comm
	rank, size int
	proc       []int // the MPI rank in comm of each of our ranks
	local      bool  // ranks share processes: the MPI tag names the pair

	sendMu             []sync.Mutex // held while a message's parts are posted
	sending, receiving []atomic.Bool
	sendHdr            [][hdrLen]byte
	recvHdr            [][hdrCap]byte
	gone               []atomic.Pointer[transport.PeerError] // a peer's close notice, once seen

	closed    chan struct{}
	closeOnce sync.Once

	stats struct{ bs, br, ms, mr atomic.Int64 }
}

func newEndpoint(c *comm, rank, size int, proc []int, local bool) *Endpoint {
	return &Endpoint{comm: c, rank: rank, size: size, proc: proc, local: local,
		sendMu: make([]sync.Mutex, size), sending: make([]atomic.Bool, size), receiving: make([]atomic.Bool, size),
		sendHdr: make([][hdrLen]byte, size), recvHdr: make([][hdrCap]byte, size),
		gone: make([]atomic.Pointer[transport.PeerError], size), closed: make(chan struct{})}
}

// World joins MPI_COMM_WORLD: the rank and size are MPI's. Every process
// of the job must call it (it duplicates the communicator, a collective
// call), after Init succeeds.
func World() (*Endpoint, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	rank, size, err := worldShape()
	if err != nil {
		return nil, err
	}
	c, err := dupComm(false)
	if err != nil {
		return nil, err
	}
	c.refs = 1
	proc := make([]int, size)
	for i := range proc {
		proc[i] = i
	}
	return newEndpoint(c, rank, size, proc, false), nil
}

// NewLocalGroup returns size endpoints in this process that talk through
// MPI (a fresh duplicate of MPI_COMM_SELF, so every message goes through
// MPI's matching and progress): the conformance suite's group, which needs
// every rank in one process. The MPI tag names the pair.
func NewLocalGroup(size int) ([]transport.Endpoint, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	c, err := dupComm(true)
	if err != nil {
		return nil, err
	}
	if size*size > c.tagUB {
		c.refs = 1
		c.release()
		return nil, fmt.Errorf("mpi: a local group of %d needs tags up to %d; this MPI allows %d", size, size*size-1, c.tagUB)
	}
	c.refs = size
	eps := make([]transport.Endpoint, size)
	for r := range eps {
		eps[r] = newEndpoint(c, r, size, make([]int, size), true)
	}
	return eps, nil
}

// Rank is this endpoint's rank.
func (e *Endpoint) Rank() int { return e.rank }

// Size is the number of ranks.
func (e *Endpoint) Size() int { return e.size }

// Stats reports the point-to-point traffic so far (payload bytes; MPI's
// own collectives are not counted).
func (e *Endpoint) Stats() transport.Stats {
	return transport.Stats{BytesSent: e.stats.bs.Load(), BytesRecv: e.stats.br.Load(), MsgsSent: e.stats.ms.Load(), MsgsRecv: e.stats.mr.Load()}
}

// tag is the MPI tag of the stream from rank from to rank to.
func (e *Endpoint) tag(from, to int) int {
	if e.local {
		return from*e.size + to
	}
	return 0
}

func acquire(busy *atomic.Bool, rank int, op string, peer int) {
	if !busy.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("comm/transport/mpi: rank %d: two concurrent %s calls with rank %d; the Endpoint contract allows one at a time per peer and direction", rank, op, peer))
	}
}

func (e *Endpoint) isClosed() bool {
	select {
	case <-e.closed:
		return true
	default:
		return false
	}
}

// wait waits for req (the poller drives it) until it completes, ctx is
// done or the endpoint closes. A send given up on is cancelled if it can
// be and otherwise abandoned to MPI (Open MPI cannot cancel sends); a
// receive is cancelled and waited for, so that MPI no longer writes to the
// caller's buffer when wait returns.
func (e *Endpoint) wait(ctx context.Context, req *request, peer int, send bool, what string) (int, error) {
	var why error
	select {
	case <-req.done:
	case <-ctx.Done():
		why = ctx.Err()
	case <-e.closed:
		why = errClosed
	}
	if why != nil {
		e.giveUp(req, send)
		return 0, why
	}
	switch {
	case req.rc != 0:
		return 0, &transport.PeerError{Rank: peer, Err: mpiError(what, req.rc)}
	case req.cancelled:
		return 0, &transport.PeerError{Rank: peer, Err: fmt.Errorf("%s cancelled", what)}
	}
	return req.n, nil
}

// giveUp ends an operation the caller no longer waits for.
func (e *Endpoint) giveUp(req *request, send bool) {
	req.cancel()
	if !send {
		<-req.done // a cancelled receive completes at once; a matched one soon
		return
	}
	select {
	case <-req.done:
	case <-time.After(10 * time.Millisecond):
		req.abandon()
	}
}

// settle lets a close notice finish: small messages go eagerly, so it is
// normally done at once; else it is left to MPI.
func (e *Endpoint) settle(req *request) {
	select {
	case <-req.done:
	case <-time.After(10 * time.Millisecond):
		req.abandon()
	}
}

// post starts sending a header and payload to rank to. It holds the pair's
// send lock, so a close notice cannot come between the two.
func (e *Endpoint) post(to, kind int, tag uint32, p unsafe.Pointer, n int, bytes bool) (h, pl *request, err error) {
	e.sendMu[to].Lock()
	defer e.sendMu[to].Unlock()
	if e.isClosed() {
		return nil, nil, errClosed
	}
	hdr := &e.sendHdr[to]
	binary.LittleEndian.PutUint32(hdr[0:], tag)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(kind))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(n))
	h, rc := e.comm.isend(unsafe.Pointer(&hdr[0]), hdrLen, true, e.proc[to], e.tag(e.rank, to))
	if rc != 0 {
		return nil, nil, &transport.PeerError{Rank: to, Err: mpiError("MPI_Isend of a header", rc)}
	}
	if n > 0 {
		pl, rc = e.comm.isend(p, n, bytes, e.proc[to], e.tag(e.rank, to))
		if rc != 0 {
			e.giveUp(h, true)
			return nil, nil, &transport.PeerError{Rank: to, Err: mpiError("MPI_Isend", rc)}
		}
	}
	return h, pl, nil
}

func (e *Endpoint) send(ctx context.Context, to int, tag uint32, p unsafe.Pointer, n int, bytes bool) error {
	transport.CheckPeer(e.rank, e.size, to)
	acquire(&e.sending[to], e.rank, "Send", to)
	defer e.sending[to].Store(false)
	if n > maxCount {
		return fmt.Errorf("comm/transport/mpi: a message of %d elements to rank %d exceeds MPI's count limit %d", n, to, maxCount)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	kind := kindFloats
	if bytes {
		kind = kindBytes
	}
	h, pl, err := e.post(to, kind, tag, p, n, bytes)
	if err != nil {
		return err
	}
	if _, err := e.wait(ctx, h, to, true, "MPI_Isend of a header"); err != nil {
		if pl != nil {
			e.giveUp(pl, true)
		}
		return err
	}
	if pl != nil {
		if _, err := e.wait(ctx, pl, to, true, "MPI_Isend"); err != nil {
			return err
		}
	}
	size := int64(n)
	if !bytes {
		size *= 4
	}
	e.stats.bs.Add(size)
	e.stats.ms.Add(1)
	return nil
}

// Send sends buf to rank to, with tag.
func (e *Endpoint) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	return e.send(ctx, to, tag, unsafe.Pointer(unsafe.SliceData(buf)), len(buf), false)
}

// SendBytes sends a byte message to rank to.
func (e *Endpoint) SendBytes(ctx context.Context, to int, tag uint32, b []byte) error {
	return e.send(ctx, to, tag, unsafe.Pointer(unsafe.SliceData(b)), len(b), true)
}

// header is a received message's header.
type header struct {
	tag  uint32
	kind int
	n    int
}

func (h header) String() string {
	switch h.kind {
	case kindFloats:
		return fmt.Sprintf("a %d-float message with tag %d", h.n, h.tag)
	case kindBytes:
		return fmt.Sprintf("a %d-byte message with tag %d", h.n, h.tag)
	}
	return fmt.Sprintf("a message of kind %d with tag %d", h.kind, h.tag)
}

// recvHeader receives the next header from rank from; a close notice
// becomes the peer's error, for this call and every later one.
func (e *Endpoint) recvHeader(ctx context.Context, from int) (header, error) {
	if pe := e.gone[from].Load(); pe != nil {
		return header{}, pe
	}
	if e.isClosed() {
		return header{}, errClosed
	}
	if err := ctx.Err(); err != nil {
		return header{}, err
	}
	buf := &e.recvHdr[from]
	req, rc := e.comm.irecv(unsafe.Pointer(&buf[0]), hdrCap, true, e.proc[from], e.tag(from, e.rank))
	if rc != 0 {
		return header{}, &transport.PeerError{Rank: from, Err: mpiError("MPI_Irecv of a header", rc)}
	}
	n, err := e.wait(ctx, req, from, false, "MPI_Irecv of a header")
	if err != nil {
		return header{}, err
	}
	if n < hdrLen {
		return header{}, &transport.PeerError{Rank: from, Err: fmt.Errorf("malformed header of %d bytes", n)}
	}
	h := header{tag: binary.LittleEndian.Uint32(buf[0:]), kind: int(binary.LittleEndian.Uint32(buf[4:]))}
	length := binary.LittleEndian.Uint64(buf[8:])
	switch h.kind {
	case kindClose:
		var pe *transport.PeerError
		if n > hdrLen {
			pe = &transport.PeerError{Rank: from, Err: fmt.Errorf("aborted: %s", buf[hdrLen:n])}
		} else {
			pe = &transport.PeerError{Rank: from, Err: errClosed}
		}
		e.gone[from].Store(pe)
		return header{}, pe
	case kindFloats, kindBytes:
	default:
		return header{}, &transport.PeerError{Rank: from, Err: fmt.Errorf("malformed header: kind %d", h.kind)}
	}
	if length > maxCount {
		return header{}, &transport.PeerError{Rank: from, Err: fmt.Errorf("malformed header: length %d", length)}
	}
	h.n = int(length)
	return h, nil
}

// recvPayload receives the n-element payload of a header into p.
func (e *Endpoint) recvPayload(ctx context.Context, from int, p unsafe.Pointer, n int, bytes bool) error {
	if n == 0 {
		return nil
	}
	req, rc := e.comm.irecv(p, n, bytes, e.proc[from], e.tag(from, e.rank))
	if rc != 0 {
		return &transport.PeerError{Rank: from, Err: mpiError("MPI_Irecv", rc)}
	}
	got, err := e.wait(ctx, req, from, false, "MPI_Irecv")
	if err != nil {
		return err
	}
	want := n
	if !bytes {
		want *= 4
	}
	if got != want {
		return &transport.PeerError{Rank: from, Err: fmt.Errorf("payload of %d bytes after a header announcing %d", got, want)}
	}
	return nil
}

// Recv receives the next message from rank from into buf.
func (e *Endpoint) Recv(ctx context.Context, from int, tag uint32, buf []float32) error {
	transport.CheckPeer(e.rank, e.size, from)
	acquire(&e.receiving[from], e.rank, "Recv", from)
	defer e.receiving[from].Store(false)
	h, err := e.recvHeader(ctx, from)
	if err != nil {
		return err
	}
	if h.kind != kindFloats || h.tag != tag || h.n != len(buf) {
		return &transport.PeerError{Rank: from, Err: fmt.Errorf("expected %d floats with tag %d, got %v", len(buf), tag, h)}
	}
	if err := e.recvPayload(ctx, from, unsafe.Pointer(unsafe.SliceData(buf)), len(buf), false); err != nil {
		return err
	}
	e.stats.br.Add(4 * int64(len(buf)))
	e.stats.mr.Add(1)
	return nil
}

// RecvBytes receives the next message from rank from, a byte message with
// tag of at most max bytes.
func (e *Endpoint) RecvBytes(ctx context.Context, from int, tag uint32, max int) ([]byte, error) {
	transport.CheckPeer(e.rank, e.size, from)
	acquire(&e.receiving[from], e.rank, "RecvBytes", from)
	defer e.receiving[from].Store(false)
	h, err := e.recvHeader(ctx, from)
	if err != nil {
		return nil, err
	}
	if h.kind != kindBytes || h.tag != tag {
		return nil, &transport.PeerError{Rank: from, Err: fmt.Errorf("expected a byte message with tag %d, got %v", tag, h)}
	}
	if h.n > max {
		return nil, &transport.PeerError{Rank: from, Err: fmt.Errorf("byte message of %d bytes exceeds the limit of %d", h.n, max)}
	}
	b := make([]byte, h.n)
	if err := e.recvPayload(ctx, from, unsafe.Pointer(unsafe.SliceData(b)), h.n, true); err != nil {
		return nil, err
	}
	e.stats.br.Add(int64(h.n))
	e.stats.mr.Add(1)
	return b, nil
}

// Close releases the endpoint; peers' pending and later receives from this
// rank fail with a *transport.PeerError.
func (e *Endpoint) Close() error { return e.Abort(nil) }

// Abort tells every peer that this rank is leaving, and why (nil: closed),
// then closes the endpoint. The notices are small messages MPI sends
// eagerly; a peer reads one after whatever this rank sent it before.
func (e *Endpoint) Abort(reason error) error {
	e.closeOnce.Do(func() {
		note := make([]byte, hdrLen, hdrCap)
		binary.LittleEndian.PutUint32(note[4:], kindClose)
		if reason != nil {
			msg := reason.Error()
			if len(msg) > hdrCap-hdrLen {
				msg = msg[:hdrCap-hdrLen]
			}
			note = append(note, msg...)
		}
		// Mark closed first: a Send that has not posted yet then fails
		// instead of following the notice.
		close(e.closed)
		lib.mu.Lock()
		finished := lib.finished
		lib.mu.Unlock()
		if !finished {
			for to := range e.size {
				if to == e.rank {
					continue
				}
				e.sendMu[to].Lock()
				req, rc := e.comm.isend(unsafe.Pointer(&note[0]), len(note), true, e.proc[to], e.tag(e.rank, to))
				e.sendMu[to].Unlock()
				if rc == 0 {
					e.settle(req)
				}
			}
		}
		e.comm.release()
	})
	return nil
}
