package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/transport/tcp"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// sliceSource serves fixed samples so that worker r of n at iteration i
// reads samples (i·n + r)·b … +b, and a single worker with batch n·b reads
// the same samples in one batch: the setting in which the sync schemes
// promise seq's numbers.
type sliceSource struct {
	images, labels []float32 // M samples of size per
	per, batch     int
	rank, workers  int
	iter           int
	failAt         int // fail on this iteration (0: never)
}

func (s *sliceSource) Fill(_ context.Context, tops []*tensor.Blob) error {
	if s.failAt > 0 && s.iter == s.failAt {
		return fmt.Errorf("injected data failure")
	}
	m := len(s.labels)
	for j := 0; j < s.batch; j++ {
		k := ((s.iter*s.workers+s.rank)*s.batch + j) % m
		copy(tops[0].Data[j*s.per:(j+1)*s.per], s.images[k*s.per:(k+1)*s.per])
		tops[1].Data[j] = s.labels[k]
	}
	s.iter++
	return nil
}

func samples(m, per, classes int) (images, labels []float32) {
	r := rand.New(rand.NewPCG(5, 6))
	images, labels = make([]float32, m*per), make([]float32, m)
	for i := range labels {
		c := i % classes
		labels[i] = float32(c)
		for j := 0; j < per; j++ {
			images[i*per+j] = float32(r.NormFloat64()*0.3) + float32((j+c)%classes)/float32(classes)
		}
	}
	return images, labels
}

// runScheme trains for iters iterations with the given scheme and worker
// count, each worker with batch b, and returns the final weights.
func runScheme(t *testing.T, name string, workers, b, iters int, pack bool, alg collective.Algorithm) (*Result, []float32) {
	t.Helper()
	return runSchemeWith(t, name, workers, b, iters, pack, alg, nil, nil)
}

// runSchemeWith is runScheme with the config (and the run's
// dependencies) changed by mod before the trainer is built.
func runSchemeWith(t *testing.T, name string, workers, b, iters int, pack bool, alg collective.Algorithm, mod func(*Config, *Deps), trp **Trainer) (*Result, []float32) {
	t.Helper()
	images, labels := samples(96, 64, 4)
	spec := mlp(false)
	shapes := map[string]tensor.Shape{"data": {b, 1, 8, 8}, "label": {b}}
	feeds := func(rank int) []Feed {
		return []Feed{{Tops: []string{"data", "label"}, Source: &sliceSource{images: images, labels: labels, per: 64, batch: b, rank: rank, workers: workers}}}
	}
	cfg := Config{
		Train: spec, TrainShapes: shapes, TrainFeeds: feeds(0),
		Solver: solver.Config{Type: "SGD", BaseLR: 0.1, Momentum: 0.9, WeightDecay: 1e-3, LRPolicy: "inv", Gamma: 1e-2, Power: 0.75},
		Seed:   11, Threads: workers,
		Config: scheme.Config{MaxIter: iters, Name: name, Workers: workers, Pack: pack}, Algo: alg,
	}
	for r := 1; r < workers; r++ {
		cfg.WorkerFeeds = append(cfg.WorkerFeeds, feeds(r))
	}
	var deps Deps
	if mod != nil {
		mod(&cfg, &deps)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if trp != nil {
		*trp = tr
	}
	res, err := tr.Run(context.Background(), deps)
	if err != nil {
		t.Fatalf("%s with %d workers: %v", name, workers, err)
	}
	return res, append([]float32(nil), res.Params...)
}

// TestSyncSchemesMatchSeq: N workers of batch b give the weights of seq
// with batch N·b (FireCaffe: "identical numerical results"), to float
// tolerance, and every replica ends with the same weights.
func TestSyncSchemesMatchSeq(t *testing.T) {
	const b, iters = 4, 12
	type variant struct {
		scheme string
		pack   bool
		alg    collective.Algorithm
	}
	variants := []variant{
		{"sync-ps", true, collective.Auto},
		{"sync-ps", false, collective.Auto},
		{"sync-tree", true, collective.Auto},
		{"sync-tree", false, collective.Auto},
		{"sync-ring", true, collective.Auto},
		{"overlap", true, collective.Auto},
		{"sync-tree", true, collective.RecursiveDoubling},
	}
	for _, n := range []int{1, 2, 3, 4, 7} {
		_, want := runScheme(t, "seq", 1, n*b, iters, true, collective.Auto)
		for _, v := range variants {
			t.Run(fmt.Sprintf("%s/pack=%v/%v/N=%d", v.scheme, v.pack, v.alg, n), func(t *testing.T) {
				res, got := runScheme(t, v.scheme, n, b, iters, v.pack, v.alg)
				if !res.Identical {
					t.Fatal("replicas ended with different weights")
				}
				if res.Iters != iters {
					t.Fatalf("ran %d iterations, want %d", res.Iters, iters)
				}
				worst := 0.0
				for i := range want {
					d := math.Abs(float64(got[i]-want[i])) / math.Max(1e-2, math.Abs(float64(want[i])))
					worst = math.Max(worst, d)
				}
				if worst > 1e-4 {
					t.Fatalf("weights differ from seq with batch %d: worst relative difference %.3g", n*b, worst)
				}
			})
		}
	}
}

// TestSeqDiffersFromWrongBatch guards the test above: it must be able to
// fail, so seq with a different global batch has to differ.
func TestSeqDiffersFromWrongBatch(t *testing.T) {
	_, a := runScheme(t, "seq", 1, 8, 12, true, collective.Auto)
	_, b := runScheme(t, "sync-tree", 3, 4, 12, true, collective.Auto)
	same := true
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4 {
			same = false
		}
	}
	if same {
		t.Fatal("3 workers of batch 4 matched seq with batch 8: the equivalence test cannot fail")
	}
}

func TestWorkerFeedCountChecked(t *testing.T) {
	cfg := testConfig(t, 5)
	cfg.Name, cfg.Workers = "sync-tree", 3
	if _, err := New(cfg); err == nil {
		t.Fatal("3 workers with no worker feeds accepted")
	}
}

// runSchemeTCP runs every rank as its own Trainer joined over loopback
// TCP (one goroutine per rank, as one process per rank would) and returns
// rank 0's final weights.
func runSchemeTCP(t *testing.T, name string, workers, b, iters int) []float32 {
	t.Helper()
	results, errs := tcpGroup(t, name, workers, b, iters, -1)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s over tcp, rank %d: %v", name, r, err)
		}
	}
	for r := 1; r < len(results); r++ {
		if !slices.Equal(results[r], results[0]) {
			t.Fatalf("%s over tcp: rank %d's weights differ from rank 0's", name, r)
		}
	}
	return results[0]
}

// tcpGroup runs the ranks of a scheme as Trainers joined over loopback
// TCP; rank failRank's data source fails at iteration 3.
func tcpGroup(t *testing.T, name string, workers, b, iters, failRank int) ([][]float32, []error) {
	t.Helper()
	return tcpGroupWith(t, name, workers, b, iters, failRank, nil)
}

// tcpShm is the shared-memory setting of tcpGroupWith's endpoints.
var tcpShm = tcp.ShmAuto

// tcpGroupWith is tcpGroup with rank r's configuration changed by mod.
func tcpGroupWith(t *testing.T, name string, workers, b, iters, failRank int, mod func(r int, c *Config)) ([][]float32, []error) {
	t.Helper()
	images, labels := samples(96, 64, 4)
	sc := scheme.Config{Name: name, Workers: workers}
	size := sc.Ranks()
	rdv := rendezvous(t)
	results := make([][]float32, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := 0; r < size; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rank := min(r, workers-1)
			cfg := Config{
				Train: mlp(false), TrainShapes: map[string]tensor.Shape{"data": {b, 1, 8, 8}, "label": {b}},
				Solver: solver.Config{Type: "SGD", BaseLR: 0.1, Momentum: 0.9, WeightDecay: 1e-3, LRPolicy: "inv", Gamma: 1e-2, Power: 0.75},
				Config: scheme.Config{MaxIter: iters, Name: name, Workers: workers, Pack: true}, Seed: 11, Threads: 1,
				Group: &Group{Rank: r, Size: size},
			}
			if r < workers {
				src := &sliceSource{images: images, labels: labels, per: 64, batch: b, rank: rank, workers: workers}
				if r == failRank {
					src.failAt = 3
				}
				cfg.TrainFeeds = []Feed{{Tops: []string{"data", "label"}, Source: src}}
			}
			if mod != nil {
				mod(r, &cfg)
			}
			tr, err := New(cfg)
			if err != nil {
				errs[r] = err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ep, err := tcp.Connect(ctx, tcp.Config{Rank: r, Size: size, Rendezvous: rdv.Addr(), Stream: rdv, Token: "t", ModelHash: tr.LayoutHash(), Timeout: 20 * time.Second, Shm: tcpShm})
			if err != nil {
				errs[r] = err
				return
			}
			defer ep.Close()
			res, err := tr.Run(ctx, Deps{Endpoint: ep})
			if err != nil {
				errs[r] = err
				return
			}
			results[r] = append([]float32(nil), res.Params...)
		}()
	}
	wg.Wait()
	return results, errs
}

// TestWorkerFailureOverTCP: when one worker fails, every other rank stops
// well within the deadline (no hang) with an error that names rank 1 and
// what happened there, even when it learned of it through another rank.
func TestWorkerFailureOverTCP(t *testing.T) {
	for _, name := range []string{"sync-tree", "sync-ps", "overlap"} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, errs := tcpGroup(t, name, 3, 4, 50, 1)
			if d := time.Since(start); d > 15*time.Second {
				t.Fatalf("ranks took %v to stop", d)
			}
			t.Logf("rank 2 reports: %v", errs[2])
			if errs[1] == nil || !strings.Contains(errs[1].Error(), "injected") {
				t.Fatalf("failing rank: %v", errs[1])
			}
			for r, err := range errs {
				if r == 1 {
					continue
				}
				if err == nil || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "injected data failure") {
					t.Errorf("rank %d: got %v, want an error naming rank 1 and its failure", r, err)
				}
			}
		})
	}
}

// rendezvous opens a test group's rendezvous listener in advance (a
// port picked free, closed and bound again later can be taken in
// between: "address already in use" under load).
func rendezvous(t *testing.T) *tcp.Reserved {
	r, err := tcp.Reserve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestSyncSchemesMatchSeqOverTCP: the same equivalence over the TCP
// transport, every replica bitwise identical.
func TestSyncSchemesMatchSeqOverTCP(t *testing.T) {
	const b, iters = 4, 8
	for _, n := range []int{2, 3, 4, 7} {
		_, want := runScheme(t, "seq", 1, n*b, iters, true, collective.Auto)
		for _, name := range []string{"sync-ps", "sync-tree", "sync-ring", "overlap"} {
			t.Run(fmt.Sprintf("%s/N=%d", name, n), func(t *testing.T) {
				got := runSchemeTCP(t, name, n, b, iters)
				worst := 0.0
				for i := range want {
					worst = math.Max(worst, math.Abs(float64(got[i]-want[i]))/math.Max(1e-2, math.Abs(float64(want[i]))))
				}
				if worst > 1e-4 {
					t.Fatalf("weights differ from seq with batch %d: worst relative difference %.3g", n*b, worst)
				}
			})
		}
	}
}

// TestGroupAgreesOnTheRun: ranks started with another seed (or solver)
// than rank 0 are refused before iteration 0, naming the setting; they
// trained to the end with no error.
func TestGroupAgreesOnTheRun(t *testing.T) {
	cases := []struct {
		mod  func(r int, c *Config)
		want string
	}{
		{func(r int, c *Config) { c.Seed += uint64(r) }, "--seed is 13, rank 0's is 11"},
		{func(r int, c *Config) {
			if r == 2 {
				c.Solver.BaseLR = 0.2
			}
		}, "base_lr is 0.2, rank 0's is 0.1"},
	}
	for _, tc := range cases {
		_, errs := tcpGroupWith(t, "sync-tree", 3, 4, 5, -1, tc.mod)
		if errs[2] == nil || !strings.Contains(errs[2].Error(), tc.want) {
			t.Errorf("rank 2: %v, want an error with %q", errs[2], tc.want)
		}
		if errs[0] == nil {
			t.Errorf("rank 0 trained on with a rank that disagrees")
		}
	}
}

// TestGroupStartsFromRankZero: every rank of a multi-process group
// receives rank 0's weights before iteration 0 (TRL Alg. 5 line 2): a
// rank whose initial weights differ (a different filler, say) still ends
// with rank 0's trajectory.
func TestGroupStartsFromRankZero(t *testing.T) {
	want := runSchemeTCP(t, "sync-tree", 2, 4, 3)
	results, errs := tcpGroupWith(t, "sync-tree", 2, 4, 3, -1, func(r int, c *Config) {
		if r == 1 {
			c.Train = mlpInit(0.5) // other initial weights, the same run settings
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := range results {
		if !slices.Equal(results[r], want) {
			t.Fatalf("rank %d's weights differ from a run where every rank starts from rank 0's", r)
		}
	}
}

// mlpInit is mlp with ip1's weights drawn from a Gaussian of this
// standard deviation: the same layout, other initial weights.
func mlpInit(std float32) model.Spec {
	s := mlp(false)
	ip := *s.Layers[0].Config.(*layers.InnerProductConfig)
	ip.WeightFiller = layers.Filler{Type: layers.FillGaussian, Std: std}
	s.Layers[0].Config = &ip
	return s
}
