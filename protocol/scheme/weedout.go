package scheme

// weedout is SpeeDO's weed-out SGD (3.4): a synchronous round per
// iteration that the center closes at a deadline. While a worker computes
// it watches its round (Closed); when the round closes without it, it
// aborts its compute, drops the stale gradient and restarts from the
// fresh weights in the round now open. Gradients that still arrive late
// (the round closed between the compute's end and the hand-in) are
// dropped by the center, and the worker restarts the same way.
type weedout struct {
	issuer
	cfg   Config
	iter  int
	state int
	loss  float64
	// IDs of the actions in flight that the state waits on.
	joinID, watchID, roundID, pullID, leaveID int
	next                                      int  // the round to continue with
	done                                      bool // the iteration handed in in time
}

const (
	wJoining = iota
	wPulling
	wComputing
	wAborting
	wRounding
	wLeaving
)

func newWeedout(c Config) *weedout { return &weedout{cfg: c, iter: c.StartIter} }

func (w *weedout) Step(ev Event) []Action {
	w.out = w.out[:0]
	n := w.cfg.Layout.N
	switch {
	case ev.Kind == Start:
		w.joinID = w.send(Action{Op: Join})
		w.state = wJoining
	case ev.Kind == Done && ev.ID == w.joinID && w.state == wJoining:
		if ev.Iter > w.iter {
			w.iter = ev.Iter // a restarted worker continues its count
		}
		w.next, w.done = w.iter, false
		w.pull()
	case ev.Kind == Done && ev.ID == w.pullID && w.state == wPulling:
		if w.done {
			w.emit(Action{Op: IterDone, Iter: w.iter, Loss: w.loss})
		}
		w.iter = w.next
		w.begin()
	case ev.Kind == Done && ev.ID == w.watchID && w.state == wComputing:
		// The round closed without this worker: restart (SpeeDO 3.4).
		w.next = ev.Iter
		w.emit(Action{Op: Abort})
		w.skipped()
		w.state = wAborting
	case ev.Kind == ComputeDone && w.state == wAborting:
		w.done = false
		w.pull()
	case ev.Kind == ComputeDone && w.state == wComputing:
		w.loss = ev.Loss
		w.roundID = w.send(Action{Op: Round, R: Range{Grads, 0, n}, Iter: w.iter})
		w.state = wRounding
	case ev.Kind == Done && ev.ID == w.roundID && w.state == wRounding:
		w.next, w.done = ev.Iter, !ev.Dropped
		if ev.Dropped {
			w.skipped()
		}
		w.pull()
	case ev.Kind == Done && ev.ID == w.leaveID && w.state == wLeaving:
		w.emit(Action{Op: Finish})
	}
	// Anything else is a watch answered after its round was settled.
	return w.out
}

// skipped reports the rounds up to w.next-1 over without this worker's
// gradient, so that the run's iteration count is the center's rounds,
// not this worker's hand-ins.
func (w *weedout) skipped() {
	if w.next > w.iter {
		w.emit(Action{Op: IterDone, Iter: w.next - 1, Skipped: true})
	}
}

// send issues a communication or side action and returns its ID.
func (w *weedout) send(a Action) int {
	w.comm(a)
	return w.nextID
}

func (w *weedout) pull() {
	w.pullID = w.send(Action{Op: Pull, R: Range{Params, 0, w.cfg.Layout.N}})
	w.state = wPulling
}

func (w *weedout) begin() {
	if w.iter >= w.cfg.MaxIter {
		w.leaveID = w.send(Action{Op: Leave})
		w.state = wLeaving
		return
	}
	w.emit(Action{Op: Compute})
	w.watchID = w.send(Action{Op: Closed, Iter: w.iter})
	w.state = wComputing
}
