package centertest

import (
	"context"

	"dsgd/protocol/center"
)

// PerWorker is a center.Center that hands worker w's calls to Conns[w]
// (an observer's to Conns[0]): one connection per worker, as a run
// deploys a client whose calls are serialised on one connection
// (ps.Client).
type PerWorker struct {
	// Conns holds a center per worker.
	Conns []center.Center
}

var _ center.Center = (*PerWorker)(nil)

func (p *PerWorker) of(w int) center.Center {
	if w >= 0 && w < len(p.Conns) {
		return p.Conns[w]
	}
	// An unknown worker goes to connection 0, whose center refuses it.
	return p.Conns[0]
}

// Join implements center.Center.
func (p *PerWorker) Join(ctx context.Context, w int) (int, error) { return p.of(w).Join(ctx, w) }

// Pull implements center.Center.
func (p *PerWorker) Pull(ctx context.Context, w int, dst []float32) error {
	return p.of(w).Pull(ctx, w, dst)
}

// Push implements center.Center.
func (p *PerWorker) Push(ctx context.Context, w int, delta []float32) error {
	return p.of(w).Push(ctx, w, delta)
}

// Elastic implements center.Center.
func (p *PerWorker) Elastic(ctx context.Context, w int, x []float32, alpha float32) error {
	return p.of(w).Elastic(ctx, w, x, alpha)
}

// Round implements center.Center.
func (p *PerWorker) Round(ctx context.Context, w, iter int, grads []float32) (int, bool, error) {
	return p.of(w).Round(ctx, w, iter, grads)
}

// Closed implements center.Center.
func (p *PerWorker) Closed(ctx context.Context, w, iter int) (int, error) {
	return p.of(w).Closed(ctx, w, iter)
}

// Clock implements center.Center.
func (p *PerWorker) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	return p.of(w).Clock(ctx, w, iter, s)
}

// Leave implements center.Center.
func (p *PerWorker) Leave(ctx context.Context, w int, cause error) error {
	return p.of(w).Leave(ctx, w, cause)
}
