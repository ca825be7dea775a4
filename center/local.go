package center

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Config configures a Local center.
type Config struct {
	// Workers is the number of workers, ids 0..Workers-1.
	Workers int
	// Weights are the initial center weights; NewLocal copies them.
	Weights []float32
	// Policy serialises elastic exchanges (FCFS by default).
	Policy Policy
	// Interval is, under RoundRobin, the iterations of one turn (EASGD's
	// τ; 0 counts as 1): a turn passes on with the Clock of a worker's
	// τ-th iteration, counted from StartIter.
	Interval int
	// Finish is the aligned-termination rule; MaxIter is the iteration
	// count it compares against.
	Finish  Finish
	MaxIter int
	// StartIter is every worker's initial count in the control area (a
	// resumed run).
	StartIter int
	// Deadline is how long a weed-out round waits after its first
	// gradients arrive for the rest (0: until every live worker is in).
	Deadline time.Duration
	// Update applies a closed weed-out round's mean gradients to the
	// center weights at iteration iter (the solver step). Round fails
	// without it.
	Update func(weights, grads []float32, iter int)
	// ClockedReads makes Pull return the weights as of the slowest live
	// worker's clock m: every push made in an iteration before m and
	// none made after. A push belongs to the iteration its worker has not
	// yet clocked. This is SSP's read with s = 0 (Petuum's server serves
	// a table once every worker has clocked): BSP's weights, whatever
	// the timing. Without it a pull sees every push so far.
	ClockedReads bool
}

// Stats counts what a center has done.
type Stats struct {
	Pulls, Pushes, Exchanges int64
	// Rounds closed, and gradients dropped (weed-out): for each round,
	// the active workers not in it when it closed (their gradients come
	// late, or their worker restarts without them).
	Rounds, Dropped int64
	// Waits counts Clock calls that had to wait for a slower worker (SSP).
	Waits int64
	// Values counts the float32 values that crossed the center's
	// interface, both ways: N per pull, push or round, 2N per exchange.
	Values int64
}

// Local is the in-process center: every operation is a method call on
// shared memory. It is safe for concurrent use by all workers.
type Local struct {
	cfg Config

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	w       []float32
	clocks  []int  // control area: iterations each worker has completed
	live    []bool // joined and not left
	left    []bool // left after finishing (counts for FinishAverage)
	turn    int    // round-robin: whose exchange is next
	round   int    // weed-out: the open round
	acc     []float32
	in      []bool // weed-out: who is in the open round
	nIn     int
	timer   *time.Timer
	stats   Stats
	joined  []bool
	allLeft chan struct{} // closed once every worker has joined and finished

	// ClockedReads: snap is the weights as of clock snapAt, and pending
	// the pushes made since, with the iteration each belongs to.
	snap    []float32
	snapAt  int
	pending []taggedPush
	free    [][]float32 // spent pending buffers, for reuse
}

type taggedPush struct {
	iter, w int
	delta   []float32
}

// NewLocal returns a center holding a copy of cfg.Weights.
func NewLocal(cfg Config) (*Local, error) {
	switch {
	case cfg.Workers < 1:
		return nil, fmt.Errorf("center: %d workers", cfg.Workers)
	case len(cfg.Weights) == 0:
		return nil, errors.New("center: no initial weights")
	case cfg.Finish != FinishOwn && cfg.MaxIter <= 0:
		return nil, fmt.Errorf("center: finish rule %v needs MaxIter", cfg.Finish)
	}
	l := &Local{
		cfg:     cfg,
		changed: make(chan struct{}),
		w:       append([]float32(nil), cfg.Weights...),
		clocks:  make([]int, cfg.Workers),
		live:    make([]bool, cfg.Workers),
		left:    make([]bool, cfg.Workers),
		in:      make([]bool, cfg.Workers),
		joined:  make([]bool, cfg.Workers),
		allLeft: make(chan struct{}),
		round:   cfg.StartIter,
	}
	for i := range l.clocks {
		l.clocks[i] = cfg.StartIter
	}
	if cfg.ClockedReads {
		l.snap = append([]float32(nil), cfg.Weights...)
		l.snapAt = cfg.StartIter
	}
	return l, nil
}

// N is the number of parameters.
func (l *Local) N() int { return len(l.w) }

// Weights returns the center weights. The slice is the center's own:
// read it only while no worker runs (after the run, or for a test).
func (l *Local) Weights() []float32 { return l.w }

// Stats returns the counters so far.
func (l *Local) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Clocks returns a copy of the control area's iteration counts.
func (l *Local) Clocks() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.clocks...)
}

func (l *Local) check(w, n int) error {
	if w < 0 || w >= l.cfg.Workers {
		return fmt.Errorf("center: worker %d out of range [0,%d)", w, l.cfg.Workers)
	}
	if n >= 0 && n != len(l.w) {
		return fmt.Errorf("center: worker %d sent %d values, the center has %d", w, n, len(l.w))
	}
	return nil
}

// broadcast wakes every waiter; l.mu is held.
func (l *Local) broadcast() {
	l.settle()
	close(l.changed)
	l.changed = make(chan struct{})
}

// wait blocks, with l.mu held on entry and on return, until cond holds or
// ctx ends.
func (l *Local) wait(ctx context.Context, cond func() bool) error {
	for !cond() {
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
			l.mu.Lock()
		case <-ctx.Done():
			l.mu.Lock()
			return ctx.Err()
		}
	}
	return nil
}

// settle moves the clocked snapshot up to the slowest live worker's
// clock (to every push once no worker is live); l.mu is held.
func (l *Local) settle() {
	if !l.cfg.ClockedReads {
		return
	}
	m, any := l.minActive()
	if !any {
		m = int(^uint(0) >> 1)
	}
	if m <= l.snapAt && any {
		return
	}
	// In (iteration, worker) order, so the snapshot does not depend on
	// the order the pushes arrived in.
	slices.SortStableFunc(l.pending, func(a, b taggedPush) int {
		if a.iter != b.iter {
			return a.iter - b.iter
		}
		return a.w - b.w
	})
	keep := l.pending[:0]
	for _, p := range l.pending {
		if p.iter < m {
			addTo(l.snap, p.delta)
			l.free = append(l.free, p.delta)
		} else {
			keep = append(keep, p)
		}
	}
	clear(l.pending[len(keep):])
	l.pending = keep
	if any {
		l.snapAt = m
	}
}

// readable is the weights a pull returns; l.mu is held.
func (l *Local) readable() []float32 {
	if l.cfg.ClockedReads {
		return l.snap
	}
	return l.w
}

// Join implements Center.
func (l *Local) Join(ctx context.Context, w int) (int, error) {
	if err := l.check(w, -1); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live[w], l.left[w], l.joined[w] = true, false, true
	l.broadcast()
	return l.clocks[w], nil
}

// Pull implements Center. Under RoundRobin it waits for w's turn.
func (l *Local) Pull(ctx context.Context, w int, dst []float32) error {
	if w == Observer {
		if len(dst) != len(l.w) {
			return fmt.Errorf("center: an observer asked for %d values, the center has %d", len(dst), len(l.w))
		}
		l.mu.Lock()
		copy(dst, l.readable())
		l.mu.Unlock()
		return nil
	}
	if err := l.check(w, len(dst)); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Policy == RoundRobin {
		if err := l.wait(ctx, func() bool { l.skipGone(); return l.turn == w }); err != nil {
			return err
		}
	}
	copy(dst, l.readable())
	l.stats.Pulls++
	l.stats.Values += int64(len(dst))
	return nil
}

// Push implements Center.
func (l *Local) Push(ctx context.Context, w int, delta []float32) error {
	if err := l.check(w, len(delta)); err != nil {
		return err
	}
	l.mu.Lock()
	addTo(l.w, delta)
	if l.cfg.ClockedReads {
		// The push belongs to the iteration w has not clocked yet.
		var buf []float32
		if k := len(l.free); k > 0 {
			buf, l.free = l.free[k-1], l.free[:k-1]
		} else {
			buf = make([]float32, len(delta))
		}
		copy(buf, delta)
		l.pending = append(l.pending, taggedPush{iter: l.clocks[w], w: w, delta: buf})
	}
	l.stats.Pushes++
	l.stats.Values += int64(len(delta))
	l.mu.Unlock()
	return nil
}

// Elastic implements Center.
func (l *Local) Elastic(ctx context.Context, w int, x []float32, alpha float32) error {
	if err := l.check(w, len(x)); err != nil {
		return err
	}
	switch l.cfg.Policy {
	case Hogwild:
		// No lock: concurrent exchanges interleave element by element,
		// as Hogwild EASGD intends (SC17 5). The race is the algorithm.
		elastic(l.w, x, alpha)
		l.mu.Lock()
		l.stats.Exchanges++
		l.stats.Values += 2 * int64(len(x))
		l.mu.Unlock()
		return nil
	case RoundRobin:
		l.mu.Lock()
		defer l.mu.Unlock()
		if err := l.wait(ctx, func() bool { l.skipGone(); return l.turn == w }); err != nil {
			return err
		}
		elastic(l.w, x, alpha)
		l.stats.Exchanges++
		l.stats.Values += 2 * int64(len(x))
		return nil
	default:
		l.mu.Lock()
		elastic(l.w, x, alpha)
		l.stats.Exchanges++
		l.stats.Values += 2 * int64(len(x))
		l.mu.Unlock()
		return nil
	}
}

// skipGone moves the round-robin turn past workers that have left; l.mu
// is held.
func (l *Local) skipGone() {
	for i := 0; i < l.cfg.Workers && !l.active(l.turn); i++ {
		l.turn = (l.turn + 1) % l.cfg.Workers
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

// Round implements Center.
func (l *Local) Round(ctx context.Context, w, iter int, grads []float32) (int, bool, error) {
	if err := l.check(w, len(grads)); err != nil {
		return 0, false, err
	}
	if l.cfg.Update == nil {
		return 0, false, errors.New("center: weed-out rounds need an update rule")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case iter < l.round:
		// Counted as dropped when its round closed without it.
		return l.round, true, nil
	case iter > l.round:
		return 0, false, fmt.Errorf("center: worker %d handed in round %d, but round %d is open", w, iter, l.round)
	case l.in[w]:
		return 0, false, fmt.Errorf("center: worker %d handed in round %d twice", w, iter)
	}
	if l.acc == nil {
		l.acc = make([]float32, len(l.w))
	}
	addTo(l.acc, grads)
	l.stats.Values += int64(len(grads))
	l.in[w] = true
	l.nIn++
	if l.nIn == 1 && l.cfg.Deadline > 0 {
		r := l.round
		l.timer = time.AfterFunc(l.cfg.Deadline, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.round == r {
				l.closeRound()
			}
		})
	}
	if l.nIn >= l.liveCount() {
		l.closeRound()
	}
	if err := l.wait(ctx, func() bool { return l.round > iter }); err != nil {
		return 0, false, err
	}
	return l.round, false, nil
}

// Closed implements Center.
func (l *Local) Closed(ctx context.Context, w, iter int) (int, error) {
	if err := l.check(w, -1); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.wait(ctx, func() bool { return l.round > iter }); err != nil {
		return 0, err
	}
	return l.round, nil
}

// active reports whether worker w holds back turns, rounds and SSP: it
// has joined and not left, or has not joined yet (a worker that is still
// starting is not gone); l.mu is held.
func (l *Local) active(w int) bool { return l.live[w] || !l.joined[w] }

func (l *Local) liveCount() int {
	n := 0
	for w := range l.live {
		if l.active(w) {
			n++
		}
	}
	return n
}

// closeRound applies the mean of the round's gradients and opens the
// next; l.mu is held.
func (l *Local) closeRound() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	// Every active worker not in the round missed it: its gradients are
	// dropped, whether they come late or their worker restarts.
	l.stats.Dropped += int64(max(l.liveCount()-l.nIn, 0))
	if l.nIn > 0 {
		inv := 1 / float32(l.nIn)
		for i := range l.acc {
			l.acc[i] *= inv
		}
		l.cfg.Update(l.w, l.acc, l.round)
		clear(l.acc)
	}
	clear(l.in)
	l.nIn = 0
	l.round++
	l.stats.Rounds++
	l.broadcast()
}

// Clock implements Center.
func (l *Local) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	if err := l.check(w, -1); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if iter+1 > l.clocks[w] {
		l.clocks[w] = iter + 1
		l.broadcast()
	}
	if l.cfg.Policy == RoundRobin && l.turn == w && (iter+1-l.cfg.StartIter)%max(l.cfg.Interval, 1) == 0 {
		l.turn = (l.turn + 1) % l.cfg.Workers
		l.broadcast()
	}
	if s >= 0 {
		waited := false
		err := l.wait(ctx, func() bool {
			if l.stop() || l.clocks[w]-l.minLive() <= s {
				return true
			}
			waited = true
			return false
		})
		if waited {
			l.stats.Waits++
		}
		if err != nil {
			return false, err
		}
	}
	return l.stop(), nil
}

// minLive is the slowest live worker's count (the caller's own when it is
// alone); l.mu is held.
func (l *Local) minLive() int {
	m, _ := l.minActive()
	return m
}

// minActive is the slowest active worker's count, and whether any worker
// is active; l.mu is held.
func (l *Local) minActive() (int, bool) {
	m := -1
	for i, c := range l.clocks {
		if l.active(i) && (m < 0 || c < m) {
			m = c
		}
	}
	if m < 0 {
		return 0, false
	}
	return m, true
}

// stop applies the finish rule; l.mu is held.
func (l *Local) stop() bool {
	max := l.cfg.MaxIter
	switch l.cfg.Finish {
	case FinishMaster:
		return l.clocks[0] >= max
	case FinishFirst:
		for _, c := range l.clocks {
			if c >= max {
				return true
			}
		}
	case FinishAverage:
		sum := 0
		for _, c := range l.clocks {
			sum += c
		}
		return sum >= max*len(l.clocks)
	}
	return false
}

// Leave implements Center.
func (l *Local) Leave(ctx context.Context, w int, cause error) error {
	if err := l.check(w, -1); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live[w] = false
	l.left[w] = cause == nil
	if l.nIn > 0 && l.nIn >= l.liveCount() {
		l.closeRound()
	}
	l.broadcast()
	if !slices.Contains(l.left, false) {
		select {
		case <-l.allLeft:
		default:
			close(l.allLeft)
		}
	}
	return nil
}

// Finished is closed once every worker has left after finishing its run;
// a server may stop then.
func (l *Local) Finished() <-chan struct{} { return l.allLeft }

func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}
