package tcp

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dsgd/comm/shm"
	"dsgd/comm/transport"
)

// DefaultShmSlot is the default size of each rank's slot in the host
// group: the most of its buffer one round of a group allreduce takes.
const DefaultShmSlot = 1 << 20

// hostGroup is the segment every rank of a one-host group maps, and the
// shm.Group over it that collectives use (collective.HostShared).
//
// When every rank is on this host and reaches every other through a
// shared-memory link, rank 0 creates one more segment, of a slot per
// rank (Config.ShmSlot bytes each), and announces it on each data
// connection after the pairs' set-up; each rank maps it and says so;
// rank 0 unlinks it and tells everyone to use it, or, if any rank could
// not map it, not to (collectives then go as messages, as before). As
// for the pairs' segments, the file is gone before the endpoint is
// returned, so nothing is left behind whatever happens to any process.
// A rank whose peer dies sees it through that pair's control connection,
// and its waits in the group fail naming the peer.
type hostGroup struct {
	seg *shm.Segment
	g   *shm.Group
}

// groupEligible says whether this rank can join a host group: shared
// memory on, a slot size, no fp16 (the messages round to halves and the
// group would not), and a shared-memory link to every peer.
func groupEligible(cfg *Config, links []*shmLink) bool {
	if cfg.host == "" || cfg.ShmSlot <= 0 || cfg.Compress != CompressNone || cfg.Size < 2 || cfg.Size > shm.MaxGroup {
		return false
	}
	for r, l := range links {
		if r != cfg.Rank && l == nil {
			return false
		}
	}
	return true
}

// setupGroup sets up the host group over the fresh data connections (see
// hostGroup); nil when there is none. A segment rank 0 cannot create
// fails Connect on every rank, as a pair's does.
func setupGroup(ctx context.Context, cfg *Config, conns []net.Conn, links []*shmLink) (*hostGroup, error) {
	if cfg.host == "" {
		return nil, nil // no rank offered shared memory to us: no set-up frames either
	}
	deadline := deadlineOf(ctx)
	defer failOnCancel(ctx, conns)()
	ok := groupEligible(cfg, links)
	size := shm.GroupSize(cfg.Size, cfg.ShmSlot)
	if cfg.Rank != 0 {
		// Rank 0 speaks to the ranks it shares a link with (both ends
		// of a pair know whether it has one), and only to them.
		if links[0] == nil {
			return nil, nil
		}
		return joinGroup(cfg, conns[0], ok, size, deadline)
	}
	wrap := func(r int, err error) error {
		return fmt.Errorf("tcp: rank 0: setting up the host group with rank %d: %v", r, err)
	}
	peers := func(f func(r int, c net.Conn) error) error {
		for r, c := range conns {
			if r == 0 || c == nil || links[r] == nil {
				continue
			}
			if err := f(r, c); err != nil {
				return wrap(r, err)
			}
		}
		return nil
	}
	if !ok {
		return nil, peers(func(_ int, c net.Conn) error { return writeNeg(c, "nogrp", deadline) })
	}
	seg, err := shm.Create(cfg.ShmDir, "group", size)
	if err != nil {
		peers(func(_ int, c net.Conn) error { return writeNeg(c, "fail "+err.Error(), deadline) })
		return nil, fmt.Errorf("tcp: rank 0: the host group's shared memory: %w", err)
	}
	err = peers(func(_ int, c net.Conn) error {
		return writeNeg(c, "grp "+strconv.Itoa(cfg.ShmSlot)+" "+seg.Path, deadline)
	})
	all := true
	if err == nil {
		err = peers(func(_ int, c net.Conn) error {
			reply, err := readNeg(c, deadline)
			all = all && reply == "ok"
			return err
		})
	}
	seg.Unlink()
	verdict := "off"
	if all {
		verdict = "use"
	}
	if err == nil {
		err = peers(func(_ int, c net.Conn) error { return writeNeg(c, verdict, deadline) })
	}
	if err != nil || !all {
		seg.Close()
		return nil, err
	}
	return newHostGroup(cfg, seg)
}

// joinGroup is a rank other than 0's side of setupGroup, on its
// connection c to rank 0.
func joinGroup(cfg *Config, c net.Conn, ok bool, size int, deadline time.Time) (*hostGroup, error) {
	wrap := func(err error) error {
		return fmt.Errorf("tcp: rank %d: setting up the host group with rank 0: %v", cfg.Rank, err)
	}
	msg, err := readNeg(c, deadline)
	if err != nil {
		return nil, wrap(err)
	}
	if reason, found := strings.CutPrefix(msg, "fail "); found {
		return nil, fmt.Errorf("tcp: rank %d: rank 0 on this host could not set up the host group: %s", cfg.Rank, reason)
	}
	if msg == "nogrp" {
		return nil, nil
	}
	var seg *shm.Segment
	reply := "no"
	if ok {
		f := strings.SplitN(msg, " ", 3)
		if len(f) == 3 && f[0] == "grp" && f[1] == strconv.Itoa(cfg.ShmSlot) && strings.HasPrefix(filepath.Base(f[2]), shm.Prefix) {
			if seg, err = shm.Open(f[2], size); err == nil {
				reply = "ok"
			}
		}
	}
	if err := writeNeg(c, reply, deadline); err != nil {
		if seg != nil {
			seg.Close()
		}
		return nil, wrap(err)
	}
	verdict, err := readNeg(c, deadline)
	if seg == nil {
		if err != nil {
			return nil, wrap(err)
		}
		return nil, nil
	}
	seg.Unlink()
	if err != nil || verdict != "use" {
		seg.Close()
		if err != nil {
			return nil, wrap(err)
		}
		return nil, nil
	}
	return newHostGroup(cfg, seg)
}

func newHostGroup(cfg *Config, seg *shm.Segment) (*hostGroup, error) {
	g, err := shm.NewGroup(seg.Data, cfg.Rank, cfg.Size, cfg.ShmSlot)
	if err != nil {
		seg.Close()
		return nil, err
	}
	g.Timeout = cfg.Timeout
	g.Dir = cfg.ShmDir
	return &hostGroup{seg: seg, g: g}, nil
}

// attachGroup gives the endpoint its host group, whose waits check the
// endpoint's links.
func (e *endpoint) attachGroup(h *hostGroup) {
	if h == nil {
		return
	}
	e.grp = h
	h.g.Check = e.groupCheck
}

// groupCheck fails a wait in the host group once this endpoint is
// closed or a peer has gone.
func (e *endpoint) groupCheck() error {
	if e.closed.Load() {
		return ErrClosed
	}
	for _, p := range e.peers {
		if p == nil || p.link == nil {
			continue
		}
		if g := p.link.gone.Load(); g != nil {
			return &transport.PeerError{Rank: p.rank, Err: g.err}
		}
	}
	return nil
}

// HostGroup returns the host group when every rank is on this host
// (collective.HostShared), else nil.
func (e *endpoint) HostGroup() *shm.Group {
	if e.grp == nil {
		return nil
	}
	return e.grp.g
}
