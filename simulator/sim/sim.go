package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"dsgd/comm/collective"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// Straggler delays a worker's computation, as train.Straggler: rank Rank
// every iteration, or, with Rank < 0, any worker with probability Prob
// per iteration. The delay comes before the forward pass and counts as
// compute time.
type Straggler struct {
	Rank  int
	Prob  float64
	Delay time.Duration
}

// Config is one simulated run.
type Config struct {
	// Scheme is the scheme and its parameters (Name, Workers, Interval,
	// Staleness, Alpha, Variant, Groups, Pack, Bucket...). Run fills
	// Layout from Model and MaxIter from Iters, and sets Aligned when
	// Finish is not center.FinishOwn.
	Scheme scheme.Config
	Model  Model
	// Network is the links' cost; the zero Network is infinitely fast.
	Network Network
	// Iters is the iterations per worker (default 20); the first Warmup
	// (0: the default 2; negative: none; at most Iters-1) are left out of
	// the means.
	Iters  int
	Warmup int
	// Straggle slows workers down (nil: none).
	Straggle *Straggler
	// Seed drives the straggler draws (rank r draws from PCG(Seed, r+1),
	// as the trainer does) and the jitter draws (rank r from
	// PCG(Seed, ^(r+1)), a stream apart, so that adding jitter leaves the
	// straggled iterations as they were).
	Seed uint64
	// Algo overrides the allreduce algorithm of every allreduce (Auto:
	// the scheme's choice, resolved by size as collective.Resolve does).
	Algo collective.Algorithm
	// RoundDeadline is how long a weed-out round waits after its first
	// gradients (0: for every live worker).
	RoundDeadline time.Duration
	// Finish is the asynchronous schemes' aligned-termination rule.
	Finish center.Finish
	// Compress, when set, compresses the workers' gradient allreduces as
	// dsgd train --compress does (PowerSGD: see Compression).
	Compress *Compression
	// Cores, when positive, is how many computes the machine runs at full
	// speed at once: k workers computing together each progress at
	// min(1, Cores/k) of the speed the Model's times give (processor
	// sharing), as workers that oversubscribe one machine's cores do.
	// 0 (the default) gives every worker processors of its own.
	Cores float64
	// Trace, when set, receives every span the simulator sees: compute
	// (forward, backward per layer), each communication action, local
	// work with a cost, and the center's work. Rank is the scheme rank,
	// or for the center its node (Scheme.Ranks()).
	Trace func(ev TraceEvent)
	// Exact, when set, carries out every action's arithmetic on real
	// buffers for a run of at most MaxExactRanks ranks (see Exact); nil
	// (the default) moves no data and allocates no buffers, so thousands
	// of ranks fit in memory.
	Exact *Exact

	// ringMessages runs ring allreduces message by message instead of by
	// the compact recurrence (tests compare the two).
	ringMessages bool
}

// TraceEvent is one span in virtual time.
type TraceEvent struct {
	Rank       int // Workers..: servers
	Name, Cat  string
	Start, Dur time.Duration
}

// Result is what a simulated run measured.
type Result struct {
	// Means per iteration of worker 0 after warm-up: wall time,
	// forward+backward (with any straggler delay), exposed communication,
	// waiting for other workers, and local work (solver update, scale,
	// axpy). Exposed time is time with no compute running and a
	// communication action pending. It is Wait when the oldest pending
	// action is an SSP clock or a weed-out round, or a synchronous
	// exchange (a collective, or a sync-ps worker's push and pull of one
	// iteration) that completed on worker 0 after its last member had
	// entered it: the exposed time before that entry is Wait, the rest
	// Comm. An exchange that completes on worker 0 before every member
	// entered it (a broadcast's root) is all Comm.
	Iter, Compute, Comm, Wait, Update time.Duration
	// CommRatio is (Comm+Wait)/Iter.
	CommRatio float64
	// Bytes is the bytes sent by all ranks and the center over the run,
	// divided by Iters.
	Bytes int64
	// Makespan is when the last rank finished.
	Makespan time.Duration
	// Dropped counts weed-out gradients that missed their round; Waits
	// counts SSP clocks that had to wait.
	Dropped, Waits int64
	// Iters is the iterations worker 0 completed; Messages the messages
	// sent by all nodes.
	Iters    int
	Messages int64
	// Weights is the final weights, with Exact only (nil otherwise, so
	// that Results stay comparable with ==).
	Weights *Weights
}

// Weights is what an Exact run ends with.
type Weights struct {
	// Params is every rank's weights, Scheme.Ranks() of them (a parameter
	// server's and sync-easgd's master's too).
	Params [][]float32
	// Center is the center's weights for a scheme with one (nil for the
	// others; sync-easgd keeps its center in worker 0's Aux, or variant
	// 1's master's Params).
	Center []float32
}

// ctrlBytes is the size of a control message (a center request or
// reply with no weights).
const ctrlBytes = 64

// Run simulates cfg and returns worker 0's time account.
func Run(cfg Config) (Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return Result{}, err
	}
	return s.run()
}

type sim struct {
	cfg     Config
	sc      scheme.Config
	info    scheme.Info // sc's scheme, looked up once
	eng     engine
	net     *network
	drivers []*driver
	srv     *server
	insts   map[instKey]*inst
	fwd     float64
	bwd     []float64 // per layer
	jitter  float64   // Model.Jitter relative to fwd + sum(bwd)
	err     error
	done    int
	end     float64
	ex      *exactState // nil: no arithmetic
	acc     *accumState // overlap's shared accumulator (Accumulate)
	cpu     *cpu        // nil: every worker computes on processors of its own
}

func newSim(cfg Config) (*sim, error) {
	if cfg.Iters == 0 {
		cfg.Iters = 20
	}
	switch {
	case cfg.Iters < 0:
		return nil, fmt.Errorf("sim: %d iterations", cfg.Iters)
	case cfg.Warmup == 0:
		cfg.Warmup = 2
	case cfg.Warmup < 0:
		cfg.Warmup = 0
	}
	cfg.Warmup = min(cfg.Warmup, cfg.Iters-1)
	if cfg.Network.Alpha < 0 || cfg.Network.Beta < 0 {
		return nil, fmt.Errorf("sim: network %s has a negative alpha or beta", cfg.Network.Name)
	}
	if cfg.Model.AddRate < 0 || cfg.Model.Update < 0 || cfg.Model.Jitter < 0 {
		return nil, fmt.Errorf("sim: model %q has a negative add rate, update time or jitter", cfg.Model.Name)
	}
	for _, l := range cfg.Model.Layers {
		if l.Forward < 0 || l.Backward < 0 || l.Params < 0 {
			return nil, fmt.Errorf("sim: model %q: layer %q has a negative time or parameter count", cfg.Model.Name, l.Name)
		}
	}
	if st := cfg.Straggle; st != nil && (st.Delay < 0 || st.Prob < 0 || st.Prob > 1) {
		return nil, fmt.Errorf("sim: straggler delay %v and probability %g: want delay >= 0, probability in [0,1]", st.Delay, st.Prob)
	}
	if cfg.RoundDeadline < 0 {
		return nil, fmt.Errorf("sim: negative round deadline %v", cfg.RoundDeadline)
	}
	sc := cfg.Scheme
	sc.Layout = cfg.Model.Layout()
	sc.StartIter, sc.MaxIter = 0, cfg.Iters
	if cfg.Finish != center.FinishOwn {
		sc.Aligned = true
	}
	ranks, err := scheme.New(sc)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s := &sim{cfg: cfg, sc: sc, info: sc.Info(), insts: map[instKey]*inst{}}
	if sc.Accumulate {
		s.acc = newAccumState()
	}
	if err := cfg.Compress.check(cfg, sc); err != nil {
		return nil, err
	}
	switch {
	case cfg.Cores < 0 || cfg.Cores != cfg.Cores:
		return nil, fmt.Errorf("sim: %v cores", cfg.Cores)
	case cfg.Cores > 0:
		s.cpu = &cpu{s: s, cores: cfg.Cores}
	}
	for _, l := range cfg.Model.Layers {
		s.fwd += l.Forward.Seconds()
		s.bwd = append(s.bwd, l.Backward.Seconds())
	}
	if c := s.fwd + sum(s.bwd); c > 0 {
		s.jitter = cfg.Model.Jitter.Seconds() / c
	}
	nodes := len(ranks)
	uses, nc := sc.UsesCenter()
	if uses {
		nodes++
	}
	s.net = newNetwork(&s.eng, cfg.Network, nodes)
	if uses {
		var err error
		if s.srv, err = newServer(s, len(ranks), nc); err != nil {
			return nil, err
		}
	}
	for r, rk := range ranks {
		d := &driver{s: s, rank: r, sch: rk, worker: r < sc.Workers, centerID: sc.CenterID(r)}
		if st := cfg.Straggle; st != nil && d.worker && (st.Rank == r || st.Rank < 0) {
			d.rng = rand.New(rand.NewPCG(cfg.Seed, uint64(r)+1))
		}
		if s.jitter > 0 && d.worker {
			d.jit = rand.New(rand.NewPCG(cfg.Seed, ^(uint64(r) + 1)))
		}
		s.drivers = append(s.drivers, d)
	}
	if cfg.Exact != nil && sc.Accumulate {
		return nil, fmt.Errorf("sim: exact arithmetic does not carry out TRL's shared accumulator (overlap with Accumulate); simulate overlap's allreduce instead")
	}
	if cfg.Exact != nil {
		if err := cfg.Exact.validate(sc, len(ranks), sc.Layout.N); err != nil {
			return nil, err
		}
		if err := s.newExact(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *sim) trace(rank int, name, cat string, start, end float64) {
	if s.cfg.Trace != nil && end > start {
		s.cfg.Trace(TraceEvent{Rank: rank, Name: name, Cat: cat, Start: dur(start), Dur: dur(end - start)})
	}
}

func dur(sec float64) time.Duration { return time.Duration(sec*1e9 + 0.5) }

// addCost is the time to add n floats.
func (s *sim) addCost(n int) float64 {
	if s.cfg.Model.AddRate <= 0 || n <= 0 {
		return 0
	}
	return float64(n) / s.cfg.Model.AddRate
}

func (s *sim) run() (Result, error) {
	for _, d := range s.drivers {
		d.post(scheme.Event{Kind: scheme.Start})
	}
	s.eng.run(func() bool { return s.err != nil || s.net.mismatch != nil })
	if s.err == nil {
		s.err = s.net.mismatch
	}
	if s.err != nil {
		return Result{}, s.err
	}
	for _, d := range s.drivers {
		if !d.done {
			return Result{}, fmt.Errorf("sim: %s: rank %d never finished (%s): the scheme deadlocked", s.sc.Name, d.rank, d.stuck())
		}
	}
	return s.result()
}

func (s *sim) result() (Result, error) {
	d := s.drivers[0]
	n := len(d.iterEnd)
	w := s.cfg.Warmup
	if n <= w {
		return Result{}, fmt.Errorf("sim: worker 0 completed %d iterations, no more than the %d of warm-up", n, w)
	}
	start := 0.0
	if w > 0 {
		start = d.iterEnd[w-1]
	}
	cnt := float64(n - w)
	var acc iterStat
	for i := w; i < n && i < len(d.stats); i++ {
		st := d.stats[i]
		acc.compute += st.compute
		acc.comm += st.comm
		acc.wait += st.wait
		acc.update += st.update
	}
	iter := (d.iterEnd[n-1] - start) / cnt
	res := Result{
		Iter:     dur(iter),
		Compute:  dur(acc.compute / cnt),
		Comm:     dur(acc.comm / cnt),
		Wait:     dur(acc.wait / cnt),
		Update:   dur(acc.update / cnt),
		Bytes:    s.net.bytes / int64(s.cfg.Iters),
		Makespan: dur(s.end),
		Iters:    n,
		Messages: s.net.msgs,
	}
	if iter > 0 {
		res.CommRatio = (acc.comm + acc.wait) / cnt / iter
	}
	if s.srv != nil {
		st := s.srv.core.Stats()
		res.Dropped, res.Waits = st.Dropped, st.Waits
	}
	if s.ex != nil {
		res.Weights = &Weights{}
		for _, d := range s.drivers {
			res.Weights.Params = append(res.Weights.Params, d.bufs[scheme.Params])
		}
		if s.ex.plane != nil {
			res.Weights.Center = append([]float32(nil), s.ex.plane.Weights()...)
		}
	}
	return res, nil
}

// iterStat is worker 0's time account of one iteration, in seconds.
type iterStat struct{ compute, comm, wait, update float64 }

// answer is what a communication action reports with its Done.
type answer struct {
	iter          int
	dropped, stop bool
}

// commOp is a communication action issued by a rank.
type commOp struct {
	a     scheme.Action
	inst  *inst
	start float64
	// gather runs an Allreduce action as a ring allgather of its range
	// (each rank's equal part to every rank): a compressor's exchange.
	gather bool
}

// driver runs one rank's scheme as node.Rank does, in virtual time: the
// loop handles one event at a time and is busy while it runs local
// actions with a cost; compute runs beside it; communication actions run
// one at a time, in issue order, on the rank's virtual comm goroutine.
type driver struct {
	s        *sim
	rank     int
	flag     float32 // the last Fill's value: a flag broadcast's stop decision
	sch      scheme.Rank
	worker   bool
	centerID int
	rng      *rand.Rand // straggler draws; nil: none
	jit      *rand.Rand // jitter draws; nil: none

	inbox     []scheme.Event
	draining  bool
	busy      float64 // the loop runs local actions until busy
	idleFrom  float64
	computing bool
	started   int          // computes started: the iteration an allreduce of gradients belongs to
	gen       int          // compute generation: an Abort makes the running one's events stale
	job       *cpuJob      // the running compute on the shared processors (Config.Cores)
	side      map[int]bool // side ops in flight, by ID
	inflight  []*commOp    // issued, Done not yet handled; oldest first
	queue     []*commOp    // issued, not yet started
	commBusy  bool
	done      bool
	iters     int // IterDone actions so far
	counters  map[groupKey]int
	p2pIter   int // the iteration+1 whose sync-ps exchange this rank entered

	// exact mode: the rank's buffers (by scheme.Buffer; nil until used)
	// and its Computes so far.
	bufs     [6][]float32
	computes int

	// worker 0's account
	stats   []iterStat
	iterEnd []float64
}

// post queues an event for the loop.
func (d *driver) post(ev scheme.Event) {
	d.inbox = append(d.inbox, ev)
	if !d.draining {
		d.draining = true
		d.s.eng.at(max(d.s.eng.now, d.busy), d.drain)
	}
}

// drain handles the oldest queued event once the loop is free.
func (d *driver) drain() {
	now := d.s.eng.now
	if now < d.busy {
		d.s.eng.at(d.busy, d.drain)
		return
	}
	ev := d.inbox[0]
	d.inbox = d.inbox[1:]
	if len(d.inbox) == 0 {
		d.inbox = d.inbox[:0:0]
	}
	d.handle(ev, now)
	if len(d.inbox) > 0 && !d.done {
		d.s.eng.at(max(d.s.eng.now, d.busy), d.drain)
	} else {
		d.draining = false
	}
}

func (d *driver) handle(ev scheme.Event, now float64) {
	if d.done {
		return
	}
	if ev.Kind != scheme.Start {
		d.account(d.idleFrom, now)
	}
	switch ev.Kind {
	case scheme.ComputeDone:
		d.computing = false
	case scheme.Done:
		if d.side[ev.ID] {
			delete(d.side, ev.ID)
		} else {
			d.inflight = d.inflight[1:]
		}
	}
	d.dispatch(d.sch.Step(ev), now)
}

// cur is worker 0's account of the iteration in progress.
func (d *driver) cur() *iterStat {
	for len(d.stats) <= d.iters {
		d.stats = append(d.stats, iterStat{})
	}
	return &d.stats[d.iters]
}

// account books the loop's idle time [t0,t1) as node does: exposed when
// nothing computes and communication is pending.
func (d *driver) account(t0, t1 float64) {
	if d.rank != 0 || t1 <= t0 || d.computing || len(d.inflight) == 0 {
		return
	}
	dt := t1 - t0
	st := d.cur()
	head := d.inflight[0]
	if op := head.a.Op; op == scheme.Clock || op == scheme.Round {
		st.wait += dt
		return
	}
	w := 0.0
	if in := head.inst; in != nil && in.entered == in.need {
		w = min(max(in.last-t0, 0), dt)
	}
	st.wait += w
	st.comm += dt - w
}

func (d *driver) dispatch(acts []scheme.Action, now float64) {
	for _, a := range acts {
		switch {
		case a.Op == scheme.Finish:
			d.done = true
			d.s.done++
			d.s.end = max(d.s.end, now)
			d.busy = now
			return
		case a.Op == scheme.Compute:
			if !d.worker {
				d.s.fail(fmt.Errorf("sim: %s asked rank %d, which has no model, to compute", d.s.sc.Name, d.rank))
				return
			}
			d.compute(a, now)
		case a.Op == scheme.Abort:
			if d.computing {
				if d.job != nil {
					d.s.cpu.stop(d.job, now) // its processors go to the others
					d.job = nil
				}
				d.gen++ // the running compute's events are now stale
				d.s.eng.at(now, func() { d.post(scheme.Event{Kind: scheme.ComputeDone, Aborted: true}) })
			}
		case a.Op == scheme.Gather && d.s.acc != nil:
			if d.side == nil {
				d.side = map[int]bool{}
			}
			d.side[a.ID] = true
			d.s.acc.gather(d.s, a.Iter, a.R.Lo, a.R.Len(), now, func(float64) {
				d.post(scheme.Event{Kind: scheme.Done, ID: a.ID})
			})
		case a.Op.IsSide():
			if d.side == nil {
				d.side = map[int]bool{}
			}
			d.side[a.ID] = true
			d.s.srv.side(d, a, now, func(ans answer) {
				d.post(scheme.Event{Kind: scheme.Done, ID: a.ID, Iter: ans.iter})
			})
		case a.Op.IsComm():
			op := &commOp{a: a}
			d.inflight = append(d.inflight, op)
			d.queue = append(d.queue, op)
			d.kick(now)
		default:
			c := d.local(a)
			if a.Op == scheme.Fill {
				d.flag = a.Factor
			}
			if d.s.ex != nil {
				d.apply(a)
			}
			if a.Op == scheme.IterDone {
				if d.rank == 0 {
					d.cur()
					d.iterEnd = append(d.iterEnd, now)
				}
				d.iters++
				continue
			}
			if c > 0 {
				if d.rank == 0 {
					d.cur().update += c
				}
				d.s.trace(d.rank, a.Name(), "update", now, now+c)
				now += c
			}
		}
	}
	d.busy = now
	d.idleFrom = now
}

// local is the cost of a local action.
func (d *driver) local(a scheme.Action) float64 {
	switch a.Op {
	case scheme.Update:
		return d.s.cfg.Model.Update.Seconds()
	case scheme.Scale, scheme.Axpy:
		return d.s.addCost(a.R.Len())
	case scheme.Quantize:
		// A pass over the values packed, as an add's.
		return d.s.addCost(a.Src.Len())
	case scheme.Dequantize:
		return d.s.addCost(a.R.Len())
	}
	return 0
}

// compute runs forward, then backward last layer first, posting
// GradsReady as each layer with parameters finishes (when asked) and
// ComputeDone at the end.
func (d *driver) compute(a scheme.Action, now float64) {
	s := d.s
	d.computing = true
	d.started++
	gen := d.gen
	t := now
	loss := 0.0
	if s.ex != nil {
		loss = d.grad()
	}
	if d.rng != nil {
		st := s.cfg.Straggle
		if st.Rank >= 0 || d.rng.Float64() < st.Prob {
			s.trace(d.rank, "straggle", "compute", t, t+st.Delay.Seconds())
			t += st.Delay.Seconds()
		}
	}
	scale := 1.0
	if d.jit != nil {
		scale = d.jitterScale()
	}
	if s.cpu != nil {
		d.computeShared(a, now, t, scale, loss, gen)
		return
	}
	s.trace(d.rank, "forward", "compute", t, t+scale*s.fwd)
	t += scale * s.fwd
	blocks := s.sc.Layout.Blocks
	bi := len(blocks)
	for i := len(s.cfg.Model.Layers) - 1; i >= 0; i-- {
		l := s.cfg.Model.Layers[i]
		s.trace(d.rank, "backward "+l.Name, "compute", t, t+scale*s.bwd[i])
		t += scale * s.bwd[i]
		if l.Params > 0 {
			bi--
			if a.WatchGrads {
				b := blocks[bi]
				s.eng.at(t, func() {
					if d.gen == gen {
						d.post(scheme.Event{Kind: scheme.GradsReady, Lo: b.Lo, Hi: b.Hi})
					}
				})
			}
		}
	}
	if d.rank == 0 {
		d.cur().compute += t - now
	}
	s.eng.at(t, func() {
		if d.gen == gen {
			d.post(scheme.Event{Kind: scheme.ComputeDone, Loss: loss})
		}
	})
}

// computeShared is compute on the shared processors (Config.Cores): the
// forward pass and each layer's backward are segments of one cpu job,
// started at t (after any straggler delay), whose ends come when the
// processors have done their work at the shared rate.
func (d *driver) computeShared(a scheme.Action, now, t, scale, loss float64, gen int) {
	s := d.s
	job := &cpuJob{}
	segStart := t
	add := func(name string, work float64, then func(t float64)) {
		job.segs = append(job.segs, cpuSeg{work: work, fin: func(end float64) {
			if d.gen != gen {
				return
			}
			s.trace(d.rank, name, "compute", segStart, end)
			segStart = end
			if then != nil {
				then(end)
			}
		}})
	}
	add("forward", scale*s.fwd, nil)
	blocks := s.sc.Layout.Blocks
	bi := len(blocks)
	for i := len(s.cfg.Model.Layers) - 1; i >= 0; i-- {
		l := s.cfg.Model.Layers[i]
		var then func(float64)
		if l.Params > 0 {
			bi--
			if a.WatchGrads {
				b := blocks[bi]
				then = func(float64) { d.post(scheme.Event{Kind: scheme.GradsReady, Lo: b.Lo, Hi: b.Hi}) }
			}
		}
		add("backward "+l.Name, scale*s.bwd[i], then)
	}
	last := job.segs[len(job.segs)-1].fin
	job.segs[len(job.segs)-1].fin = func(end float64) {
		last(end)
		if d.gen != gen {
			return
		}
		d.job = nil
		if d.rank == 0 {
			d.cur().compute += end - now
		}
		d.post(scheme.Event{Kind: scheme.ComputeDone, Loss: loss})
	}
	d.job = job
	s.eng.at(t, func() {
		if d.gen == gen {
			s.cpu.start(job, s.eng.now)
		}
	})
}

// jitterScale draws this iteration's compute scale: 1 + z·jitter, z
// standard normal, redrawn until positive (see Model.Jitter).
func (d *driver) jitterScale() float64 {
	for {
		if s := 1 + d.jit.NormFloat64()*d.s.jitter; s > 0 {
			return s
		}
	}
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// kick starts the next communication action if the comm goroutine is
// free.
func (d *driver) kick(now float64) {
	if d.commBusy || len(d.queue) == 0 {
		return
	}
	op := d.queue[0]
	d.queue = d.queue[1:]
	d.commBusy = true
	op.start = now
	d.comm(op, now, func(ans answer) {
		end := d.s.eng.now
		cat := "comm"
		if op.a.Op == scheme.Clock || op.a.Op == scheme.Round {
			cat = "wait"
		}
		d.s.trace(d.rank, op.a.Name(), cat, op.start, end)
		d.commBusy = false
		d.post(scheme.Event{Kind: scheme.Done, ID: op.a.ID, Iter: ans.iter, Dropped: ans.dropped, Stop: ans.stop})
		d.kick(end)
	})
}

// comm carries out a communication action from time now; fin must be
// called from an event at the time it completes.
func (d *driver) comm(op *commOp, now float64, fin func(answer)) {
	s := d.s
	a := op.a
	if a.Op.IsCenter() {
		if s.srv == nil {
			s.fail(fmt.Errorf("sim: %s asked rank %d for %v, but the scheme has no center", s.sc.Name, d.rank, a.Op))
			return
		}
		s.srv.op(d, a, now, fin)
		return
	}
	switch a.Op {
	case scheme.Accumulate:
		if s.acc == nil {
			s.fail(fmt.Errorf("sim: %s accumulates but the run has no shared accumulator", s.sc.Name))
			return
		}
		end := s.acc.add(s, a.Iter, a.R.Lo, a.R.Len(), now)
		s.eng.at(end, func() { fin(answer{}) })
	case scheme.Allreduce, scheme.Broadcast, scheme.Reduce:
		d.collective(op, now, fin)
	case scheme.Send:
		d.enterP2P(op, now)
		sent := s.net.send(d.rank, a.Peer, a.Tag, 4*int64(a.R.Len()), now, d.snapshot(a.R))
		s.eng.at(sent, func() { fin(answer{}) })
	case scheme.Recv:
		d.enterP2P(op, now)
		s.net.recv(a.Peer, d.rank, a.Tag, now, func(t float64, data []float32) {
			d.land(a.R, data, a.Add)
			if a.Add {
				s.eng.at(t+s.addCost(a.R.Len()), func() { fin(answer{}) })
				return
			}
			fin(answer{})
		})
	default:
		s.fail(fmt.Errorf("sim: %v is not a communication action", a.Op))
	}
}

// stuck describes what an unfinished rank waits for.
func (d *driver) stuck() string {
	if len(d.inflight) > 0 {
		a := d.inflight[0].a
		return fmt.Sprintf("waiting for %v with peer %d", a.Op, a.Peer)
	}
	if d.computing {
		return "computing"
	}
	return "idle"
}
