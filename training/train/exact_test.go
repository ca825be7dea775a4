package train

import (
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/transport/tcp"
	"dsgd/engine/layers"
	"dsgd/engine/model"
)

// hashWeights is a digest of every weight's bits.
func hashWeights(p []float32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, v := range p {
		u := math.Float32bits(v)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		h.Write(b[:])
	}
	return h.Sum64()
}

// runExact trains with exact sums: the global batch is atoms atoms of
// atom samples, each of the workers computing atoms/workers of them. It
// returns the digest of rank 0's weights after every iteration and the
// final weights.
func runExact(t *testing.T, name string, workers, atom, atoms, iters int, pack bool, alg collective.Algorithm, more ...func(*Config)) (*Result, []uint64, []float32) {
	t.Helper()
	var trace []uint64
	var tr *Trainer
	res, w := runSchemeWith(t, name, workers, atom, iters, pack, alg, func(c *Config, d *Deps) {
		c.Exact = true
		c.IterSize = atoms / workers
		d.OnIter = func(int, float64, time.Duration) {
			trace = append(trace, hashWeights(tr.net.Params()))
		}
		for _, m := range more {
			m(c)
		}
	}, &tr)
	return res, trace, w
}

// TestExactSchemesMatchSeqBitwise is issue 27's promise: for a fixed global
// batch, every synchronous scheme at every worker count that divides it
// gives seq's weights bit for bit, after every iteration.
func TestExactSchemesMatchSeqBitwise(t *testing.T) {
	const atom, atoms, iters = 2, 24, 8
	_, want, wantW := runExact(t, "seq", 1, atom, atoms, iters, true, collective.Auto)
	// The seq run differs from a float sum's: the test can fail.
	_, plain := runScheme(t, "seq", 1, atom*atoms, iters, true, collective.Auto)
	if hashWeights(plain) == hashWeights(wantW) {
		t.Fatal("exact and float summation gave the same bits: the comparison below proves nothing")
	}
	type variant struct {
		scheme string
		pack   bool
		alg    collective.Algorithm
	}
	variants := []variant{
		{"sync-ps", true, collective.Auto},
		{"sync-ps", false, collective.Auto},
		{"sync-tree", true, collective.Auto},
		{"sync-tree", false, collective.RecursiveDoubling},
		{"sync-ring", true, collective.Auto},
		{"sync-ring", false, collective.Ring},
		{"overlap", false, collective.Auto},
	}
	// local-sgd averaging every iteration with SGD is synchronous SGD:
	// it averages the gradients, exactly.
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("local-sgd/H=1/N=%d", n), func(t *testing.T) {
			_, got, _ := runExact(t, "local-sgd", n, atom, atoms, iters, true, collective.Auto, func(c *Config) { c.Interval = 1 })
			if !slices.Equal(got, want) {
				t.Fatal("local-sgd with H = 1: the weights differ from seq's")
			}
		})
	}
	// With dropout, every atom's masks must not depend on its worker.
	_, wantDrop, _ := runExact(t, "seq", 1, atom, atoms, iters, true, collective.Auto, withDropout)
	if wantDrop[iters-1] == want[iters-1] {
		t.Fatal("dropout changed nothing")
	}
	for _, n := range []int{2, 3, 8} {
		t.Run(fmt.Sprintf("dropout/sync-ring/N=%d", n), func(t *testing.T) {
			_, got, _ := runExact(t, "sync-ring", n, atom, atoms, iters, true, collective.Auto, withDropout)
			if !slices.Equal(got, wantDrop) {
				t.Fatal("with dropout, the weights differ from seq's")
			}
		})
	}
	for _, n := range []int{1, 2, 3, 4, 8} {
		for _, v := range variants {
			t.Run(fmt.Sprintf("%s/pack=%v/%v/N=%d", v.scheme, v.pack, v.alg, n), func(t *testing.T) {
				res, got, w := runExact(t, v.scheme, n, atom, atoms, iters, v.pack, v.alg)
				if !res.Identical {
					t.Fatal("replicas ended with different weights")
				}
				if len(got) != iters {
					t.Fatalf("%d iterations traced, want %d", len(got), iters)
				}
				for i := range want {
					if got[i] != want[i] {
						worst := 0.0
						for j := range w {
							worst = math.Max(worst, math.Abs(float64(w[j]-wantW[j])))
						}
						t.Fatalf("iteration %d: weights differ from seq's (final largest difference %g)", i, worst)
					}
				}
			})
		}
	}
}

// TestExactSchemesMatchSeqOverTCP: the same bits with every rank its own
// trainer over loopback TCP, with the host's shared memory and without.
func TestExactSchemesMatchSeqOverTCP(t *testing.T) {
	const atom, atoms, iters = 2, 12, 5
	_, _, want := runExact(t, "seq", 1, atom, atoms, iters, true, collective.Auto)
	for _, shm := range []tcp.Shm{tcp.ShmAuto, tcp.ShmOff} {
		for _, n := range []int{2, 3, 4} {
			for _, name := range []string{"sync-ps", "sync-tree", "sync-ring", "overlap"} {
				t.Run(fmt.Sprintf("%s/N=%d/shm=%v", name, n, shm), func(t *testing.T) {
					defer func(s tcp.Shm) { tcpShm = s }(tcpShm)
					tcpShm = shm
					results, errs := tcpGroupWith(t, name, n, atom, iters, -1, func(_ int, c *Config) {
						c.Exact, c.IterSize = true, atoms/n
					})
					for r, err := range errs {
						if err != nil {
							t.Fatalf("rank %d: %v", r, err)
						}
					}
					for r, got := range results {
						if hashWeights(got) != hashWeights(want) {
							t.Fatalf("rank %d's weights differ from seq's", r)
						}
					}
				})
			}
		}
	}
}

// TestExactResumeAtOtherWorkerCount: a run snapshotted at one worker count
// and resumed at another continues with seq's bits.
func TestExactResumeAtOtherWorkerCount(t *testing.T) {
	const atom, atoms, iters, half = 2, 12, 8, 4
	_, _, want := runExact(t, "seq", 1, atom, atoms, iters, true, collective.Auto)
	prefix := filepath.Join(t.TempDir(), "snap")
	runSchemeWith(t, "sync-tree", 2, atom, half, true, collective.Auto, func(c *Config, _ *Deps) {
		c.Exact, c.IterSize = true, atoms/2
		c.SnapshotPrefix = prefix
	}, nil)
	for _, n := range []int{3, 4} {
		_, got := runSchemeWith(t, "sync-ring", n, atom, iters, true, collective.Auto, func(c *Config, _ *Deps) {
			c.Exact, c.IterSize = true, atoms/n
			c.Resume = SnapshotPath(prefix, half)
			// The data resumes at the first atom of iteration half.
			for _, f := range append([][]Feed{c.TrainFeeds}, c.WorkerFeeds...) {
				f[0].Source.(*sliceSource).iter = half * c.IterSize
			}
		}, nil)
		if hashWeights(got) != hashWeights(want) {
			t.Fatalf("2 workers for %d iterations, then %d: the weights differ from seq's", half, n)
		}
	}
}

// withDropout puts a Dropout layer after the MLP's ReLU.
func withDropout(c *Config) {
	c.Train.Layers = slices.Insert(slices.Clone(c.Train.Layers), 2, model.LayerSpec{Name: "drop1", Bottom: []string{"ip1"}, Top: []string{"ip1"}, Config: &layers.DropoutConfig{Ratio: 0.5}})
}

func TestDefaultAtom(t *testing.T) {
	cases := []struct{ global, per, want int }{
		{64, 64, 8},   // LeNet: 8 atoms, for 1, 2, 4, 8 workers
		{64, 32, 8},   // the same atom on 2 workers
		{64, 8, 8},    // and on 8
		{64, 4, 4},    // 16 workers: atoms of 4
		{48, 16, 2},   // 24 atoms: 3 workers as 1, 2, 4, 8
		{100, 50, 25}, // cifar10_quick: 4 atoms
		{256, 256, 32},
		{7, 7, 7}, // no common factor with 24: one atom
		{0, 5, 5},
	}
	for _, c := range cases {
		if got := DefaultAtom(c.global, c.per); got != c.want {
			t.Errorf("DefaultAtom(%d, %d) = %d, want %d", c.global, c.per, got, c.want)
		}
	}
}

// TestExactAtomsSideBySide: a one-worker exact run computes its atoms on
// one-thread replicas of its net, side by side (computeAtoms), and gives
// the bits of the same run computing them one after another on one
// thread: the weights after every iteration and the losses, with and
// without dropout, with as many replicas as atoms and with fewer (the
// last round short).
func TestExactAtomsSideBySide(t *testing.T) {
	const atom, iters = 2, 6
	for _, tc := range []struct {
		name    string
		atoms   int
		threads int
		more    func(*Config)
	}{
		{"2 threads, 8 atoms", 8, 2, nil},
		{"3 threads, 8 atoms", 8, 3, nil},
		{"2 threads, 2 atoms", 2, 2, nil},
		{"dropout, 3 threads, 7 atoms", 7, 3, withDropout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(threads int) ([]uint64, []float64, int) {
				var trace []uint64
				var losses []float64
				var tr *Trainer
				runSchemeWith(t, "seq", 1, atom, iters, true, collective.Auto, func(c *Config, d *Deps) {
					c.Exact, c.IterSize, c.Threads = true, tc.atoms, threads
					d.OnIter = func(_ int, loss float64, _ time.Duration) {
						trace = append(trace, hashWeights(tr.net.Params()))
						losses = append(losses, loss)
					}
					if tc.more != nil {
						tc.more(c)
					}
				}, &tr)
				return trace, losses, len(tr.ranks[0].comp.replicas)
			}
			want, wantLoss, n := run(1)
			if n != 0 {
				t.Fatalf("one thread: %d replicas, want none", n)
			}
			got, gotLoss, n := run(tc.threads)
			if want := min(tc.threads, tc.atoms); n != want {
				t.Fatalf("%d threads, %d atoms: %d replicas, want %d", tc.threads, tc.atoms, n, want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("weights differ from the atoms one after another:\n got %x\nwant %x", got, want)
			}
			for i := range wantLoss {
				if math.Float64bits(gotLoss[i]) != math.Float64bits(wantLoss[i]) {
					t.Fatalf("iteration %d: loss %v, want %v", i, gotLoss[i], wantLoss[i])
				}
			}
		})
	}
}

// withConv makes the run's net convolutional (LeNet's layer types: a
// convolution, max pooling, an inner product), whose layers sum a batch's
// weight gradients per thread's chunk, so that the thread count changes
// the bits unless the atoms run on one-thread replicas (the padding makes
// the output large enough for the convolution to split a batch).
func withConv(c *Config) {
	xavier := layers.Filler{Type: layers.FillXavier}
	c.Train = model.Spec{
		Name:   "convnet",
		Inputs: []string{"data", "label"},
		Layers: []model.LayerSpec{
			{Name: "conv1", Bottom: []string{"data"}, Top: []string{"conv1"}, Config: &layers.ConvolutionConfig{NumOutput: 20, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 4, PadW: 4, Group: 1, BiasTerm: true, WeightFiller: xavier}},
			{Name: "pool1", Bottom: []string{"conv1"}, Top: []string{"pool1"}, Config: &layers.PoolingConfig{Method: layers.PoolMax, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}},
			{Name: "relu1", Bottom: []string{"pool1"}, Top: []string{"pool1"}, Config: &layers.ReLUConfig{}},
			{Name: "ip1", Bottom: []string{"pool1"}, Top: []string{"ip1"}, Config: &layers.InnerProductConfig{NumOutput: 4, BiasTerm: true, Axis: 1, WeightFiller: xavier}},
			{Name: "loss", Bottom: []string{"ip1", "label"}, Top: []string{"loss"}, Config: &layers.SoftmaxWithLossConfig{Axis: 1}},
		},
	}
}

// TestExactWorkersWithThreads: workers with two threads each compute
// their atoms on replicas and give the bits of seq on one thread, on a
// convolutional net; the same workers computing the atoms one after
// another on both threads do not (so the comparison can fail).
func TestExactWorkersWithThreads(t *testing.T) {
	const atom, atoms, iters = 8, 4, 6
	_, want, _ := runExact(t, "seq", 1, atom, atoms, iters, true, collective.Auto, withConv)
	serialAtoms = true
	_, serial, _ := runExact(t, "seq", 1, atom, atoms, iters, true, collective.Auto, withConv, func(c *Config) { c.Threads = 2 })
	serialAtoms = false
	if slices.Equal(serial, want) {
		t.Fatal("two threads gave one thread's bits without replicas: the comparison below proves nothing")
	}
	for _, name := range []string{"sync-ring", "sync-ps", "overlap"} {
		t.Run(name, func(t *testing.T) {
			_, got, _ := runExact(t, name, 2, atom, atoms, iters, true, collective.Auto, withConv, func(c *Config) { c.Threads = 4 })
			if !slices.Equal(got, want) {
				t.Fatal("two-thread workers: the weights differ from seq's on one thread")
			}
		})
	}
}

// TestBatchCoupledPermute: a Permute that keeps the batch axis first (SSD's
// 0, 2, 3, 1) leaves the batch cuttable into atoms; one that moves it
// does not.
func TestBatchCoupledPermute(t *testing.T) {
	for _, c := range []struct {
		order []int
		want  []string
	}{
		{nil, nil},
		{[]int{0, 2, 3, 1}, nil},
		{[]int{1, 0}, []string{"Permute p moves the batch axis to axis 1"}},
		{[]int{2, 3}, []string{"Permute p moves the batch axis to axis 2"}},
	} {
		spec := model.Spec{Layers: []model.LayerSpec{{Name: "p", Config: &layers.PermuteConfig{Order: c.order}}}}
		if got := BatchCoupled(spec); !slices.Equal(got, c.want) {
			t.Errorf("order %v: %q, want %q", c.order, got, c.want)
		}
	}
}

// TestBatchCoupledMultiBoxLoss: SSD's MultiBoxLoss keeps each worker's
// batch whole when its normalizer is the batch's matched priors (VALID,
// the default) or none (NONE), where the mean over atoms would differ from
// the whole batch's loss; FULL and BATCH_SIZE divide by a count per image
// and leave the batch cuttable.
func TestBatchCoupledMultiBoxLoss(t *testing.T) {
	for _, c := range []struct {
		norm layers.LossNormalization
		want []string
	}{
		{layers.NormValid, []string{"MultiBoxLoss mb divides by the matched priors of its whole batch (normalization VALID)"}},
		{layers.NormNone, []string{"MultiBoxLoss mb sums over its whole batch (normalization NONE)"}},
		{layers.NormFull, nil},
		{layers.NormBatchSize, nil},
	} {
		spec := model.Spec{Layers: []model.LayerSpec{{Name: "mb", Config: &layers.MultiBoxLossConfig{Normalization: c.norm}}}}
		if got := BatchCoupled(spec); !slices.Equal(got, c.want) {
			t.Errorf("normalization %d: %q, want %q", c.norm, got, c.want)
		}
	}
}
