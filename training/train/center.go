package train

import (
	"context"
	"fmt"

	"dsgd/engine/solver"
	"dsgd/engine/tensor/exact"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/node"
)

// schemeConfig is the scheme's configuration for a run from start.
func (o *origin) schemeConfig(start int) scheme.Config {
	cfg := o.cfg
	// The settings are the Config's; the rest the run decides here.
	sc := cfg.Config
	sc.Workers, sc.StartIter = max(cfg.Workers, 1), start
	sc.Layout, sc.GradWidth, sc.AverageGrads = scheme.Layout{}, 0, false
	sc.Aligned = cfg.Finish != center.FinishOwn
	// Ranks in other processes built their models apart.
	sc.Broadcast = cfg.Group != nil
	// TRL's accumulator is shared memory: in one process only.
	sc.Accumulate = cfg.Group == nil && sc.Workers > 1
	sc.Name = sc.Named()
	// A gradient compressor sits on the allreduce: overlap then
	// allreduces its buckets instead of accumulating them in memory.
	sc.Accumulate = sc.Accumulate && sc.Info().Accumulator && !cfg.Compress.Gradient()
	if o.net != nil {
		sc.Layout = schemeLayout(o.net)
	}
	if cfg.Exact {
		sc.GradWidth = exact.Limbs
		sc.AverageGrads = localSGDAveragesGrads(cfg)
	}
	if cfg.Compress.Gradient() {
		// Compression acts on gradients: local-sgd with H = 1 and a
		// linear solver averages those rather than the weights.
		sc.AverageGrads = localSGDAveragesGrads(cfg)
	}
	return sc
}

// SchemeConfig is the scheme's configuration for this run (the run
// header reads streaming-diloco's fragment plan from it).
func (t *Trainer) SchemeConfig() scheme.Config { return t.schemeConfig(t.start) }

// CenterWorkers is the number of workers the configured scheme's center
// serves: every worker, or hybrid's groups (0 without a center).
func (o *origin) CenterWorkers() int {
	_, n := o.schemeConfig(o.start).UsesCenter()
	return n
}

// CenterOnly reports whether the configured scheme's workers talk only to
// a center (so a worker process needs a center and no group endpoint).
func (t *Trainer) CenterOnly() bool { return t.schemeConfig(t.start).CenterOnly() }

// GroupRank is this process's rank in a multi-process group (0 without
// one).
func (t *Trainer) GroupRank() int {
	if t.cfg.Group == nil {
		return 0
	}
	return t.cfg.Group.Rank
}

// Finish is the configured aligned-termination rule.
func (t *Trainer) Finish() center.Finish { return t.cfg.Finish }

// MaxIter is the iteration the run stops at.
func (t *Trainer) MaxIter() int { return t.cfg.MaxIter }

// centerID is rank r's worker id at the center: its rank, or for hybrid
// its group.
func centerID(sc scheme.Config, r int) int { return sc.CenterID(r) }

// makeCenter returns the center the scheme's workers talk to: the
// run's (Deps.Center), or a new in-process one (returned as local too).
func (t *Trainer) makeCenter(sc scheme.Config) (center.Center, *center.Local, error) {
	uses, n := sc.UsesCenter()
	if !uses {
		return nil, nil, nil
	}
	if t.deps.Center != nil {
		return t.deps.Center, nil, nil
	}
	if t.cfg.Group != nil {
		return nil, nil, fmt.Errorf("train: %s over a multi-process group needs a center (a parameter server)", sc.Name)
	}
	lc, err := center.NewLocal(t.CenterConfig(sc, n))
	if err != nil {
		return nil, nil, fmt.Errorf("train: %w", err)
	}
	return lc, lc, nil
}

// CenterConfig is the configuration of the center for scheme sc with n
// workers, starting from rank 0's weights; a parameter server process
// builds its center from it.
func (o *origin) CenterConfig(sc scheme.Config, n int) center.Config {
	cc := node.CenterConfig(sc, n, o.net.Params())
	cc.Finish, cc.MaxIter, cc.Deadline, cc.MaxUpdateNorm = o.cfg.Finish, o.cfg.MaxIter, o.cfg.RoundDeadline, o.cfg.MaxUpdateNorm
	if out := o.cfg.Out; out != nil {
		// A refused update names its worker in the center's log: the
		// run's output here, the server's in a parameter server process.
		cc.Log = func(err error) { fmt.Fprintf(out, "%v\n", err) }
	}
	if sc.Info().CenterSolver {
		// The center applies each round's mean gradient with a solver of
		// its own, as a synchronous parameter server does.
		sv, err := solver.New(o.cfg.Solver, len(o.net.Params()), Segments(o.net.Blocks()))
		if err == nil {
			sv.SetThreads(o.cfg.Threads)
			cc.Update = func(w, g []float32, iter int) { sv.Step(iter, w, g) }
		}
	}
	return cc
}

// modelWeights returns how to fetch the weights a scheme trains when
// they are not rank 0's own (the center), or nil.
func (t *Trainer) modelWeights(sc scheme.Config, cen center.Center, nodes []*node.Rank) func(context.Context, []float32) error {
	if uses, _ := sc.UsesCenter(); uses {
		return func(ctx context.Context, dst []float32) error { return cen.Pull(ctx, center.Observer, dst) }
	}
	if !sc.Info().OwnCenter {
		return nil
	}
	if sc.Variant == 1 {
		m := t.rank(sc.Workers)
		if m == nil {
			return nil
		}
		return func(_ context.Context, dst []float32) error { copy(dst, m.net.Params()); return nil }
	}
	if t.ranks[0].rank != 0 {
		return nil
	}
	return func(_ context.Context, dst []float32) error {
		if aux := nodes[0].Aux; aux != nil {
			copy(dst, aux)
		}
		return nil
	}
}
