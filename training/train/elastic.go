package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"dsgd/comm/elastic"
	"dsgd/comm/transport"
	"dsgd/comm/transport/tcp"
	"dsgd/protocol/scheme"
)

// Elastic is what an elastic run (Config.Elastic, the command's
// --elastic MIN:MAX) takes its generations from, given to Run in Deps.
// Such a run survives a lost or an added worker: it goes in generations,
// each a group of fixed size; when a member dies or a worker asks to
// join, the survivors stop, form the next generation and go on from the
// last iteration a member completed, with that member's weights and
// solver state.
type Elastic struct {
	// Membership is this worker's link to the group's coordinator.
	Membership Membership
	// Feeds builds this worker's TRAIN feeds for a generation in which it
	// is rank of world, reading on from position pos of the data sequence
	// (the images every earlier global batch took): data.LoaderConfig's
	// Slice with Offset pos. It replaces (and closes) the feeds it built
	// before.
	Feeds func(rank, world int, pos int64) ([]Feed, error)
}

// Membership is a worker's place in an elastic group; elastic.Member is
// the one over the tcp transport.
type Membership interface {
	// Next reports that this worker has completed done iterations and
	// that its generation ended because of why (nil for the first); it
	// returns its place in the next generation, with the generation's
	// endpoint connected.
	Next(ctx context.Context, done int, why error) (elastic.Generation, error)
	// Check says whether the group stops after iteration iter (the number
	// of iterations completed) to re-form; every member gets the same
	// answer for the same iteration.
	Check(ctx context.Context, iter int) (bool, error)
}

// ElasticSchemes are the schemes Config.Elastic runs: the catalogue's
// resizable ones (scheme.Info.Resizable).
var ElasticSchemes = scheme.ResizableNames()

// errReform ends a generation at an iteration boundary the coordinator
// chose (a worker waits to join, or a member is gone).
var errReform = errors.New("the group re-forms")

// tagElastic is the tag of the state rank 0 sends a new generation.
const tagElastic = 0x454c4153 // "ELAS"

// reformable reports whether err ends a generation rather than the run:
// the coordinator's re-forming, or a peer that failed, while ctx lives.
func reformable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var pe *transport.PeerError
	return errors.Is(err, errReform) || errors.As(err, &pe)
}

// ElasticScheme reports whether Config.Elastic runs scheme name.
func ElasticScheme(name string) bool {
	in, err := scheme.Lookup(name)
	return err == nil && in.Resizable
}

// NewMember makes rank of a group of world ranks a member of an elastic
// group for cfg, which it marks elastic, refusing what cannot run
// elastic (ElasticRefusal); link is what every generation's connection
// shares. The member asks for its rank in the first generation, and the
// last rank of a scheme whose server updates is the group's server. The
// caller sets link's ModelHash (Trainer.LayoutHash) and Client once the
// trainer is built.
func NewMember(cfg *Config, rank, world int, link tcp.Config) (*elastic.Member, error) {
	cfg.Elastic = true
	if err := ElasticRefusal(*cfg); err != nil {
		return nil, err
	}
	server := cfg.Info().ServerUpdates && rank == world-1
	return &elastic.Member{Prefer: rank, Server: server, TCP: link}, nil
}

// ElasticRefusal is why cfg cannot run elastic, naming the Config
// fields that clash, or nil.
func ElasticRefusal(cfg Config) error {
	if !cfg.Elastic {
		return nil
	}
	switch name := cfg.Named(); {
	case !ElasticScheme(name):
		return fmt.Errorf("Config.Elastic with Config.Name %s: elastic membership is for the synchronous schemes (%s); a center's schemes already let workers come and go", name, strings.Join(ElasticSchemes, ", "))
	case cfg.Group == nil:
		return errors.New("Config.Elastic needs workers in processes of their own (Config.Group): in one process they live and die together")
	case cfg.Compress.Gradient():
		return errors.New("Config.Elastic with Config.Compress: the compressors' residuals are each worker's own and a re-formed group would drop them; give one of them")
	}
	return nil
}

// runElastic runs the generations of an elastic group until one finishes
// the run or the group can no longer go on.
func (t *Trainer) runElastic(ctx context.Context) (*Result, error) {
	el := t.deps.Elastic
	total := &Result{Start: t.start, Scheme: t.cfg.Name}
	done := t.start
	var pos int64 = -1 // the data position; unknown until a generation starts
	var why error
	var prev transport.Endpoint
	defer func() {
		if prev != nil {
			prev.Close()
		}
	}()
	out, clog := t.out, t.clog
	for {
		g, err := el.Membership.Next(ctx, done, why)
		if prev != nil {
			prev.Close()
			prev = nil
		}
		if err != nil {
			if why != nil {
				err = fmt.Errorf("%w (the group's last generation ended: %v)", err, why)
			}
			return total, t.interrupted(ctx, total, done, fmt.Errorf("train: elastic group: %w", err), func(_ context.Context, fn func() error) error { return fn() })
		}
		prev = g.Endpoint
		// sync-ps's server is the last rank and computes nothing.
		workers := g.Size - t.elasticServers()
		if pos < 0 {
			// The first generation: a resumed run read every earlier
			// iteration at this size.
			pos = int64(g.Done) * int64(t.batch) * int64(workers)
		}
		if done, pos, err = t.adopt(ctx, g, done, pos); err != nil {
			transport.Abort(g.Endpoint, err)
			why = err
			continue
		}
		var feeds []Feed
		if g.Rank < workers {
			if feeds, err = el.Feeds(g.Rank, workers, pos); err != nil {
				return total, fmt.Errorf("train: elastic generation %d: %w", g.Gen, err)
			}
		}
		t.cfg.Workers, t.cfg.TrainFeeds = workers, feeds
		t.cfg.Group = &Group{Rank: g.Rank, Size: g.Size}
		t.start, t.ranks = done, nil
		// Rank 0 tests, prints and snapshots: whichever worker it is.
		t.test, t.extra, t.out, t.clog = t.elasticTest, t.elasticExtra, out, clog
		if g.Rank != 0 {
			t.out, t.clog = io.Discard, nil
		}
		if err := t.buildRanks(); err != nil {
			return total, err
		}
		if g.Rank == 0 {
			server := ""
			if workers < g.Size {
				server = " and the server"
			}
			fmt.Fprintf(t.out, "dsgd: elastic generation %d: %d workers%s, from iteration %d\n", g.Gen, workers, server, done)
		}
		t0 := time.Now()
		res, err := t.runGeneration(ctx, g.Endpoint)
		total.add(res, time.Since(t0))
		done = res.Start + res.Iters
		pos += int64(res.Iters) * int64(t.batch) * int64(workers)
		// The gradients may lie in the generation's shared memory, which
		// goes with its endpoint: back into the process's.
		if err := t.net.UseGrads(make([]float32, len(t.net.Grads()))); err != nil {
			return total, err
		}
		if err == nil || !reformable(ctx, err) {
			return total, err
		}
		why = err
		if !errors.Is(err, errReform) {
			transport.Abort(g.Endpoint, err)
		}
	}
}

// adopt makes this worker's state the source's at the start of a
// generation (rank 0, the survivor that completed the most iterations,
// or sync-ps's server): the iterations done, the data position and the
// solver's history; the weights too when the source is not rank 0, whose
// weights the scheme's first broadcast copies.
func (t *Trainer) adopt(ctx context.Context, g elastic.Generation, done int, pos int64) (int, int64, error) {
	if g.Size == 1 {
		return done, pos, nil
	}
	ep, src := g.Endpoint, g.Source
	params := t.net.Params()
	if g.Rank == src {
		var b bytes.Buffer
		var head [16]byte
		binary.LittleEndian.PutUint64(head[:], uint64(done))
		binary.LittleEndian.PutUint64(head[8:], uint64(pos))
		b.Write(head[:])
		if err := t.solver.WriteState(&b); err != nil {
			return 0, 0, fmt.Errorf("train: elastic: the source's solver state: %w", err)
		}
		for r := range g.Size {
			if r == src {
				continue
			}
			if err := ep.SendBytes(ctx, r, tagElastic, b.Bytes()); err != nil {
				return 0, 0, err
			}
			if src != 0 {
				if err := ep.Send(ctx, r, tagElastic, params); err != nil {
					return 0, 0, err
				}
			}
		}
		return done, pos, nil
	}
	max := 16 + 64 + 8*len(params)*4 // the header, the solver's, up to 3 histories as float64
	msg, err := ep.RecvBytes(ctx, src, tagElastic, max)
	if err != nil {
		return 0, 0, err
	}
	if len(msg) < 16 {
		return 0, 0, fmt.Errorf("train: elastic: rank %d sent %d bytes of state, want at least 16", src, len(msg))
	}
	done = int(binary.LittleEndian.Uint64(msg))
	pos = int64(binary.LittleEndian.Uint64(msg[8:]))
	if done < 0 || pos < 0 {
		return 0, 0, fmt.Errorf("train: elastic: rank %d sent iteration %d, data position %d", src, done, pos)
	}
	if err := t.solver.ReadState(bytes.NewReader(msg[16:])); err != nil {
		return 0, 0, fmt.Errorf("train: elastic: rank %d's solver state: %w", src, err)
	}
	if src != 0 {
		if err := ep.Recv(ctx, src, tagElastic, params); err != nil {
			return 0, 0, err
		}
	}
	return done, pos, nil
}

// elasticServers is the number of server ranks in every generation of
// the scheme: 1 for sync-ps's parameter server, else 0.
func (t *Trainer) elasticServers() int {
	if t.cfg.Info().ServerUpdates {
		return 1
	}
	return 0
}

// checkHook asks the coordinator, at every iteration boundary where the
// scheme's workers agree (after each exchange), whether the group stops
// there.
func (t *Trainer) checkHook(ctx context.Context, sc scheme.Config) func(int, float64) error {
	m := t.deps.Elastic.Membership
	every := 1
	if sc.Info().Periodic {
		every = max(sc.Interval, 1)
	}
	return func(iter int, _ float64) error {
		if n := iter + 1; n%every == 0 && n < t.cfg.MaxIter {
			stop, err := m.Check(ctx, n)
			if err != nil {
				return err
			}
			if stop {
				return errReform
			}
		}
		return nil
	}
}

// add folds one generation's result into the run's.
func (r *Result) add(g *Result, wall time.Duration) {
	if g == nil {
		return
	}
	r.Iters += g.Iters
	r.Tests = append(r.Tests, g.Tests...)
	r.Snapshots = append(r.Snapshots, g.Snapshots...)
	r.Failed = append(r.Failed, g.Failed...)
	r.Workers = g.Workers
	if r.Phases == nil {
		r.Phases = g.Phases
	} else if g.Phases != nil {
		r.Phases.Merge(g.Phases)
	}
	if g.ImagesPerSec > 0 && r.Iters > 0 {
		// images/s over the whole run: both spans' images over both times.
		imgs := r.ImagesPerSec*r.TrainTime.Seconds() + g.ImagesPerSec*g.TrainTime.Seconds()
		r.TrainTime += g.TrainTime
		if r.TrainTime > 0 {
			r.ImagesPerSec = imgs / r.TrainTime.Seconds()
		}
	}
	r.Images, r.Epochs = g.Images, g.Epochs
	r.CommBusy += g.CommBusy
	r.CommExposed += g.CommExposed
	r.Traffic = g.Traffic
	r.Params = g.Params
	r.Wall += wall
	r.Generations++
}
