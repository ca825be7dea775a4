package sim

import (
	"fmt"

	"dsgd/engine/tensor"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// MaxExactRanks is the most ranks (workers, plus a parameter server or a
// master) a run with Exact may have: every rank holds its own buffers.
const MaxExactRanks = 64

// Exact makes the simulator carry out every action's arithmetic on real
// buffers, as node.Rank does, for small runs (at most MaxExactRanks
// ranks), so that the numbers a scheme produces can be checked against
// a real run. Each rank holds Params (a copy of Init), Grads and, from
// the first time its scheme names one, the scratch buffers, zeroed.
//
// When each action's data moves, in virtual time:
//   - Compute calls Grad when it starts, reading Params then and writing
//     all of Grads at once; its loss answers ComputeDone.
//   - Scale, Axpy, Copy and Update act when the rank's loop runs them,
//     with package tensor's arithmetic (node's).
//   - A Send and every message of a collective carry the data as it was
//     when the send was issued; a receive copies it in, or adds it
//     (tensor.AddTo), when it is received. Collectives run their real
//     schedules (ring allreduces message by message), so every sum is
//     formed in the executor's order and a synchronous scheme's weights
//     are bitwise node's.
//   - The center's data is a center.Plane driven by the server's own
//     center.Core (the one that decides turns, rounds, SSP and the
//     finish rule in virtual time), as center.Local drives its Plane:
//     Pull copies the center when the core grants it and the copy lands
//     in the worker's range when the reply arrives; Push, Elastic and
//     Round carry the worker's range as it was when issued, and are
//     carried out when granted; Elastic's updated weights land when its
//     reply arrives. A round adds each in-time gradient when granted and,
//     when it closes, the plane applies the mean through CenterUpdate.
//     A non-finite update is refused by the core, naming the worker.
//   - hogwild's workers share worker 0's Params, as the trainer's do.
type Exact struct {
	// Init is the initial weights (len Model.Params()), copied to every
	// rank and to the center.
	Init []float32
	// Grad computes a worker's gradients into grads from params and
	// returns the loss. call counts the rank's earlier Computes (its
	// iteration unless a weed-out round dropped it).
	Grad func(rank, call int, params, grads []float32) float64
	// Update is rank's solver step of iteration iter (each rank keeps its
	// own solver state).
	Update func(rank, iter int, params, grads []float32)
	// CenterUpdate is the solver step a weed-out center applies to its
	// weights with a closed round's mean gradients (center.Config.Update);
	// only weedout needs it.
	CenterUpdate func(weights, grads []float32, iter int)
}

// validate checks an Exact config against the run.
func (e *Exact) validate(sc scheme.Config, ranks, n int) error {
	switch {
	case ranks > MaxExactRanks:
		return fmt.Errorf("sim: exact arithmetic runs at most %d ranks; %s with %d workers has %d (leave Exact nil to simulate time only)",
			MaxExactRanks, sc.Name, sc.Workers, ranks)
	case len(e.Init) != n:
		return fmt.Errorf("sim: exact arithmetic: %d initial weights for a model of %d parameters", len(e.Init), n)
	case e.Grad == nil || e.Update == nil:
		return fmt.Errorf("sim: exact arithmetic needs Grad and Update")
	case sc.Info().CenterSolver && e.CenterUpdate == nil:
		return fmt.Errorf("sim: exact weedout needs CenterUpdate, the center's solver step")
	}
	return nil
}

// exactState is a run's arithmetic: the center's data, when the scheme
// has a center.
type exactState struct {
	cfg   *Exact
	plane *center.Plane
}

// newExact sets up every driver's buffers and the center's data.
func (s *sim) newExact() error {
	e := s.cfg.Exact
	s.ex = &exactState{cfg: e}
	for _, d := range s.drivers {
		d.bufs[scheme.Params] = append([]float32(nil), e.Init...)
		d.bufs[scheme.Grads] = make([]float32, len(e.Init))
		if s.sc.Info().SharedWeights && d.rank > 0 {
			d.bufs[scheme.Params] = s.drivers[0].bufs[scheme.Params]
		}
	}
	if s.srv != nil {
		s.ex.plane = center.NewPlane(e.Init, e.CenterUpdate, s.sc.ClockedReads(), s.sc.StartIter)
	}
	return nil
}

// slice is the rank's range r, allocating a scratch buffer the first
// time it is named, as node.Rank does.
func (d *driver) slice(r scheme.Range) []float32 {
	b := &d.bufs[r.Buf]
	if *b == nil {
		*b = make([]float32, len(d.bufs[scheme.Params]))
	}
	return (*b)[r.Lo:r.Hi]
}

// snapshot is a copy of the rank's range r as it is now (exact mode), or
// nil.
func (d *driver) snapshot(r scheme.Range) []float32 {
	if d.s.ex == nil {
		return nil
	}
	return append([]float32(nil), d.slice(r)...)
}

// land copies or adds data received into the rank's range r (exact mode).
func (d *driver) land(r scheme.Range, data []float32, add bool) {
	if d.s.ex == nil {
		return
	}
	dst := d.slice(r)
	if len(data) != len(dst) {
		d.s.fail(fmt.Errorf("sim: rank %d received %d values into %v[%d:%d]", d.rank, len(data), r.Buf, r.Lo, r.Hi))
		return
	}
	if add {
		tensor.AddTo(dst, data)
		return
	}
	copy(dst, data)
}

// apply carries out a local action's arithmetic (exact mode).
func (d *driver) apply(a scheme.Action) {
	if a.Arith(d.slice, vecOps) {
		return
	}
	if a.Op == scheme.Update {
		d.s.ex.cfg.Update(d.rank, a.Iter, d.bufs[scheme.Params], d.bufs[scheme.Grads])
	}
}

// vecOps are the engine's kernels for the local actions' arithmetic, as
// the real driver runs them.
var vecOps = scheme.VecOps{Scale: tensor.Scale, Axpy: tensor.Axpy}

// grad runs the rank's gradient computation (exact mode).
func (d *driver) grad() float64 {
	loss := d.s.ex.cfg.Grad(d.rank, d.computes, d.bufs[scheme.Params], d.bufs[scheme.Grads])
	d.computes++
	return loss
}

// The center's data work, each called when the server's core grants a
// request (see server.run); nil without exact arithmetic.

func (x *exactState) pull() []float32 {
	if x == nil {
		return nil
	}
	out := make([]float32, x.plane.N())
	x.plane.Pull(out)
	return out
}

func (x *exactState) push(o center.Output, delta []float32) {
	if x != nil {
		x.plane.Push(o.W, o.Iter, delta)
	}
}

func (x *exactState) elastic(xs []float32, alpha float32) {
	if x != nil {
		x.plane.Elastic(xs, alpha, false)
	}
}

func (x *exactState) roundAdd(grads []float32) {
	if x != nil {
		x.plane.RoundAdd(grads)
	}
}

func (x *exactState) roundClose(n, round int) {
	if x != nil {
		x.plane.Close(n, round)
	}
}

// settle moves the clocked snapshot after the core's outputs ran.
func (x *exactState) settle(core *center.Core) {
	if x != nil && x.plane != nil {
		x.plane.Settle(core)
	}
}

// refuse is what the center finds wrong with an update's values (exact
// mode; "" otherwise): the core refuses it, naming the worker.
func (x *exactState) refuse(what string, values []float32) string {
	if x == nil || values == nil {
		return ""
	}
	return center.Inspect(what, values, 1, 0)
}
