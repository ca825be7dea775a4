package node

import (
	"errors"
	"fmt"

	"dsgd/comm/transport"
	"dsgd/protocol/scheme"
)

// stalledPeer names whom a communication action that timed out was
// waiting for: the rank its transport names (a collective's transfer
// with a stalled peer, mapped from the sub-group to the whole group),
// else the action's own peer for a point-to-point transfer, else the
// center for a center operation.
func stalledPeer(a scheme.Action, err error) string {
	var pe *transport.PeerError
	if errors.As(err, &pe) {
		rank := pe.Rank
		if a.Group != nil && rank >= 0 && rank < len(a.Group) {
			rank = a.Group[rank]
		}
		return fmt.Sprintf("rank %d", rank)
	}
	switch {
	case a.Op.IsCenter():
		return "the center"
	case a.Op == scheme.Send || a.Op == scheme.Recv:
		return fmt.Sprintf("rank %d", a.Peer)
	}
	return "the group"
}
