package node

import (
	"context"
	"sync"
	"time"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// watch is a center.Center that tells a test where each worker is, so a
// computer can wait for the other workers to reach a point of the
// protocol (an event) instead of sleeping and hoping they got there: in
// a center call (which, and for which iteration), computing, or gone
// (its Leave). A wait ends on the event or when the compute's context
// ends (a rank failed), never on a timer.
type watch struct {
	center.Center

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	calls   []watchCall   // per worker: the center call in progress
	comp    []bool        // per worker: computing
	left    []bool        // per worker: has called Leave
}

// watchCall is a center call in progress: the op and its iteration
// (Round, Clock, Closed).
type watchCall struct {
	in   bool
	op   scheme.Op
	iter int
}

func newWatch(c center.Center, workers int) *watch {
	return &watch{Center: c, changed: make(chan struct{}),
		calls: make([]watchCall, workers), comp: make([]bool, workers), left: make([]bool, workers)}
}

// set changes worker w's state under the lock and wakes the waiters.
func (c *watch) set(f func()) {
	c.mu.Lock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// call runs a center call of worker w, recording it while in progress.
func (c *watch) call(w int, op scheme.Op, iter int, do func()) {
	c.set(func() { c.calls[w] = watchCall{true, op, iter} })
	do()
	c.set(func() { c.calls[w] = watchCall{} })
}

// computing marks worker w computing (on) or not.
func (c *watch) computing(w int, on bool) { c.set(func() { c.comp[w] = on }) }

// waitOthers waits until every worker but w is computing (when
// computing counts), inside a center call of one of the ops, or gone; or
// until ctx ends.
func (c *watch) waitOthers(ctx context.Context, w int, computing bool, ops ...scheme.Op) error {
	for {
		c.mu.Lock()
		ok := true
		for v := range c.calls {
			parked := c.left[v] || (computing && c.comp[v])
			for _, op := range ops {
				parked = parked || (c.calls[v].in && c.calls[v].op == op)
			}
			ok = ok && (v == w || parked)
		}
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *watch) Join(ctx context.Context, w int) (iter int, err error) {
	c.call(w, scheme.Join, 0, func() { iter, err = c.Center.Join(ctx, w) })
	return
}

func (c *watch) Pull(ctx context.Context, w int, dst []float32) (err error) {
	c.call(w, scheme.Pull, 0, func() { err = c.Center.Pull(ctx, w, dst) })
	return
}

func (c *watch) Push(ctx context.Context, w int, delta []float32) (err error) {
	c.call(w, scheme.Push, 0, func() { err = c.Center.Push(ctx, w, delta) })
	return
}

func (c *watch) Elastic(ctx context.Context, w int, x []float32, alpha float32) (err error) {
	c.call(w, scheme.Elastic, 0, func() { err = c.Center.Elastic(ctx, w, x, alpha) })
	return
}

func (c *watch) Round(ctx context.Context, w, iter int, grads []float32) (next int, dropped bool, err error) {
	c.call(w, scheme.Round, iter, func() { next, dropped, err = c.Center.Round(ctx, w, iter, grads) })
	return
}

func (c *watch) Closed(ctx context.Context, w, iter int) (next int, err error) {
	c.call(w, scheme.Closed, iter, func() { next, err = c.Center.Closed(ctx, w, iter) })
	return
}

func (c *watch) Clock(ctx context.Context, w, iter, s int) (stop bool, err error) {
	c.call(w, scheme.Clock, iter, func() { stop, err = c.Center.Clock(ctx, w, iter, s) })
	return
}

func (c *watch) Leave(ctx context.Context, w int, cause error) error {
	c.set(func() { c.left[w] = true })
	return c.Center.Leave(ctx, w, cause)
}

// deadlines closes every weed-out round of a center.Local as soon as
// the workers expected in it (all but the straggler) are in and the
// straggler computes for it (it told straggling), instead of when its
// wall-clock deadline passes: install its hooks in the center's Config
// (AfterFunc, OnStep). Round k waits for the straggler's k-th compute,
// so that each round aborts one, as a deadline far shorter than the
// straggler's compute and far longer than the others' would.
type deadlines struct {
	mu      sync.Mutex
	expect  int            // gradients a round closes with
	in      map[int]int    // round → gradients in
	expire  map[int]func() // round → its deadline's f, once armed
	pending func()         // armed by the step OnStep is told of next
	started int            // computes the straggler began
}

func newDeadlines(expect int) *deadlines {
	return &deadlines{expect: expect, in: map[int]int{}, expire: map[int]func(){}}
}

// hooks sets cfg's AfterFunc and OnStep.
func (d *deadlines) hooks(cfg *center.Config) {
	cfg.AfterFunc = func(_ time.Duration, f func()) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.pending = f // by the Round step OnStep is told of next
	}
	cfg.OnStep = func(r center.Request) {
		if r.Op != center.OpRound {
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.pending != nil {
			d.expire[r.Iter], d.pending = d.pending, nil
		}
		d.in[r.Iter]++
		d.fire(r.Iter)
	}
}

// straggling tells d that the straggler began a compute.
func (d *deadlines) straggling() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started++
	for k := range d.expire {
		d.fire(k)
	}
}

// fire closes round k once armed, full and straggled in; d.mu is held.
func (d *deadlines) fire(k int) {
	if f := d.expire[k]; f != nil && d.in[k] >= d.expect && d.started > k {
		delete(d.expire, k)
		go f() // the center's lock is held here; f takes it
	}
}
