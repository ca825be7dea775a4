// Package calib owns the measurements of this machine that the simulator
// (package sim) runs on: the real engine's per-layer forward and backward
// times and solver update time for a model, the float32 add rate that
// reductions run at, and the α (latency) and β (seconds per byte) of the
// real transports, fitted to a ping-pong.
//
// It measures; it does not simulate. The canonical use, as `dsgd simulate
// --calibrate` does it:
//
//	// net built with model.Build under the threads each worker would get,
//	// its input blobs filled with one batch:
//	m, err := calib.Model(ctx, net, calib.ModelOptions{Solver: &solverCfg, Threads: 1})
//	nw, err := calib.Network(ctx, "tcp", calib.NetworkOptions{})
//	res, err := sim.Run(sim.Config{Model: m, Network: nw, ...})
//
// To model P workers sharing this machine, Concurrent measures P copies
// at once and in lockstep, as `dsgd simulate --validate` does, and adds
// the compute jitter (Model.Jitter in package sim) that a synchronous
// exchange waits on.
//
// Time is the per-layer timing loop behind `dsgd time` (Caffe's `caffe
// time`); Model builds on it. Fit is the least-squares fit of t = α + β·bytes
// that Network applies to its ping-pong times.
//
// Every function runs on the calling goroutine (Network starts one more for
// the echoing rank) and holds no state between calls; measurements are
// wall-clock times and so vary from run to run.
package calib
