package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/elastic"
	"dsgd/comm/transport/tcp"
	"dsgd/data"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// feedCall is one call of an elastic worker's Feeds.
type feedCall struct {
	rank, world int
	pos         int64
}

// TestElasticGroupGrowsAndShrinks runs an elastic sync-ring group over
// TCP with its coordinator: two workers start; a third joins and the
// group re-forms at an iteration both agree on; the third then dies
// (its context cancelled mid-run) and the two survivors re-form again
// and finish. Every generation reads on from where the data sequence
// stood (Feeds' positions add up generation by generation), the joiner
// takes the group's weights and solver state, and the survivors end
// with identical weights.
func TestElasticGroupGrowsAndShrinks(t *testing.T) {
	const b, iters = 4, 24
	ds, err := data.Synthetic(data.SyntheticConfig{N: 512, C: 1, H: 8, W: 8, Classes: 4, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var logLines []string
	coord, err := elastic.Listen("127.0.0.1:0", elastic.Config{Min: 2, Max: 3, Want: 2, Token: "t", Timeout: 10 * time.Second,
		Logf: func(f string, a ...any) {
			logMu.Lock()
			logLines = append(logLines, fmt.Sprintf(f, a...))
			logMu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { coord.Serve(sctx); close(served) }()
	defer func() { stop(); <-served }()

	type outcome struct {
		res   *Result
		err   error
		calls []feedCall
	}
	out := make([]outcome, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The joiner dies a few iterations into the group it joined.
	joinerCtx, killJoiner := context.WithCancel(ctx)
	defer killJoiner()
	var wg sync.WaitGroup
	run := func(w int, ctx context.Context) {
		defer wg.Done()
		var loaders []*data.Loader
		defer func() {
			for _, l := range loaders {
				l.Close()
			}
		}()
		feeds := func(rank, world int, pos int64) ([]Feed, error) {
			out[w].calls = append(out[w].calls, feedCall{rank, world, pos})
			l, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: b, Train: true, Shuffle: true, Seed: 3, Slice: true, Rank: rank, World: world, Offset: pos, Transform: data.TransformConfig{Scale: 1.0 / 256}})
			if err != nil {
				return nil, err
			}
			loaders = append(loaders, l)
			var src Source = Loader{L: l, Name: "train"}
			switch {
			case w == 2:
				// The joiner dies as it reads its fourth batch.
				src = &dyingSource{Source: src, left: 4, die: killJoiner}
			case world == 2 && pos == 0:
				// The first generation waits at its third batch for the
				// joiner to be waiting, so that it joins mid-run.
				src = &gatedSource{Source: src, at: 3, open: func() bool { return coord.Waiting() > 0 }}
			}
			return []Feed{{Tops: []string{"data", "label"}, Source: src}}, nil
		}
		cl, err := elastic.Dial(ctx, coord.Addr(), "t", 10*time.Second)
		if err != nil {
			out[w].err = err
			return
		}
		defer cl.Close()
		m := &elastic.Member{Client: cl, Prefer: w, TCP: tcp.Config{Token: "t", Timeout: 10 * time.Second, Shm: tcp.ShmOff}}
		cfg := Config{
			Train: mlp(false), TrainShapes: map[string]tensor.Shape{"data": {b, 1, 8, 8}, "label": {b}},
			Solver: solver.Config{Type: "SGD", BaseLR: 0.05, Momentum: 0.9, WeightDecay: 5e-4, LRPolicy: "inv", Gamma: 1e-4, Power: 0.75},
			Config: scheme.Config{MaxIter: iters, Name: "sync-ring", Workers: 2, Pack: true}, Seed: 1, Threads: 1,
			Group:   &Group{Rank: min(w, 1), Size: 2},
			Elastic: true,
		}
		cfg.TrainFeeds, _ = feeds(min(w, 1), 2, 0)
		out[w].calls = nil
		tr, err := New(cfg)
		if err != nil {
			out[w].err = err
			return
		}
		m.TCP.ModelHash = tr.LayoutHash()
		out[w].res, out[w].err = tr.Run(ctx, Deps{Elastic: &Elastic{Membership: m, Feeds: feeds}})
		if out[w].err == nil {
			cl.Leave(ctx)
		}
	}
	wg.Add(2)
	go run(0, ctx)
	go run(1, ctx)
	waitUntil(t, func() bool { return coord.Gen() == 1 })
	wg.Add(1)
	go run(2, joinerCtx)
	wg.Wait()

	for w := range 2 {
		if out[w].err != nil {
			t.Fatalf("worker %d: %v", w, out[w].err)
		}
	}
	if out[2].err == nil || !errors.Is(out[2].err, context.Canceled) {
		t.Fatalf("the joiner, killed: %v", out[2].err)
	}
	// The coordinator's log gives each generation's size and start.
	logMu.Lock()
	joined := regexp.MustCompile(`generation (\d+): (\d+) workers \((\d+) kept, (\d+) joined\), from iteration (\d+)`)
	type gen struct{ size, from int }
	var gens []gen
	for _, l := range logLines {
		if m := joined.FindStringSubmatch(l); m != nil {
			size, _ := strconv.Atoi(m[2])
			from, _ := strconv.Atoi(m[5])
			gens = append(gens, gen{size, from})
		}
	}
	logMu.Unlock()
	if len(gens) != 3 || gens[0].size != 2 || gens[1].size != 3 || gens[2].size != 2 {
		t.Fatalf("generations %+v, want sizes 2, 3, 2:\n%v", gens, logLines)
	}
	// Each survivor's feeds start where the sequence stood.
	for w := range 2 {
		calls := out[w].calls
		if len(calls) != 3 {
			t.Fatalf("worker %d built its feeds %d times, want 3: %+v", w, len(calls), calls)
		}
		var pos int64
		for i, c := range calls {
			if i > 0 {
				pos += int64((gens[i].from - gens[i-1].from) * gens[i-1].size * b)
			}
			if c.world != gens[i].size || c.pos != pos {
				t.Fatalf("worker %d, generation %d: feeds %+v, want world %d from position %d (generations %+v)", w, i+1, c, gens[i].size, pos, gens)
			}
		}
		if r := out[w].res; r.Generations != 3 || r.Iters != iters {
			t.Fatalf("worker %d: %d generations, %d iterations", w, r.Generations, r.Iters)
		}
	}
	if got := out[2].calls; len(got) == 0 || got[0].world != 3 || got[0].pos != int64(gens[1].from*2*b) {
		t.Fatalf("the joiner's feeds %+v", got)
	}
	a, c := out[0].res.Params, out[1].res.Params
	if !slices.Equal(a, c) {
		t.Fatal("the survivors' weights differ at the end")
	}
	for _, v := range a {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite weights")
		}
	}
}

// dyingSource fills as its Source does until its left-th fill, which
// calls die (a process killed as it reads) and fails.
type dyingSource struct {
	Source
	left int
	die  func()
}

func (d *dyingSource) Fill(ctx context.Context, tops []*tensor.Blob) error {
	if d.left--; d.left == 0 {
		d.die()
		return ctx.Err()
	}
	return d.Source.Fill(ctx, tops)
}

// gatedSource fills as its Source does, but its at-th fill first waits
// (up to 30 s) until open says so.
type gatedSource struct {
	Source
	at   int
	open func() bool
}

func (g *gatedSource) Fill(ctx context.Context, tops []*tensor.Blob) error {
	if g.at--; g.at == 0 {
		for deadline := time.Now().Add(30 * time.Second); !g.open() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	return g.Source.Fill(ctx, tops)
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 30s")
}

// TestNewMember: a member marks its Config elastic, asks for its rank,
// is the group's server as the last rank of a scheme whose server
// updates, and is refused where ElasticRefusal refuses.
func TestNewMember(t *testing.T) {
	for _, c := range []struct {
		name        string
		rank, world int
		group       bool
		server      bool
		want        string
	}{
		{"sync-ring", 1, 3, true, false, ""},
		{"sync-ps", 2, 3, true, true, ""},
		{"sync-ps", 1, 3, true, false, ""},
		{"sync-ring", 0, 2, false, false, "Config.Elastic needs workers in processes of their own"},
		{"easgd-rr", 0, 2, true, false, "elastic membership is for the synchronous schemes"},
	} {
		cfg := Config{Config: scheme.Config{Name: c.name, Workers: c.world}}
		if c.group {
			cfg.Group = &Group{Rank: c.rank, Size: c.world}
		}
		m, err := NewMember(&cfg, c.rank, c.world, tcp.Config{Listen: "127.0.0.1:0"})
		if !cfg.Elastic {
			t.Errorf("%s: the Config is not marked elastic", c.name)
		}
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s rank %d of %d: got %v, want %q", c.name, c.rank, c.world, err, c.want)
			}
			continue
		}
		if err != nil || m.Prefer != c.rank || m.Server != c.server || m.TCP.Listen != "127.0.0.1:0" {
			t.Errorf("%s rank %d of %d: got %+v, %v", c.name, c.rank, c.world, m, err)
		}
	}
}
