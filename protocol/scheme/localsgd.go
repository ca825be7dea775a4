package scheme

// periodic is the loop of the schemes whose workers take steps of their
// own solvers and synchronise every H = Interval iterations (counted from
// iteration 0, so a resumed run keeps the schedule): local-sgd and
// diloco. A run that ends between two synchronisations synchronises once
// more, so every replica ends with the same model. The solver's state
// (momentum) stays each worker's own.
type periodic struct {
	program
	cfg  Config
	iter int
	// begin, when set, runs once before the first iteration of the run.
	begin func()
	// sync appends the exchange and its arithmetic.
	sync func()
}

func newPeriodic(c Config) *periodic {
	w := &periodic{cfg: c, iter: c.StartIter}
	w.first = func() {
		if w.begin != nil {
			w.begin()
		}
		w.iteration()
	}
	return w
}

// all is the whole of buffer b.
func (w *periodic) all(b Buffer) Range { return Range{b, 0, w.cfg.Layout.N} }

func (w *periodic) iteration() {
	h := max(w.cfg.Interval, 1)
	if w.iter >= w.cfg.MaxIter {
		if w.iter%h != 0 && w.iter > w.cfg.StartIter {
			w.sync()
		}
		w.local(Action{Op: Finish})
		return
	}
	it := w.iter
	w.do(Action{Op: Compute}, true)
	w.local(Action{Op: Update, Iter: it})
	if (it+1)%h == 0 {
		w.sync()
	}
	w.iterDone(it, func() { w.iter++; w.iteration() })
}

// newLocalSGD is local SGD with periodic model averaging (Stich, "Local
// SGD converges fast and communicates little", 2019; what PyTorch offers
// as PeriodicModelAverager): every H iterations the workers replace their
// weights by the mean over all workers, one allreduce of the weights.
func newLocalSGD(c Config) Rank {
	w := newPeriodic(c)
	w.sync = func() {
		if w.cfg.Workers < 2 {
			return
		}
		for _, r := range w.cfg.messages(Params) {
			w.do(Action{Op: Allreduce, R: r, Algo: AlgoRing}, false)
		}
		w.barrier()
		w.local(Action{Op: Scale, R: w.all(Params), Factor: 1 / float32(w.cfg.Workers)})
	}
	return w
}
