package scheme

// periodic is the loop of the schemes whose workers take steps of their
// own solvers and synchronise every H = Interval iterations (counted from
// iteration 0, so a resumed run keeps the schedule): local-sgd and
// diloco. A run that ends between two synchronisations synchronises once
// more, so every replica ends with the same model. The solver's state
// (momentum) stays each worker's own.
type periodic struct {
	program
	cfg Config
	// begin, when set, runs once before the first iteration of the run.
	begin func()
	// sync appends the exchange and its arithmetic.
	sync func()
}

func newPeriodic(c Config) *periodic {
	w := &periodic{cfg: c}
	w.iter = c.StartIter
	w.first = func() {
		if w.begin != nil {
			w.begin()
		}
		w.loop(c.MaxIter, w.iteration, w.end)
	}
	return w
}

// all is the whole of buffer b.
func (w *periodic) all(b Buffer) Range { return Range{b, 0, w.cfg.Layout.N} }

func (w *periodic) iteration(it int) {
	w.do(Action{Op: Compute}, true)
	w.local(Action{Op: Update, Iter: it})
	if (it+1)%max(w.cfg.Interval, 1) == 0 {
		w.sync()
	}
}

// end synchronises once more if the run stops between two
// synchronisations.
func (w *periodic) end(it int) {
	if it%max(w.cfg.Interval, 1) != 0 && it > w.cfg.StartIter {
		w.sync()
	}
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
