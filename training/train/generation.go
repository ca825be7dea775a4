package train

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"dsgd/comm/compress"
	"dsgd/comm/transport"
	"dsgd/engine/tensor/exact"
	"dsgd/protocol/accum"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/checkpoint"
	"dsgd/training/metrics"
	"dsgd/training/node"
)

// generation is one run of the trainer's ranks with the group as it is
// (the whole run, but for an elastic one), in the five stages
// runGeneration calls in order: prepare, connect, buildNodes, run and
// collect. Its fields are what the stages hand on and what the
// iteration hooks account.
type generation struct {
	t       *Trainer
	cfg     Config
	workers int
	// ep is this rank's endpoint in a multi-process group (Config.Group).
	ep    transport.Endpoint
	res   *Result
	prog  *metrics.Progress
	begin time.Time
	// testing is the time spent testing, not training.
	testing time.Duration

	// What connect makes: the scheme and its ranks, the endpoints
	// (indexed by rank), the center (local when in-process) and TRL's
	// accumulator.
	sc      scheme.Config
	schemes []scheme.Rank
	eps     []transport.Endpoint
	cen     center.Center
	local   *center.Local
	acc     *accum.Shared

	// What buildNodes makes: a node per local rank, and how to fetch the
	// model the scheme trains when it is not rank 0's weights (nil when
	// it is), with saved holding rank 0's own meanwhile.
	nodes   []*node.Rank
	weights func(context.Context, []float32) error
	saved   []float32
	updater *rankState

	// The iteration accounts of the hooks: the iterations done, the
	// smoothed loss over window (the last AverageLoss losses), the
	// training time, the last display's iteration and time, the last
	// iteration's end, and the Caffe log's last display.
	done                      int
	smooth, trainSecs         float64
	window                    []float64
	lastDisplay               int
	lastDisplayTime, lastIter time.Time
	clogIter                  int
	clogTime                  time.Time
}

// runGeneration trains with the group as it is, to MaxIter; ep is this
// rank's endpoint in a multi-process group (Config.Group).
func (t *Trainer) runGeneration(ctx context.Context, ep transport.Endpoint) (*Result, error) {
	g := t.newGeneration(ep)
	defer g.prog.Done()
	unlock, err := g.prepare(ctx)
	if err != nil {
		return g.res, err
	}
	defer unlock()
	if err := g.connect(ctx); err != nil {
		return g.res, err
	}
	if err := g.buildNodes(ctx); err != nil {
		return g.res, err
	}
	return g.collect(ctx, g.run(ctx))
}

// newGeneration starts a generation's result and progress display.
func (t *Trainer) newGeneration(ep transport.Endpoint) *generation {
	cfg := t.cfg
	g := &generation{t: t, cfg: cfg, workers: max(cfg.Workers, 1), ep: ep}
	g.res = &Result{Start: t.start, Phases: metrics.NewPhases(append(PhaseNames, "comm (exposed)", "wait")...), Params: t.net.Params(), Workers: g.workers, Scheme: cfg.Name}
	g.prog = metrics.NewProgress(t.out, cfg.MaxIter, cfg.TTY)
	g.prog.From(t.start)
	return g
}

// prepare is the first stage: the metrics and Caffe log headers, the
// test before the first iteration, the data position, and the snapshot
// prefix held (the returned function releases it) and cleaned of killed
// writes.
func (g *generation) prepare(ctx context.Context) (unlock func(), err error) {
	t, cfg := g.t, g.cfg
	g.begin = time.Now()
	if t.sink != nil && !cfg.MetricsNoHeader {
		if err := t.sink.header(); err != nil {
			return nil, err
		}
	}
	if t.clog != nil {
		t.clog.Infof("solver.cpp", 289, "Solving %s", t.net.Name())
		t.clog.Infof("solver.cpp", 290, "Learning Rate Policy: %s", cfg.Solver.LRPolicy)
		if cfg.Resume != "" {
			t.clog.Infof("solver.cpp", 296, "Restoring previous solver status from %s", cfg.Resume)
		}
	}
	// Caffe tests before the first iteration inside its loop (Step): a
	// run of no iteration (max_iter 0) has the final test alone.
	if t.test != nil && cfg.TestInitialization && t.start == 0 && t.start < cfg.MaxIter && cfg.TestInterval > 0 {
		t0 := time.Now()
		tr, err := t.Test(ctx, 0)
		if err != nil {
			return nil, err
		}
		g.testing += time.Since(t0)
		g.res.Tests = append(g.res.Tests, tr)
		g.prog.Printf("%s\n", tr)
		if err := t.reportTest(tr); err != nil {
			return nil, err
		}
	}
	for _, rs := range t.ranks {
		if rs.comp != nil {
			rs.comp.atom = t.start * max(cfg.IterSize, 1)
		}
	}
	if cfg.SnapshotPrefix == "" || t.rank(t.updater) == nil {
		return func() {}, nil
	}
	// This run writes under the prefix: hold it, then remove what
	// killed writes left (no live run's, since none holds it).
	unlock, err = lockPrefix(cfg.SnapshotPrefix)
	if err != nil {
		return nil, err
	}
	for _, pat := range snapshotGlobs(cfg.SnapshotPrefix) {
		removed, err := checkpoint.CleanTemps(pat)
		for _, p := range removed {
			g.prog.Printf("dsgd: removed %s, left by a snapshot write that was killed\n", p)
		}
		if err != nil {
			unlock()
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	return unlock, nil
}

// connect is the second stage: the scheme's ranks, the endpoints (in a
// group, this rank's, after agreeing the run's configuration with rank
// 0 and moving the gradients into shared memory where the host has it;
// in one process, in-process ones), the center and TRL's accumulator.
func (g *generation) connect(ctx context.Context) error {
	t, cfg, ep := g.t, g.cfg, g.ep
	g.sc = t.schemeConfig(t.start)
	sc := g.sc
	var err error
	if g.schemes, err = scheme.New(sc); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	switch {
	case cfg.Group != nil:
		if ep == nil && !sc.CenterOnly() {
			return errors.New("train: the group's endpoint is not connected (Deps.Endpoint)")
		}
		g.eps = make([]transport.Endpoint, cfg.Group.Size)
		g.eps[cfg.Group.Rank] = ep
		if ep != nil {
			if err := t.agree(ctx, ep); err != nil {
				transport.Abort(ep, err)
				return err
			}
			note, err := t.shareGrads(ctx, ep)
			if err != nil {
				transport.Abort(ep, err)
				return err
			}
			if note != "" {
				g.prog.Printf("%s\n", note)
			}
		}
	case len(t.ranks) > 1:
		g.eps = transport.NewInproc(len(t.ranks))
	}
	if g.cen, g.local, err = t.makeCenter(sc); err != nil {
		return err
	}
	if sc.Accumulate {
		if g.acc, err = accum.New(sc.Workers, max(sc.GradWidth, 1)*sc.Layout.N); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	return nil
}

// withModel runs fn with rank 0's weights replaced by the model the
// scheme trains (the center, for the elastic and asynchronous schemes),
// so tests and snapshots see that model. It runs between rank 0's
// iterations, when nothing reads its weights.
func (g *generation) withModel(ctx context.Context, fn func() error) error {
	if g.weights == nil {
		return fn()
	}
	p := g.t.net.Params()
	g.saved = append(g.saved[:0], p...)
	if err := g.weights(ctx, p); err != nil {
		return fmt.Errorf("train: fetching the model's weights: %w", err)
	}
	err := fn()
	copy(p, g.saved)
	return err
}

// buildNodes is the third stage: a node.Rank per local rank, wired to
// its scheme, endpoint, center, compressor and the iteration hooks
// (rank 0's display and tests, the updating rank's snapshots, the
// elastic group's check, metrics and trace).
func (g *generation) buildNodes(ctx context.Context) error {
	t, cfg, sc := g.t, g.cfg, g.sc
	g.nodes = make([]*node.Rank, len(t.ranks))
	g.weights = t.modelWeights(sc, g.cen, g.nodes)
	g.updater = t.rank(t.updater)
	g.done = t.start
	g.lastDisplay, g.lastDisplayTime, g.lastIter = t.start, time.Now(), time.Now()
	g.clogIter, g.clogTime = t.start, time.Now()
	onIter := func(iter int, loss float64) error { return g.onIter(ctx, iter, loss) }
	snapIter := func(iter int, _ float64) error { return g.snapIter(ctx, iter) }
	// Without rank 0 here, the first local rank counts the iterations.
	countIter := func(iter int, _ float64) error {
		g.done = iter + 1
		return nil
	}
	for i, rs := range t.ranks {
		r := rs.rank
		n := &node.Rank{
			Scheme:   g.schemes[r],
			Params:   rs.net.Params(),
			Grads:    rs.net.Grads(),
			Update:   func(iter int) { rs.solver.Step(iter, rs.net.Params(), rs.net.Grads()) },
			Timeout:  cfg.CommTimeout,
			Algo:     t.algo,
			Center:   g.cen,
			CenterID: centerID(sc, r),
		}
		if cfg.Exact && !t.exactDirect() {
			// The scheme reduces the digits of the exact sum; the update
			// first decodes their mean over every atom of the global
			// batch into the gradients, on the grids of the weights the
			// sum was made against (not yet updated).
			if rs.exactBuf == nil {
				rs.exactBuf = make([]float32, exact.Limbs*len(rs.net.Params()))
			}
			atoms := max(cfg.IterSize, 1) * g.workers
			n.Grads = rs.exactBuf
			n.Update = func(iter int) {
				decodeExact(rs.net.Pool(), rs.net.Blocks(), rs.net.Params(), rs.net.Grads(), rs.exactBuf, atoms)
				rs.solver.Step(iter, rs.net.Params(), rs.net.Grads())
			}
		}
		if g.acc != nil {
			n.Accum = g.acc
		}
		if cfg.Compress.Gradient() && (sc.Workers > 1 || sc.Info().ServerUpdates) {
			blocks := compressBlocks(rs.net.Blocks())
			if r < sc.Workers {
				red, err := compress.New(cfg.Compress, blocks, r, sc.Workers, cfg.CompressWarmup, t.start)
				if err != nil {
					return fmt.Errorf("train: %w", err)
				}
				n.Compress = red
			} else if sc.Info().ServerUpdates {
				// sync-ps's server decodes the workers' pushes.
				dec, err := compress.NewDecoder(cfg.Compress, blocks, sc.Workers, cfg.CompressWarmup, t.start)
				if err != nil {
					return fmt.Errorf("train: %w", err)
				}
				n.Decompress = dec
			}
		}
		if rs.comp != nil {
			n.Computer = rs.comp
		}
		if g.eps != nil {
			n.Ep = g.eps[r]
		}
		var hooks []func(int, float64) error
		switch {
		case r == 0:
			hooks = append(hooks, onIter)
		case i == 0:
			hooks = append(hooks, countIter)
		}
		if rs == g.updater {
			hooks = append(hooks, snapIter)
		}
		if cfg.Elastic {
			hooks = append(hooks, t.checkHook(ctx, sc))
		}
		n.OnIter = chain(hooks)
		if r == 0 || i == 0 {
			// weedout: a round closed without this rank's gradient still
			// counts as one of the run's iterations.
			n.OnSkip = func(iter int) { g.done = max(g.done, iter+1) }
		}
		if (cfg.Metrics != nil || t.deps.OnIterMetrics != nil) && rs.comp != nil {
			n.OnIter = t.metricsHook(r, n, rs.comp, n.OnIter)
		}
		if cfg.Timeline != nil {
			t.traceRank(rs, n)
		}
		g.nodes[i] = n
	}
	return nil
}

// onIter is rank 0's hook after each iteration: the smoothed loss, the
// caller's OnIter, the Caffe log's and the progress display, the test
// every TestInterval iterations and the time budget.
func (g *generation) onIter(ctx context.Context, iter int, loss float64) error {
	t, cfg := g.t, g.cfg
	now := time.Now()
	d := now.Sub(g.lastIter)
	g.trainSecs += d.Seconds()
	// Caffe's UpdateSmoothedLoss: the mean over the last AverageLoss
	// iterations (the last iteration's loss by default).
	if n := max(cfg.AverageLoss, 1); len(g.window) < n {
		g.window = append(g.window, loss)
	} else {
		g.window[(iter-t.start)%n] = loss
	}
	g.smooth = 0
	for _, l := range g.window {
		g.smooth += l
	}
	g.smooth /= float64(len(g.window))
	g.done = iter + 1
	done := g.done
	if t.deps.OnIter != nil {
		t.deps.OnIter(iter, loss, d)
	}
	if t.clog != nil && cfg.Display > 0 && iter%cfg.Display == 0 {
		// Caffe's Solver::Step displays iteration iter_ (from 0) when
		// iter_ % display == 0, before its update; SGDSolver's
		// ApplyUpdate then logs the update's rate.
		lapse := now.Sub(g.clogTime).Seconds()
		perSec := float64(iter-g.clogIter) / cmp.Or(lapse, 1)
		g.clogIter, g.clogTime = iter, now
		t.clog.Infof("solver.cpp", 239, "Iteration %d (%s iter/s, %ss/%d iters), loss = %s", iter, caffeFloat(perSec), caffeFloat(lapse), cfg.Display, caffeFloat(g.smooth))
		weights, means := t.net.OutputLossWeights(), t.ranks[0].comp.outMean
		score := 0
		for j, o := range t.net.Outputs() {
			for range o.Data {
				v := means[score]
				t.clog.Infof("solver.cpp", 258, "    Train net output #%d: %s = %s%s", score, o.Name, caffeFloat(v), lossNote(weights[j], v))
				score++
			}
		}
		t.clog.Infof("sgd_solver.cpp", 112, "Iteration %d, lr = %s", iter, caffeFloat(t.solver.LR(iter)))
	}
	if cfg.Display > 0 && (done%cfg.Display == 0 || done == cfg.MaxIter) {
		ips := float64((done-g.lastDisplay)*t.batch*g.workers) / now.Sub(g.lastDisplayTime).Seconds()
		g.lastDisplay, g.lastDisplayTime = done, now
		g.prog.Line(metrics.Status{Iter: done, Loss: g.smooth, LR: t.solver.LR(iter), ImagesSec: ips})
	}
	if t.test != nil && cfg.TestInterval > 0 && done%cfg.TestInterval == 0 && done < cfg.MaxIter {
		var tr TestResult
		t0 := time.Now()
		err := g.withModel(ctx, func() (err error) {
			tr, err = t.Test(ctx, done)
			return err
		})
		if err != nil {
			return err
		}
		tr.Elapsed = t0.Sub(g.begin) - g.testing
		g.testing += time.Since(t0)
		g.res.Tests = append(g.res.Tests, tr)
		g.prog.Printf("%s\n", tr)
		if err := t.reportTest(tr); err != nil {
			return err
		}
		g.lastDisplayTime = g.lastDisplayTime.Add(time.Since(now))
	}
	g.lastIter = time.Now()
	if cfg.TimeBudget > 0 && g.lastIter.Sub(g.begin)-g.testing >= cfg.TimeBudget {
		return errBudget
	}
	return nil
}

// snapIter is the updating rank's hook (rank 0, or the parameter
// server): a snapshot every Snapshot iterations, and where one was asked
// for (Deps.SnapshotRequested).
func (g *generation) snapIter(ctx context.Context, iter int) error {
	cfg := g.cfg
	n := iter + 1
	asked := g.t.deps.SnapshotRequested != nil && g.t.deps.SnapshotRequested()
	if asked && cfg.SnapshotPrefix == "" {
		g.prog.Printf("a snapshot was asked for at iteration %d, but this run writes none (no snapshot prefix)\n", n)
	}
	if cfg.SnapshotPrefix != "" && n < cfg.MaxIter && (asked || cfg.Snapshot > 0 && n%cfg.Snapshot == 0) {
		var p string
		err := g.withModel(ctx, func() (err error) {
			p, err = g.t.snapshot(n)
			return err
		})
		if err != nil {
			return err
		}
		g.res.Snapshots = append(g.res.Snapshots, p)
		g.prog.Printf("snapshot %s\n", p)
	}
	return nil
}

// run is the fourth stage: every local rank's node until each ends,
// an asynchronous scheme's failed workers isolated (their errors in
// Result.Failed, not among the ones returned); the in-process
// endpoints are closed after.
func (g *generation) run(ctx context.Context) []error {
	t := g.t
	var iso isolation
	rankIDs := make([]int, len(t.ranks))
	for i, rs := range t.ranks {
		rankIDs[i] = rs.rank
	}
	errs := node.RunAllIsolated(ctx, g.nodes, iso.isolator(g.sc, g.nodes, rankIDs, g.prog))
	g.res.Failed = iso.errs()
	for _, f := range g.res.Failed {
		for i, err := range errs {
			if err != nil && errors.Is(f, err) {
				errs[i] = nil // reported in res.Failed; the run went on
			}
		}
	}
	if len(g.eps) > 0 && g.eps[t.ranks[0].rank] != nil {
		g.res.Traffic = g.eps[t.ranks[0].rank].Stats()
	}
	if g.cfg.Group == nil {
		for _, ep := range g.eps {
			ep.Close()
		}
	}
	return errs
}

// collect is the last stage: the result's accounts (iterations, phases,
// communication, compression, center, stragglers); on an error, the
// group told and the snapshot an interrupted run leaves; else the
// throughput, whether the replicas agree, the final model, snapshot and
// test.
func (g *generation) collect(ctx context.Context, errs []error) (*Result, error) {
	t, cfg, sc, res, nodes := g.t, g.cfg, g.sc, g.res, g.nodes
	res.Iters = g.done - t.start
	if c := t.ranks[0].comp; c != nil {
		for i := range PhaseNames {
			if i != PhaseUpdate {
				res.Phases.Add(i, c.phases.Total(i))
			}
		}
	}
	res.Phases.Add(PhaseUpdate, nodes[0].Stats.Phase[node.PhaseUpdate])
	res.Phases.Add(len(PhaseNames), nodes[0].Stats.Phase[node.PhaseComm])
	res.Phases.Add(len(PhaseNames)+1, nodes[0].Stats.Phase[node.PhaseWait])
	for i := 0; i < res.Iters; i++ {
		res.Phases.Iter()
	}
	res.CommBusy, res.CommExposed = nodes[0].Stats.CommBusy, nodes[0].Stats.Phase[node.PhaseComm]
	if c := nodes[0].Compress; c != nil {
		res.Compress = c.Stats()
		res.CompressIters = max(0, res.Iters-max(0, cfg.CompressWarmup-t.start))
	}
	if g.local != nil {
		res.Center = g.local.Stats()
	}
	for _, rs := range t.ranks {
		if rs.comp != nil {
			res.Straggled += rs.comp.straggled
		}
	}
	err := firstError(ctx, errs)
	if errors.Is(err, errBudget) {
		err = nil
	}
	if err != nil {
		if cfg.Group != nil && g.ep != nil {
			// Tell the other ranks why this one leaves, so the error that
			// cascades through the group keeps naming its first cause.
			transport.Abort(g.ep, fmt.Errorf("rank %d: %w", cfg.Group.Rank, err))
		}
		if ctx.Err() != nil {
			err = ctx.Err()
			if t.clog != nil {
				t.clog.Infof("solver.cpp", 311, "Optimization stopped early.")
			}
		} else {
			err = fmt.Errorf("train: iteration %d: %w", g.done, err)
		}
		if errors.Is(err, ErrDiverged) {
			return res, err
		}
		if cfg.Elastic && reformable(ctx, err) {
			// The group goes on in a new generation: this one's
			// training time counts in the run's images/s.
			if g.trainSecs > 0 {
				res.ImagesPerSec = float64(res.Iters*t.batch*g.workers) / g.trainSecs
				res.TrainTime = time.Duration(g.trainSecs * float64(time.Second))
			}
			return res, err
		}
		// Interrupted, or a peer failed: the weights are those of the
		// last completed iteration (the update follows the exchange), so
		// keep them.
		return res, t.interrupted(ctx, res, g.done, err, g.withModel)
	}
	res.Images, res.Epochs = t.images(res.Start + res.Iters)
	if g.trainSecs > 0 {
		res.ImagesPerSec = float64(res.Iters*t.batch*g.workers) / g.trainSecs
		res.TrainTime = time.Duration(g.trainSecs * float64(time.Second))
	}
	replicated := !sc.Elastic() && !sc.Info().SharedWeights
	if uses, _ := sc.UsesCenter(); uses {
		replicated = false
	}
	res.Identical, res.IdenticalKnown = cfg.Group == nil && replicated, cfg.Group == nil && replicated
	for _, rs := range t.ranks[1:] {
		if !slices.Equal(rs.net.Params(), t.net.Params()) {
			res.Identical = false
		}
	}
	if weights := g.weights; weights != nil && t.ranks[0].rank == 0 {
		// The model is the center: keep it as the final weights. Workers
		// in processes of their own may still be exchanging with it:
		// the final model waits for their last exchanges, as in one
		// process, where every rank has finished by now.
		if fp, ok := g.cen.(center.FinalPuller); ok && cfg.Group != nil {
			weights = func(ctx context.Context, dst []float32) error { return fp.PullFinal(ctx, dst) }
		}
		if err := weights(ctx, t.net.Params()); err != nil {
			return res, fmt.Errorf("train: fetching the model's final weights: %w", err)
		}
	}
	// Caffe's rule for the last snapshot: unless the interval's already
	// took it, which at iteration 0 (no iteration run) it says it has.
	if cfg.SnapshotPrefix != "" && g.updater != nil && !cfg.NoFinalSnapshot && (g.done > 0 || cfg.Snapshot == 0) {
		p, err := t.snapshot(g.done)
		if err != nil {
			return res, err
		}
		res.Snapshots = append(res.Snapshots, p)
	}
	if t.test != nil {
		trained := time.Since(g.begin) - g.testing
		tr, err := t.Test(ctx, g.done)
		if err != nil {
			return res, err
		}
		tr.Elapsed = trained
		res.Tests = append(res.Tests, tr)
		if err := t.reportTest(tr); err != nil {
			return res, err
		}
	}
	if t.clog != nil {
		t.clog.Infof("solver.cpp", 332, "Optimization Done.")
		if err := t.clog.Err(); err != nil {
			return res, fmt.Errorf("train: writing the Caffe log: %w", err)
		}
	}
	res.Wall = time.Since(g.begin)
	return res, nil
}
