package smb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"dsgd/protocol/center"
)

// The buffer keys of the SEASGD layout (ShmCaffe Fig. 5). One server
// holds one run's buffers and control area.
const (
	// KeyGlobal names the global weight buffer W_g.
	KeyGlobal = "W_g"
	// KeyDeltaPrefix, followed by the worker id, names a worker's
	// increment buffer ΔW_x.
	KeyDeltaPrefix = "dW_"
)

// CenterConfig configures a Center.
type CenterConfig struct {
	// Workers is the number of workers (ids 0..Workers-1). Required.
	Workers int
	// N is the number of weights. Required.
	N int
	// Weights are the initial weights (len N) that the worker which
	// creates W_g writes into it; nil means zeros. Every worker should
	// pass the same ones.
	Weights []float32
	// Finish is the aligned-termination rule Clock applies.
	Finish center.Finish
	// MaxIter is the iteration count the finish rule compares with;
	// required (> 0) unless Finish is FinishOwn.
	MaxIter int
	// MaxUpdateNorm, when > 0, refuses a push whose L2 norm exceeds it;
	// a non-finite push is refused always (center.Inspect).
	MaxUpdateNorm float64
	// Poll bounds each wait for a change of the control area (Join
	// waiting for W_g's initialisation, Clock waiting under SSP), after
	// which the condition is read again. Default 1s.
	Poll time.Duration
}

// Center is the SEASGD adapter: center.Center over a shared buffer
// server's Buffers, laid out as ShmCaffe Fig. 5. The global weights live
// in buffer W_g, worker w's increments in dW_<w>, and the control area
// holds Workers+2 slots: slot w is worker w's iteration count (−1−count
// once it left), slot Workers is 1 once W_g holds the initial weights,
// and slot Workers+1 is 1 once worker 0 has released the run.
//
// Pull reads W_g; Push writes the increment into dW_<w> and has the
// server accumulate it into W_g (Eq. 7). Elastic and Round are refused:
// the server has no update logic (ShmCaffe III.C).
//
// The decisions (what Join answers, when Clock waits under SSP and when
// the finish rule stops the run, the refusal of a diverged push) are a
// center.Core's, as center.Local's are: each worker's state holds a
// replica, brought up to date from the control slots (Core.Observe)
// before it decides. The slots stay the truth, shared by every process.
//
// A Center is safe for concurrent use; each process (or each worker) may
// hold its own over the same server.
type Center struct {
	b       Buffers
	cfg     CenterConfig
	global  string
	deltas  []string
	workers []workerState
}

// workerState is one worker's replica of the center's decisions, its
// locks and scratch space, so that Clock and Push do not allocate.
type workerState struct {
	// pushMu serialises the worker's Write+Accumulate on dW_w.
	pushMu sync.Mutex
	// ctlMu serialises the worker's control calls (Join, Clock, Leave,
	// a refusal); a Clock waiting under SSP holds it, but not mu.
	ctlMu sync.Mutex
	// mu guards what follows; it is never held across a wait.
	mu     sync.Mutex
	core   *center.Core
	tag    int64
	counts []int64
	ver    uint64 // the control area's version when counts were read
	one    [1]int64
	// ctl is counts decoded for Core.Observe.
	ctl center.Control
	// clockTag is the Clock waiting in core (0: none), and clockOut its
	// reply once another step or an observation released it.
	clockTag  int64
	clockOut  center.Output
	clockDone bool
}

var _ center.Center = (*Center)(nil)

// NewCenter returns the adapter over b. It only checks cfg; the buffers
// are made by Join.
func NewCenter(b Buffers, cfg CenterConfig) (*Center, error) {
	if cfg.Workers < 1 || cfg.Workers >= maxSlots {
		return nil, fmt.Errorf("smb: center of %d workers; need 1 to %d", cfg.Workers, maxSlots-1)
	}
	if cfg.N < 1 {
		return nil, fmt.Errorf("smb: center of %d weights; need at least 1", cfg.N)
	}
	if cfg.Weights != nil && len(cfg.Weights) != cfg.N {
		return nil, fmt.Errorf("smb: center of %d weights given %d initial weights", cfg.N, len(cfg.Weights))
	}
	if cfg.Finish != center.FinishOwn && cfg.MaxIter < 1 {
		return nil, fmt.Errorf("smb: finish rule %s needs a max iteration > 0, have %d", cfg.Finish, cfg.MaxIter)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	c := &Center{
		b:       b,
		cfg:     cfg,
		global:  KeyGlobal,
		deltas:  make([]string, cfg.Workers),
		workers: make([]workerState, cfg.Workers),
	}
	for w := range c.deltas {
		c.deltas[w] = KeyDeltaPrefix + strconv.Itoa(w)
		ws := &c.workers[w]
		core, err := center.NewCore(center.CoreConfig{Workers: cfg.Workers, Finish: cfg.Finish, MaxIter: cfg.MaxIter})
		if err != nil {
			return nil, fmt.Errorf("smb: %w", err)
		}
		ws.core = core
		ws.counts = make([]int64, cfg.Workers)
		ws.ctl = center.Control{Clocks: make([]int, cfg.Workers), Active: make([]bool, cfg.Workers)}
	}
	return c, nil
}

// checkWorker refuses a worker id outside 0..Workers-1 with an error,
// as center.Local does, rather than failing the process.
func (c *Center) checkWorker(w int) error {
	if w < 0 || w >= c.cfg.Workers {
		return fmt.Errorf("smb: worker %d of a center of %d workers", w, c.cfg.Workers)
	}
	return nil
}

// checkLen refuses a vector whose length is not N with an error.
func (c *Center) checkLen(what string, n int) error {
	if n != c.cfg.N {
		return fmt.Errorf("smb: %s of %d values for a center of %d weights", what, n, c.cfg.N)
	}
	return nil
}

// readySlot is the control slot that says W_g holds the initial weights.
func (c *Center) readySlot() int { return c.cfg.Workers }

// releaseSlot is the control slot that says worker 0 has released the
// run: the last worker to leave frees the buffers.
func (c *Center) releaseSlot() int { return c.cfg.Workers + 1 }

// observe reads the control slots into w's replica (Core.Observe) and
// takes what that releases; ws.mu is held.
func (c *Center) observe(ctx context.Context, ws *workerState) error {
	ver, err := c.b.ReadControl(ctx, 0, ws.counts)
	if err != nil {
		return err
	}
	ws.ver = ver
	// A left worker's slot is −1−count, and it holds no one back.
	for i, v := range ws.counts {
		ws.ctl.Clocks[i], ws.ctl.Active[i] = int(countOf(v)), v >= 0
	}
	ws.take(0, ws.core.Observe(ws.ctl))
	return nil
}

// step steps w's replica with r and returns r's reply, if the core gave
// it now, and whether it granted r's data work; ws.mu is held.
func (ws *workerState) step(r center.Request) (reply center.Output, answered, granted bool) {
	ws.tag++
	r.Tag = ws.tag
	return ws.take(r.Tag, ws.core.Step(0, r))
}

// take sorts a core's outputs: tag's reply and grant are returned, a
// waiting Clock's reply is kept for it.
func (ws *workerState) take(tag int64, outs []center.Output) (reply center.Output, answered, granted bool) {
	for _, o := range outs {
		switch {
		case o.Tag == 0:
		case o.Tag == tag && o.Kind == center.Grant:
			granted = true
		case o.Tag == tag && o.Kind == center.Reply:
			reply, answered = o, true
		case o.Tag == ws.clockTag && o.Kind == center.Reply:
			ws.clockOut, ws.clockDone = o, true
		}
	}
	return reply, answered, granted
}

// Join implements center.Center: it makes the control area and the
// buffers (the worker that creates W_g fills it with cfg.Weights; the
// others wait until it has), marks w live and returns its own iteration
// count, as center.Local does (a restarted worker continues it).
func (c *Center) Join(ctx context.Context, w int) (int, error) {
	if err := c.checkWorker(w); err != nil {
		return 0, err
	}
	if _, err := c.b.CreateControl(ctx, c.cfg.Workers+2); err != nil {
		return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
	}
	// Worker 0 creates W_g and fills it with its weights (ShmCaffe
	// III.B: rank 0 allocates and hands the key on); the others wait for
	// the ready flag and attach.
	if w == 0 {
		created, err := c.b.Create(ctx, c.global, c.cfg.N)
		if err != nil {
			return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
		}
		if created {
			if c.cfg.Weights != nil {
				if err := c.b.Write(ctx, c.global, 0, c.cfg.Weights); err != nil {
					return 0, fmt.Errorf("smb: worker %d initialising %s: %w", w, c.global, err)
				}
			}
			if err := c.b.WriteControl(ctx, c.readySlot(), []int64{1}); err != nil {
				return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
			}
		}
	} else {
		if err := c.waitReady(ctx); err != nil {
			return 0, fmt.Errorf("smb: worker %d waiting for worker 0 to create %s: %w", w, c.global, err)
		}
		n, err := c.b.Attach(ctx, c.global)
		if err != nil {
			return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
		}
		if n != c.cfg.N {
			return 0, fmt.Errorf("smb: worker %d joining: %w: %s holds %d weights, this model has %d", w, ErrSize, c.global, n, c.cfg.N)
		}
	}
	if _, err := c.b.Create(ctx, c.deltas[w], c.cfg.N); err != nil {
		return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
	}
	ws := &c.workers[w]
	ws.ctlMu.Lock()
	defer ws.ctlMu.Unlock()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err := c.observe(ctx, ws); err != nil {
		return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
	}
	// The core answers the count to continue from: the slot's, a left
	// worker's included.
	o, _, _ := ws.step(center.Request{Op: center.OpJoin, W: w})
	if o.Err != nil {
		return 0, fmt.Errorf("smb: worker %d joining: %w", w, o.Err)
	}
	ws.one[0] = int64(o.Iter)
	if err := c.b.WriteControl(ctx, w, ws.one[:]); err != nil {
		return 0, fmt.Errorf("smb: worker %d joining: %w", w, err)
	}
	return o.Iter, nil
}

// countOf decodes a control slot: a left worker's −1−count is its count.
func countOf(v int64) int64 {
	if v < 0 {
		return -1 - v
	}
	return v
}

func (c *Center) waitReady(ctx context.Context) error {
	var flag [1]int64
	for {
		ver, err := c.b.ReadControl(ctx, c.readySlot(), flag[:])
		if err != nil {
			return err
		}
		if flag[0] != 0 {
			return nil
		}
		if err := c.waitControl(ctx, ver); err != nil {
			return err
		}
	}
}

// waitControl waits for a change of the control area for at most Poll.
func (c *Center) waitControl(ctx context.Context, ver uint64) error {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.Poll)
	_, err := c.b.WaitControl(wctx, ver)
	cancel()
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Pull implements center.Center: it reads W_g into dst (ShmCaffe T1).
// Over a network client that splits W_g into several requests, an
// accumulate may land between them.
func (c *Center) Pull(ctx context.Context, w int, dst []float32) error {
	if w != center.Observer {
		if err := c.checkWorker(w); err != nil {
			return err
		}
	}
	if err := c.checkLen("pull", len(dst)); err != nil {
		return err
	}
	if w != center.Observer {
		// FCFS: the core grants at once (it only counts).
		ws := &c.workers[w]
		ws.mu.Lock()
		ws.step(center.Request{Op: center.OpPull, W: w})
		ws.mu.Unlock()
	}
	if err := c.b.Read(ctx, c.global, 0, dst); err != nil {
		return fmt.Errorf("smb: worker %d pulling: %w", w, err)
	}
	return nil
}

// Push implements center.Center: it writes delta into dW_<w> (T.A1) and
// has the server accumulate dW_<w> into W_g (T.A2–T.A4, Eq. 7). A
// non-finite (or, with MaxUpdateNorm, too large) delta is refused with
// an error naming the worker, which leaves the center.
func (c *Center) Push(ctx context.Context, w int, delta []float32) error {
	if err := c.checkWorker(w); err != nil {
		return err
	}
	if err := c.checkLen("push", len(delta)); err != nil {
		return err
	}
	ws := &c.workers[w]
	if f := center.Inspect("push", delta, 1, c.cfg.MaxUpdateNorm); f != "" {
		// The core refuses it, and the worker leaves, so that it holds
		// no one back. The server has no logic, so the adapter refuses
		// before the increment reaches W_g.
		return c.refuse(ctx, w, f)
	}
	ws.mu.Lock()
	ws.step(center.Request{Op: center.OpPush, W: w}) // granted at once
	ws.mu.Unlock()
	ws.pushMu.Lock()
	defer ws.pushMu.Unlock()
	if err := c.b.Write(ctx, c.deltas[w], 0, delta); err != nil {
		return fmt.Errorf("smb: worker %d pushing: %w", w, err)
	}
	if err := c.b.Accumulate(ctx, c.global, c.deltas[w]); err != nil {
		return fmt.Errorf("smb: worker %d pushing: %w", w, err)
	}
	return nil
}

// refuse has w's replica refuse its update for finding and carries out
// the leave the core decided.
func (c *Center) refuse(ctx context.Context, w int, finding string) error {
	ws := &c.workers[w]
	ws.ctlMu.Lock()
	defer ws.ctlMu.Unlock()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	o, _, _ := ws.step(center.Request{Op: center.OpPush, W: w, Refuse: finding})
	err := o.Err
	if err == nil {
		err = center.Refused(w, finding) // the core refuses every finding
	}
	if lerr := c.leave(ctx, w, ws); lerr != nil {
		return fmt.Errorf("%w; leaving: %w", err, lerr)
	}
	return err
}

// errNoUpdateLogic is what Elastic and Round return.
func errNoUpdateLogic(op string) error {
	return fmt.Errorf("smb: %s is not available on the shared buffer server: it has no update logic, only buffers and accumulation (ShmCaffe III.C); use the parameter server or the in-process center for easgd, easgd-rr, hogwild-easgd, measgd and weedout", op)
}

// Elastic implements center.Center by refusing: SEASGD computes the
// elastic term on the worker and pushes it (Eq. 5–7).
func (c *Center) Elastic(context.Context, int, []float32, float32) error {
	return errNoUpdateLogic("the elastic exchange")
}

// Closed implements center.Center by refusing.
func (c *Center) Closed(context.Context, int, int) (int, error) {
	return 0, errNoUpdateLogic("a weed-out round")
}

// Round implements center.Center by refusing.
func (c *Center) Round(context.Context, int, int, []float32) (int, bool, error) {
	return 0, false, errNoUpdateLogic("a weed-out round")
}

// Clock implements center.Center: it records in w's control slot that
// w has done iter+1 iterations (as center.Local counts: a rejoining worker
// continues at the next iteration, and a finish rule stops after MaxIter
// of them), then asks w's replica of the core, brought up to date from
// the slots: it returns stop when the finish rule says so, and with
// s >= 0 waits while w is more than s iterations ahead of the slowest
// live worker, observing the slots again at each change.
func (c *Center) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	if err := c.checkWorker(w); err != nil {
		return false, err
	}
	ws := &c.workers[w]
	ws.ctlMu.Lock()
	defer ws.ctlMu.Unlock()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	// A clock never goes back (center.Local keeps the larger count):
	// slot w is written by w alone, so the replica's last reading of it
	// (Join's, or this worker's previous Clock's) is its count.
	ws.one[0] = max(int64(iter)+1, countOf(ws.counts[w]))
	if err := c.b.WriteControl(ctx, w, ws.one[:]); err != nil {
		return false, fmt.Errorf("smb: worker %d clocking iteration %d: %w", w, iter, err)
	}
	if err := c.observe(ctx, ws); err != nil {
		return false, fmt.Errorf("smb: worker %d clocking iteration %d: %w", w, iter, err)
	}
	o, answered, _ := ws.step(center.Request{Op: center.OpClock, W: w, Iter: iter, S: s})
	if !answered {
		ws.clockTag, ws.clockDone = ws.tag, false
		defer func() { ws.clockTag = 0 }()
	}
	for !answered {
		ver := ws.ver
		ws.mu.Unlock()
		err := c.waitControl(ctx, ver)
		ws.mu.Lock()
		if err == nil && !ws.clockDone {
			err = c.observe(ctx, ws)
		}
		if ws.clockDone {
			o, answered = ws.clockOut, true
			break
		}
		if err != nil {
			ws.core.Cancel(ws.clockTag)
			slowest, _ := ws.core.Slowest()
			return false, fmt.Errorf("smb: worker %d waiting at iteration %d (staleness %d, slowest at %d): %w", w, iter, s, slowest, err)
		}
	}
	if o.Err != nil {
		return false, fmt.Errorf("smb: worker %d clocking iteration %d: %w", w, iter, o.Err)
	}
	return o.Stop, nil
}

// Leave implements center.Center: it marks w's slot as left (−1−count),
// so it no longer holds back SSP, and frees w's increment buffer; a
// later Join makes it live again and recreates the buffer.
func (c *Center) Leave(ctx context.Context, w int, cause error) error {
	if err := c.checkWorker(w); err != nil {
		return err
	}
	ws := &c.workers[w]
	ws.ctlMu.Lock()
	defer ws.ctlMu.Unlock()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.step(center.Request{Op: center.OpLeave, W: w, Finished: cause == nil})
	return c.leave(ctx, w, ws)
}

// leave carries out w's leaving in the slots and buffers; ws.mu is held.
func (c *Center) leave(ctx context.Context, w int, ws *workerState) error {
	if _, err := c.b.ReadControl(ctx, w, ws.one[:]); err != nil {
		return fmt.Errorf("smb: worker %d leaving: %w", w, err)
	}
	if ws.one[0] < 0 {
		return nil
	}
	ws.one[0] = -1 - ws.one[0]
	if err := c.b.WriteControl(ctx, w, ws.one[:]); err != nil {
		return fmt.Errorf("smb: worker %d leaving: %w", w, err)
	}
	ws.pushMu.Lock()
	defer ws.pushMu.Unlock()
	if err := c.b.Free(ctx, c.deltas[w]); err != nil {
		return fmt.Errorf("smb: worker %d freeing %s: %w", w, c.deltas[w], err)
	}
	return c.freeIfDone(ctx, make([]int64, c.cfg.Workers+2))
}

// Release is worker 0's deallocation at the end of a run (ShmCaffe
// III.B), called after its last read of W_g (a final test or snapshot):
// it marks the run released and, when every worker has left, frees W_g
// and every increment buffer; otherwise the last worker to leave does.
// It never waits for the others (one may be dead, to rejoin later).
func (c *Center) Release(ctx context.Context) error {
	if err := c.b.WriteControl(ctx, c.releaseSlot(), []int64{1}); err != nil {
		return fmt.Errorf("smb: releasing the buffers: %w", err)
	}
	return c.freeIfDone(ctx, make([]int64, c.cfg.Workers+2))
}

// freeIfDone frees W_g and every increment buffer when worker 0 has
// released the run and every worker has left. Two workers may both free:
// freeing what is gone is no error.
func (c *Center) freeIfDone(ctx context.Context, slots []int64) error {
	if _, err := c.b.ReadControl(ctx, 0, slots); err != nil {
		return fmt.Errorf("smb: releasing the buffers: %w", err)
	}
	if slots[c.releaseSlot()] == 0 {
		return nil
	}
	for _, v := range slots[:c.cfg.Workers] {
		if v >= 0 {
			return nil
		}
	}
	for _, key := range append([]string{c.global}, c.deltas...) {
		if err := c.b.Free(ctx, key); err != nil {
			return fmt.Errorf("smb: freeing %s: %w", key, err)
		}
	}
	return nil
}
