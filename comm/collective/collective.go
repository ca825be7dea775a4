package collective

import (
	"context"
	"fmt"

	"dsgd/comm/transport"
)

// Run executes one rank's schedule s on buf over ep, with scratch (at least
// s.Cost().ScratchLen floats) for Add receives, tagging messages
// tagBase + step.Round. It is Executor.Run for a one-off call; it starts
// and stops a helper goroutine each time, so loops should hold an
// Executor instead.
func Run(ctx context.Context, ep transport.Endpoint, s Schedule, buf, scratch []float32, tagBase uint32) error {
	if need := s.Cost().ScratchLen; len(scratch) < need {
		panic(fmt.Sprintf("collective: scratch of %d floats, schedule needs %d", len(scratch), need))
	}
	e := NewExecutor(ep)
	defer e.Close()
	e.scratch = scratch
	return e.Run(ctx, s, buf, tagBase)
}

// Allreduce is Executor.Allreduce for a one-off call.
func Allreduce(ctx context.Context, ep transport.Endpoint, buf []float32, alg Algorithm) error {
	e := NewExecutor(ep)
	defer e.Close()
	return e.Allreduce(ctx, buf, alg)
}

// Reduce is Executor.Reduce for a one-off call.
func Reduce(ctx context.Context, ep transport.Endpoint, root int, buf []float32) error {
	e := NewExecutor(ep)
	defer e.Close()
	return e.Reduce(ctx, root, buf)
}

// Broadcast is Executor.Broadcast for a one-off call.
func Broadcast(ctx context.Context, ep transport.Endpoint, root int, buf []float32) error {
	e := NewExecutor(ep)
	defer e.Close()
	return e.Broadcast(ctx, root, buf)
}

// ReduceScatter is Executor.ReduceScatter for a one-off call.
func ReduceScatter(ctx context.Context, ep transport.Endpoint, buf []float32) error {
	e := NewExecutor(ep)
	defer e.Close()
	return e.ReduceScatter(ctx, buf)
}

// Allgather is Executor.Allgather for a one-off call.
func Allgather(ctx context.Context, ep transport.Endpoint, buf []float32) error {
	e := NewExecutor(ep)
	defer e.Close()
	return e.Allgather(ctx, buf)
}

// Barrier is Executor.Barrier for a one-off call.
func Barrier(ctx context.Context, ep transport.Endpoint) error {
	e := NewExecutor(ep)
	defer e.Close()
	return e.Barrier(ctx)
}
