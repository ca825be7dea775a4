package mpi

import (
	"context"
	"encoding/binary"
	"fmt"

	"dsgd/comm/transport"
)

// layoutTag is the tag of the layout hash rank 0 sends every rank.
const layoutTag = 0x7fff_0001

// AgreeLayout checks that every rank of ep's group trains the same
// parameter layout, as the tcp transport's rendezvous does: rank 0 sends
// its hash to every rank, and a rank whose hash differs refuses, naming
// both. It runs over any endpoint; an MPI job, whose ranks meet without
// a rendezvous, calls it once connected.
func AgreeLayout(ctx context.Context, ep transport.Endpoint, hash uint64) error {
	if ep.Rank() == 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], hash)
		for r := 1; r < ep.Size(); r++ {
			if err := ep.SendBytes(ctx, r, layoutTag, b[:]); err != nil {
				return fmt.Errorf("rank 0 of %d (MPI) sending its model's layout: %w", ep.Size(), err)
			}
		}
		return nil
	}
	b, err := ep.RecvBytes(ctx, 0, layoutTag, 8)
	if err != nil {
		return fmt.Errorf("rank %d of %d (MPI) waiting for rank 0's model layout: %w", ep.Rank(), ep.Size(), err)
	}
	if len(b) != 8 {
		return fmt.Errorf("rank %d of %d (MPI): rank 0 sent a %d-byte layout hash", ep.Rank(), ep.Size(), len(b))
	}
	if h0 := binary.LittleEndian.Uint64(b); h0 != hash {
		return fmt.Errorf("rank %d of %d (MPI): this rank's model (parameter layout hash %016x) differs from rank 0's (%016x); every rank must train the same net", ep.Rank(), ep.Size(), hash, h0)
	}
	return nil
}
