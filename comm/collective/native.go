package collective

import (
	"context"
	"fmt"
)

// Native is implemented by endpoints whose transport runs collectives
// itself (MPI's MPI_Allreduce and friends, through transport/mpi.Native):
// an Executor over such an endpoint hands it Allreduce (whatever the
// Algorithm), Reduce, Broadcast and Barrier instead of running a schedule.
// ReduceScatter and Allgather keep their ring schedules over the
// endpoint's messages. The transport decides the algorithm, so bitwise
// equality with dsgd's own schedules is not promised; every rank still
// gets the same result from one call.
type Native interface {
	NativeAllreduce(ctx context.Context, buf []float32) error
	NativeBroadcast(ctx context.Context, root int, buf []float32) error
	NativeReduce(ctx context.Context, root int, buf []float32) error
	NativeBarrier(ctx context.Context) error
}

// native runs a transport's own collective under the Executor's rules:
// refused after an earlier failure, and a failure is sticky.
func (e *Executor) native(f func() error) error {
	if e.closed {
		panic("collective: Run on a closed Executor")
	}
	if e.err != nil {
		return fmt.Errorf("collective: executor unusable after an earlier failure: %w", e.err)
	}
	if err := f(); err != nil {
		e.err = err
		return err
	}
	return nil
}
