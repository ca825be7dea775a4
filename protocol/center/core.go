package center

import (
	"fmt"
	"slices"
)

// This file is the center's decisions as a pure state machine: requests
// in, grants, replies and timers out, deadlines counted in ticks. It
// imports no clock, lock or context (core_test.go checks), so that
// center.Local (real time, goroutines), the parameter server (which
// serves a Local), the simulator (virtual time) and the shared buffer
// server's adapter (its control area, through Control) decide alike.

// Op names a center operation in a Request.
type Op int

// The operations of Center, as requests to a Core.
const (
	OpJoin Op = iota + 1
	OpPull
	OpPush
	OpElastic
	OpRound
	OpClosed
	OpClock
	OpLeave
)

var opNames = [...]string{OpJoin: "join", OpPull: "pull", OpPush: "push", OpElastic: "elastic",
	OpRound: "round", OpClosed: "closed", OpClock: "clock", OpLeave: "leave"}

func (o Op) String() string {
	if o > 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Request is one call of a worker at the center.
type Request struct {
	// Tag is the caller's name for the request; every output about it
	// carries it. Tags of requests still waiting must differ.
	Tag int64
	Op  Op
	// W is the worker, 0..Workers-1.
	W int
	// Iter is the round (Round, Closed) or the finished iteration
	// (Clock).
	Iter int
	// S is Clock's staleness bound (< 0: no bound).
	S int
	// Finished marks a Leave after the worker's run ended in order (it
	// counts for Finished); otherwise the worker is gone.
	Finished bool
	// Refuse, on a Push, Elastic or Round, is what the data plane found
	// wrong with the values (non-finite, too large; see Inspect): the
	// core refuses the update, and the worker leaves the center.
	Refuse string
}

// OutKind is the kind of an Output.
type OutKind int

const (
	// Grant: carry out request Tag's data work now, in output order: a
	// Pull copies the center, a Push adds its delta (it belongs to
	// iteration Iter, for clocked reads), an Elastic exchanges, a Round
	// adds its gradients to the open round's sum.
	Grant OutKind = iota + 1
	// Reply: request Tag is answered with Iter (Join: the count to
	// continue from; Round, Closed: the round open now), Dropped (Round:
	// its gradients came too late), Stop (Clock: the finish rule says
	// stop) or Err. A granted request's Reply follows its Grant.
	Reply
	// Close: weed-out round Iter closed with N gradients in it; apply
	// their mean (nothing when N is 0). The Replies of the round's
	// requests follow it.
	Close
	// Timer: call Tick with a tick at or after At (a round's deadline).
	Timer
)

// Output is one thing the caller of a Core must do, in order.
type Output struct {
	Kind OutKind
	// Tag, Op and W are the request's (Grant, Reply).
	Tag  int64
	Op   Op
	W    int
	Iter int
	// N is the gradients in a closed round (Close).
	N             int
	Dropped, Stop bool
	// At is a Timer's tick.
	At  int64
	Err error
}

// CoreConfig is what a Core decides by.
type CoreConfig struct {
	// Workers is the number of workers, ids 0..Workers-1.
	Workers int
	// Policy serialises pulls and elastic exchanges (RoundRobin: one
	// worker's turn at a time; Interval iterations a turn, 0 counting as
	// 1, from StartIter).
	Policy   Policy
	Interval int
	// Finish and MaxIter are the aligned-termination rule.
	Finish  Finish
	MaxIter int
	// StartIter is every worker's initial count (a resumed run) and the
	// first round.
	StartIter int
	// Deadline is how many ticks a weed-out round waits after its first
	// gradients for the rest (0: until every active worker is in).
	Deadline int64
}

// Core is the center's control: the control area of iteration counts,
// who is present, round-robin turns, weed-out rounds and SSP waits. It
// holds no weights and knows no time but the ticks it is given; the
// caller carries out its outputs (the data work, the waits' answers) and
// keeps any lock. The zero value is not usable; see NewCore.
type Core struct {
	cfg    CoreConfig
	ctl    Control
	joined []bool
	left   []bool // left after finishing (counts for Finished)
	turn   int    // round-robin: whose turn it is
	round  int    // weed-out: the open round
	in     []bool // who is in the open round
	nIn    int
	due    int64 // the open round's deadline, when armed
	armed  bool
	stats  Stats
	// version counts the updates the center has taken (pushes, elastic
	// exchanges, closed rounds); seen is the version each worker last
	// read, so that an update's staleness is version − seen[w].
	version int64
	seen    []int64

	// Requests waiting, each list in arrival order.
	turnW, roundW, closedW, clockW []Request

	out []Output
}

// NewCore returns the control of a center with cfg.
func NewCore(cfg CoreConfig) (*Core, error) {
	switch {
	case cfg.Workers < 1:
		return nil, fmt.Errorf("center: %d workers", cfg.Workers)
	case cfg.Finish != FinishOwn && cfg.MaxIter <= 0:
		return nil, fmt.Errorf("center: finish rule %v needs MaxIter", cfg.Finish)
	case cfg.Deadline < 0:
		return nil, fmt.Errorf("center: negative round deadline %d", cfg.Deadline)
	}
	c := &Core{
		cfg:    cfg,
		ctl:    Control{Clocks: make([]int, cfg.Workers), Active: make([]bool, cfg.Workers)},
		joined: make([]bool, cfg.Workers),
		left:   make([]bool, cfg.Workers),
		in:     make([]bool, cfg.Workers),
		round:  cfg.StartIter,
		seen:   make([]int64, cfg.Workers),
	}
	for w := range c.ctl.Clocks {
		// A worker that has not joined yet is not gone: turns, rounds
		// and SSP wait for it.
		c.ctl.Clocks[w], c.ctl.Active[w] = cfg.StartIter, true
	}
	return c, nil
}

// Stats returns the counters so far (Values is the data plane's).
func (c *Core) Stats() Stats { return c.stats }

// Clocks returns the control area's counts; the slice is the core's own.
func (c *Core) Clocks() []int { return c.ctl.Clocks }

// Round is the open weed-out round.
func (c *Core) Round() int { return c.round }

// Slowest is the slowest active worker's count, and whether any worker
// is active (for clocked reads).
func (c *Core) Slowest() (int, bool) { return c.ctl.Slowest() }

// Idle reports whether no worker that joined is still present: each has
// left, after finishing or gone. A worker that never joined (refused at
// the door, or not started) does not hold it up.
func (c *Core) Idle() bool {
	for w, a := range c.ctl.Active {
		if a && c.joined[w] {
			return false
		}
	}
	return true
}

// Finished reports whether every worker has left after finishing.
func (c *Core) Finished() bool { return !slices.Contains(c.left, false) }

// Step takes request r at tick now and returns what to do, in order.
// The returned slice is reused by the next Step, Tick or Cancel.
func (c *Core) Step(now int64, r Request) []Output {
	c.out = c.out[:0]
	if r.W < 0 || r.W >= c.cfg.Workers {
		c.reply(r, Output{Err: fmt.Errorf("center: worker %d out of range [0,%d)", r.W, c.cfg.Workers)})
		return c.out
	}
	if r.Refuse != "" && (r.Op == OpPush || r.Op == OpElastic || r.Op == OpRound) {
		c.refuse(r)
		return c.out
	}
	w := r.W
	switch r.Op {
	case OpJoin:
		c.ctl.Active[w], c.left[w], c.joined[w] = true, false, true
		c.seen[w] = c.version // a joining worker reads the center
		c.settle()
		c.reply(r, Output{Iter: c.ctl.Clocks[w]})
	case OpPull, OpElastic:
		if c.cfg.Policy == RoundRobin {
			c.turnW = append(c.turnW, r)
			c.settle()
			return c.out
		}
		c.serve(r)
	case OpPush:
		c.stats.Pushes++
		c.stale(w)
		c.version++
		c.grant(r, c.ctl.Clocks[w])
		c.reply(r, Output{})
	case OpRound:
		c.roundIn(now, r)
	case OpClosed:
		if c.round > r.Iter {
			c.reply(r, Output{Iter: c.round})
			return c.out
		}
		c.closedW = append(c.closedW, r)
	case OpClock:
		if r.Iter+1 > c.ctl.Clocks[w] {
			c.ctl.Clocks[w] = r.Iter + 1
		}
		if c.cfg.Policy == RoundRobin && c.turn == w && (r.Iter+1-c.cfg.StartIter)%max(c.cfg.Interval, 1) == 0 {
			c.turn = (c.turn + 1) % c.cfg.Workers
		}
		if r.S >= 0 && !c.stop() && !c.ctl.Admits(w, r.S) {
			c.stats.Waits++
			c.clockW = append(c.clockW, r)
		} else {
			c.replyClock(r)
		}
		c.settle()
	case OpLeave:
		c.leave(w, r.Finished)
		c.reply(r, Output{})
	default:
		c.reply(r, Output{Err: fmt.Errorf("center: unknown operation %v", r.Op)})
	}
	return c.out
}

// Tick tells the core that tick now has come: a round whose deadline has
// passed closes.
func (c *Core) Tick(now int64) []Output {
	c.out = c.out[:0]
	if c.armed && c.nIn > 0 && now >= c.due {
		c.closeRound()
	}
	return c.out
}

// Observe adopts a control area kept outside the core: the shared
// buffer server's control slots, which every worker's adapter reads and
// writes, so each adapter's core is a replica brought up to date before it
// decides. Every worker's count becomes ctl's, and a worker observed
// inactive has left (not finished). It returns what the new area
// releases: waiting clocks (SSP, or the finish rule now reached), a
// round-robin turn, a weed-out round whose missing workers left. The
// returned slice is reused by the next Step, Tick, Observe or Cancel.
func (c *Core) Observe(ctl Control) []Output {
	c.out = c.out[:0]
	if len(ctl.Clocks) != c.cfg.Workers || len(ctl.Active) != c.cfg.Workers {
		panic(fmt.Sprintf("center: observed a control area of %d counts and %d flags for %d workers", len(ctl.Clocks), len(ctl.Active), c.cfg.Workers))
	}
	for w := range c.ctl.Clocks {
		c.ctl.Clocks[w] = ctl.Clocks[w]
		if c.ctl.Active[w] && !ctl.Active[w] {
			c.left[w] = false
		}
		c.ctl.Active[w] = ctl.Active[w]
	}
	if c.nIn > 0 && c.nIn >= c.ctl.ActiveCount() {
		c.closeRound()
	}
	c.settle()
	return c.out
}

// Cancel forgets waiting request tag (its caller gave up). What it
// already did stands: a round's gradients stay in the round.
func (c *Core) Cancel(tag int64) {
	for _, l := range []*[]Request{&c.turnW, &c.roundW, &c.closedW, &c.clockW} {
		*l = slices.DeleteFunc(*l, func(r Request) bool { return r.Tag == tag })
	}
}

func (c *Core) reply(r Request, o Output) {
	o.Kind, o.Tag, o.Op, o.W = Reply, r.Tag, r.Op, r.W
	c.out = append(c.out, o)
}

func (c *Core) grant(r Request, iter int) {
	c.out = append(c.out, Output{Kind: Grant, Tag: r.Tag, Op: r.Op, W: r.W, Iter: iter})
}

// serve grants and answers a pull or an exchange.
func (c *Core) serve(r Request) {
	if r.Op == OpPull {
		c.stats.Pulls++
	} else {
		c.stats.Exchanges++
		c.stale(r.W)
		c.version++
	}
	c.seen[r.W] = c.version
	c.grant(r, c.ctl.Clocks[r.W])
	c.reply(r, Output{})
}

// stale records the staleness of worker w's update: the updates the
// center took since w last read it (its own earlier push among them when
// it pushed again without reading).
func (c *Core) stale(w int) {
	d := c.version - c.seen[w]
	c.stats.Stale += d
	c.stats.StaleN++
	c.stats.MaxStale = max(c.stats.MaxStale, d)
}

// refuse answers an update the data plane found wrong with an error
// naming the worker, and makes the worker leave: it must not hold the
// others back while it is gone.
func (c *Core) refuse(r Request) {
	c.stats.Refused++
	err := Refused(r.W, r.Refuse)
	if c.ctl.Active[r.W] {
		c.leave(r.W, false)
	}
	c.reply(r, Output{Err: err})
}

// Refused is the error that refuses worker w's update for finding (what
// Inspect found wrong with it).
func Refused(w int, finding string) error {
	return fmt.Errorf("center refused worker %d's update: %s", w, finding)
}

// leave marks w gone (or finished); a round waiting only for it closes.
func (c *Core) leave(w int, finished bool) {
	c.ctl.Active[w] = false
	c.left[w] = finished
	if c.nIn > 0 && c.nIn >= c.ctl.ActiveCount() {
		c.closeRound()
	}
	c.settle()
}

func (c *Core) roundIn(now int64, r Request) {
	w := r.W
	switch {
	case r.Iter < c.round:
		// Counted as dropped when its round closed without it.
		c.reply(r, Output{Iter: c.round, Dropped: true})
		return
	case r.Iter > c.round:
		c.reply(r, Output{Err: fmt.Errorf("center: worker %d handed in round %d, but round %d is open", w, r.Iter, c.round)})
		return
	case c.in[w]:
		c.reply(r, Output{Err: fmt.Errorf("center: worker %d handed in round %d twice", w, r.Iter)})
		return
	}
	c.grant(r, r.Iter)
	c.in[w] = true
	c.nIn++
	c.roundW = append(c.roundW, r)
	if c.nIn == 1 && c.cfg.Deadline > 0 {
		c.due, c.armed = now+c.cfg.Deadline, true
		c.out = append(c.out, Output{Kind: Timer, At: c.due})
	}
	if c.nIn >= c.ctl.ActiveCount() {
		c.closeRound()
	}
}

// closeRound closes the open round and answers its requests and the
// Closed calls waiting for it.
func (c *Core) closeRound() {
	// Every active worker not in the round missed it: its gradients are
	// dropped, whether they come late or their worker restarts.
	c.stats.Dropped += int64(max(c.ctl.ActiveCount()-c.nIn, 0))
	c.out = append(c.out, Output{Kind: Close, Iter: c.round, N: c.nIn})
	clear(c.in)
	c.nIn = 0
	c.armed = false
	c.round++
	c.stats.Rounds++
	c.version++
	for _, r := range c.roundW {
		c.reply(r, Output{Iter: c.round})
	}
	c.roundW = c.roundW[:0]
	c.closedW = slices.DeleteFunc(c.closedW, func(r Request) bool {
		if r.Iter < c.round {
			c.reply(r, Output{Iter: c.round})
			return true
		}
		return false
	})
}

func (c *Core) replyClock(r Request) {
	c.stats.MaxLead = max(c.stats.MaxLead, c.ctl.Lead(r.W))
	c.reply(r, Output{Stop: c.stop()})
}

func (c *Core) stop() bool { return c.cfg.Finish.Reached(c.ctl.Clocks, c.cfg.MaxIter) }

// settle serves the round-robin turn and releases the SSP waits that the
// control area now admits.
func (c *Core) settle() {
	if c.cfg.Policy == RoundRobin {
		for i := 0; i < c.cfg.Workers && !c.ctl.Active[c.turn]; i++ {
			c.turn = (c.turn + 1) % c.cfg.Workers
		}
		c.turnW = slices.DeleteFunc(c.turnW, func(r Request) bool {
			if r.W == c.turn {
				c.serve(r)
				return true
			}
			return false
		})
	}
	if len(c.clockW) == 0 {
		return
	}
	stop := c.stop()
	c.clockW = slices.DeleteFunc(c.clockW, func(r Request) bool {
		if stop || c.ctl.Admits(r.W, r.S) {
			c.replyClock(r)
			return true
		}
		return false
	})
}

// Control is a control area as the decisions read it: every worker's
// iteration count, and whether the worker holds the others back (it has
// joined and not left, or not joined yet). Core keeps one; the shared
// buffer server's adapter reads one from the server's control slots.
type Control struct {
	Clocks []int
	Active []bool
}

// Slowest is the slowest active worker's count, and whether any is
// active.
func (c Control) Slowest() (int, bool) {
	m, any := 0, false
	for w, n := range c.Clocks {
		if c.Active[w] && (!any || n < m) {
			m, any = n, true
		}
	}
	return m, any
}

// ActiveCount is the number of active workers.
func (c Control) ActiveCount() int {
	n := 0
	for _, a := range c.Active {
		if a {
			n++
		}
	}
	return n
}

// Lead is how many iterations worker w is ahead of the slowest active
// worker (0 when none is active).
func (c Control) Lead(w int) int {
	m, any := c.Slowest()
	if !any {
		return 0
	}
	return c.Clocks[w] - m
}

// Admits reports whether SSP lets worker w go on with staleness bound s:
// s < 0 (no bound), or w at most s iterations ahead of the slowest
// active worker (SpeeDO 3.3).
func (c Control) Admits(w, s int) bool { return s < 0 || c.Lead(w) <= s }

// Reached applies the finish rule to every worker's count (ShmCaffe
// III.E): FinishMaster when worker 0 has done maxIter iterations,
// FinishFirst when any has, FinishAverage when their mean has;
// FinishOwn never.
func (f Finish) Reached(clocks []int, maxIter int) bool {
	switch f {
	case FinishMaster:
		return len(clocks) > 0 && clocks[0] >= maxIter
	case FinishFirst:
		for _, n := range clocks {
			if n >= maxIter {
				return true
			}
		}
	case FinishAverage:
		sum := 0
		for _, n := range clocks {
			sum += n
		}
		return sum >= maxIter*len(clocks)
	}
	return false
}
