package ps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"dsgd/protocol/center"
)

// Sharded is a center.Center over several Centers, shard i owning the
// contiguous parameter range [Bounds[i], Bounds[i+1]). Every call goes to
// all shards in parallel, each with its range of the vector; results
// combine as: Join's iteration is the smallest, Round's next the largest
// and dropped any shard's, Clock's stop any shard's. Errors name the
// shard. It is safe for concurrent use when its shards are.
type Sharded struct {
	parts  []center.Center
	bounds []int
}

var _ center.Center = (*Sharded)(nil)

// EvenBounds splits n parameters into k contiguous ranges whose sizes
// differ by at most one: range i is [b[i], b[i+1]).
func EvenBounds(n, k int) []int {
	if k < 1 || n < k {
		panic(fmt.Sprintf("ps: cannot split %d parameters into %d shards", n, k))
	}
	b := make([]int, k+1)
	for i := range b {
		b[i] = i * n / k
	}
	return b
}

// NewSharded returns a Center over parts, part i owning [bounds[i],
// bounds[i+1]); bounds must start at 0 and increase strictly, with one
// more entry than parts.
func NewSharded(parts []center.Center, bounds []int) (*Sharded, error) {
	if len(parts) == 0 || len(bounds) != len(parts)+1 {
		return nil, fmt.Errorf("ps: %d shards with %d bounds, need one more bound than shards", len(parts), len(bounds))
	}
	if bounds[0] != 0 {
		return nil, fmt.Errorf("ps: shard bounds start at %d, not 0", bounds[0])
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			return nil, fmt.Errorf("ps: shard %d has the empty or reversed range [%d,%d)", i-1, bounds[i-1], bounds[i])
		}
	}
	return &Sharded{parts: append([]center.Center(nil), parts...), bounds: append([]int(nil), bounds...)}, nil
}

// DialSharded dials a parameter server per address, in order; each
// serves the next range of the parameters, as long as it says it holds.
// Close closes every connection.
func DialSharded(ctx context.Context, addrs []string, cfg ClientConfig) (*Sharded, error) {
	parts := make([]center.Center, 0, len(addrs))
	bounds := []int{0}
	for _, a := range addrs {
		c, err := Dial(ctx, a, cfg)
		if err != nil {
			for _, p := range parts {
				p.(*Client).Close()
			}
			return nil, err
		}
		parts = append(parts, c)
		bounds = append(bounds, bounds[len(bounds)-1]+c.N())
	}
	return NewSharded(parts, bounds)
}

// N returns the total number of parameters.
func (s *Sharded) N() int { return s.bounds[len(s.bounds)-1] }

// Bounds returns the shard boundaries (do not modify).
func (s *Sharded) Bounds() []int { return s.bounds }

// Close closes every shard that is an io.Closer and returns the errors.
func (s *Sharded) Close() error {
	var errs []error
	for _, p := range s.parts {
		if c, ok := p.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// each runs f on every shard in parallel (the first on this goroutine)
// and joins the errors, each naming its shard.
func (s *Sharded) each(f func(i int, c center.Center, lo, hi int) error) error {
	errs := make([]error, len(s.parts))
	var wg sync.WaitGroup
	for i := 1; i < len(s.parts); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, s.parts[i], s.bounds[i], s.bounds[i+1])
		}()
	}
	errs[0] = f(0, s.parts[0], s.bounds[0], s.bounds[1])
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("ps: shard %d [%d,%d): %w", i, s.bounds[i], s.bounds[i+1], err)
		}
	}
	return errors.Join(errs...)
}

func (s *Sharded) checkLen(what string, n int) error {
	if n != s.N() {
		return fmt.Errorf("ps: %s of %d values for %d sharded parameters", what, n, s.N())
	}
	return nil
}

// Join implements center.Center: the smallest of the shards' iterations.
func (s *Sharded) Join(ctx context.Context, w int) (int, error) {
	iters := make([]int, len(s.parts))
	err := s.each(func(i int, c center.Center, _, _ int) (err error) {
		iters[i], err = c.Join(ctx, w)
		return err
	})
	return slices.Min(iters), err
}

// Pull implements center.Center.
func (s *Sharded) Pull(ctx context.Context, w int, dst []float32) error {
	if err := s.checkLen("pull into a buffer", len(dst)); err != nil {
		return err
	}
	return s.each(func(_ int, c center.Center, lo, hi int) error { return c.Pull(ctx, w, dst[lo:hi]) })
}

// PullFinal implements center.FinalPuller: every shard's final weights.
func (s *Sharded) PullFinal(ctx context.Context, dst []float32) error {
	if err := s.checkLen("final pull into a buffer", len(dst)); err != nil {
		return err
	}
	return s.each(func(_ int, c center.Center, lo, hi int) error {
		fp, ok := c.(center.FinalPuller)
		if !ok {
			return fmt.Errorf("ps: shard [%d,%d) cannot wait for the end of the run", lo, hi)
		}
		return fp.PullFinal(ctx, dst[lo:hi])
	})
}

// Push implements center.Center.
func (s *Sharded) Push(ctx context.Context, w int, delta []float32) error {
	if err := s.checkLen("push of a delta", len(delta)); err != nil {
		return err
	}
	return s.each(func(_ int, c center.Center, lo, hi int) error { return c.Push(ctx, w, delta[lo:hi]) })
}

// Elastic implements center.Center.
func (s *Sharded) Elastic(ctx context.Context, w int, x []float32, alpha float32) error {
	if err := s.checkLen("elastic exchange of weights", len(x)); err != nil {
		return err
	}
	return s.each(func(_ int, c center.Center, lo, hi int) error { return c.Elastic(ctx, w, x[lo:hi], alpha) })
}

// Round implements center.Center: next is the largest of the shards',
// dropped is true when any shard dropped w's gradients.
func (s *Sharded) Round(ctx context.Context, w, iter int, grads []float32) (int, bool, error) {
	if err := s.checkLen("round of gradients", len(grads)); err != nil {
		return 0, false, err
	}
	next := make([]int, len(s.parts))
	dropped := make([]bool, len(s.parts))
	err := s.each(func(i int, c center.Center, lo, hi int) (err error) {
		next[i], dropped[i], err = c.Round(ctx, w, iter, grads[lo:hi])
		return err
	})
	return slices.Max(next), anyTrue(dropped), err
}

// Closed implements center.Center: the largest of the shards' next
// rounds, once every shard's round iter has closed.
func (s *Sharded) Closed(ctx context.Context, w, iter int) (int, error) {
	next := make([]int, len(s.parts))
	err := s.each(func(i int, c center.Center, _, _ int) (err error) {
		next[i], err = c.Closed(ctx, w, iter)
		return err
	})
	return slices.Max(next), err
}

// Clock implements center.Center: stop when any shard says stop.
func (s *Sharded) Clock(ctx context.Context, w, iter, st int) (bool, error) {
	stop := make([]bool, len(s.parts))
	err := s.each(func(i int, c center.Center, _, _ int) (err error) {
		stop[i], err = c.Clock(ctx, w, iter, st)
		return err
	})
	return anyTrue(stop), err
}

// Leave implements center.Center.
func (s *Sharded) Leave(ctx context.Context, w int, cause error) error {
	return s.each(func(_ int, c center.Center, _, _ int) error { return c.Leave(ctx, w, cause) })
}

func anyTrue(b []bool) bool {
	for _, v := range b {
		if v {
			return true
		}
	}
	return false
}
