package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/training/metrics"
)

// netComputer is a node.Computer over a model and its feeds.
type netComputer struct {
	// net is the net of the pass, and tops its inputs the feeds fill:
	// main's, or with shapes (feeds whose batches vary in shape), the
	// net of the batch's shapes, sharing main's weights and gradients.
	net    *model.Net
	main   *model.Net
	shapes *NetShapes
	feeds  []Feed
	tops   [][]*tensor.Blob
	ready  func(lo, hi int)
	phases *metrics.Phases
	// trace, when set, records the data and compute spans of the rank's
	// timeline track.
	trace func(name, cat string, start time.Time, dur time.Duration)
	// delay, when set, says how long to stall this iteration (a
	// straggler); straggled counts the stalls.
	delay     func() time.Duration
	straggled int64
	// iterSize is the number of forward/backward passes per Compute
	// (Caffe's iter_size); acc sums the gradients of the passes before
	// the last, and final marks the last pass, whose gradient hook adds
	// acc to each block, averages it and only then reports it ready.
	iterSize int
	acc      []float32
	final    bool
	// exact, when set (Config.Exact), replaces acc: each pass is one atom,
	// whose gradients are added to an exact sum; the final pass encodes
	// each block as it finishes and reports the block's digits ready.
	exact *exactSum
	// replicas, with a direct exact sum, compute the atoms side by side
	// (computeAtoms); nil to run them one after another.
	replicas []*atomReplica
	// With exact, atom is the index of this rank's next atom among its
	// passes (a resumed run starts at StartIter×iterSize), and rank and
	// world place it in the global batch (the loaders' slices): global
	// atom atom·world+rank. Each pass reseeds the net's random layers
	// with it, so that an atom's dropout masks do not depend on which
	// worker computes it.
	atom, rank, world int
	// keepOutputs makes Compute leave in outMean the mean, over its
	// passes, of every element of the net's outputs in order: the train
	// net's outputs of the iteration, which the Caffe log shows (a pass
	// may be one atom of the batch, or one of iter_size batches).
	keepOutputs bool
	outMean     []float64
	// reseed, when set, reseeds the pass's net with seedKey once the
	// pass has picked it (exact sums: an atom's masks).
	reseed  bool
	seedKey uint64
}

// feedTops returns net's input blobs for each of the feeds' tops.
func feedTops(net *model.Net, feeds []Feed) [][]*tensor.Blob {
	var out [][]*tensor.Blob
	for _, f := range feeds {
		tops := make([]*tensor.Blob, len(f.Tops))
		for i, name := range f.Tops {
			tops[i] = net.Input(name)
		}
		out = append(out, tops)
	}
	return out
}

// reshape points the computer at the net of the next batches' shapes
// (NetShapes), the main net's when they are its own; a no-op when no
// feed reshapes.
func (c *netComputer) reshape(ctx context.Context) error {
	if c.shapes == nil {
		return nil
	}
	net, err := c.shapes.Pick(ctx)
	if err != nil {
		return err
	}
	if net != c.net {
		c.net, c.tops = net, feedTops(net, c.feeds)
	}
	return nil
}

// beginOutputs starts the output means of a Compute.
func (c *netComputer) beginOutputs() {
	if !c.keepOutputs {
		return
	}
	n := 0
	for _, o := range c.net.Outputs() {
		n += o.Count()
	}
	if len(c.outMean) != n {
		c.outMean = make([]float64, n)
	}
	clear(c.outMean)
}

// addOutputs adds the outputs of a pass's forward.
func (c *netComputer) addOutputs() {
	if !c.keepOutputs {
		return
	}
	if c.shapes != nil {
		n := 0
		for _, o := range c.net.Outputs() {
			n += o.Count()
		}
		if n != len(c.outMean) {
			// A net of another input shape whose outputs are not
			// scalars: the log shows the first shape's.
			return
		}
	}
	i := 0
	for _, o := range c.net.Outputs() {
		for _, v := range o.Data {
			c.outMean[i] += float64(v)
			i++
		}
	}
}

// endOutputs turns the sums of k passes into means.
func (c *netComputer) endOutputs(k int) {
	for i := range c.outMean {
		c.outMean[i] /= float64(k)
	}
}

func newNetComputer(net *model.Net, feeds []Feed) *netComputer {
	c := &netComputer{net: net, main: net, feeds: feeds, tops: feedTops(net, feeds), phases: metrics.NewPhases(PhaseNames...)}
	net.SetGradHook(func(blocks []int) {
		if !c.final {
			return
		}
		all := net.Blocks()
		if e := c.exact; e != nil {
			for _, bi := range blocks {
				e.add(bi, net.Grads())
				lo, hi := e.encode(bi)
				if c.ready != nil {
					c.ready(lo, hi)
				}
			}
			return
		}
		for _, bi := range blocks {
			b := all[bi]
			lo, hi := b.Off, b.Off+b.Len()
			if c.iterSize > 1 {
				g := net.Grads()[lo:hi]
				tensor.AddTo(g, c.acc[lo:hi])
				tensor.Scale(1/float32(c.iterSize), g)
			}
			if c.ready != nil {
				c.ready(lo, hi)
			}
		}
	})
	return c
}

// Compute fills the inputs, runs forward and backward, and stops on a
// non-finite loss before anything is updated. With iter_size k > 1 it does
// so k times, each pass on the next batch, and leaves in the net's
// gradient the mean of the k passes' gradients (Caffe accumulates them and
// scales by 1/k before the update); the loss returned is the mean loss.
// Blocks are reported ready only in the last pass, once they hold the mean.
func (c *netComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	k := max(c.iterSize, 1)
	if c.exact != nil {
		return c.computeExact(ctx, ready, k)
	}
	c.beginOutputs()
	defer c.endOutputs(k)
	if k > 1 && len(c.acc) != len(c.net.Grads()) {
		c.acc = make([]float32, len(c.net.Grads()))
	}
	var sum float64
	for pass := range k {
		loss, err := c.pass(ctx, ready, pass == k-1, pass == 0)
		if err != nil {
			return loss, err
		}
		sum += loss
		if pass < k-1 {
			if pass == 0 {
				copy(c.acc, c.net.Grads())
			} else {
				tensor.AddTo(c.acc, c.net.Grads())
			}
		}
	}
	c.phases.Iter()
	return sum / float64(k), nil
}

// computeExact is Compute with Config.Exact: k atoms, each one pass whose
// gradients join the exact sum.
func (c *netComputer) computeExact(ctx context.Context, ready func(lo, hi int), k int) (float64, error) {
	c.beginOutputs()
	defer c.endOutputs(k)
	if len(c.replicas) > 1 && k > 1 {
		return c.computeAtoms(ctx, ready, k)
	}
	e := c.exact
	e.begin(c.net.Params())
	e.atoms = k * max(c.world, 1)
	var sum float64
	for pass := range k {
		last := pass == k-1
		c.reseed, c.seedKey = true, uint64(c.atom*max(c.world, 1)+c.rank)
		c.atom++
		loss, err := c.pass(ctx, ready, last, pass == 0)
		if err != nil {
			return loss, err
		}
		sum += loss
		if !last {
			e.addAll(c.net.Grads())
		}
	}
	// Blocks backward did not report (none do today) are encoded now.
	return c.endExact(ready, c.net.Grads(), sum, k)
}

// endExact ends an exact Compute: each block not encoded yet joins the
// sum (from grads, when given: the last pass's gradients) and is encoded
// and reported ready; it returns the mean loss of the k passes, or the
// sum's error.
func (c *netComputer) endExact(ready func(lo, hi int), grads []float32, sum float64, k int) (float64, error) {
	e := c.exact
	for i := range e.blocks {
		if e.done[i] {
			continue
		}
		if grads != nil {
			e.add(i, grads)
		}
		lo, hi := e.encode(i)
		if ready != nil {
			ready(lo, hi)
		}
	}
	c.phases.Iter()
	if e.err != nil {
		return sum / float64(k), e.err
	}
	return sum / float64(k), nil
}

// straggle stalls this iteration as long as the straggler's delay says
// (Config.Straggle), counting the stall.
func (c *netComputer) straggle(ctx context.Context) error {
	if c.delay == nil {
		return nil
	}
	d := c.delay()
	if d <= 0 {
		return nil
	}
	c.straggled++
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pass is one forward/backward pass of Compute; last says whether it is
// the pass whose gradients are final, first whether a straggler's delay
// applies.
func (c *netComputer) pass(ctx context.Context, ready func(lo, hi int), last, first bool) (float64, error) {
	t0 := time.Now()
	if err := c.reshape(ctx); err != nil {
		return 0, err
	}
	if c.reseed {
		c.net.Reseed(c.seedKey)
		c.reseed = false
	}
	for i, f := range c.feeds {
		if err := f.Source.Fill(ctx, c.tops[i]); err != nil {
			return 0, err
		}
	}
	t1 := c.phases.Since(PhaseData, t0)
	if c.trace != nil {
		c.trace("data", "data", t0, t1.Sub(t0))
	}
	if first {
		if err := c.straggle(ctx); err != nil {
			return 0, err
		}
	}
	loss := c.net.Forward()
	c.addOutputs()
	t2 := c.phases.Since(PhaseForward, t1)
	if c.trace != nil {
		c.trace("forward", "compute", t1, t2.Sub(t1))
	}
	if err := lossDiverged(c.net, loss); err != nil {
		return loss, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err // aborted (weedout's restart) or cancelled
	}
	c.ready, c.final = ready, last
	c.net.Backward()
	c.ready, c.final = nil, false
	if err := c.net.Err(); err != nil {
		return loss, err
	}
	t3 := c.phases.Since(PhaseBackward, t2)
	if c.trace != nil {
		c.trace("backward", "compute", t2, t3.Sub(t2))
	}
	return loss, nil
}

func fill(ctx context.Context, net *model.Net, f Feed) error {
	tops := make([]*tensor.Blob, len(f.Tops))
	for i, name := range f.Tops {
		tops[i] = net.Input(name)
	}
	return f.Source.Fill(ctx, tops)
}

// lossDiverged is the error for a non-finite loss of net's forward, naming
// the first non-finite value; nil for a finite loss.
func lossDiverged(net *model.Net, loss float64) error {
	if err := net.Err(); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if !math.IsNaN(loss) && !math.IsInf(loss, 0) {
		return nil
	}
	where := net.NonFinite()
	if where == "" {
		where = "the loss itself"
	}
	return fmt.Errorf("%w: loss is %v; first non-finite value: %s (the last good snapshot, if any, is kept; lower base_lr or check the data)", ErrDiverged, loss, where)
}
