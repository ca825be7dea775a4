package scheme

// DiLoCo's outer optimizer, as the paper sets it (Douillard et al. 2023,
// "DiLoCo: Distributed Low-Communication Training of Language Models",
// Alg. 1 and §3: SGD with Nesterov momentum 0.9 and learning rate 0.7).
const (
	// DiLoCoOuterLR is the outer learning rate used when Alpha is 0.
	DiLoCoOuterLR = 0.7
	// DiLoCoOuterMomentum is the paper's Nesterov momentum of the outer
	// optimizer (Config.OuterMomentum; the command's default).
	DiLoCoOuterMomentum = 0.9
	// DefaultOuterInterval is an Outer scheme's inner steps per outer
	// step (Config.Interval) when none is given. One inner step per
	// outer step puts the outer Nesterov momentum on top of the solver's:
	// LeNet diverged within 40 iterations. DiLoCo's paper takes H = 500
	// for its language models; 100 keeps a short run's outer steps
	// frequent (scripts/bench-diloco.sh).
	DefaultOuterInterval = 100
)

// newDiLoCo is DiLoCo (Douillard et al. 2023, Alg. 1): every worker takes H =
// Interval steps of its own solver (the inner optimizer) from the last
// global weights θ; then the workers average their pseudo-gradients
// Δ = θ − θ_i (one allreduce) and every worker applies the same outer
// step to θ: SGD with Nesterov momentum (PyTorch's rule: b = μ·b + Δ,
// θ ← θ − lr·(Δ + μ·b)), lr = Alpha (DiLoCoOuterLR by default), μ =
// OuterMomentum (the paper's is DiLoCoOuterMomentum). Every worker then continues from the new θ, so the
// replicas hold the same weights after every outer step; a run that ends
// between two outer steps takes one more, as local-sgd averages once more.
// With lr 1 and μ 0 it is local-sgd (up to rounding). The buffers: Aux holds θ, Spare the
// outer momentum b, Delta the pseudo-gradient. The inner solver's state
// stays each worker's own, as in the paper. A resumed run restarts the
// outer momentum at zero from the snapshot's weights.
func newDiLoCo(c Config) Rank {
	w := newPeriodic(c)
	// θ is the weights every worker starts from.
	w.begin = func() { w.local(Action{Op: Copy, R: w.all(Aux), Src: w.all(Params)}) }
	w.sync = func() { dilocoOuter(w) }
	return w
}

// dilocoOuter appends one outer step: the pseudo-gradients' mean, the
// Nesterov update of θ, and every worker's weights set to it.
func dilocoOuter(w *periodic) {
	n := w.cfg.Workers
	lr := w.cfg.Alpha
	if lr == 0 {
		lr = DiLoCoOuterLR
	}
	mu := w.cfg.OuterMomentum
	// Δ = θ − θ_i, averaged over the workers.
	w.local(Action{Op: Copy, R: w.all(Delta), Src: w.all(Aux)})
	w.local(Action{Op: Axpy, R: w.all(Delta), Src: w.all(Params), Factor: -1})
	if n > 1 {
		for _, r := range w.cfg.messages(Delta) {
			w.do(Action{Op: Allreduce, R: r, Algo: AlgoRing}, false)
		}
		w.barrier()
		w.local(Action{Op: Scale, R: w.all(Delta), Factor: 1 / float32(n)})
	}
	// b = μ·b + Δ; Δ ← Δ + μ·b; θ ← θ − lr·Δ.
	w.local(Action{Op: Scale, R: w.all(Spare), Factor: mu})
	w.local(Action{Op: Axpy, R: w.all(Spare), Src: w.all(Delta), Factor: 1})
	w.local(Action{Op: Axpy, R: w.all(Delta), Src: w.all(Spare), Factor: mu})
	w.local(Action{Op: Axpy, R: w.all(Aux), Src: w.all(Delta), Factor: -lr})
	w.local(Action{Op: Copy, R: w.all(Params), Src: w.all(Aux)})
}
