package harness

import (
	"cmp"
	"context"
	"slices"

	"dsgd/protocol/center"
)

// gate is one rank's way into the group's center. Every call waits at
// the gate until the harness lets it in: once the ranks are quiescent,
// the calls then waiting go in one at a time, by rank, each once the
// ranks are quiescent again (a round: every waiting rank makes one call),
// so the center sees its requests in an order that depends only on the
// script (the center's own order, among workers that call it at once,
// would depend on the goroutines' timing).
type gate struct {
	g    *group
	rank int
	c    center.Center
}

// entry is a center call waiting at a gate.
type entry struct {
	rank int
	op   string
	in   chan struct{} // closed when the call may go in
}

// wait holds a call until the harness lets it in or ctx ends; a call let
// in calls done when the center answers it.
func (gt gate) wait(ctx context.Context, op string) error {
	e := &entry{rank: gt.rank, op: op, in: make(chan struct{})}
	gt.g.mu.Lock()
	gt.g.gated = append(gt.g.gated, e)
	gt.g.mu.Unlock()
	select {
	case <-e.in:
		gt.g.mu.Lock()
		gt.g.inside[gt.rank] = op
		gt.g.mu.Unlock()
		return nil
	case <-ctx.Done():
		gt.g.mu.Lock()
		gt.g.gated = slices.DeleteFunc(gt.g.gated, func(o *entry) bool { return o == e })
		gt.g.mu.Unlock()
		return ctx.Err()
	}
}

// done records that rank's center call has returned.
func (gt gate) done() {
	gt.g.mu.Lock()
	defer gt.g.mu.Unlock()
	delete(gt.g.inside, gt.rank)
}

// waiting returns the center calls now waiting at their gates, by rank
// (and among one rank's, by op).
func (g *group) waiting() []*entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Clone(g.gated)
	slices.SortFunc(out, func(a, b *entry) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.op, b.op)) })
	return out
}

// admit lets center call e in, if it still waits, and records it as its
// rank's event.
func (g *group) admit(e *entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.gated)
	if g.gated = slices.DeleteFunc(g.gated, func(o *entry) bool { return o == e }); len(g.gated) == n {
		return
	}
	g.ranks[e.rank].events = append(g.ranks[e.rank].events, "center "+e.op)
	close(e.in)
}

func (gt gate) Join(ctx context.Context, w int) (int, error) {
	if err := gt.wait(ctx, "join"); err != nil {
		return 0, err
	}
	defer gt.done()
	return gt.c.Join(ctx, w)
}

func (gt gate) Pull(ctx context.Context, w int, dst []float32) error {
	if err := gt.wait(ctx, "pull"); err != nil {
		return err
	}
	defer gt.done()
	return gt.c.Pull(ctx, w, dst)
}

func (gt gate) Push(ctx context.Context, w int, delta []float32) error {
	if err := gt.wait(ctx, "push"); err != nil {
		return err
	}
	defer gt.done()
	return gt.c.Push(ctx, w, delta)
}

func (gt gate) Elastic(ctx context.Context, w int, x []float32, alpha float32) error {
	if err := gt.wait(ctx, "elastic"); err != nil {
		return err
	}
	defer gt.done()
	return gt.c.Elastic(ctx, w, x, alpha)
}

func (gt gate) Round(ctx context.Context, w, iter int, grads []float32) (int, bool, error) {
	if err := gt.wait(ctx, "round"); err != nil {
		return 0, false, err
	}
	defer gt.done()
	return gt.c.Round(ctx, w, iter, grads)
}

func (gt gate) Closed(ctx context.Context, w, iter int) (int, error) {
	if err := gt.wait(ctx, "closed"); err != nil {
		return 0, err
	}
	defer gt.done()
	return gt.c.Closed(ctx, w, iter)
}

func (gt gate) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	if err := gt.wait(ctx, "clock"); err != nil {
		return false, err
	}
	defer gt.done()
	return gt.c.Clock(ctx, w, iter, s)
}

func (gt gate) Leave(ctx context.Context, w int, cause error) error {
	if err := gt.wait(ctx, "leave"); err != nil {
		return err
	}
	defer gt.done()
	return gt.c.Leave(ctx, w, cause)
}
