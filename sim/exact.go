package sim

import (
	"context"
	"fmt"

	"dsgd/center"
	"dsgd/scheme"
	"dsgd/tensor"
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
//   - The center is a center.Local called at the virtual instant each
//     request reaches the server, in arrival order (which the server's
//     turns and rounds already model): Pull copies the center then and
//     the copy lands in the worker's range when the reply arrives; Push,
//     Elastic and Round carry the worker's range as it was when issued;
//     Elastic's updated weights land when its reply arrives. A round adds
//     each in-time gradient as it arrives and, when it closes, scales the
//     sum by 1/count and calls CenterUpdate, as center.Local does.
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

// exactState is a run's arithmetic: the center, when the scheme has one.
type exactState struct {
	cfg    *Exact
	center *center.Local
	acc    []float32 // the open round's sum
}

// newExact sets up every driver's buffers and the center.
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
		// FCFS: the server already serves the workers in turn, so no
		// call of the Local may wait.
		// The control calls are forwarded too (clock, join, leave, never
		// waiting), so that ssp's clocked reads see the same clocks.
		l, err := center.NewLocal(center.Config{Workers: s.srv.n, Weights: e.Init,
			ClockedReads: s.sc.ClockedReads()})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		s.ex.center = l
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
	switch a.Op {
	case scheme.Scale:
		tensor.Scale(a.Factor, d.slice(a.R))
	case scheme.Update:
		d.s.ex.cfg.Update(d.rank, a.Iter, d.bufs[scheme.Params], d.bufs[scheme.Grads])
	case scheme.Copy:
		copy(d.slice(a.R), d.slice(a.Src))
	case scheme.Axpy:
		tensor.Axpy(a.Factor, d.slice(a.Src), d.slice(a.R))
	}
}

// grad runs the rank's gradient computation (exact mode).
func (d *driver) grad() float64 {
	loss := d.s.ex.cfg.Grad(d.rank, d.computes, d.bufs[scheme.Params], d.bufs[scheme.Grads])
	d.computes++
	return loss
}

// The center's arithmetic, each called when its request reaches the
// server. None of them waits: the Local is FCFS.

func (x *exactState) pull(w int) []float32 {
	if x == nil {
		return nil
	}
	out := make([]float32, x.center.N())
	if err := x.center.Pull(context.Background(), w, out); err != nil {
		panic("sim: " + err.Error())
	}
	return out
}

// control forwards a Join, Clock (as done, never waiting) or Leave.
func (x *exactState) control(op scheme.Op, w, iter int) {
	if x == nil {
		return
	}
	ctx := context.Background()
	var err error
	switch op {
	case scheme.Join:
		_, err = x.center.Join(ctx, w)
	case scheme.Clock:
		_, err = x.center.Clock(ctx, w, iter, -1)
	case scheme.Leave:
		err = x.center.Leave(ctx, w, nil)
	}
	if err != nil {
		panic("sim: " + err.Error())
	}
}

func (x *exactState) push(w int, delta []float32) {
	if x == nil {
		return
	}
	if err := x.center.Push(context.Background(), w, delta); err != nil {
		panic("sim: " + err.Error())
	}
}

func (x *exactState) elastic(w int, xs []float32, alpha float32) {
	if x == nil {
		return
	}
	if err := x.center.Elastic(context.Background(), w, xs, alpha); err != nil {
		panic("sim: " + err.Error())
	}
}

// roundAdd adds in-time gradients to the open round's sum.
func (x *exactState) roundAdd(grads []float32) {
	if x == nil {
		return
	}
	if x.acc == nil {
		x.acc = make([]float32, x.center.N())
	}
	tensor.AddTo(x.acc, grads)
}

// roundClose applies the mean of n gradients to the center weights as
// center.Local's closeRound does.
func (x *exactState) roundClose(n, round int) {
	if x == nil || n == 0 {
		return
	}
	inv := 1 / float32(n)
	for i := range x.acc {
		x.acc[i] *= inv
	}
	x.cfg.CenterUpdate(x.center.Weights(), x.acc, round)
	clear(x.acc)
}
