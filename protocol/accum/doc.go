// Package accum is TRL/Caffe's gradient accumulator (Alg. 6–7): one
// buffer of global gradients that the workers of one process add their
// layer gradients into while backward runs, and from which each worker
// copies the sum back once every worker has added that layer.
//
// The canonical use, by each worker w of an iteration it, for each block
// [lo,hi) as backward finishes it:
//
//	acc.Add(ctx, it, lo, grads[lo:hi])     // Alg. 7: accumulate, under the block's lock
//	acc.Gather(ctx, it, lo, grads[lo:hi])  // Alg. 6 lines 7–10: wait for every worker, copy back
//
// Two buffers alternate by iteration parity, so a worker may start adding
// iteration it+1 while a slower one still gathers it. A Shared is safe for
// concurrent use.
package accum
