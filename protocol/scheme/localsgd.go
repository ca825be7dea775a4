package scheme

// localSGD is local SGD with periodic model averaging (Stich, "Local SGD
// converges fast and communicates little", 2019; what PyTorch offers as
// PeriodicModelAverager): every worker takes solver steps on its own
// batches, and every H = Interval iterations (counted from iteration 0,
// so a resumed run keeps the schedule) the workers replace their weights
// by the mean over all workers, one allreduce of the weights. A run that
// ends between two averages averages once more, so every replica ends
// with the same model. The solver's state (momentum) stays each
// worker's own.
type localSGD struct {
	program
	cfg  Config
	iter int
}

func newLocalSGD(c Config) *localSGD { return &localSGD{cfg: c, iter: c.StartIter} }

func (w *localSGD) Step(ev Event) []Action {
	if ev.Kind == Start {
		w.then(w.iteration)
	}
	return w.step(ev)
}

// average appends the allreduce of the weights and their scaling to the
// mean.
func (w *localSGD) average() {
	if w.cfg.Workers < 2 {
		return
	}
	for _, r := range w.cfg.messages(Params) {
		w.do(Action{Op: Allreduce, R: r, Algo: AlgoRing}, false)
	}
	w.barrier()
	w.local(Action{Op: Scale, R: Range{Params, 0, w.cfg.Layout.N}, Factor: 1 / float32(w.cfg.Workers)})
}

func (w *localSGD) iteration() {
	h := max(w.cfg.Interval, 1)
	if w.iter >= w.cfg.MaxIter {
		if w.iter%h != 0 && w.iter > w.cfg.StartIter {
			w.average()
		}
		w.then(func() { w.emit(Action{Op: Finish}) })
		return
	}
	it := w.iter
	w.do(Action{Op: Compute}, true)
	w.local(Action{Op: Update, Iter: it})
	if (it+1)%h == 0 {
		w.average()
	}
	w.then(func() {
		w.emit(Action{Op: IterDone, Iter: it, Loss: w.loss})
		w.iter++
		w.iteration()
	})
}
