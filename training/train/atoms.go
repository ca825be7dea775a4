package train

import (
	"context"
	"sync"
	"time"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/engine/tensor/exact"
)

// atomReplica is one of the nets that compute a rank's atoms side by side
// (atomParallel): one thread, the rank's weights (model ShareWith), its own
// activations, gradients and integer sum.
type atomReplica struct {
	net  *model.Net
	tops [][]*tensor.Blob
	acc  []int64
	// What its pass of the round left: the loss, the outputs, the
	// forward and backward times, the first non-finite gradient's index
	// (or -1), the values clipped, and an error.
	loss     float64
	out      []float64
	fwd, bwd time.Duration
	bad      int
	clipped  int
	err      error
	atom     uint64
}

// serialAtoms, set by tests, keeps every rank's atoms one after another
// (the path a one-thread rank takes), to show what replicas change.
var serialAtoms bool

// atomParallel reports whether a rank may compute its atoms on separate
// one-thread replicas of its net instead of one after another on all its
// threads: only for nets whose passes do not touch shared state — no
// layer that updates its params in forward (BatchNorm's statistics) or
// carries state from one batch to the next (LSTM, RNN, and a Python layer,
// whose object may keep anything: a Python data layer's position in its
// data, which each replica's own instance would repeat). A replica computes
// an atom's gradient bit for bit as a one-thread worker does, so a rank
// with more threads gives the same bits as one with a single thread
// (which the layers alone do not: they sum a batch's weight gradients
// per thread's chunk). The blocks are reported ready once every atom is
// summed, not as the last pass's backward finishes them.
func atomParallel(spec model.Spec) bool {
	if len(BatchCoupled(spec)) > 0 {
		return false
	}
	for _, l := range spec.Layers {
		switch l.Config.(type) {
		case *layers.LSTMConfig, *layers.RNNConfig, *layers.BatchNormConfig:
			return false
		}
		if l.Config != nil && l.Config.Type() == "Python" {
			return false
		}
	}
	return true
}

// newAtomReplicas builds n one-thread replicas of net for c.
func newAtomReplicas(c *netComputer, spec model.Spec, shapes map[string]tensor.Shape, seed uint64, n int) ([]*atomReplica, error) {
	out := make([]*atomReplica, n)
	for i := range out {
		rn, err := model.Build(spec, shapes, model.Options{Phase: layers.Train, Threads: 1, Seed: seed, ShareWith: c.net, OwnGrads: true})
		if err != nil {
			return nil, err
		}
		r := &atomReplica{net: rn, acc: make([]int64, len(rn.Params()))}
		for _, f := range c.feeds {
			tops := make([]*tensor.Blob, len(f.Tops))
			for j, name := range f.Tops {
				tops[j] = rn.Input(name)
			}
			r.tops = append(r.tops, tops)
		}
		out[i] = r
	}
	return out, nil
}

// computeAtoms is computeExact on the replicas: the k atoms go round by
// round, one per replica; a round fills the replicas' inputs in atom
// order (the loaders read in sequence), then runs their passes at once,
// each adding its gradients into its own integer sum. The sums are then
// added (integers: any order gives the same) and every block's mean is
// written into the rank's gradients and reported ready. Losses and
// outputs are summed in atom order, as the passes one after another sum
// them, so the displayed numbers keep their bits too.
// computeExact has begun the output means and ends them.
func (c *netComputer) computeAtoms(ctx context.Context, ready func(lo, hi int), k int) (float64, error) {
	e := c.exact
	e.begin(c.net.Params())
	e.atoms = k
	for _, r := range c.replicas {
		clear(r.acc)
	}
	if err := c.straggle(ctx); err != nil {
		return 0, err
	}
	var sum float64
	for base := 0; base < k; base += len(c.replicas) {
		round := c.replicas[:min(len(c.replicas), k-base)]
		t0 := time.Now()
		for j, r := range round {
			for i, f := range c.feeds {
				if err := f.Source.Fill(ctx, r.tops[i]); err != nil {
					return 0, err
				}
			}
			r.atom = uint64((c.atom+j)*max(c.world, 1) + c.rank)
		}
		c.atom += len(round)
		t1 := c.phases.Since(PhaseData, t0)
		if c.trace != nil {
			c.trace("data", "data", t0, t1.Sub(t0))
		}
		var wg sync.WaitGroup
		for _, r := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.atomPass(ctx, e, r)
			}()
		}
		wg.Wait()
		t2 := time.Now()
		// The round's wall time, split as its passes split theirs.
		var fwd, bwd time.Duration
		for _, r := range round {
			fwd, bwd = fwd+r.fwd, bwd+r.bwd
		}
		wall := t2.Sub(t1)
		f := wall / 2
		if fwd+bwd > 0 {
			f = time.Duration(float64(wall) * float64(fwd) / float64(fwd+bwd))
		}
		c.phases.Add(PhaseForward, f)
		c.phases.Add(PhaseBackward, wall-f)
		if c.trace != nil {
			c.trace("forward", "compute", t1, f)
			c.trace("backward", "compute", t1.Add(f), wall-f)
		}
		for _, r := range round {
			if r.err != nil {
				return r.loss, r.err
			}
			sum += r.loss
			if c.keepOutputs {
				for i, v := range r.out {
					c.outMean[i] += v
				}
			}
			e.clipped += int64(r.clipped)
			if r.bad >= 0 && e.err == nil {
				e.err = e.nonFinite(r.bad, r.net.Grads())
			}
		}
	}
	// The replicas' sums into the rank's, then each block's mean.
	forChunks(e.pool, 0, len(e.acc), func(lo, hi int) {
		for _, r := range c.replicas {
			a := r.acc[lo:hi]
			for i := range a {
				e.acc[lo+i] += a[i]
			}
		}
	})
	return c.endExact(ready, nil, sum, k)
}

// atomPass runs replica r's pass on its atom and adds its gradients, on
// each block's grid, to r's sum; it leaves what happened in r.
func (c *netComputer) atomPass(ctx context.Context, e *exactSum, r *atomReplica) {
	r.err, r.bad, r.clipped, r.fwd, r.bwd = nil, -1, 0, 0, 0
	r.net.Reseed(r.atom)
	t0 := time.Now()
	r.loss = r.net.Forward()
	t1 := time.Now()
	r.fwd = t1.Sub(t0)
	if c.keepOutputs {
		r.out = r.out[:0]
		for _, o := range r.net.Outputs() {
			for _, v := range o.Data {
				r.out = append(r.out, float64(v))
			}
		}
	}
	if r.err = lossDiverged(r.net, r.loss); r.err != nil {
		return
	}
	if err := ctx.Err(); err != nil {
		r.err = err
		return
	}
	r.net.Backward()
	if err := r.net.Err(); err != nil {
		r.err = err
		return
	}
	g := r.net.Grads()
	for i, b := range e.blocks {
		lo, hi := b.Off, b.Off+b.Len()
		cl, at := exact.Add(r.acc[lo:hi], g[lo:hi], e.scale[i])
		r.clipped += cl
		if at >= 0 && r.bad < 0 {
			r.bad = lo + at
		}
	}
	r.bwd = time.Since(t1)
}
