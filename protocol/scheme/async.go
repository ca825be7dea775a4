package scheme

import "math"

// centerWorker runs the schemes whose workers talk to a center (package
// center): SpeeDO's async and ssp, the EASGD family (easgd-rr,
// easgd, measgd, hogwild-easgd), ShmCaffe's seasgd and hybrid, and
// hogwild, which shares its weights with the other workers in memory and
// so needs no center at all.
type centerWorker struct {
	program
	rule centerRule
	cfg  Config
	rank int
	id   int // the worker's id at the center

	// hybrid: this worker's group, its root, and whether it is the root.
	group []int
	root  int
}

// centerRule is what one scheme's center worker does, beyond what they
// all share (join, iterations, clock, leave): the catalogue gives each
// scheme its rule (family_speedo.go, family_easgd.go, family_shmcaffe.go)
// instead of the worker testing scheme names.
type centerRule struct {
	// body appends iteration it's steps before the clock; xch says the
	// iteration ends with an exchange (every Interval iterations, for a
	// worker that talks to the center).
	body func(w *centerWorker, it int, xch bool)
	// noCenter: the workers share their weights in memory and never talk
	// to a center (hogwild).
	noCenter bool
	// pullOnRestartOnly: a worker starts from the weights every rank
	// starts from, pulling the center only when it rejoins a run
	// (easgd-rr: a pull would wait for its turn).
	pullOnRestartOnly bool
	// keepRead: the worker keeps the weights it last read from the
	// center in Aux, to push its change since (Downpour's merge).
	keepRead bool
	// ssp: the clock carries the staleness bound, and the worker reads
	// the center after the clock admits it (Petuum's read rule).
	ssp bool
	// groups: the workers form groups under one center, each with a
	// root that talks to it (hybrid).
	groups bool
}

func newCenterWorker(c Config, rank int, rule centerRule) *centerWorker {
	w := &centerWorker{rule: rule, cfg: c, rank: rank, id: rank, root: rank}
	w.iter = c.StartIter
	w.first = w.start
	if rule.groups {
		size := c.Workers / c.Groups
		g := rank / size
		w.id, w.root = g, g*size
		if size > 1 {
			for r := g * size; r < (g+1)*size; r++ {
				w.group = append(w.group, r)
			}
		}
	}
	return w
}

// talks reports whether this worker exchanges with the center.
func (w *centerWorker) talks() bool { return !w.rule.noCenter && w.rank == w.root }

// exchange reports whether iteration iter ends with an exchange.
func (w *centerWorker) exchange(iter int) bool {
	s := max(w.cfg.Interval, 1)
	return (iter-w.cfg.StartIter+1)%s == 0
}

func (w *centerWorker) start() {
	p := Range{Params, 0, w.cfg.Layout.N}
	if w.talks() {
		w.do(Action{Op: Join}, true)
		w.then(func() {
			// A restarted worker continues its count; a hybrid root
			// stays in step with its group instead.
			restarted := w.ans.Iter > w.iter
			if restarted && w.group == nil {
				w.iter = w.ans.Iter
			}
			// easgd-rr's workers start from the weights every rank
			// starts from (SC17 Alg. 1): a pull would wait for the
			// worker's turn and return a center the earlier turns moved.
			if !w.rule.pullOnRestartOnly || restarted {
				w.do(Action{Op: Pull, R: p}, true)
			}
			if w.rule.keepRead {
				w.local(Action{Op: Copy, R: Range{Aux, 0, w.cfg.Layout.N}, Src: p})
			}
			w.startGroup()
		})
		return
	}
	w.startGroup()
}

// startGroup broadcasts a hybrid root's weights to its group and begins
// the first iteration.
func (w *centerWorker) startGroup() {
	if w.group != nil {
		p := Range{Params, 0, w.cfg.Layout.N}
		w.do(Action{Op: Broadcast, R: p, Peer: w.root, Group: w.group}, true)
	}
	w.then(func() {
		// Aligned workers run until the center stops them (stop).
		to := w.cfg.MaxIter
		if w.cfg.Aligned {
			to = math.MaxInt
		}
		w.loop(to, w.iteration, w.leave)
	})
}

// leave appends a worker's leaving the center at the end of its run.
func (w *centerWorker) leave(int) {
	if w.talks() {
		w.do(Action{Op: Leave}, true)
	}
}

// iteration appends iteration it's steps.
func (w *centerWorker) iteration(it int) {
	n := w.cfg.Layout.N
	p, aux := Range{Params, 0, n}, Range{Aux, 0, n}
	xch := w.exchange(it) && w.talks()
	w.rule.body(w, it, xch)
	if w.talks() {
		s := -1
		if w.rule.ssp {
			s = w.cfg.Staleness
		}
		w.do(Action{Op: Clock, Iter: it, Staleness: s}, true)
		w.then(func() { w.stop = w.ans.Stop })
		if w.rule.ssp && xch {
			w.do(Action{Op: Pull, R: p}, true)
			w.local(Action{Op: Copy, R: aux, Src: p})
		}
	}
	if w.rule.groups && w.cfg.Aligned && w.group != nil {
		// ShmCaffe III.E for HSGD: the root learns from the center
		// whether the run ends now and tells its group, whose other
		// ranks do not clock there, in one flag broadcast.
		flag := Range{Spare, 0, 1}
		if w.talks() {
			w.then(func() {
				v := float32(0)
				if w.stop {
					v = 1
				}
				w.emit(Action{Op: Fill, R: flag, Factor: v})
			})
		}
		w.do(Action{Op: Broadcast, R: flag, Peer: w.root, Group: w.group, Flag: true}, true)
		w.then(func() { w.stop = w.ans.Stop })
	}
}

// seasgdExchange reads W_g into Aux, moves the weights toward it and
// pushes the increment without waiting.
func (w *centerWorker) seasgdExchange() {
	n := w.cfg.Layout.N
	w.do(Action{Op: Pull, R: Range{Aux, 0, n}}, true)
	w.elasticStep()
	w.do(Action{Op: Push, R: Range{Delta, 0, n}}, false)
}

// elasticStep computes ΔW = α(W − Aux) into Delta and subtracts it from
// the weights (ShmCaffe Eq. 5–6).
func (w *centerWorker) elasticStep() {
	n := w.cfg.Layout.N
	p, aux, delta := Range{Params, 0, n}, Range{Aux, 0, n}, Range{Delta, 0, n}
	w.local(Action{Op: Copy, R: delta, Src: p})
	w.local(Action{Op: Axpy, R: delta, Src: aux, Factor: -1})
	w.local(Action{Op: Scale, R: delta, Factor: w.cfg.Alpha})
	w.local(Action{Op: Axpy, R: p, Src: delta, Factor: -1})
}

// syncEASGD is Sync EASGD (SC17 5, Alg. 2–3): every iteration the master
// broadcasts the center, the workers' differences from it are summed by a
// tree reduction, each worker applies Eq. 1 and the master Eq. 2. The
// result is deterministic. Variant 1 keeps the center on a separate master
// rank, 2 on worker 0, and 3 overlaps the exchange — which needs only the
// weights the gradient is computed on — with forward and backward.
type syncEASGD struct {
	program
	cfg    Config
	rank   int
	master int
}

func newSyncEASGD(c Config, rank int) *syncEASGD {
	s := &syncEASGD{cfg: c, rank: rank}
	s.iter = c.StartIter
	if c.Variant == 1 {
		s.master = c.Workers
	}
	s.first = s.start
	return s
}

func (s *syncEASGD) start() {
	if s.rank == s.master && s.cfg.Variant != 1 {
		// Worker 0 keeps the center in Aux, starting from the
		// weights every replica starts from.
		n := s.cfg.Layout.N
		s.local(Action{Op: Copy, R: Range{Aux, 0, n}, Src: Range{Params, 0, n}})
	}
	s.loop(s.cfg.MaxIter, s.iteration, nil)
}

func (s *syncEASGD) iteration(it int) {
	n, a := s.cfg.Layout.N, s.cfg.Alpha
	p, g := Range{Params, 0, n}, Range{Grads, 0, n}
	aux, delta, spare := Range{Aux, 0, n}, Range{Delta, 0, n}, Range{Spare, 0, n}
	switch {
	case s.cfg.Variant == 1 && s.rank == s.master:
		// The master holds the center in its Params and contributes
		// zeros to the sum of differences.
		s.do(Action{Op: Broadcast, R: p, Peer: s.master}, true)
		s.local(Action{Op: Scale, R: g, Factor: 0})
		s.do(Action{Op: Reduce, R: g, Peer: s.master}, true)
		s.local(Action{Op: Axpy, R: p, Src: g, Factor: a})
	case s.cfg.Variant == 3:
		s.do(Action{Op: Compute}, false)
		s.do(Action{Op: Broadcast, R: aux, Peer: s.master}, true)
		s.local(Action{Op: Copy, R: delta, Src: p})
		s.local(Action{Op: Axpy, R: delta, Src: aux, Factor: -1})
		s.local(Action{Op: Copy, R: spare, Src: delta})
		s.do(Action{Op: Reduce, R: spare, Peer: s.master}, false)
		s.barrier()
		s.local(Action{Op: Axpy, R: p, Src: delta, Factor: -a})
		s.local(Action{Op: Update, Iter: it})
		if s.rank == s.master {
			s.local(Action{Op: Axpy, R: aux, Src: spare, Factor: a})
		}
	default:
		s.do(Action{Op: Compute}, true)
		s.do(Action{Op: Broadcast, R: aux, Peer: s.master}, true)
		s.local(Action{Op: Copy, R: delta, Src: p})
		s.local(Action{Op: Axpy, R: delta, Src: aux, Factor: -1})
		s.local(Action{Op: Axpy, R: p, Src: delta, Factor: -a})
		s.local(Action{Op: Update, Iter: it})
		s.do(Action{Op: Reduce, R: delta, Peer: s.master}, true)
		if s.rank == s.master {
			s.local(Action{Op: Axpy, R: aux, Src: delta, Factor: a})
		}
	}
}

// downpourStep is async's and ssp's iteration (SpeeDO 3.2–3.3): train
// locally; every S iterations merge the weights' change since the last
// pull into the center (Downpour) and continue from the center. ssp
// reads only after the clock admits it (Petuum's read rule: its rule's
// ssp), so its bound is s, and s = 0 is BSP.
func downpourStep(readNow bool) func(w *centerWorker, it int, xch bool) {
	return func(w *centerWorker, it int, xch bool) {
		n := w.cfg.Layout.N
		p, aux, delta := Range{Params, 0, n}, Range{Aux, 0, n}, Range{Delta, 0, n}
		w.do(Action{Op: Compute}, true)
		w.local(Action{Op: Update, Iter: it})
		if xch {
			w.local(Action{Op: Copy, R: delta, Src: p})
			w.local(Action{Op: Axpy, R: delta, Src: aux, Factor: -1})
			w.do(Action{Op: Push, R: delta}, false)
			if readNow {
				w.do(Action{Op: Pull, R: p}, true)
				w.local(Action{Op: Copy, R: aux, Src: p})
			}
		}
	}
}

// easgdRRStep is SC17 Alg. 1: one worker at a time, in rank order. The
// turn starts with the center sent to the worker (line 10; the Pull waits
// for it), spans forward and backward (11), the elastic update of both
// sides (12–14, Eq. 1–2) and ends with the Clock, which passes it on. The
// center cannot move within a turn, so pulling it and pushing α(W − W̄)
// is Eq. 1–2 exactly. With τ > 1 the turn spans the τ local steps: it
// starts with the pull of the block's first iteration, so no two workers
// ever compute at once.
func easgdRRStep(w *centerWorker, it int, xch bool) {
	n := w.cfg.Layout.N
	if w.exchange(it-1) && w.talks() {
		w.do(Action{Op: Pull, R: Range{Aux, 0, n}}, true)
	}
	w.do(Action{Op: Compute}, true)
	if xch {
		w.elasticStep()
	}
	w.local(Action{Op: Update, Iter: it})
	if xch {
		w.do(Action{Op: Push, R: Range{Delta, 0, n}}, false)
	}
}

// elasticExchangeStep is SC17 Eq. 1–2 (5–6 for measgd, whose momentum is
// the solver's), easgd's, measgd's and hogwild-easgd's iteration: the
// elastic term uses the weights the gradient was computed on.
func elasticExchangeStep(w *centerWorker, it int, xch bool) {
	w.do(Action{Op: Compute}, true)
	if xch {
		w.do(Action{Op: Elastic, R: Range{Params, 0, w.cfg.Layout.N}, Factor: w.cfg.Alpha}, true)
	}
	w.local(Action{Op: Update, Iter: it})
}

// localStep is hogwild's iteration: compute and update the shared
// weights.
func localStep(w *centerWorker, it int, _ bool) {
	w.do(Action{Op: Compute}, true)
	w.local(Action{Op: Update, Iter: it})
}

// seasgdStep is ShmCaffe III.G, Fig. 6: read the global weights (T1),
// move toward them by ΔW = α(W − W_g) (T2, Eq. 5–6), and let the update
// thread write ΔW and accumulate it into W_g (T3, Eq. 7) while this
// iteration computes (T4) and updates (T5). The next read waits for that
// accumulation: transfers run in issue order.
func seasgdStep(w *centerWorker, it int, xch bool) {
	if xch {
		w.seasgdExchange()
	}
	w.do(Action{Op: Compute}, true)
	w.local(Action{Op: Update, Iter: it})
}

// hybridStep is ShmCaffe III.D: synchronous SGD inside the group, SEASGD
// between the groups' roots. As in SEASGD (Fig. 6) the root reads the
// global weights when an iteration starts and moves toward them; it
// broadcasts the result to its group, and its push of ΔW runs while the
// group computes.
func hybridStep(w *centerWorker, it int, _ bool) {
	n := w.cfg.Layout.N
	p, g := Range{Params, 0, n}, Range{Grads, 0, n}
	if w.exchange(it) {
		if w.talks() {
			w.do(Action{Op: Pull, R: Range{Aux, 0, n}}, true)
			w.elasticStep()
		}
		if w.group != nil {
			w.do(Action{Op: Broadcast, R: p, Peer: w.root, Group: w.group}, true)
		}
		if w.talks() {
			w.do(Action{Op: Push, R: Range{Delta, 0, n}}, false)
		}
	}
	w.do(Action{Op: Compute}, true)
	if w.group != nil {
		w.do(Action{Op: Allreduce, R: g, Group: w.group, Algo: AlgoRing}, true)
		w.local(Action{Op: Scale, R: g, Factor: 1 / float32(len(w.group))})
	}
	w.local(Action{Op: Update, Iter: it})
}
