package commbench

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
)

// benchCommRank runs job on one rank and emits one result per size. On
// error it closes ep, so that the other ranks fail at once instead of
// waiting for their timeouts.
func benchCommRank(ctx context.Context, ep transport.Endpoint, job commJob, emit func(commResult) error) error {
	ex := collective.NewExecutor(ep)
	defer ex.Close()
	// The allreduce buffers come from the executor, as a trainer's
	// gradients do: in shared memory where the ranks share a host.
	var shared []float32
	if job.Task == taskAllreduce && !job.OwnBuf {
		var most int64
		for _, nb := range job.Sizes {
			most = max(most, nb)
		}
		var err error
		if shared, err = ex.Buffer(ctx, int(most/4)); err != nil {
			ep.Close()
			return fmt.Errorf("allocating the buffer: %w", err)
		}
	}
	for _, nb := range job.Sizes {
		res := commResult{Task: job.Task, Rank: ep.Rank(), Bytes: nb}
		var err error
		switch job.Task {
		case taskAllreduce, taskTree:
			alg := collective.Tree
			if job.Task == taskAllreduce {
				alg, _ = collective.ParseAlgorithm(job.Alg)
			}
			res.Alg = alg.Resolve(ep.Size(), int(nb/4)).String()
			var buf []float32
			if shared != nil {
				buf = shared[:nb/4]
			} else {
				buf = make([]float32, nb/4)
			}
			res.Times, res.OK, err = benchAllreduceRank(ctx, ex, buf, alg, job.Reps, job.Warmup)
		case taskPS:
			res.Times, res.OK, err = benchPSRank(ctx, ex, int(nb/4), job.Reps, job.Warmup)
		case taskPingPong:
			res.Times, res.OK, err = benchPingPongRank(ctx, ex, int(nb/4), job.Reps, job.Warmup)
		default:
			err = fmt.Errorf("unknown task %q", job.Task)
		}
		if err != nil {
			ep.Close()
			return fmt.Errorf("%s of %s MiB: %w", job.Task, FmtMiB(nb), err)
		}
		if err := emit(res); err != nil {
			ep.Close()
			return err
		}
		debug.FreeOSMemory() // the next size allocates afresh; give this one back
	}
	return nil
}

// timeReps runs body warmup+reps times, each after a barrier, and returns
// the durations of the last reps runs in seconds.
func timeReps(ctx context.Context, ex *collective.Executor, reps, warmup int, body func() error) ([]float64, error) {
	times := make([]float64, 0, reps)
	for i := range warmup + reps {
		if err := ex.Barrier(ctx); err != nil {
			return nil, fmt.Errorf("barrier: %w", err)
		}
		t0 := time.Now()
		if err := body(); err != nil {
			return nil, err
		}
		if i >= warmup {
			times = append(times, time.Since(t0).Seconds())
		}
	}
	return times, nil
}

// fillF32 sets every element of b to v (and so touches every page).
func fillF32(b []float32, v float32) {
	for i := range b {
		b[i] = v
	}
}

// allEqual reports whether every element of b is v.
func allEqual(b []float32, v float32) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}

func benchAllreduceRank(ctx context.Context, ex *collective.Executor, buf []float32, alg collective.Algorithm, reps, warmup int) ([]float64, bool, error) {
	rank, p := ex.Endpoint().Rank(), ex.Endpoint().Size()
	fillF32(buf, float32(rank+1)) // stays positive and finite for dozens of reps
	times, err := timeReps(ctx, ex, reps, warmup, func() error { return ex.Allreduce(ctx, buf, alg) })
	if err != nil {
		return nil, false, err
	}
	fillF32(buf, float32(rank+1))
	if err := ex.Allreduce(ctx, buf, alg); err != nil {
		return nil, false, fmt.Errorf("check: %w", err)
	}
	return times, allEqual(buf, float32(p*(p+1)/2)), nil
}

// Tags of the benchmark's parameter-server messages, below
// collective.TagBase as schemes' are.
const (
	benchTagGrads  uint32 = 1 << 20
	benchTagParams uint32 = 2 << 20
)

// benchPSRank is scheme sync-ps's communication (psWorker, psServer): each
// worker sends its gradient to the server, the last rank, then receives
// the weights; the server receives the gradients in rank order, summing
// them, then sends the sum back to each worker in turn.
func benchPSRank(ctx context.Context, ex *collective.Executor, n, reps, warmup int) ([]float64, bool, error) {
	ep := ex.Endpoint()
	rank, server := ep.Rank(), ep.Size()-1
	workers := ep.Size() - 1
	want := float32(workers * (workers + 1) / 2)
	if rank == server {
		sum, in := make([]float32, n), make([]float32, n)
		times, err := timeReps(ctx, ex, reps, warmup, func() error {
			for wk := range workers {
				dst := sum
				if wk > 0 {
					dst = in
				}
				if err := ep.Recv(ctx, wk, benchTagGrads, dst); err != nil {
					return fmt.Errorf("server: gradient from worker %d: %w", wk, err)
				}
				if wk > 0 {
					addF32(sum, in)
				}
			}
			for wk := range workers {
				if err := ep.Send(ctx, wk, benchTagParams, sum); err != nil {
					return fmt.Errorf("server: weights to worker %d: %w", wk, err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		return times, allEqual(sum, want), nil
	}
	grads, params := make([]float32, n), make([]float32, n)
	fillF32(grads, float32(rank+1))
	times, err := timeReps(ctx, ex, reps, warmup, func() error {
		if err := ep.Send(ctx, server, benchTagGrads, grads); err != nil {
			return fmt.Errorf("worker %d: gradient to the server: %w", rank, err)
		}
		if err := ep.Recv(ctx, server, benchTagParams, params); err != nil {
			return fmt.Errorf("worker %d: weights from the server: %w", rank, err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return times, allEqual(params, want), nil
}

// benchPingPongRank: rank 0 sends n floats to rank 1, which sends them
// back. Times are one-way: half the round trip.
func benchPingPongRank(ctx context.Context, ex *collective.Executor, n, reps, warmup int) ([]float64, bool, error) {
	ep := ex.Endpoint()
	buf := make([]float32, n)
	if ep.Rank() == 0 {
		fillF32(buf, 7)
	}
	peer := 1 - ep.Rank()
	times, err := timeReps(ctx, ex, reps, warmup, func() error {
		if ep.Rank() == 0 {
			if err := ep.Send(ctx, peer, benchTagGrads, buf); err != nil {
				return err
			}
			return ep.Recv(ctx, peer, benchTagGrads, buf)
		}
		if err := ep.Recv(ctx, peer, benchTagGrads, buf); err != nil {
			return err
		}
		return ep.Send(ctx, peer, benchTagGrads, buf)
	})
	if err != nil {
		return nil, false, err
	}
	for i := range times {
		times[i] /= 2
	}
	return times, allEqual(buf, 7), nil
}

// addF32 is the plain Go float32 add, dst[i] += src[i]: the parameter
// server's sum, and the add bandwidth reported for scale.
func addF32(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}
