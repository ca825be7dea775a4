//go:build !purego

package mpi

import (
	"context"
	"fmt"

	"dsgd/comm/transport"
)

// Native returns ep with MPI's own collectives: the returned Endpoint
// implements collective.Native, so a collective.Executor over it hands
// allreduce (MPI_Allreduce, in place), broadcast (MPI_Bcast), reduce
// (MPI_Reduce) and barrier (MPI_Barrier) to MPI, which picks its
// algorithm from the message size, the process count and the fabric.
// Point-to-point messages still go through ep. It needs a World endpoint
// (one rank per process).
func Native(ep *Endpoint) (transport.Endpoint, error) {
	if ep.local {
		return nil, fmt.Errorf("mpi: MPI's collectives need one rank per process (World), not a local group")
	}
	return &native{ep}, nil
}

// native is an Endpoint whose collectives are MPI's.
type native struct{ *Endpoint }

// check refuses a collective on a closed endpoint or a done context: once
// MPI's collective has started it cannot be cancelled (a rank that dies
// makes mpirun end the job).
func (n *native) check(ctx context.Context) error {
	if n.isClosed() {
		return errClosed
	}
	return ctx.Err()
}

// NativeAllreduce replaces buf with the sum over every rank
// (MPI_Allreduce with MPI_IN_PLACE).
func (n *native) NativeAllreduce(ctx context.Context, buf []float32) error {
	if err := n.check(ctx); err != nil {
		return err
	}
	if rc := n.comm.allreduce(buf); rc != 0 {
		return mpiError(fmt.Sprintf("MPI_Allreduce of %d floats over %d ranks", len(buf), n.size), rc)
	}
	return nil
}

// NativeBroadcast copies root's buf to every rank (MPI_Bcast).
func (n *native) NativeBroadcast(ctx context.Context, root int, buf []float32) error {
	if err := n.check(ctx); err != nil {
		return err
	}
	if rc := n.comm.bcast(buf, root); rc != 0 {
		return mpiError(fmt.Sprintf("MPI_Bcast of %d floats from rank %d", len(buf), root), rc)
	}
	return nil
}

// NativeReduce sums every rank's buf into root's (MPI_Reduce, in place at
// the root; the others' buffers are unchanged).
func (n *native) NativeReduce(ctx context.Context, root int, buf []float32) error {
	if err := n.check(ctx); err != nil {
		return err
	}
	if rc := n.comm.reduce(buf, root, n.rank); rc != 0 {
		return mpiError(fmt.Sprintf("MPI_Reduce of %d floats to rank %d", len(buf), root), rc)
	}
	return nil
}

// NativeBarrier returns once every rank has entered it (MPI_Barrier).
func (n *native) NativeBarrier(ctx context.Context) error {
	if err := n.check(ctx); err != nil {
		return err
	}
	if rc := n.comm.barrier(); rc != 0 {
		return mpiError("MPI_Barrier", rc)
	}
	return nil
}
