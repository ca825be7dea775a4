package tcp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dsgd/comm/shm"
	"dsgd/comm/transport"
	"dsgd/comm/wire"
)

// Shm says whether pairs of ranks on one host exchange their messages
// through shared memory.
//
// Under ShmAuto every rank offers its host identity (shm.HostID: boot
// id, network namespace, host name, /dev/shm's device) in the Hello of
// each data connection. A pair whose identities match sets up a segment
// under Config.ShmDir: the lower rank creates it, the higher maps it,
// and both unlink it at once, so the kernel frees it with the last
// mapping whatever happens to either process. The segment holds one
// ring per direction (Config.ShmRing bytes each); frames travel through
// them in the same format as on TCP (header, payload, padded to 8
// bytes), fp16 compression included. The pair's TCP connection stays
// open for control: an Abort's reason travels on it, and its end (the
// peer closed, failed or was killed) wakes the rings, so a dead peer is
// reported as that peer's error at once, not as a hang. Pairs on
// different hosts, and every pair under ShmOff, talk over TCP.
//
// A segment that cannot be created (a full or missing /dev/shm, no
// permission) fails Connect with an error naming the path and cause.
// Connect also removes stale dsgd segments whose creator is dead
// (shm.Sweep) before it makes its own.
type Shm uint8

const (
	// ShmAuto, the default, uses shared memory between ranks on one host.
	ShmAuto Shm = iota
	// ShmOff sends everything over TCP.
	ShmOff
)

// DefaultShmRing is the default size of each direction's ring.
const DefaultShmRing = 1 << 20

// String returns the name ParseShm accepts.
func (s Shm) String() string {
	switch s {
	case ShmAuto:
		return "on"
	case ShmOff:
		return "off"
	}
	return fmt.Sprintf("Shm(%d)", uint8(s))
}

// ParseShm parses a --shm value: "on" (or "" or "auto") or "off".
func ParseShm(s string) (Shm, error) {
	switch s {
	case "", "on", "auto":
		return ShmAuto, nil
	case "off":
		return ShmOff, nil
	}
	return 0, fmt.Errorf("unknown shared-memory mode %q (want on or off)", s)
}

// offerShm sets the host identity this rank offers, where shared memory
// is on and the identity readable, and sweeps stale segments first.
func (c *Config) offerShm() {
	if c.Shm != ShmAuto || c.Size < 2 {
		return
	}
	if c.host = shm.HostID(c.ShmDir); c.host != "" {
		shm.Sweep(c.ShmDir) // best effort: a stale file only costs memory
	}
}

const (
	// shmCommit is the most a side copies before it publishes its
	// progress: small enough that the other side starts early, large
	// enough that the bookkeeping is noise.
	shmCommit = 64 << 10
	// segHeader is the segment's first page: a magic and the ring size.
	segHeader = 4096
	segMagic  = "dsgdshm1"
	// negTag marks the set-up frames of a shared-memory pair.
	negTag = 0xfffffff0
)

// ringSpan is the room one ring takes in a segment, page aligned.
func ringSpan(ring int) int { return (shm.RingSize(ring) + 4095) &^ 4095 }

func segSize(ring int) int { return segHeader + 2*ringSpan(ring) }

// shmLink is the shared-memory channel of a same-host pair.
type shmLink struct {
	seg    *shm.Segment
	tx, rx *shm.Ring
	// gone is set once, by the control connection's watcher: the peer
	// can no longer be reached, and why.
	gone atomic.Pointer[goneErr]
	// watched is closed when the watcher has returned: it too touches
	// the mapping.
	watched chan struct{}
}

type goneErr struct {
	err   error
	abort bool // err is the peer's own reason (Abort)
}

func (l *shmLink) interrupt() {
	l.tx.Interrupt()
	l.rx.Interrupt()
}

// newLink makes the link over seg; lo says this rank is the pair's lower
// rank, which sends on the first ring.
func newLink(seg *shm.Segment, ring int, lo bool) (*shmLink, error) {
	a, err := shm.NewRing(seg.Data[segHeader : segHeader+shm.RingSize(ring)])
	if err != nil {
		return nil, err
	}
	off := segHeader + ringSpan(ring)
	b, err := shm.NewRing(seg.Data[off : off+shm.RingSize(ring)])
	if err != nil {
		return nil, err
	}
	if lo {
		return &shmLink{seg: seg, tx: a, rx: b}, nil
	}
	return &shmLink{seg: seg, tx: b, rx: a}, nil
}

// setupShm sets up a shared-memory link with every peer that offered the
// same host identity as this rank, over their fresh connections; nil
// entries talk over TCP. A segment this rank cannot create is an error.
func setupShm(ctx context.Context, cfg *Config, conns []net.Conn, hosts []string) ([]*shmLink, error) {
	links := make([]*shmLink, cfg.Size)
	if cfg.host == "" {
		return links, nil
	}
	deadline := deadlineOf(ctx)
	defer failOnCancel(ctx, conns)()
	errs := make([]error, cfg.Size)
	var wg sync.WaitGroup
	for r, h := range hosts {
		if r == cfg.Rank || h != cfg.host {
			continue
		}
		wg.Go(func() { links[r], errs[r] = pairShm(cfg, conns[r], r, deadline) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, l := range links {
			if l != nil {
				l.seg.Close()
			}
		}
		return nil, err
	}
	return links, nil
}

// pairShm sets up the segment of this rank and rank r, on their
// connection c: the lower rank creates it and says where, the higher
// maps it and answers "ok" (or why not: then the pair stays on TCP), and
// both unlink it.
func pairShm(cfg *Config, c net.Conn, r int, deadline time.Time) (*shmLink, error) {
	ring := cfg.ShmRing
	if cfg.Rank < r {
		seg, err := shm.Create(cfg.ShmDir, "tcp", segSize(ring))
		if err != nil {
			writeNeg(c, "fail "+err.Error(), deadline)
			return nil, fmt.Errorf("tcp: rank %d: shared memory with rank %d on this host: %w", cfg.Rank, r, err)
		}
		copy(seg.Data, segMagic)
		binary.LittleEndian.PutUint64(seg.Data[8:], uint64(ring))
		err = writeNeg(c, "seg "+strconv.Itoa(ring)+" "+seg.Path, deadline)
		var reply string
		if err == nil {
			reply, err = readNeg(c, deadline)
		}
		seg.Unlink()
		if err != nil {
			seg.Close()
			return nil, fmt.Errorf("tcp: rank %d: setting up shared memory with rank %d: %v", cfg.Rank, r, err)
		}
		if reply != "ok" {
			seg.Close()
			return nil, nil // rank r could not map it: TCP
		}
		l, err := newLink(seg, ring, true)
		if err != nil {
			seg.Close()
		}
		return l, err
	}
	msg, err := readNeg(c, deadline)
	if err != nil {
		return nil, fmt.Errorf("tcp: rank %d: setting up shared memory with rank %d: %v", cfg.Rank, r, err)
	}
	if reason, ok := strings.CutPrefix(msg, "fail "); ok {
		return nil, fmt.Errorf("tcp: rank %d: rank %d on this host could not set up shared memory: %s", cfg.Rank, r, reason)
	}
	seg, err := openPeerSegment(cfg, msg)
	if err != nil {
		if werr := writeNeg(c, "fail "+err.Error(), deadline); werr != nil {
			return nil, fmt.Errorf("tcp: rank %d: setting up shared memory with rank %d: %v", cfg.Rank, r, werr)
		}
		return nil, nil
	}
	seg.Unlink()
	if err := writeNeg(c, "ok", deadline); err != nil {
		seg.Close()
		return nil, fmt.Errorf("tcp: rank %d: setting up shared memory with rank %d: %v", cfg.Rank, r, err)
	}
	l, err := newLink(seg, ring, false)
	if err != nil {
		seg.Close()
	}
	return l, err
}

// openPeerSegment maps the segment a lower rank announced ("seg RING
// PATH"), checking that it is a dsgd segment of the size said.
func openPeerSegment(cfg *Config, msg string) (*shm.Segment, error) {
	f := strings.SplitN(msg, " ", 3)
	if len(f) != 3 || f[0] != "seg" {
		return nil, fmt.Errorf("%w: shared-memory set-up message %q", wire.ErrMalformed, msg)
	}
	ring, err := strconv.Atoi(f[1])
	if err != nil || ring != cfg.ShmRing {
		return nil, fmt.Errorf("shared-memory ring of %s bytes, this rank uses %d (Config.ShmRing)", f[1], cfg.ShmRing)
	}
	if !strings.HasPrefix(filepath.Base(f[2]), shm.Prefix) {
		return nil, fmt.Errorf("%q is not a dsgd segment", f[2])
	}
	seg, err := shm.Open(f[2], segSize(ring))
	if err != nil {
		return nil, err
	}
	if string(seg.Data[:8]) != segMagic || binary.LittleEndian.Uint64(seg.Data[8:]) != uint64(ring) {
		seg.Close()
		return nil, fmt.Errorf("%s is not a dsgd transport segment", f[2])
	}
	return seg, nil
}

// writeNeg sends a set-up message: a byte frame with negTag.
func writeNeg(c net.Conn, msg string, deadline time.Time) error {
	b := make([]byte, wire.HeaderSize, wire.HeaderSize+len(msg))
	wire.PutHeader(b, wire.Header{Kind: wire.KindBytes, Tag: negTag, Len: uint64(len(msg))})
	c.SetWriteDeadline(deadline)
	_, err := c.Write(append(b, msg...))
	return err
}

// readNeg reads a set-up message.
func readNeg(c net.Conn, deadline time.Time) (string, error) {
	c.SetReadDeadline(deadline)
	var hdr [wire.HeaderSize]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return "", err
	}
	h, err := wire.ParseHeader(hdr[:], 4096)
	if err != nil {
		return "", err
	}
	if h.Kind != wire.KindBytes || h.Tag != negTag {
		return "", fmt.Errorf("%w: %s frame with tag %d during the shared-memory set-up", wire.ErrMalformed, h.Kind, h.Tag)
	}
	b := make([]byte, h.Len)
	if _, err := io.ReadFull(c, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// attach puts the links on their peers and starts a watcher on each
// link's control connection.
func (e *endpoint) attach(links []*shmLink) {
	for r, p := range e.peers {
		if p == nil {
			continue
		}
		if r < len(links) && links[r] != nil {
			p.link = links[r]
			p.kind = linkShm
			p.link.watched = make(chan struct{})
			go p.watch()
		}
		e.links[p.kind].peers++
	}
}

// watch reads the control connection of a shared-memory link until it
// ends: an Abort's reason, or the peer closing or dying. Either way the
// peer is gone, and both rings are woken so that blocked calls see it.
func (p *peer) watch() {
	l := p.link
	defer close(l.watched)
	var hdr [wire.HeaderSize]byte
	g := &goneErr{err: errors.New("connection closed by the peer")}
	if _, err := io.ReadFull(p.conn, hdr[:]); err == nil {
		g.err = fmt.Errorf("%w: unexpected frame on the control connection of a shared-memory link", wire.ErrMalformed)
		h, err := wire.ParseHeader(hdr[:], wire.MaxString+16)
		if err == nil && h.Kind == wire.KindControl {
			b := make([]byte, h.Len)
			if _, err := io.ReadFull(p.conn, b); err == nil {
				if c, err := wire.DecodeControl(b); err == nil {
					if r, ok := c.(wire.Reject); ok {
						g = &goneErr{err: fmt.Errorf("aborted: %s", r.Reason), abort: true}
					}
				}
			}
		}
	}
	l.gone.Store(g)
	l.interrupt()
	if p.ep.grp != nil {
		p.ep.grp.g.Interrupt()
	}
}

// release unmaps the links and the host group once no call uses them: Close has woken
// every blocked call, and a call that starts after Close returns
// ErrClosed before it touches the rings. A call that does not let go
// within a second keeps its mapping (never unmapped under it).
func (e *endpoint) release() {
	groupIdle := e.grp != nil && e.grp.g.Close()
	watched := true
	for _, p := range e.peers {
		if p == nil || p.link == nil {
			continue
		}
		p.link.interrupt()
	}
	for _, p := range e.peers {
		if p == nil || p.link == nil {
			continue
		}
		select {
		case <-p.link.watched: // ends once Close has closed the connection
		case <-time.After(time.Second):
			watched = false
			continue
		}
		for i := 0; p.tx.busy.Load() || p.rx.busy.Load(); i++ {
			if i == 1000 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !p.tx.busy.Load() && !p.rx.busy.Load() {
			p.link.seg.Close()
		}
	}
	// The watchers wake the group too: unmap it once they are done.
	if groupIdle && watched {
		e.grp.seg.Close()
	}
}

// padOf is the padding after a frame of n payload bytes, which keeps
// every frame 8-byte aligned in the ring.
func padOf(n int) int { return -(wire.HeaderSize + n) & 7 }

// shmSend writes one frame into the ring to the peer: the header, the
// payload (or the floats in f16 as halves), the padding.
func (p *peer) shmSend(ctx context.Context, kind wire.Kind, tag uint32, payload []byte, f16 []float32) error {
	total, err := p.frameLen(kind, payload, f16)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, ring := &p.tx, p.link.tx
	wire.PutHeader(tx.hdr[:], wire.Header{Kind: kind, Tag: tag, Len: uint64(total), Seq: tx.seq})
	if err := p.shmPut(ctx, tx.hdr[:], -1, total); err != nil {
		return err
	}
	if kind == wire.KindFloat16 {
		for i := 0; i < len(f16); {
			free := ring.Free()
			if len(free) < 2 {
				if err := p.shmWait(ctx, false, 2, 2*i, total); err != nil {
					return err
				}
				continue
			}
			n := min(len(f16)-i, len(free)/2, shmCommit/2)
			wire.EncodeF16(free[:2*n], f16[i:i+n])
			ring.Commit(2 * n)
			i += n
		}
	} else if err := p.shmPut(ctx, payload, 0, total); err != nil {
		return err
	}
	if pad := padOf(total); pad > 0 {
		for !ring.HasFree(pad) {
			if err := p.shmWait(ctx, false, pad, total, total); err != nil {
				return err
			}
		}
		ring.Commit(pad)
	}
	tx.seq++
	p.ep.stats.bs.Add(int64(total))
	p.ep.stats.ms.Add(1)
	p.ep.links[linkShm].bs.Add(int64(total))
	p.ep.links[linkShm].ms.Add(1)
	return nil
}

// shmPut copies b into the ring to the peer. base is the payload bytes
// before b (-1 while b is the header), for messages.
func (p *peer) shmPut(ctx context.Context, b []byte, base, total int) error {
	ring := p.link.tx
	for done := 0; done < len(b); {
		free := ring.Free()
		if len(free) == 0 {
			mid := base + done // payload bytes written; -1: none, header started or not
			if base < 0 {
				mid = -1
				if done > 0 {
					mid = 0
				}
			}
			if err := p.shmWait(ctx, false, 1, mid, total); err != nil {
				return err
			}
			continue
		}
		n := copy(free[:min(len(free), shmCommit)], b[done:])
		ring.Commit(n)
		done += n
	}
	return nil
}

// shmGet copies len(b) bytes from the ring from the peer into b; base
// as for shmPut.
func (p *peer) shmGet(ctx context.Context, b []byte, base, total int) error {
	ring := p.link.rx
	for done := 0; done < len(b); {
		d := ring.Data()
		if len(d) == 0 {
			mid := base + done
			if base < 0 {
				mid = -1
				if done > 0 {
					mid = 0
				}
			}
			if err := p.shmWait(ctx, true, 1, mid, total); err != nil {
				return err
			}
			continue
		}
		n := copy(b[done:], d[:min(len(d), shmCommit)])
		ring.Release(n)
		done += n
	}
	return nil
}

// shmRecvHeader reads and checks the next frame header from the peer.
func (p *peer) shmRecvHeader(ctx context.Context) (wire.Header, error) {
	if err := p.usable(); err != nil {
		return wire.Header{}, err
	}
	if err := ctx.Err(); err != nil {
		return wire.Header{}, err
	}
	rx := &p.rx
	if err := p.shmGet(ctx, rx.hdr[:], -1, wire.HeaderSize); err != nil {
		return wire.Header{}, err
	}
	h, err := wire.ParseHeader(rx.hdr[:], p.ep.maxFrame)
	if errors.Is(err, wire.ErrTooLarge) {
		err = fmt.Errorf("%w (Config.MaxFrame)", err)
	}
	if err == nil && h.Kind == wire.KindControl {
		err = fmt.Errorf("%w: control frame in a shared-memory ring", wire.ErrMalformed)
	}
	if err == nil && h.Seq != rx.seq {
		err = fmt.Errorf("%w: sequence number %d, want %d (the ring lost its framing)", wire.ErrMalformed, h.Seq, rx.seq)
	}
	if err != nil {
		return wire.Header{}, p.fail(&transport.PeerError{Rank: p.rank, Err: err})
	}
	rx.seq++
	return h, nil
}

// shmRecvPayload reads the payload of the frame with header h into b
// (raw bytes) or dst (from halves), then its padding.
func (p *peer) shmRecvPayload(ctx context.Context, h wire.Header, b []byte, dst []float32) error {
	total := int(h.Len)
	ring := p.link.rx
	if h.Kind == wire.KindFloat16 {
		for i := 0; i < len(dst); {
			d := ring.Data()
			if len(d) < 2 {
				if err := p.shmWait(ctx, true, 2, 2*i, total); err != nil {
					return err
				}
				continue
			}
			n := min(len(dst)-i, len(d)/2, shmCommit/2)
			wire.DecodeF16(dst[i:i+n], d[:2*n])
			ring.Release(2 * n)
			i += n
		}
	} else if err := p.shmGet(ctx, b, 0, total); err != nil {
		return err
	}
	if pad := padOf(total); pad > 0 {
		for !ring.HasData(pad) {
			if err := p.shmWait(ctx, true, pad, total, total); err != nil {
				return err
			}
		}
		ring.Release(pad)
	}
	p.ep.links[linkShm].br.Add(int64(total))
	p.ep.links[linkShm].mr.Add(1)
	return nil
}

// shmWait waits until the ring from the peer holds need bytes (data) or
// the ring to it has need bytes free. done is how many payload bytes of
// the frame had crossed, -1 when none of it had (a failure then leaves
// the stream usable, as on TCP); total is the payload size.
func (p *peer) shmWait(ctx context.Context, data bool, need, done, total int) error {
	ring, op := p.link.tx, "send"
	if data {
		ring, op = p.link.rx, "receive"
	}
	mid := done >= 0
	timeout := p.ep.timeout
	deadline := time.Now().Add(timeout)
	for {
		if data && ring.HasData(need) || !data && ring.HasFree(need) {
			return nil
		}
		if err := p.usable(); err != nil {
			return err
		}
		if g := p.link.gone.Load(); g != nil {
			err := g.err
			switch {
			case g.abort:
			case mid:
				err = fmt.Errorf("connection closed mid-message, after %d of %d payload bytes", done, total)
			}
			return p.fail(&transport.PeerError{Rank: p.rank, Err: err})
		}
		if err := ctx.Err(); err != nil {
			if mid {
				p.fail(&transport.PeerError{Rank: p.rank, Err: fmt.Errorf("%s interrupted mid-message: %w", op, err)})
			}
			return err
		}
		now := time.Now()
		if !now.Before(deadline) {
			err := &transport.PeerError{Rank: p.rank, Err: fmt.Errorf("%s timed out: no progress for %v (Config.Timeout)", op, timeout)}
			if mid {
				return p.fail(err)
			}
			return err
		}
		slice := min(deadline.Sub(now), 100*time.Millisecond)
		if ctx.Done() != nil {
			slice = min(slice, 10*time.Millisecond)
		}
		if data {
			ring.WaitData(need, slice)
		} else {
			ring.WaitFree(need, slice)
		}
	}
}

// LinkStats reports the traffic by kind of link: shared memory, TCP and
// the host group.
func (e *endpoint) LinkStats() []transport.LinkStats {
	var out []transport.LinkStats
	for k := range e.links {
		c := &e.links[k]
		if c.peers == 0 {
			continue
		}
		out = append(out, transport.LinkStats{
			Kind: linkKind(k).String(), Peers: c.peers,
			BytesSent: c.bs.Load(), BytesRecv: c.br.Load(), MsgsSent: c.ms.Load(), MsgsRecv: c.mr.Load(),
			Busy: time.Duration(c.busy.Load()),
		})
	}
	// The host group, once its collectives have moved something: what
	// this rank wrote for the others and read of theirs.
	if e.grp != nil {
		if sent, recv, busy := e.grp.g.Traffic(); sent+recv > 0 {
			out = append(out, transport.LinkStats{Kind: "group", Peers: e.size - 1, BytesSent: sent, BytesRecv: recv, Busy: busy})
		}
	}
	return out
}

// linkKind is how the endpoint reaches a peer.
type linkKind uint8

const (
	linkTCP linkKind = iota
	linkShm
	numLinkKinds
)

func (k linkKind) String() string {
	if k == linkShm {
		return "shm"
	}
	return "tcp"
}

// linkCounters are one kind of link's counters.
type linkCounters struct {
	peers          int // set before the endpoint is used
	bs, br, ms, mr atomic.Int64
	busy           atomic.Int64 // nanoseconds
}

// account adds the time since t0 to the busy time of p's kind of link.
func (p *peer) account(t0 time.Time) {
	p.ep.links[p.kind].busy.Add(int64(time.Since(t0)))
}
