package scheme

// program is how every scheme is written: a rank is a program of steps
// (do an action, wait or not for its answer; a callback; a barrier; a
// wait until a condition), appended as the run goes and run strictly in
// order. A step that waits holds the next until its answer (ComputeDone,
// or the Done of its ID) arrives; a step that does not wait lets the
// program go on while the driver works on it (a transfer overlapped
// with compute). Callbacks decide at run time what comes next, reading
// the last answer (ans).
//
// A scheme embeds program, sets first to append its opening steps
// (join a center, copy the starting weights) and, usually, to call loop
// with its iteration: body appends iteration it's steps and loop adds
// the IterDone, the next iteration and, at the end, Finish. Events that
// are no answer to a step (GradsReady, the answer of a watch raced
// against compute) reach heard. The catalogue (registry.go) builds each
// scheme's ranks; a family of schemes that share a program (the center
// workers, async.go) gets its differences from its catalogue entries,
// never by testing scheme names. streaming-diloco runs two programs
// side by side, its inner steps and its exchange.
type program struct {
	out       []Action // the actions of the Step under way
	nextID    int      // the ID of the last communication issued
	pending   int      // communication actions in flight
	steps     []step
	waitID    int  // the Done this program waits for (0: none)
	waitComp  bool // waiting for ComputeDone
	waitAll   bool // waiting until nothing is in flight
	computing bool
	until     func() bool // a wait for a condition (nil: none)
	ran       int         // steps taken so far
	ans       Event       // the answer that released the last wait
	loss      float64
	// heard, when set, is told of every event before the program goes
	// on: a scheme that sends gradients while backward runs starts them
	// from GradsReady (overlap), one that waits for whichever of two
	// answers comes first notes them (weedout).
	heard func(Event)
	// first appends the program's first steps when the run starts; it
	// usually ends by calling loop, which appends the iterations one by
	// one.
	first func()
	// iter is the iteration the loop runs next; stop ends the loop
	// before it (a center said the run is over).
	iter int
	stop bool
}

type step struct {
	a    Action
	wait bool
	fn   func()
	all  bool // a barrier: wait until compute and every transfer are done
	// cond, when set, holds the program until it reports true (checked
	// whenever the program runs).
	cond func() bool
}

// do appends an action; wait holds the program until it is answered.
func (p *program) do(a Action, wait bool) { p.steps = append(p.steps, step{a: a, wait: wait}) }

// then appends a callback.
func (p *program) then(fn func()) { p.steps = append(p.steps, step{fn: fn}) }

// barrier appends a wait for everything in flight.
func (p *program) barrier() { p.steps = append(p.steps, step{all: true}) }

// waitUntil appends a wait until cond reports true; the rank re-runs the
// program when what cond reads may have changed.
func (p *program) waitUntil(cond func() bool) { p.steps = append(p.steps, step{cond: cond}) }

// local appends a local action.
func (p *program) local(a Action) { p.do(a, false) }

// loop appends the program's iterations, from p.iter until to
// (exclusive) or until stop is set: body appends iteration it's steps,
// after which the program reports it done (IterDone, with the last
// compute's loss) and appends the next. When the loop ends, end (nil:
// none) appends the run's last steps, before Finish. Each iteration is
// appended when the one before it is done, so what body reads (stop,
// the answers of the last iteration) is current. body appends all its
// steps when it is called: a callback of its may emit, but a step it
// appended would come after the IterDone.
func (p *program) loop(to int, body func(it int), end func(it int)) {
	it := p.iter
	if p.stop || it >= to {
		if end != nil {
			end(it)
		}
		p.local(Action{Op: Finish})
		return
	}
	body(it)
	p.then(func() {
		p.emit(Action{Op: IterDone, Iter: it, Loss: p.loss})
		p.iter++
		p.loop(to, body, end)
	})
}

// averageAndUpdate appends the mean of the summed gradients (Scale by
// 1/workers) and the solver update of iteration iter. Exact sums
// (GradWidth > 1) are not scaled: the update decodes them into their mean.
func (p *program) averageAndUpdate(c Config, iter int) {
	if n := c.Workers; n > 1 && c.width() == 1 {
		p.local(Action{Op: Scale, R: Range{Grads, 0, c.Layout.N}, Factor: 1 / float32(n)})
	}
	p.local(Action{Op: Update, Iter: iter})
}

// Step is the Rank of a scheme written as one program: Start appends
// its first steps.
func (p *program) Step(ev Event) []Action {
	if ev.Kind == Start {
		p.then(p.first)
	}
	return p.step(ev)
}

// step feeds an event to the program and returns the actions it emits.
func (p *program) step(ev Event) []Action {
	p.out = p.out[:0]
	if p.heard != nil {
		p.heard(ev)
	}
	switch ev.Kind {
	case ComputeDone:
		p.computing = false
		p.loss = ev.Loss
		if p.waitComp {
			p.waitComp = false
			p.ans = ev
		}
	case Done:
		p.pending--
		if p.waitID == ev.ID {
			p.waitID = 0
			p.ans = ev
		}
	}
	p.run()
	return p.out
}

func (p *program) blocked() bool {
	if p.until != nil {
		if !p.until() {
			return true
		}
		p.until = nil
	}
	return p.waitID != 0 || p.waitComp || (p.waitAll && (p.computing || p.pending > 0))
}

func (p *program) run() {
	for !p.blocked() && len(p.steps) > 0 {
		p.waitAll = false
		s := p.steps[0]
		p.steps = p.steps[1:]
		p.ran++
		switch {
		case s.fn != nil:
			s.fn()
		case s.all:
			p.waitAll = true
		case s.cond != nil:
			p.until = s.cond
		case s.a.Op == Compute:
			p.computing = true
			p.emit(s.a)
			p.waitComp = s.wait
		case s.a.Op.IsComm() || s.a.Op.IsSide():
			p.comm(s.a)
			if s.wait {
				p.waitID = p.nextID
			}
		default:
			p.emit(s.a)
		}
	}
	if len(p.steps) == 0 {
		// Reuse the backing array once drained.
		p.steps = p.steps[:0]
	}
}

func (p *program) emit(a Action) { p.out = append(p.out, a) }

// comm emits a communication (or side) action with a fresh ID.
func (p *program) comm(a Action) {
	p.nextID++
	p.pending++
	a.ID = p.nextID
	p.out = append(p.out, a)
}
