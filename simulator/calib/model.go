package calib

import (
	"context"
	"fmt"
	"time"

	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/simulator/sim"
)

// Timing is what Time measured: every layer's accumulated forward and
// backward time, and the wall time, over Iters timed forward-backward
// passes (after Warmup untimed ones).
type Timing struct {
	// Layers are the net's layers in order, their Forward and Backward
	// summed over the Iters timed passes.
	Layers []model.LayerInfo
	// Wall is the wall time of the Iters timed passes together.
	Wall          time.Duration
	Iters, Warmup int
}

// PerIter is d averaged over the timed passes.
func (t Timing) PerIter(d time.Duration) time.Duration {
	if t.Iters <= 0 {
		return 0
	}
	return d / time.Duration(t.Iters)
}

// Time runs warmup untimed forward-backward passes of net, then iters
// timed ones, on the inputs the net holds (the caller fills them once;
// compute time does not depend on the values), and returns the per-layer
// and wall times of the timed passes. It resets the net's layer times
// first. It stops between passes when ctx is done, returning ctx's error.
// iters must be positive and warmup not negative.
func Time(ctx context.Context, net *model.Net, warmup, iters int) (Timing, error) {
	if iters <= 0 || warmup < 0 {
		return Timing{}, fmt.Errorf("calib: time %d iterations after %d warm-up: want iters > 0, warmup >= 0", iters, warmup)
	}
	for i := 0; i < warmup; i++ {
		if ctx.Err() != nil {
			return Timing{}, ctx.Err()
		}
		net.ForwardBackward()
	}
	net.ResetTimes()
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		if ctx.Err() != nil {
			return Timing{}, ctx.Err()
		}
		net.ForwardBackward()
	}
	wall := time.Since(t0)
	if err := net.Err(); err != nil {
		return Timing{}, fmt.Errorf("calib: %w", err)
	}
	return Timing{Layers: net.Layers(), Wall: wall, Iters: iters, Warmup: warmup}, nil
}

// ModelOptions tunes Model.
type ModelOptions struct {
	// Warmup and Iters are the untimed and timed forward-backward passes
	// (defaults 2 and 10).
	Warmup, Iters int
	// Solver, when set, is the update rule whose Step over the whole
	// parameter buffer is timed as Model.Update; nil leaves Update 0.
	Solver *solver.Config
	// Threads is the goroutines the solver steps with, as a worker's
	// solver would (1 when zero). The net's own threads are fixed when it
	// is built (model.Options.Threads).
	Threads int
	// AddLen is the vector length AddRate is measured on (default
	// DefaultAddLen); negative skips it, leaving AddRate 0.
	AddLen int
}

// DefaultAddLen is the vector AddRate is measured on by default: 4 Mi
// floats (16 MiB), larger than the caches, as a gradient sum is.
const DefaultAddLen = 4 << 20

// Model measures net on this machine and returns it as the simulator's
// model: one sim.Layer per layer of net, in order, with its mean forward
// and backward time per pass (see Time) and the number of parameters it
// owns (the blocks of net.Blocks whose Layer it is); the mean time of one
// solver step over all parameters; and the add rate (AddRate). The net's
// inputs must hold a batch. The solver steps on copies of the net's
// weights and gradients, so the net is left as it was, apart from the
// activations and gradients of the passes.
func Model(ctx context.Context, net *model.Net, opt ModelOptions) (sim.Model, error) {
	if opt.Warmup == 0 {
		opt.Warmup = 2
	}
	if opt.Iters == 0 {
		opt.Iters = 10
	}
	tm, err := Time(ctx, net, opt.Warmup, opt.Iters)
	if err != nil {
		return sim.Model{}, err
	}
	owned := map[string]int{}
	rows := map[string][]sim.BlobRows{}
	for _, b := range net.Blocks() {
		owned[b.Layer] += b.Len()
		r := 0 // a vector
		if len(b.Shape) >= 2 {
			r = b.Shape[0] // a weight's outputs: PowerSGD's matrix rows
		}
		rows[b.Layer] = append(rows[b.Layer], sim.BlobRows{Len: b.Len(), Rows: r})
	}
	m := sim.Model{Name: net.Name(), Layers: make([]sim.Layer, len(tm.Layers))}
	for i, li := range tm.Layers {
		m.Layers[i] = sim.Layer{Name: li.Name, Forward: tm.PerIter(li.Forward), Backward: tm.PerIter(li.Backward), Params: owned[li.Name], Rows: rows[li.Name]}
	}
	if opt.Solver != nil {
		if m.Update, err = timeUpdate(ctx, net, *opt.Solver, max(opt.Threads, 1), opt.Warmup, opt.Iters); err != nil {
			return sim.Model{}, err
		}
	}
	if opt.AddLen >= 0 {
		n := opt.AddLen
		if n == 0 {
			n = DefaultAddLen
		}
		m.AddRate = AddRate(n, 50*time.Millisecond)
	}
	return m, nil
}

// timeUpdate is the mean time of one solver step over net's parameters.
func timeUpdate(ctx context.Context, net *model.Net, cfg solver.Config, threads, warmup, iters int) (time.Duration, error) {
	blocks := net.Blocks()
	segs := make([]solver.Segment, len(blocks))
	for i, b := range blocks {
		segs[i] = solver.Segment{Off: b.Off, Len: b.Len(), LRMult: b.LRMult, DecayMult: b.DecayMult}
	}
	n := len(net.Params())
	sv, err := solver.New(cfg, n, segs)
	if err != nil {
		return 0, fmt.Errorf("calib: %w", err)
	}
	sv.SetThreads(threads)
	w := append([]float32(nil), net.Params()...)
	g := append([]float32(nil), net.Grads()...)
	for i := 0; i < warmup; i++ {
		sv.Step(i, w, g)
	}
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		sv.Step(warmup+i, w, g)
	}
	return time.Since(t0) / time.Duration(iters), nil
}

// AddRate measures tensor.AddTo on two vectors of n float32 values and
// returns the float32 additions per second: the rate at which a parameter
// server or a reduction tree sums gradients. It repeats the add until at
// least minDur has passed (at least 3 times). n must be positive.
func AddRate(n int, minDur time.Duration) float64 {
	if n <= 0 {
		panic(fmt.Sprintf("calib: AddRate on %d values", n))
	}
	dst := make([]float32, n)
	src := make([]float32, n)
	for i := range src {
		src[i] = 1e-3
	}
	tensor.AddTo(dst, src) // fault the pages in
	reps := 0
	t0 := time.Now()
	var el time.Duration
	for reps < 3 || el < minDur {
		tensor.AddTo(dst, src)
		reps++
		el = time.Since(t0)
	}
	return float64(n) * float64(reps) / el.Seconds()
}
