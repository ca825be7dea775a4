package train

import (
	"errors"
	"fmt"
	"io"

	"dsgd/caffe/caffemodel"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/protocol/center"
)

// origin is what a run starts from, built from its Config alone: rank
// 0's TRAIN net with its initial weights, its solver, the layout hash,
// the batch and the iteration it starts at. A Trainer builds its ranks
// on it; a Start is only it, for a parameter server process's center.
type origin struct {
	cfg    Config
	net    *model.Net // rank 0's TRAIN net
	solver *solver.Solver
	layout uint64
	batch  int
	start  int
	out    io.Writer
}

// newOrigin checks cfg's iterations and builds rank 0's TRAIN net (its
// fillers seeded by Config.Seed, rankThreads threads), its solver, the layout hash and the
// batch. The initial weights are the fillers' until initWeights sets
// them.
func newOrigin(cfg Config) (origin, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	cfg.Name = cfg.Named()
	o := origin{cfg: cfg, out: cfg.Out}
	if cfg.MaxIter < 0 {
		return o, fmt.Errorf("train: max_iter must not be negative, got %d", cfg.MaxIter)
	}
	var err error
	o.net, err = model.Build(cfg.Train, cfg.TrainShapes, model.Options{Phase: layers.Train, Threads: rankThreads(cfg), Seed: cfg.Seed})
	if err != nil {
		return o, fmt.Errorf("train: TRAIN net: %w", err)
	}
	if !o.net.HasLoss() {
		return o, fmt.Errorf("train: the TRAIN net %q has no loss: no loss layer (SoftmaxWithLoss, EuclideanLoss, ...) and no loss_weight, so there is nothing to minimise", cfg.Train.Name)
	}
	return o, nil
}

// newSolver builds rank 0's solver, the layout hash and the batch of
// o's net.
func (o *origin) newSolver() error {
	cfg := o.cfg
	var err error
	o.solver, err = solver.New(cfg.Solver, len(o.net.Params()), Segments(o.net.Blocks()))
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	o.solver.SetThreads(cfg.Threads)
	o.layout = Layout(o.net.Blocks())
	for _, name := range cfg.Train.Inputs {
		o.batch = max(o.batch, cfg.TrainShapes[name].Count()/max(1, cfg.TrainShapes[name].CountFrom(1))*max(cfg.IterSize, 1))
	}
	if o.batch == 0 {
		// A net fed by a Python data layer (no bottoms, its tops filled
		// in forward) has no inputs: its batch is its tops' first axis.
		for _, l := range cfg.Train.Layers {
			if len(l.Bottom) > 0 || l.Config == nil || l.Config.Type() != "Python" {
				continue
			}
			for _, top := range l.Top {
				if b := o.net.Blob(top); b != nil && len(b.Shape) > 0 {
					o.batch = max(o.batch, b.Shape[0]*max(cfg.IterSize, 1))
				}
			}
		}
	}
	return nil
}

// initWeights sets the initial weights of ranks (the first of them rank
// 0's) as the Config says: Config.Weights' layers copied in by name, or
// Config.Resume's weights and solver state, whose iteration the run then
// starts from; the fillers' otherwise.
func (o *origin) initWeights(ranks []*rankState) error {
	cfg := o.cfg
	if len(cfg.Weights) > 0 && cfg.Resume != "" {
		return errors.New("train: give Config.Weights or Config.Resume, not both (a snapshot already holds its weights)")
	}
	if len(cfg.Weights) > 0 {
		if err := o.loadWeights(ranks, cfg.Weights); err != nil {
			return err
		}
	}
	if cfg.Resume != "" {
		resume := o.resume
		if caffemodel.IsState(cfg.Resume) {
			resume = o.resumeCaffe
		}
		if err := resume(ranks, cfg.Resume); err != nil {
			return err
		}
	}
	return nil
}

// rankThreads is how many threads each rank's layers use: all of
// Config.Threads for this process's one rank of a group (at least 1),
// else an even share of them per in-process worker (at least 1).
func rankThreads(cfg Config) int {
	if cfg.Group != nil {
		return max(cfg.Threads, 1)
	}
	return max(1, cfg.Threads/max(cfg.Workers, 1))
}

// Start is a run's starting point built from its Config alone, without
// a Trainer: the TRAIN net with the initial weights a Trainer's ranks
// start from (the fillers' under Config.Seed, Config.Weights' layers
// copied in, or Config.Resume's snapshot, whose iteration it starts at)
// and the solver's settings. A parameter server process (dsgd ps) builds
// its center from it; it needs the TRAIN net's shapes but no feeds, test
// nets or ranks.
type Start struct {
	origin
}

// NewStart builds the Start of cfg: the TRAIN net, its solver and its
// initial weights, as New builds rank 0's.
func NewStart(cfg Config) (*Start, error) {
	o, err := newOrigin(cfg)
	if err != nil {
		return nil, err
	}
	if err := o.newSolver(); err != nil {
		return nil, err
	}
	if err := o.initWeights([]*rankState{{net: o.net, solver: o.solver}}); err != nil {
		return nil, err
	}
	return &Start{o}, nil
}

// NewCenter makes the in-process center of the configured scheme, for a
// parameter server process to serve; nil if the scheme has none.
func (s *Start) NewCenter() (*center.Local, error) {
	return s.NewCenterRange(0, len(s.net.Params()))
}

// NewCenterRange makes the center of parameters [lo,hi) only: one shard
// of a parameter server split over several processes (ps.Sharded). Weed-
// out's solver step needs every parameter, so it cannot be sharded.
func (s *Start) NewCenterRange(lo, hi int) (*center.Local, error) {
	sc := s.schemeConfig(s.start)
	uses, n := sc.UsesCenter()
	if !uses {
		return nil, nil
	}
	cc := s.CenterConfig(sc, n)
	if lo != 0 || hi != len(cc.Weights) {
		if sc.Info().CenterSolver {
			return nil, errors.New("train: weedout's center applies a solver step to all parameters; it cannot be sharded")
		}
		cc.Weights = cc.Weights[lo:hi]
	}
	return center.NewLocal(cc)
}
