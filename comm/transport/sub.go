package transport

import (
	"context"
	"errors"
	"fmt"
)

// Sub returns an Endpoint over the members of a sub-group of ep's group:
// rank i of the sub-group is members[i] of the whole. Members must be
// distinct, ascending ranks of ep's group, ep's own among them. Messages
// keep their tags, so sub-group and whole-group traffic between the same
// two ranks must not be in flight at once (a rank's driver runs its
// collectives one at a time). Closing the sub-group endpoint leaves ep
// open.
func Sub(ep Endpoint, members []int) (Endpoint, error) {
	self := -1
	for i, m := range members {
		if m < 0 || m >= ep.Size() || (i > 0 && m <= members[i-1]) {
			return nil, fmt.Errorf("transport: sub-group %v: ranks must be distinct, ascending and in [0,%d)", members, ep.Size())
		}
		if m == ep.Rank() {
			self = i
		}
	}
	if self < 0 {
		return nil, fmt.Errorf("transport: rank %d is not in sub-group %v", ep.Rank(), members)
	}
	return &sub{ep: ep, members: append([]int(nil), members...), rank: self}, nil
}

type sub struct {
	ep      Endpoint
	members []int
	rank    int
}

func (s *sub) Rank() int { return s.rank }
func (s *sub) Size() int { return len(s.members) }

func (s *sub) peer(r int) int {
	CheckPeer(s.rank, len(s.members), r)
	return s.members[r]
}

// local renames a PeerError of the parent's rank members[r] into the
// sub-group's rank r, as every Endpoint names peers by its own ranks.
func (s *sub) local(r int, err error) error {
	var pe *PeerError
	if errors.As(err, &pe) && pe.Rank == s.members[r] {
		return &PeerError{Rank: r, Err: pe.Err}
	}
	return err
}

func (s *sub) Send(ctx context.Context, to int, tag uint32, buf []float32) error {
	return s.local(to, s.ep.Send(ctx, s.peer(to), tag, buf))
}

func (s *sub) Recv(ctx context.Context, from int, tag uint32, buf []float32) error {
	return s.local(from, s.ep.Recv(ctx, s.peer(from), tag, buf))
}

func (s *sub) SendBytes(ctx context.Context, to int, tag uint32, b []byte) error {
	return s.local(to, s.ep.SendBytes(ctx, s.peer(to), tag, b))
}

func (s *sub) RecvBytes(ctx context.Context, from int, tag uint32, max int) ([]byte, error) {
	b, err := s.ep.RecvBytes(ctx, s.peer(from), tag, max)
	return b, s.local(from, err)
}

// Stats reports the whole endpoint's traffic.
func (s *sub) Stats() Stats { return s.ep.Stats() }

// Close leaves the underlying endpoint open.
func (s *sub) Close() error { return nil }
