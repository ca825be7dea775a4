package train

import (
	"fmt"

	"dsgd/model"
	"dsgd/tensor/exact"
)

// exactSum is a rank's exact gradient sum (Config.Exact, issue 27): the
// gradients of the rank's atoms (the iter_size passes of Compute, each on
// one atom of the global batch) rounded once onto each block's grid and
// added as integers, and their encoding as float32 digits (exact.Encode),
// which the scheme reduces in place of the gradients. Integer sums do not
// depend on order or partition, so any worker count gives seq's bits.
type exactSum struct {
	blocks []model.Block
	scale  []float64 // per block, from the weights at the start of the iteration
	acc    []int64   // the rank's integer sum, per parameter
	buf    []float32 // exact.Limbs digits per parameter: what travels
	done   []bool    // blocks encoded in the final pass
	// clipped counts values beyond the grid's range (clipped, so the run
	// stays reproducible); err is the first non-finite gradient.
	clipped int64
	err     error
}

func newExactSum(net *model.Net, buf []float32) *exactSum {
	n := len(net.Params())
	if buf == nil {
		buf = make([]float32, exact.Limbs*n)
	}
	return &exactSum{blocks: net.Blocks(), scale: make([]float64, len(net.Blocks())), acc: make([]int64, n), buf: buf, done: make([]bool, len(net.Blocks()))}
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
	lo, hi := b.Off, b.Off+b.Len()
	c, bad := exact.Add(e.acc[lo:hi], grads[lo:hi], e.scale[i])
	e.clipped += int64(c)
	if bad >= 0 && e.err == nil {
		e.err = fmt.Errorf("%w: the gradient of %s (layer %q) holds %v at index %d (the last good snapshot, if any, is kept; lower base_lr or check the data)", ErrDiverged, b.Name, b.Layer, grads[lo+bad], bad)
	}
}

// encode writes block i's sum as digits and returns their range in buf.
func (e *exactSum) encode(i int) (lo, hi int) {
	b := e.blocks[i]
	e.done[i] = true
	exact.Encode(e.buf[exact.Limbs*b.Off:exact.Limbs*(b.Off+b.Len())], e.acc[b.Off:b.Off+b.Len()])
	return exact.Limbs * b.Off, exact.Limbs * (b.Off + b.Len())
}

// decode writes into grads the mean over atoms of the summed digits in
// buf, on the grids of params (the weights the sum was made against).
func decodeExact(blocks []model.Block, params, grads, buf []float32, atoms int) {
	for _, b := range blocks {
		lo, hi := b.Off, b.Off+b.Len()
		exact.Decode(grads[lo:hi], buf[exact.Limbs*lo:exact.Limbs*hi], exact.Scale(params[lo:hi]), atoms)
	}
}
