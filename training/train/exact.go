package train

import (
	"fmt"
	"slices"
	"sync/atomic"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/engine/tensor/exact"
	"dsgd/protocol/scheme"
)

// exactSum is a rank's exact gradient sum (Config.Exact, issue 27): the
// gradients of the rank's atoms (the iter_size passes of Compute, each on
// one atom of the global batch) rounded once onto each block's grid and
// added as integers, and their encoding as float32 digits (exact.Encode),
// which the scheme reduces in place of the gradients. Integer sums do not
// depend on order or partition, so any worker count gives seq's bits.
type exactSum struct {
	pool   *tensor.Pool // the net's threads, idle between its layers
	blocks []model.Block
	scale  []float64 // per block, from the weights at the start of the iteration
	acc    []int64   // the rank's integer sum, per parameter
	buf    []float32 // exact.Limbs digits per parameter: what travels
	done   []bool    // blocks encoded in the final pass
	// direct, for a rank that reduces with nobody (one worker, no
	// server), is the net's gradient buffer: encode writes each block's
	// mean over the atoms there (exact.Mean, the bits decoding the digits
	// would give) instead of digits into buf, which is then nil.
	direct []float32
	atoms  int // the atoms of the iteration's sum (direct only)
	// clipped counts values beyond the grid's range (clipped, so the run
	// stays reproducible); err is the first non-finite gradient.
	clipped int64
	err     error
}

func newExactSum(net *model.Net, buf []float32, direct bool) *exactSum {
	n := len(net.Params())
	if direct {
		return &exactSum{pool: net.Pool(), blocks: net.Blocks(), scale: make([]float64, len(net.Blocks())), acc: make([]int64, n), direct: net.Grads(), done: make([]bool, len(net.Blocks()))}
	}
	if buf == nil {
		buf = make([]float32, exact.Limbs*n)
	}
	return &exactSum{pool: net.Pool(), blocks: net.Blocks(), scale: make([]float64, len(net.Blocks())), acc: make([]int64, n), buf: buf, done: make([]bool, len(net.Blocks()))}
}

// scales sets every block's grid from the weights: every replica holds the
// same weights, so every replica (and the parameter server) picks the same.
func (e *exactSum) scales(params []float32) {
	for i, b := range e.blocks {
		e.scale[i] = exact.Scale(params[b.Off : b.Off+b.Len()])
	}
}

// begin starts an iteration's sum.
func (e *exactSum) begin(params []float32) {
	e.scales(params)
	clear(e.acc)
	clear(e.done)
	e.err = nil
}

// add adds block i of one atom's gradients to the sum.
func (e *exactSum) add(i int, grads []float32) {
	b := e.blocks[i]
	e.addRange(i, b.Off, b.Off+b.Len(), grads)
}

// addAll adds every block of one atom's gradients to the sum.
func (e *exactSum) addAll(grads []float32) {
	e.split(0, len(e.acc), func(i, lo, hi int) { e.addRange(i, lo, hi, grads) })
}

// addRange adds grads[lo:hi], part of block i, to the sum, on the pool's
// threads.
func (e *exactSum) addRange(i, lo, hi int, grads []float32) {
	var clipped atomic.Int64
	var bad atomic.Int64
	bad.Store(-1)
	forChunks(e.pool, lo, hi, func(lo, hi int) {
		c, at := exact.Add(e.acc[lo:hi], grads[lo:hi], e.scale[i])
		clipped.Add(int64(c))
		if at >= 0 {
			bad.CompareAndSwap(-1, int64(lo+at))
		}
	})
	e.clipped += clipped.Load()
	if at := bad.Load(); at >= 0 && e.err == nil {
		e.err = e.nonFinite(int(at), grads)
	}
}

// nonFinite is the error for the non-finite gradient grads[at].
func (e *exactSum) nonFinite(at int, grads []float32) error {
	for _, b := range e.blocks {
		if at >= b.Off && at < b.Off+b.Len() {
			return fmt.Errorf("%w: the gradient of %s (layer %q) holds %v at index %d (the last good snapshot, if any, is kept; lower base_lr or check the data)", ErrDiverged, b.Name, b.Layer, grads[at], at-b.Off)
		}
	}
	return fmt.Errorf("%w: a gradient holds %v at index %d", ErrDiverged, grads[at], at)
}

// encode writes block i's sum as digits and returns their range in buf;
// with direct, it writes the block's mean gradient into the net's and
// returns its range there.
func (e *exactSum) encode(i int) (lo, hi int) {
	b := e.blocks[i]
	e.done[i] = true
	if e.direct != nil {
		forChunks(e.pool, b.Off, b.Off+b.Len(), func(lo, hi int) {
			exact.Mean(e.direct[lo:hi], e.acc[lo:hi], e.scale[i], e.atoms)
		})
		return b.Off, b.Off + b.Len()
	}
	forChunks(e.pool, b.Off, b.Off+b.Len(), func(lo, hi int) {
		exact.Encode(e.buf[exact.Limbs*lo:exact.Limbs*hi], e.acc[lo:hi])
	})
	return exact.Limbs * b.Off, exact.Limbs * (b.Off + b.Len())
}

// split runs fn over [lo, hi) cut at block boundaries.
func (e *exactSum) split(lo, hi int, fn func(i, lo, hi int)) {
	for i, b := range e.blocks {
		if l, h := max(lo, b.Off), min(hi, b.Off+b.Len()); l < h {
			fn(i, l, h)
		}
	}
}

// chunk is the least work worth a thread of its own (values).
const chunk = 1 << 14

// forChunks runs fn over [lo, hi) in contiguous pieces on the pool's
// threads (on the caller's alone when the range is small).
func forChunks(pool *tensor.Pool, lo, hi int, fn func(lo, hi int)) {
	n := hi - lo
	threads := 1
	if pool != nil {
		threads = min(pool.Threads(), max(1, n/chunk))
	}
	if threads <= 1 {
		fn(lo, hi)
		return
	}
	pool.For(n, threads, func(l, h, _ int) { fn(lo+l, lo+h) })
}

// decodeExact writes into grads the mean over atoms of the summed digits
// in buf, on the grids of params (the weights the sum was made against).
func decodeExact(pool *tensor.Pool, blocks []model.Block, params, grads, buf []float32, atoms int) {
	for _, b := range blocks {
		lo, hi := b.Off, b.Off+b.Len()
		s := exact.Scale(params[lo:hi])
		forChunks(pool, lo, hi, func(lo, hi int) {
			exact.Decode(grads[lo:hi], buf[exact.Limbs*lo:exact.Limbs*hi], s, atoms)
		})
	}
}

// DefaultAtom is the number of images per atom that exact summation uses
// unless told otherwise, for a global batch of global images of which
// each worker reads perWorker: the global batch is cut into gcd(global,
// 24) atoms, so that any worker count dividing that (1, 2, 3, 4, 6, 8,
// 12, 24 where the batch allows) reads whole atoms and gives the same
// bits; an atom that does not divide perWorker (more workers than that)
// is cut to gcd(atom, perWorker), the same bits as runs with that atom.
func DefaultAtom(global, perWorker int) int {
	if global <= 0 || perWorker <= 0 {
		return max(perWorker, 1)
	}
	return gcd(global/gcd(global, 24), perWorker)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// BatchCoupled says, one phrase per layer, which layers of spec compute
// one item's TRAIN output from other items of its batch, so that cutting
// the batch into atoms would change what they compute and exact summation
// keeps each worker's batch whole: BatchNorm on the batch's statistics,
// the recurrent layers (LSTM, RNN), whose batch's first axis is time,
// a Permute (SSD's) that moves the batch axis from first place, and SSD's
// MultiBoxLoss normalised by its batch's matched priors (VALID) or not at
// all (NONE), which the mean over atoms would change (FULL and BATCH_SIZE
// divide by a count per image, which it keeps).
func BatchCoupled(spec model.Spec) []string {
	var out []string
	for _, l := range spec.Layers {
		if c, ok := l.Config.(*layers.BatchNormConfig); ok && (c.UseGlobalStats == nil || !*c.UseGlobalStats) {
			out = append(out, fmt.Sprintf("BatchNorm %s normalises over each worker's batch", l.Name))
		} else if c, ok := l.Config.(*layers.PermuteConfig); ok && len(c.Order) > 0 && c.Order[0] != 0 {
			to := slices.Index(c.Order, 0)
			if to < 0 {
				to = len(c.Order) // the first of the axes the order leaves out
			}
			out = append(out, fmt.Sprintf("Permute %s moves the batch axis to axis %d", l.Name, to))
		} else if c, ok := l.Config.(*layers.MultiBoxLossConfig); ok && c.Normalization == layers.NormValid {
			out = append(out, fmt.Sprintf("MultiBoxLoss %s divides by the matched priors of its whole batch (normalization VALID)", l.Name))
		} else if ok && c.Normalization == layers.NormNone {
			out = append(out, fmt.Sprintf("MultiBoxLoss %s sums over its whole batch (normalization NONE)", l.Name))
		} else if l.Recurrent() {
			out = append(out, fmt.Sprintf("%s %s reads its batch's first axis as time steps", l.Config.Type(), l.Name))
		}
	}
	return out
}

// ExactCapable reports whether a run of cfg can sum its gradients exactly
// (Config.Exact): the synchronous schemes, whose reductions only add
// gradients (scheme.Info.Exact), and local-sgd averaging every iteration
// with a solver whose step is linear in the gradient (SGD or Nesterov,
// without clip_gradients), which then averages the gradients
// (scheme.Config.AverageGrads).
func ExactCapable(cfg Config) bool {
	in, err := scheme.Lookup(cfg.Named())
	if err != nil {
		return false
	}
	return in.Exact || localSGDAveragesGrads(cfg)
}

// localSGDAveragesGrads reports whether cfg is local-sgd with H = 1 and a
// solver linear in the gradient.
func localSGDAveragesGrads(cfg Config) bool {
	linear := cfg.Solver.Type == "" || cfg.Solver.Type == "SGD" || cfg.Solver.Type == "Nesterov"
	in := cfg.Info()
	return in.AveragesGrads && cfg.Interval <= 1 && linear && cfg.Solver.ClipGradients <= 0
}

// exactDirect reports whether a Config.Exact run's sums never leave their
// rank: one rank in all (one worker, no server), so the mean gradient is
// written from the integer sums straight into the net's gradients
// (exact.Mean), without the digits that only a reduction needs.
func (t *Trainer) exactDirect() bool {
	return t.cfg.Exact && t.schemeConfig(0).Ranks() == 1 && (t.cfg.Group == nil || t.cfg.Group.Size == 1)
}
