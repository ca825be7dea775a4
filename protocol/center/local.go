package center

import (
	"context"
	"errors"
	"fmt"
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
	// MaxUpdateNorm, when > 0, refuses an update whose L2 norm exceeds
	// it: a push's delta, an exchange's α·(x − c), a round's gradients.
	// Non-finite updates are refused always.
	MaxUpdateNorm float64
	// Log, when set, receives every refused update's error (it names the
	// worker).
	Log func(error)
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
	// Refused counts updates refused as non-finite or too large.
	Refused int64
	// MaxLead is the most iterations a worker was ahead of the slowest
	// active one when its Clock returned (SSP keeps it <= s).
	MaxLead int
	// Staleness of the updates (pushes and elastic exchanges): the
	// updates the center took between a worker's last read (pull,
	// exchange or join) and its update. Stale sums them over the StaleN
	// updates measured; MaxStale is the largest.
	Stale, StaleN, MaxStale int64
	// Values counts the float32 values that crossed the center's
	// interface, both ways: N per pull, push or round, 2N per exchange.
	Values int64
}

// Local is the in-process center: a Core for the decisions, the weights
// in memory, and real time turned into the core's ticks (nanoseconds
// since NewLocal). It is safe for concurrent use by all workers: each
// call steps the core under one lock, carries out the outputs (its own
// and those that answer other workers' waiting calls) and waits for its
// reply.
type Local struct {
	cfg   Config
	start time.Time

	mu      sync.Mutex
	core    *Core
	data    *Plane
	w       []float32 // data's weights
	tag     int64
	waiting map[int64]*call
	spare   []*call
	allLeft chan struct{} // closed once every worker has joined and finished
}

// call is a request in flight: what its Grant works on (under l.mu) and
// where its Reply goes. Calls are reused (Local.spare), so that a
// center operation does not allocate.
type call struct {
	op    Op
	buf   []float32 // Pull: dst; Push: delta; Elastic: x; Round: grads
	alpha float32
	// unlocked: the data work is done by the caller, outside l.mu
	// (hogwild's exchange); the grant only counts the values.
	unlocked bool
	reply    chan Output // buffered 1
}

// NewLocal returns a center holding a copy of cfg.Weights.
func NewLocal(cfg Config) (*Local, error) {
	if len(cfg.Weights) == 0 && cfg.Workers >= 1 {
		return nil, errors.New("center: no initial weights")
	}
	core, err := NewCore(CoreConfig{Workers: cfg.Workers, Policy: cfg.Policy, Interval: cfg.Interval,
		Finish: cfg.Finish, MaxIter: cfg.MaxIter, StartIter: cfg.StartIter, Deadline: int64(cfg.Deadline)})
	if err != nil {
		return nil, err
	}
	l := &Local{
		cfg:     cfg,
		start:   time.Now(),
		core:    core,
		data:    NewPlane(cfg.Weights, cfg.Update, cfg.ClockedReads, cfg.StartIter),
		waiting: map[int64]*call{},
		allLeft: make(chan struct{}),
	}
	l.w = l.data.Weights()
	return l, nil
}

// N is the number of parameters.
func (l *Local) N() int { return len(l.w) }

// Weights returns the center weights. The slice is the center's own:
// read it only while no worker runs (after the run, or for a test).
func (l *Local) Weights() []float32 { return l.w }

// MeanStale is the mean staleness of the updates measured (0 for none).
func (s Stats) MeanStale() float64 {
	if s.StaleN == 0 {
		return 0
	}
	return float64(s.Stale) / float64(s.StaleN)
}

// Stats returns the counters so far.
func (l *Local) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.core.Stats()
	st.Values = l.data.Values()
	return st
}

// Clocks returns a copy of the control area's iteration counts.
func (l *Local) Clocks() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.core.Clocks()...)
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

// now is the core's tick: nanoseconds since NewLocal.
func (l *Local) now() int64 { return int64(time.Since(l.start)) }

// do steps the core with r and waits for r's reply; c holds r's data,
// which the grant works on under l.mu. It returns the reply.
func (l *Local) do(ctx context.Context, r Request, c call) (Output, error) {
	l.mu.Lock()
	l.tag++
	r.Tag = l.tag
	var cp *call
	if k := len(l.spare); k > 0 {
		cp, l.spare = l.spare[k-1], l.spare[:k-1]
	} else {
		cp = &call{reply: make(chan Output, 1)}
	}
	c.reply = cp.reply
	*cp = c
	l.waiting[r.Tag] = cp
	l.run(l.core.Step(l.now(), r))
	l.mu.Unlock()
	var o Output
	select {
	case o = <-cp.reply:
	case <-ctx.Done():
		l.mu.Lock()
		select {
		case o = <-cp.reply: // answered meanwhile
		default:
			delete(l.waiting, r.Tag)
			l.core.Cancel(r.Tag)
			o.Err = ctx.Err()
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	cp.buf = nil
	l.spare = append(l.spare, cp)
	l.mu.Unlock()
	return o, o.Err
}

// grant carries out call c's data work; l.mu is held.
func (l *Local) grant(c *call, o Output) {
	switch c.op {
	case OpPull:
		l.data.Pull(c.buf)
	case OpPush:
		l.data.Push(o.W, o.Iter, c.buf)
	case OpElastic:
		l.data.Elastic(c.buf, c.alpha, c.unlocked)
	case OpRound:
		l.data.RoundAdd(c.buf)
	}
}

// run carries out the core's outputs; l.mu is held.
func (l *Local) run(outs []Output) {
	for _, o := range outs {
		switch o.Kind {
		case Grant:
			if c := l.waiting[o.Tag]; c != nil {
				l.grant(c, o)
			}
		case Reply:
			if c := l.waiting[o.Tag]; c != nil {
				delete(l.waiting, o.Tag)
				c.reply <- o
			}
		case Close:
			l.data.Close(o.N, o.Iter)
		case Timer:
			d := time.Duration(o.At - l.now())
			tick := func() {
				l.mu.Lock()
				defer l.mu.Unlock()
				l.run(l.core.Tick(max(l.now(), o.At)))
			}
			time.AfterFunc(max(d, 0), tick)
		}
	}
	l.data.Settle(l.core)
	if l.core.Finished() {
		select {
		case <-l.allLeft:
		default:
			close(l.allLeft)
		}
	}
}

// update steps an update request after inspecting its values: refused,
// it is logged and answered with the core's error naming the worker.
func (l *Local) update(ctx context.Context, r Request, c call) (Output, error) {
	o, err := l.do(ctx, r, c)
	if r.Refuse != "" && err != nil && l.cfg.Log != nil {
		l.cfg.Log(err)
	}
	return o, err
}

// Join implements Center.
func (l *Local) Join(ctx context.Context, w int) (int, error) {
	if err := l.check(w, -1); err != nil {
		return 0, err
	}
	o, err := l.do(ctx, Request{Op: OpJoin, W: w}, call{})
	return o.Iter, err
}

// Pull implements Center. Under RoundRobin it waits for w's turn.
func (l *Local) Pull(ctx context.Context, w int, dst []float32) error {
	if w == Observer {
		if len(dst) != len(l.w) {
			return fmt.Errorf("center: an observer asked for %d values, the center has %d", len(dst), len(l.w))
		}
		l.mu.Lock()
		copy(dst, l.data.Readable())
		l.mu.Unlock()
		return nil
	}
	if err := l.check(w, len(dst)); err != nil {
		return err
	}
	_, err := l.do(ctx, Request{Op: OpPull, W: w}, call{op: OpPull, buf: dst})
	return err
}

// Push implements Center.
func (l *Local) Push(ctx context.Context, w int, delta []float32) error {
	if err := l.check(w, len(delta)); err != nil {
		return err
	}
	r := Request{Op: OpPush, W: w, Refuse: Inspect("push", delta, 1, l.cfg.MaxUpdateNorm)}
	_, err := l.update(ctx, r, call{op: OpPush, buf: delta})
	return err
}

// Elastic implements Center.
func (l *Local) Elastic(ctx context.Context, w int, x []float32, alpha float32) error {
	if err := l.check(w, len(x)); err != nil {
		return err
	}
	if l.cfg.Policy == Hogwild {
		// No lock: concurrent exchanges interleave element by element,
		// as Hogwild EASGD intends (SC17 5). The race is the algorithm;
		// the core only counts the exchange.
		r := Request{Op: OpElastic, W: w, Refuse: InspectElastic(l.w, x, alpha, l.cfg.MaxUpdateNorm)}
		if r.Refuse == "" {
			elastic(l.w, x, alpha)
		}
		_, err := l.update(ctx, r, call{op: OpElastic, buf: x, unlocked: true})
		return err
	}
	// Under round-robin the values are inspected against the center as
	// it is before w's turn; only w moves it during the turn.
	l.mu.Lock()
	refuse := InspectElastic(l.w, x, alpha, l.cfg.MaxUpdateNorm)
	l.mu.Unlock()
	_, err := l.update(ctx, Request{Op: OpElastic, W: w, Refuse: refuse}, call{op: OpElastic, buf: x, alpha: alpha})
	return err
}

// Round implements Center.
func (l *Local) Round(ctx context.Context, w, iter int, grads []float32) (int, bool, error) {
	if err := l.check(w, len(grads)); err != nil {
		return 0, false, err
	}
	if l.cfg.Update == nil {
		return 0, false, errors.New("center: weed-out rounds need an update rule")
	}
	r := Request{Op: OpRound, W: w, Iter: iter, Refuse: Inspect("round's gradients", grads, 1, l.cfg.MaxUpdateNorm)}
	o, err := l.update(ctx, r, call{op: OpRound, buf: grads})
	if err != nil {
		return 0, false, err
	}
	return o.Iter, o.Dropped, nil
}

// Closed implements Center.
func (l *Local) Closed(ctx context.Context, w, iter int) (int, error) {
	if err := l.check(w, -1); err != nil {
		return 0, err
	}
	o, err := l.do(ctx, Request{Op: OpClosed, W: w, Iter: iter}, call{})
	return o.Iter, err
}

// Clock implements Center.
func (l *Local) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	if err := l.check(w, -1); err != nil {
		return false, err
	}
	o, err := l.do(ctx, Request{Op: OpClock, W: w, Iter: iter, S: s}, call{})
	return o.Stop, err
}

// Leave implements Center.
func (l *Local) Leave(ctx context.Context, w int, cause error) error {
	if err := l.check(w, -1); err != nil {
		return err
	}
	_, err := l.do(ctx, Request{Op: OpLeave, W: w, Finished: cause == nil}, call{})
	return err
}

// PullFinal implements FinalPuller: it waits until no worker is present
// (Core.Idle), then copies the center weights into dst as an observer's
// Pull does.
func (l *Local) PullFinal(ctx context.Context, dst []float32) error {
	for {
		l.mu.Lock()
		idle := l.core.Idle()
		l.mu.Unlock()
		if idle {
			return l.Pull(ctx, Observer, dst)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.allLeft:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Finished is closed once every worker has left after finishing its run;
// a server may stop then.
func (l *Local) Finished() <-chan struct{} { return l.allLeft }
