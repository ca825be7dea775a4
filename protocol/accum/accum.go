package accum

import (
	"context"
	"fmt"
	"sync"
)

// Shared is the accumulator of a group of workers in one process.
type Shared struct {
	workers int
	n       int

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a block completes
	bufs    [2][]float32
	blocks  [2]map[int]*block // by the block's first index
}

// block is one block's state in one of the two buffers.
type block struct {
	iter  int // the iteration the sum is of
	hi    int
	count int // workers added so far
}

// New returns an accumulator of n values for workers workers.
func New(workers, n int) (*Shared, error) {
	if workers < 1 || n < 1 {
		return nil, fmt.Errorf("accum: %d workers, %d values", workers, n)
	}
	s := &Shared{workers: workers, n: n, changed: make(chan struct{})}
	for p := range s.bufs {
		s.bufs[p] = make([]float32, n)
		s.blocks[p] = map[int]*block{}
	}
	return s, nil
}

func (s *Shared) check(lo, m int) error {
	if lo < 0 || m < 1 || lo > s.n-m {
		return fmt.Errorf("accum: block [%d,%d) outside [0,%d)", lo, lo+m, s.n)
	}
	return nil
}

// Add adds src into the sum of iteration iter's block starting at lo
// (len(src) values). The first worker of an iteration overwrites what the
// buffer held two iterations before.
func (s *Shared) Add(_ context.Context, iter, lo int, src []float32) error {
	if err := s.check(lo, len(src)); err != nil {
		return err
	}
	p := iter & 1
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blocks[p][lo]
	if b == nil {
		b = &block{iter: iter - 2}
		s.blocks[p][lo] = b
	}
	dst := s.bufs[p][lo : lo+len(src)]
	switch {
	case b.iter == iter && b.hi != lo+len(src):
		return fmt.Errorf("accum: block at %d added as [%d,%d) and [%d,%d) in iteration %d", lo, lo, b.hi, lo, lo+len(src), iter)
	case b.iter == iter:
		if b.count >= s.workers {
			return fmt.Errorf("accum: block [%d,%d) of iteration %d added %d times by %d workers", lo, b.hi, iter, b.count+1, s.workers)
		}
		for i, v := range src {
			dst[i] += v
		}
	case b.iter < iter:
		copy(dst, src)
		b.iter, b.hi, b.count = iter, lo+len(src), 0
	default:
		return fmt.Errorf("accum: block at %d added for iteration %d after iteration %d", lo, iter, b.iter)
	}
	b.count++
	if b.count == s.workers {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return nil
}

// Gather waits until every worker has added iteration iter's block
// starting at lo, then copies the sum into dst (len(dst) values).
func (s *Shared) Gather(ctx context.Context, iter, lo int, dst []float32) error {
	if err := s.check(lo, len(dst)); err != nil {
		return err
	}
	p := iter & 1
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if b := s.blocks[p][lo]; b != nil && b.iter == iter && b.count == s.workers {
			copy(dst, s.bufs[p][lo:lo+len(dst)])
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
	}
}
