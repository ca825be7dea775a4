package solver

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// Segment is one parameter blob's slice w[Off:Off+Len] of the flat buffer
// and its multipliers: Caffe's lr_mult and decay_mult. LRMult 0 freezes the
// segment: no rule touches its weights or its history.
type Segment struct {
	Off, Len  int
	LRMult    float32
	DecayMult float32
}

// rule is an update rule; its value is the code written in solver state.
type rule uint32

const (
	ruleSGD rule = iota + 1
	ruleNesterov
	ruleAdaGrad
	ruleRMSProp
	ruleAdam
	ruleAdaDelta
)

var ruleNames = [...]string{ruleSGD: "SGD", ruleNesterov: "Nesterov", ruleAdaGrad: "AdaGrad",
	ruleRMSProp: "RMSProp", ruleAdam: "Adam", ruleAdaDelta: "AdaDelta"}

func (r rule) String() string {
	if r >= ruleSGD && r <= ruleAdaDelta {
		return ruleNames[r]
	}
	return fmt.Sprintf("rule(%d)", uint32(r))
}

// buffers is the number of history buffers a rule keeps.
func (r rule) buffers() int {
	if r == ruleAdam || r == ruleAdaDelta {
		return 2 // Adam's m and v; AdaDelta's squared gradients and squared updates
	}
	return 1
}

func ruleOf(typ string) rule {
	for r, name := range ruleNames {
		if name != "" && name == typ {
			return rule(r)
		}
	}
	return 0
}

// Solver applies one update rule and learning-rate policy to a flat
// parameter buffer of fixed length, keeping the rule's history (momentum,
// squared-gradient sums) per element. A Solver is not safe for concurrent
// use, except that StepSegment calls on distinct segments touch disjoint
// memory and may run concurrently.
type Solver struct {
	cfg  Config
	rule rule
	n    int
	segs []Segment
	// active lists the segments Step updates (lr_mult ≠ 0) in order, and
	// cum their running lengths: in the concatenation of their elements,
	// active[j] covers [cum[j], cum[j+1]).
	active []int
	cum    []int

	// threads and pool split Step across goroutines (SetThreads); stepFn
	// is stepChunk bound once, and cur the arguments of the Step running.
	threads int
	pool    *tensor.Pool
	// sharedPool says pool was given by SetPool and is not ours to close.
	sharedPool bool
	stepFn     func(lo, hi, worker int)
	cur        stepArgs
	// hist holds rule.buffers() slices of length n, indexed like w:
	// SGD and Nesterov v; AdaGrad and RMSProp h; Adam m then v; AdaDelta
	// the averages of g² then of the squared updates.
	hist [][]float32

	// Constants as Caffe computes them, in float from float operands.
	mom, mom2, delta, rmsDecay, weightDecay float32
	l1                                      bool
}

// New returns a Solver for a flat buffer of n parameters laid out in segs.
// cfg is validated (see Config.Validate) on a copy. Segments must lie within
// [0, n) and must not overlap; they need not cover the buffer, and elements
// outside every segment are never touched. Multipliers must be finite.
// History starts at zero.
func New(cfg Config, n int, segs []Segment) (*Solver, error) {
	cfg.StepValues = slices.Clone(cfg.StepValues)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("solver: parameter count %d is negative", n)
	}
	var errs []error
	for i, sg := range segs {
		if sg.Off < 0 || sg.Len < 0 || sg.Off > n || sg.Len > n-sg.Off {
			errs = append(errs, fmt.Errorf("solver: segment %d [%d, %d+%d) lies outside the %d parameters",
				i, sg.Off, sg.Off, sg.Len, n))
		}
		if f := float64(sg.LRMult); math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, fmt.Errorf("solver: segment %d: lr_mult %v is not finite", i, sg.LRMult))
		}
		if f := float64(sg.DecayMult); math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, fmt.Errorf("solver: segment %d: decay_mult %v is not finite", i, sg.DecayMult))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return segs[a].Off - segs[b].Off })
	for k := 1; k < len(order); k++ {
		a, b := segs[order[k-1]], segs[order[k]]
		if a.Len > 0 && b.Len > 0 && a.Off+a.Len > b.Off {
			return nil, fmt.Errorf("solver: segments %d [%d, %d) and %d [%d, %d) overlap",
				order[k-1], a.Off, a.Off+a.Len, order[k], b.Off, b.Off+b.Len)
		}
	}

	s := &Solver{
		cfg:         cfg,
		rule:        ruleOf(cfg.Type),
		n:           n,
		segs:        slices.Clone(segs),
		mom:         float32(cfg.Momentum),
		mom2:        float32(cfg.Momentum2),
		delta:       float32(cfg.Delta),
		rmsDecay:    float32(cfg.RMSDecay),
		weightDecay: float32(cfg.WeightDecay),
		l1:          cfg.Regularization == "L1",
	}
	s.hist = make([][]float32, s.rule.buffers())
	for i := range s.hist {
		s.hist[i] = make([]float32, n)
	}
	s.cum = []int{0}
	for i, sg := range s.segs {
		if sg.LRMult != 0 && sg.Len > 0 {
			s.active = append(s.active, i)
			s.cum = append(s.cum, s.cum[len(s.cum)-1]+sg.Len)
		}
	}
	s.threads = 1
	s.stepFn = s.stepChunk
	return s, nil
}

// stepWorkPerThread is the number of elements (about a nanosecond each,
// memory-bound) below which another Step thread costs more than it saves.
const stepWorkPerThread = 1 << 15

// SetThreads makes Step split its update across n goroutines (n ≤ 1: the
// caller's alone, the default), each taking a contiguous share of the
// elements of the updated segments. Every element goes through the same
// operations whatever n is, so results are bit for bit those of one
// thread. Small buffers run on fewer threads. StepSegment always runs on
// the caller. The solver keeps n−1 parked worker goroutines, stopped when
// it is dropped or when SetThreads(1) is called. Call it between steps.
func (s *Solver) SetThreads(n int) {
	n = max(n, 1)
	if n == s.threads && !s.sharedPool {
		return
	}
	if !s.sharedPool {
		s.pool.Close()
	}
	s.pool, s.sharedPool = nil, false
	if n > 1 {
		s.pool = tensor.NewPool(n)
	}
	s.threads = n
}

// SetPool makes Step split its update across p's goroutines, as
// SetThreads(p.Threads()) does but on a pool shared with other work (the
// net's layers), so that the update runs on the threads, and in the
// caches, that just computed the gradients, without waking a pool of its
// own. Results are the same bit for bit. The solver does not close p; a
// nil p means one thread. Call it between steps.
func (s *Solver) SetPool(p *tensor.Pool) {
	if !s.sharedPool {
		s.pool.Close()
	}
	s.pool, s.sharedPool, s.threads = p, p != nil, max(p.Threads(), 1)
	if p == nil {
		s.pool = nil
	}
}

// Threads returns the number of goroutines Step may use (see SetThreads).
func (s *Solver) Threads() int { return s.threads }

// stepArgs are the arguments of a Step, for its worker goroutines.
type stepArgs struct {
	rate  float64
	iter  int
	scale float32
	w, g  []float32
}

// N returns the length of the flat parameter buffer.
func (s *Solver) N() int { return s.n }

// Segments returns a copy of the segments, in the order New was given them;
// StepSegment's seg indexes this order.
func (s *Solver) Segments() []Segment { return slices.Clone(s.segs) }

// Config returns the validated configuration, defaults filled.
func (s *Solver) Config() Config {
	c := s.cfg
	c.StepValues = slices.Clone(c.StepValues)
	return c
}

// History returns the rule's history buffers, each of length N and indexed
// like the parameters: [v] for SGD and Nesterov, [h] (the squared-gradient
// accumulator) for AdaGrad and RMSProp, [m, v] for Adam. The slices alias
// the solver's state (ReadState and Reset keep them valid): schemes may
// read, zero or average them between steps. AdaDelta keeps [h, u]: the
// running averages of g² and of the squared updates.
func (s *Solver) History() [][]float32 { return s.hist }

// Reset zeroes all history, as a freshly made Solver has it.
func (s *Solver) Reset() {
	for _, h := range s.hist {
		clear(h)
	}
}

// CheckSegmentwise reports whether the configuration allows per-segment
// updates (StepSegment). clip_gradients does not: it scales the gradient by
// its norm over all segments, which is unknown until every segment's
// gradient is final. Schemes that update segment by segment call it once at
// setup and report the error as a configuration error.
func (s *Solver) CheckSegmentwise() error {
	if s.cfg.ClipGradients > 0 {
		return fmt.Errorf("solver: clip_gradients %v needs the norm of the whole gradient, "+
			"so it cannot be used with per-segment (layer by layer) updates", s.cfg.ClipGradients)
	}
	return nil
}

// Step applies one update at iteration iter (0-based) to w from gradient g,
// in the order of Caffe's SGDSolver::ApplyUpdate: the rate LR(iter); when
// clip_gradients > 0 and the L2 norm of g over all non-frozen segments
// exceeds it, g scaled by clip_gradients/norm; then per segment the
// regularization (L2: g + weight_decay·decay_mult·w, L1: g +
// weight_decay·decay_mult·sign(w), skipped when that product is 0) and the
// rule with local rate lr·lr_mult:
//
//	SGD       v = μ·v + lr·g;  w −= v
//	Nesterov  v' = μ·v + lr·g;  w −= (1+μ)·v' − μ·v;  v = v'
//	AdaGrad   h += g²;  w −= lr·g/(√h + δ)
//	RMSProp   h = d·h + (1−d)·g²;  w −= lr·g/(√h + δ)
//	Adam      m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;
//	          w −= lr·√(1−β2^t)/(1−β1^t) · m/(√v + δ),  t = iter+1
//	AdaDelta  h = (1−μ)·g² + μ·h;  d = g·√((u + δ)/(h + δ));
//	          u = (1−μ)·d² + μ·u;  w −= lr·d
//
// Segments with lr_mult 0 are skipped entirely. Each element is computed in
// float32 with every product rounded before it is added, as Caffe's
// sequence of BLAS calls does without FMA; so results are identical on
// every architecture. Per-segment constants (lr·lr_mult, the Adam
// correction) are rounded once from float64.
//
// Step reads g and leaves it unchanged (the regularized and clipped
// gradient is never stored), so callers may keep it. It does not allocate.
// It panics if len(w) or len(g) is not N.
func (s *Solver) Step(iter int, w, g []float32) {
	s.checkLen(w, g)
	rate := s.LR(iter)
	scale := float32(1)
	if clip := s.cfg.ClipGradients; clip > 0 {
		var sumsq float64
		for _, sg := range s.segs {
			if sg.LRMult == 0 {
				continue
			}
			for _, x := range g[sg.Off : sg.Off+sg.Len] {
				sumsq += float64(float64(x) * float64(x))
			}
		}
		if norm := math.Sqrt(sumsq); norm > clip {
			scale = float32(clip / norm)
		}
	}
	total := s.cum[len(s.cum)-1]
	if threads := min(s.threads, total/stepWorkPerThread); threads > 1 {
		s.cur = stepArgs{rate: rate, iter: iter, scale: scale, w: w, g: g}
		s.pool.For(total, threads, s.stepFn)
		s.cur = stepArgs{}
		return
	}
	for _, i := range s.active {
		s.stepSegment(rate, iter, i, scale, w, g)
	}
}

// stepChunk updates elements [lo, hi) of the concatenation of the active
// segments, with the arguments in s.cur.
func (s *Solver) stepChunk(lo, hi, _ int) {
	a := &s.cur
	for j, seg := range s.active {
		start, end := s.cum[j], s.cum[j+1]
		if end <= lo {
			continue
		}
		if start >= hi {
			break
		}
		s.stepRange(a.rate, a.iter, seg, a.scale, a.w, a.g, max(lo, start)-start, min(hi, end)-start)
	}
}

// StepSegment applies the update of Step to segment seg only, reading and
// writing only that segment's part of w, g and the history. Stepping every
// segment once at the same iter gives bit for bit the result of Step.
// It panics if clip_gradients is configured (check CheckSegmentwise at
// setup), if seg is out of range, or if len(w) or len(g) is not N.
// It does not allocate and leaves g unchanged.
func (s *Solver) StepSegment(iter, seg int, w, g []float32) {
	s.checkLen(w, g)
	if seg < 0 || seg >= len(s.segs) {
		panic(fmt.Sprintf("solver: segment %d out of range [0, %d)", seg, len(s.segs)))
	}
	if s.cfg.ClipGradients > 0 {
		panic("solver: StepSegment with clip_gradients set; see CheckSegmentwise")
	}
	s.stepSegment(s.LR(iter), iter, seg, 1, w, g)
}

func (s *Solver) checkLen(w, g []float32) {
	if len(w) != s.n || len(g) != s.n {
		panic(fmt.Sprintf("solver: len(w) = %d, len(g) = %d, want %d", len(w), len(g), s.n))
	}
}

// reg holds one segment's gradient preprocessing: the clipping scale, then
// the regularization term.
type reg struct {
	scale, decay float32
	mode         uint8
}

const (
	regNone uint8 = iota
	regL2
	regL1
)

// grad returns the clipped and regularized gradient of one element with
// raw gradient g and weight w.
func (r reg) grad(g, w float32) float32 {
	g = float32(g * r.scale) // exact when scale is 1
	switch r.mode {
	case regL2:
		return g + float32(r.decay*w)
	case regL1:
		// decay·sign(w) is exact: ±decay or 0 (NaN has sign 0, as Caffe's).
		if w > 0 {
			return g + r.decay
		} else if w < 0 {
			return g - r.decay
		}
	}
	return g
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

func (s *Solver) stepSegment(rate float64, iter, seg int, scale float32, w, g []float32) {
	s.stepRange(rate, iter, seg, scale, w, g, 0, s.segs[seg].Len)
}

// stepRange applies the update to elements [a, b) of segment seg. The
// update is element-wise, so any split of a segment into ranges gives the
// same result as one call over all of it.
func (s *Solver) stepRange(rate float64, iter, seg int, scale float32, w, g []float32, a, b int) {
	sg := s.segs[seg]
	if sg.LRMult == 0 {
		return
	}
	lo, hi := sg.Off+a, sg.Off+b
	ws, gs := w[lo:hi], g[lo:hi]
	r := reg{scale: scale}
	if d := s.weightDecay * sg.DecayMult; d != 0 {
		r.decay = d
		r.mode = regL2
		if s.l1 {
			r.mode = regL1
		}
	}
	lr := float32(rate * float64(sg.LRMult))
	switch s.rule {
	case ruleSGD:
		sgd(ws, gs, s.hist[0][lo:hi], r, lr, s.mom)
	case ruleNesterov:
		nesterov(ws, gs, s.hist[0][lo:hi], r, lr, s.mom)
	case ruleAdaGrad:
		adagrad(ws, gs, s.hist[0][lo:hi], r, lr, s.delta)
	case ruleRMSProp:
		rmsprop(ws, gs, s.hist[0][lo:hi], r, lr, s.rmsDecay, s.delta)
	case ruleAdam:
		t := float64(iter) + 1
		b1, b2 := float64(s.mom), float64(s.mom2)
		correction := math.Sqrt(1-math.Pow(b2, t)) / (1 - math.Pow(b1, t))
		step := float32(rate * float64(sg.LRMult) * correction)
		adam(ws, gs, s.hist[0][lo:hi], s.hist[1][lo:hi], r, step, s.mom, s.mom2, s.delta)
	case ruleAdaDelta:
		adadelta(ws, gs, s.hist[0][lo:hi], s.hist[1][lo:hi], r, lr, s.mom, s.delta)
	}
}

// The kernels below update one segment. Every float32(a*b) conversion is
// there to round the product before the following add, which forbids the
// compiler to fuse them (the Go spec's rule), keeping Caffe's rounding.

func sgd(w, g, v []float32, r reg, lr, mom float32) {
	if r.mode != regL1 {
		// The same operations four lanes at a time (bitwise equal).
		simd.SGD(w, g, v, r.scale, r.decay, lr, mom, r.mode == regL2)
		return
	}
	g, v = g[:len(w)], v[:len(w)]
	for i, wi := range w {
		gi := r.grad(g[i], wi)
		vi := float32(mom*v[i]) + float32(lr*gi)
		v[i] = vi
		w[i] = wi - vi
	}
}

func nesterov(w, g, v []float32, r reg, lr, mom float32) {
	g, v = g[:len(w)], v[:len(w)]
	onePlus := 1 + mom
	for i, wi := range w {
		gi := r.grad(g[i], wi)
		prev := v[i]
		vi := float32(mom*prev) + float32(lr*gi)
		v[i] = vi
		w[i] = wi - (float32(onePlus*vi) - float32(mom*prev))
	}
}

func adagrad(w, g, h []float32, r reg, lr, delta float32) {
	g, h = g[:len(w)], h[:len(w)]
	for i, wi := range w {
		gi := r.grad(g[i], wi)
		hi := h[i] + float32(gi*gi)
		h[i] = hi
		w[i] = wi - float32(lr*(gi/(sqrt32(hi)+delta)))
	}
}

func rmsprop(w, g, h []float32, r reg, lr, decay, delta float32) {
	g, h = g[:len(w)], h[:len(w)]
	oneMinus := 1 - decay
	for i, wi := range w {
		gi := r.grad(g[i], wi)
		hi := float32(decay*h[i]) + float32(oneMinus*float32(gi*gi))
		h[i] = hi
		w[i] = wi - float32(lr*(gi/(sqrt32(hi)+delta)))
	}
}

func adam(w, g, m, v []float32, r reg, step, b1, b2, delta float32) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	oneMinus1, oneMinus2 := 1-b1, 1-b2
	for i, wi := range w {
		gi := r.grad(g[i], wi)
		mi := float32(b1*m[i]) + float32(oneMinus1*gi)
		vi := float32(b2*v[i]) + float32(oneMinus2*float32(gi*gi))
		m[i], v[i] = mi, vi
		w[i] = wi - float32(step*(mi/(sqrt32(vi)+delta)))
	}
}

// adadelta is Caffe's AdaDeltaSolver::ComputeUpdateValue, its sequence of
// BLAS calls element by element: h and u are the running averages of the
// squared gradient and of the squared update, mom their decay.
func adadelta(w, g, h, u []float32, r reg, lr, mom, delta float32) {
	g, h, u = g[:len(w)], h[:len(w)], u[:len(w)]
	oneMinus := 1 - mom
	for i, wi := range w {
		gi := r.grad(g[i], wi)
		hi := float32(oneMinus*float32(gi*gi)) + float32(mom*h[i])
		h[i] = hi
		d := float32(gi * sqrt32((u[i]+delta)/(hi+delta)))
		u[i] = float32(oneMinus*float32(d*d)) + float32(mom*u[i])
		w[i] = wi - float32(lr*d)
	}
}
