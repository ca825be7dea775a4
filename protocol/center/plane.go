package center

import "slices"

// Plane is a center's data: the weights, a weed-out round's sum, and,
// with clocked reads, the snapshot a pull returns and the pushes not yet
// in it. It carries out a Core's outputs (Grant, Close) and holds no
// lock and no clock: Local runs one under its lock in real time, the
// simulator's exact mode one in virtual time, each behind its own Core,
// so that the arithmetic of a pull, a push, the elastic exchange and a
// round exists once.
type Plane struct {
	w      []float32
	acc    []float32 // weed-out: the open round's sum
	update func(weights, grads []float32, iter int)
	values int64

	// Clocked reads: snap is the weights as of clock snapAt, and pending
	// the pushes made since, with the iteration each belongs to.
	clocked bool
	snap    []float32
	snapAt  int
	pending []taggedPush
	free    [][]float32 // spent pending buffers, for reuse
}

type taggedPush struct {
	iter, w int
	delta   []float32
}

// NewPlane returns the data of a center holding a copy of weights.
// update is the weed-out round's solver step (nil if the scheme has no
// rounds); clockedReads is Config.ClockedReads, from clock startIter.
func NewPlane(weights []float32, update func(weights, grads []float32, iter int), clockedReads bool, startIter int) *Plane {
	p := &Plane{w: append([]float32(nil), weights...), update: update, clocked: clockedReads}
	if clockedReads {
		p.snap = append([]float32(nil), weights...)
		p.snapAt = startIter
	}
	return p
}

// N is the number of weights.
func (p *Plane) N() int { return len(p.w) }

// Weights returns the center weights, the plane's own slice.
func (p *Plane) Weights() []float32 { return p.w }

// Values counts the float32 values that crossed the center's interface.
func (p *Plane) Values() int64 { return p.values }

// Readable is what a pull returns now: the weights, or with clocked
// reads the snapshot. The slice is the plane's own.
func (p *Plane) Readable() []float32 {
	if p.clocked {
		return p.snap
	}
	return p.w
}

// Pull carries out a granted pull into dst.
func (p *Plane) Pull(dst []float32) {
	copy(dst, p.Readable())
	p.values += int64(len(dst))
}

// Push carries out worker w's granted push of delta, which belongs to
// iteration iter (the Grant's Iter: the iteration w has not clocked yet).
func (p *Plane) Push(w, iter int, delta []float32) {
	addTo(p.w, delta)
	p.values += int64(len(delta))
	if !p.clocked {
		return
	}
	var buf []float32
	if k := len(p.free); k > 0 {
		buf, p.free = p.free[k-1], p.free[:k-1]
	} else {
		buf = make([]float32, len(delta))
	}
	copy(buf, delta)
	p.pending = append(p.pending, taggedPush{iter: iter, w: w, delta: buf})
}

// Elastic carries out a granted elastic exchange with x (EASGD): the
// center and x move toward each other by alpha·(x − c). count only
// counts it, for an exchange done without the plane's lock (hogwild).
func (p *Plane) Elastic(x []float32, alpha float32, count bool) {
	if !count {
		elastic(p.w, x, alpha)
	}
	p.values += 2 * int64(len(x))
}

// RoundAdd carries out a granted round's gradients: they join the open
// round's sum.
func (p *Plane) RoundAdd(grads []float32) {
	if p.acc == nil {
		p.acc = make([]float32, len(p.w))
	}
	addTo(p.acc, grads)
	p.values += int64(len(grads))
}

// Close carries out a Close output: round iter closed with n gradients;
// their mean goes through the update rule into the weights.
func (p *Plane) Close(n, iter int) {
	if n == 0 {
		return
	}
	inv := 1 / float32(n)
	for i := range p.acc {
		p.acc[i] *= inv
	}
	p.update(p.w, p.acc, iter)
	clear(p.acc)
}

// Settle moves the clocked snapshot up to the slowest active worker's
// clock, as core says (to every push once no worker is active): call it
// after carrying out each batch of the core's outputs.
func (p *Plane) Settle(core *Core) {
	if !p.clocked {
		return
	}
	m, any := core.Slowest()
	if !any {
		m = int(^uint(0) >> 1)
	}
	if m <= p.snapAt && any {
		return
	}
	// In (iteration, worker) order, so the snapshot does not depend on
	// the order the pushes arrived in.
	slices.SortStableFunc(p.pending, func(a, b taggedPush) int {
		if a.iter != b.iter {
			return a.iter - b.iter
		}
		return a.w - b.w
	})
	keep := p.pending[:0]
	for _, q := range p.pending {
		if q.iter < m {
			addTo(p.snap, q.delta)
			p.free = append(p.free, q.delta)
		} else {
			keep = append(keep, q)
		}
	}
	clear(p.pending[len(keep):])
	p.pending = keep
	if any {
		p.snapAt = m
	}
}

// elastic moves c toward x and x toward c by alpha·(x − c).
func elastic(c, x []float32, alpha float32) {
	x = x[:len(c)]
	for i, ci := range c {
		d := alpha * (x[i] - ci)
		c[i] = ci + d
		x[i] -= d
	}
}

func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}
