// Package exact sums gradients so that the result does not depend on how
// the sum is split or ordered: the same float32 values summed on one worker
// or on any number of them, in any order, over any reduction tree, give
// the same bits.
//
// Floating-point addition is not associative, so a gradient summed over a
// batch of 64 by one worker and one summed as two halves of 32 on two
// workers differ in their last bits, and training amplifies the difference
// (issue 27). Here each value is rounded once, to a fixed grid, into a
// 64-bit integer; integer addition is associative, so every partition and
// every order of the same rounded values sums to the same integer.
//
// The grid of a parameter block is set by its weights, which every replica
// of a synchronous scheme holds bit for bit: Scale(w) is 2^(Shift-e), where
// 2^e bounds the block's largest weight (e at least MinExp). A value is
// g·Scale rounded to an integer, so the grid step is 2^-Shift of the
// largest weight (about 1.5e-11 of it) and a value of up to 2^(50-Shift)
// times the largest weight (16384 times) is held exactly; a larger one is
// clipped to that bound, and Add counts the clipped values.
//
// Sums travel between workers as float32 so that every transport,
// collective and accumulator can carry them unchanged: Encode writes each
// 64-bit integer as Limbs signed 16-bit digits, each in its own float32.
// Any float32 sum of up to MaxAddends such digit vectors is exact (every
// partial sum is an integer below 2^24), so a ring, a tree, a parameter
// server or MPI's own allreduce add them without rounding, and Decode
// recovers the exact integer sum.
package exact
