package scheme

// weedout is SpeeDO's weed-out SGD (3.4): a synchronous round per
// iteration that the center closes at a deadline. While a worker computes
// it watches its round (Closed); when the round closes without it, it
// aborts its compute, drops the stale gradient and restarts from the
// fresh weights in the round now open. Gradients that still arrive late
// (the round closed between the compute's end and the hand-in) are
// dropped by the center, and the worker restarts the same way.
//
// Its iterations are the center's rounds, not its own count, so it runs
// its own loop rather than program.loop: each round ends with a pull,
// after which the worker continues with the round the center has open.
type weedout struct {
	program
	cfg  Config
	next int  // the round to continue with
	done bool // the iteration handed in in time
	// watchID is the Done ID of the current round's watch; closed is
	// the round the center opened when it closed that one (−1: not yet).
	watchID, closed int
}

func newWeedout(c Config) *weedout {
	w := &weedout{cfg: c}
	w.iter = c.StartIter
	w.first = w.join
	w.heard = func(ev Event) {
		if ev.Kind == Done && ev.ID == w.watchID {
			w.closed = ev.Iter
		}
	}
	return w
}

// join joins the center, continuing a restarted worker's count, and
// pulls the weights.
func (w *weedout) join() {
	w.do(Action{Op: Join}, true)
	w.then(func() {
		w.iter = max(w.iter, w.ans.Iter)
		w.next, w.done = w.iter, false
		w.pull()
	})
}

// round computes iteration w.iter while watching its round, and hands
// the gradient in if the round is still open when compute ends; or
// leaves the center after the last iteration.
func (w *weedout) round() {
	if w.iter >= w.cfg.MaxIter {
		w.do(Action{Op: Leave}, true)
		w.local(Action{Op: Finish})
		return
	}
	w.watchID, w.closed = 0, -1
	w.do(Action{Op: Compute}, false)
	w.do(Action{Op: Closed, Iter: w.iter}, false)
	w.then(func() { w.watchID = w.nextID })
	w.waitUntil(func() bool { return !w.computing || w.closed >= 0 })
	w.then(func() {
		if w.computing {
			// The round closed without this worker: restart (SpeeDO 3.4).
			w.next = w.closed
			w.emit(Action{Op: Abort})
			w.skipped()
			w.done = false
			w.waitUntil(func() bool { return !w.computing })
			w.pull()
			return
		}
		w.do(Action{Op: Round, R: Range{Grads, 0, w.cfg.Layout.N}, Iter: w.iter}, true)
		w.then(func() {
			w.next, w.done = w.ans.Iter, !w.ans.Dropped
			if w.ans.Dropped {
				w.skipped()
			}
			w.pull()
		})
	})
}

// pull reads the weights of the round open now, reports the iteration
// if it was handed in in time, and goes on with that round.
func (w *weedout) pull() {
	w.do(Action{Op: Pull, R: Range{Params, 0, w.cfg.Layout.N}}, true)
	w.then(func() {
		if w.done {
			w.emit(Action{Op: IterDone, Iter: w.iter, Loss: w.loss})
		}
		w.iter = w.next
		w.round()
	})
}

// skipped reports the rounds up to w.next-1 over without this worker's
// gradient, so that the run's iteration count is the center's rounds,
// not this worker's hand-ins.
func (w *weedout) skipped() {
	if w.next > w.iter {
		w.emit(Action{Op: IterDone, Iter: w.next - 1, Skipped: true})
	}
}
