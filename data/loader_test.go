package data

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// indexed is a dataset of n 1×1×1 images whose pixel and label say which
// image it is (pixel i mod 256, label i mod 10).
func indexed(n int) *Dataset {
	d := &Dataset{Name: "indexed", N: n, C: 1, H: 1, W: 1, Classes: 10,
		Pixels: make([]uint8, n), Labels: make([]int32, n)}
	for i := range n {
		d.Pixels[i], d.Labels[i] = uint8(i), int32(i%10)
	}
	return d
}

func newLoader(t testing.TB, ds *Dataset, cfg LoaderConfig) *Loader {
	t.Helper()
	l, err := NewLoader(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// take returns the dataset indices, epochs and sequence numbers of the
// next n batches.
func take(t testing.TB, l *Loader, n int) (idx [][]int, epochs []int) {
	t.Helper()
	for range n {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		idx = append(idx, slices.Clone(b.Index))
		epochs = append(epochs, b.Epoch)
		l.Release(b)
	}
	return idx, epochs
}

func TestLoaderSequentialWraps(t *testing.T) {
	l := newLoader(t, indexed(10), LoaderConfig{BatchSize: 4})
	if l.Shape() != [4]int{4, 1, 1, 1} || l.ShardSize() != 10 {
		t.Fatalf("shape %v shard %d", l.Shape(), l.ShardSize())
	}
	idx, epochs := take(t, l, 5)
	want := [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}, {2, 3, 4, 5}, {6, 7, 8, 9}}
	if !slices.EqualFunc(idx, want, slices.Equal) || !slices.Equal(epochs, []int{0, 0, 0, 1, 1}) {
		t.Errorf("got %v epochs %v, want %v epochs [0 0 0 1 1]", idx, epochs, want)
	}
	b, _ := l.Next(context.Background())
	defer l.Release(b)
	if b.Seq != 5 || b.Epoch != 2 || !slices.Equal(b.Labels, []float32{0, 1, 2, 3}) || !slices.Equal(b.Data, []float32{0, 1, 2, 3}) {
		t.Errorf("batch 5: seq %d epoch %d labels %v data %v", b.Seq, b.Epoch, b.Labels, b.Data)
	}
}

// shardOf returns the set of images rank sees in one epoch.
func shardOf(t *testing.T, ds *Dataset, cfg LoaderConfig) []int {
	t.Helper()
	l := newLoader(t, ds, cfg)
	idx, _ := take(t, l, l.ShardSize())
	var s []int
	for _, b := range idx {
		s = append(s, b...)
	}
	l.Close()
	slices.Sort(s)
	return s
}

func TestLoaderSharding(t *testing.T) {
	ds := indexed(103)
	for _, shuffle := range []bool{false, true} {
		for _, world := range []int{1, 2, 4, 7} {
			cover := make([]int, ds.N)
			var shards [][]int
			for rank := range world {
				cfg := LoaderConfig{BatchSize: 1, Shuffle: shuffle, Seed: 11, Rank: rank, World: world}
				s := shardOf(t, ds, cfg)
				if len(slices.Compact(slices.Clone(s))) != len(s) {
					t.Errorf("shuffle=%v world=%d rank %d: an epoch repeats an image", shuffle, world, rank)
				}
				if n := len(s); n < ds.N/world || n > ds.N/world+1 {
					t.Errorf("shuffle=%v world=%d rank %d: %d images, want %d or %d", shuffle, world, rank, n, ds.N/world, ds.N/world+1)
				}
				for _, i := range s {
					cover[i]++
				}
				if again := shardOf(t, ds, cfg); !slices.Equal(again, s) {
					t.Errorf("shuffle=%v world=%d rank %d: shard differs between runs with one seed", shuffle, world, rank)
				}
				shards = append(shards, s)
			}
			for i, c := range cover {
				if c != 1 {
					t.Fatalf("shuffle=%v world=%d: image %d in %d shards, want exactly 1", shuffle, world, i, c)
				}
			}
			if !shuffle && world == 4 && (shards[1][0] != 25 || shards[1][len(shards[1])-1] != 50) {
				t.Errorf("unshuffled rank 1 of 4 holds %d..%d, want the block 25..50", shards[1][0], shards[1][len(shards[1])-1])
			}
			if shuffle && world == 4 {
				other := shardOf(t, ds, LoaderConfig{BatchSize: 1, Shuffle: true, Seed: 12, Rank: 1, World: 4})
				if slices.Equal(other, shards[1]) {
					t.Error("seeds 11 and 12 gave rank 1 the same shard")
				}
				// Shuffled shards are spread over the data, not one block.
				if s := shards[1]; s[len(s)-1]-s[0] < 50 {
					t.Errorf("shuffled shard spans only %d..%d", s[0], s[len(s)-1])
				}
			}
		}
	}
}

func TestLoaderShuffleEpochs(t *testing.T) {
	ds := indexed(50)
	cfg := LoaderConfig{BatchSize: 10, Shuffle: true, Seed: 3, Rank: 1, World: 2}
	l := newLoader(t, ds, cfg)
	idx, epochs := take(t, l, 10) // shard of 25: epochs straddle batches
	var flat []int
	for _, b := range idx {
		flat = append(flat, b...)
	}
	shard := slices.Sorted(slices.Values(flat[:25]))
	var orders [][]int
	for e := range 4 {
		ep := flat[25*e : 25*(e+1)]
		if !slices.Equal(slices.Sorted(slices.Values(ep)), shard) {
			t.Errorf("epoch %d is not a permutation of the shard: %v", e, ep)
		}
		for _, prev := range orders {
			if slices.Equal(prev, ep) {
				t.Errorf("epoch %d repeats an earlier order", e)
			}
		}
		orders = append(orders, ep)
	}
	if slices.Equal(orders[0], shard) {
		t.Error("epoch 0 is in file order despite Shuffle")
	}
	if !slices.Equal(epochs, []int{0, 0, 0, 1, 1, 2, 2, 2, 3, 3}) {
		t.Errorf("epochs %v", epochs)
	}
	again, _ := take(t, newLoader(t, ds, cfg), 10)
	if !slices.EqualFunc(again, idx, slices.Equal) {
		t.Error("same seed gave a different sequence")
	}
	cfg.Seed = 4
	other, _ := take(t, newLoader(t, ds, cfg), 10)
	if slices.EqualFunc(other, idx, slices.Equal) {
		t.Error("seeds 3 and 4 gave the same sequence")
	}
}

// digest hashes a batch's data, labels and indices.
func digest(b *Batch) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, v := range b.Data {
		u := math.Float32bits(v)
		buf[0], buf[1], buf[2], buf[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		h.Write(buf[:4])
	}
	for i := range b.Labels {
		u := uint64(b.Index[i])<<8 | uint64(b.Labels[i])
		for k := range 8 {
			buf[k] = byte(u >> (8 * k))
		}
		h.Write(buf[:])
	}
	return h.Sum64()
}

func TestLoaderDeterministicAcrossPrefetch(t *testing.T) {
	ds, err := Synthetic(SyntheticConfig{N: 90, C: 2, H: 9, W: 9, Classes: 4, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	run := func(prefetch int, jitter bool) []uint64 {
		cfg := LoaderConfig{BatchSize: 16, Train: true, Shuffle: true, Seed: 42, Rank: 1, World: 2, Prefetch: prefetch,
			Transform: TransformConfig{CropSize: 7, Mirror: true, MeanValue: []float32{100, 120}, Scale: 1.0 / 64}}
		l := newLoader(t, ds, cfg)
		r := rand.New(rand.NewPCG(uint64(prefetch), 0))
		var out []uint64
		var held []*Batch
		for range 20 {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, digest(b))
			held = append(held, b)
			if jitter {
				time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			}
			// Hold up to two batches before giving them back.
			if len(held) == 2 || r.IntN(2) == 0 {
				for _, h := range held {
					l.Release(h)
				}
				held = held[:0]
			}
		}
		return out
	}
	want := run(1, false)
	for _, p := range []int{2, 5, 10} {
		for _, jitter := range []bool{false, true} {
			if got := run(p, jitter); !slices.Equal(got, want) {
				t.Errorf("prefetch %d jitter %v: batch sequence differs from prefetch 1", p, jitter)
			}
		}
	}
	if slices.Equal(want[:5], want[5:10]) {
		t.Error("batches repeat: the digest sees nothing")
	}
}

func TestLoaderCloseStopsGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	ds := indexed(100)
	for _, consume := range []int{0, 1, 30} {
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 4, Prefetch: 3})
		if err != nil {
			t.Fatal(err)
		}
		for range consume {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			l.Release(b)
		}
		held, _ := l.Next(context.Background())
		time.Sleep(time.Millisecond) // let the producer block on a full queue
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.done:
		default:
			t.Fatal("Close returned with the goroutine still running")
		}
		if _, err := l.Next(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("Next after Close: %v, want ErrClosed", err)
		}
		l.Release(held) // allowed after Close
		l.Close()       // idempotent
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}
}

func TestLoaderNextContext(t *testing.T) {
	l := newLoader(t, indexed(10), LoaderConfig{BatchSize: 2, Prefetch: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	// Holding every buffer (Prefetch+2) starves Next until ctx ends.
	var held []*Batch
	for range 3 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("starved Next: %v, want deadline exceeded", err)
	}
	for _, b := range held {
		l.Release(b)
	}
	if b, err := l.Next(context.Background()); err != nil || b.Seq != 3 {
		t.Errorf("after release: %v, %v; want batch 3", b, err)
	}
}

func TestLoaderReleaseMisuse(t *testing.T) {
	ds := indexed(10)
	l := newLoader(t, ds, LoaderConfig{BatchSize: 2})
	other := newLoader(t, ds, LoaderConfig{BatchSize: 2})
	b, _ := l.Next(context.Background())
	ob, _ := other.Next(context.Background())
	mustPanic(t, "foreign batch", func() { l.Release(ob) })
	l.Release(b)
	mustPanic(t, "double release", func() { l.Release(b) })
	l.Release(nil)
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestLoaderAll(t *testing.T) {
	l := newLoader(t, indexed(7), LoaderConfig{BatchSize: 3, Prefetch: 1})
	var seqs []int64
	// Far more batches than buffers: All must release each one.
	for b, err := range l.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, b.Seq)
		if len(seqs) == 20 {
			break
		}
	}
	if len(seqs) != 20 || seqs[19] != 19 {
		t.Errorf("got seqs %v", seqs)
	}
	b, err := l.Next(context.Background())
	if err != nil || b.Seq != 20 {
		t.Errorf("after break: %v, %v; want batch 20", b, err)
	}
	l.Release(b)
	l.Close()
	n := 0
	for b, err := range l.All(context.Background()) {
		n++
		if b != nil || !errors.Is(err, ErrClosed) {
			t.Errorf("All after Close yielded %v, %v", b, err)
		}
	}
	if n != 1 {
		t.Errorf("All after Close yielded %d times, want 1", n)
	}
}

// Once the queue is full, the consumer finds every batch ready.
func TestLoaderNoStallsInSteadyState(t *testing.T) {
	l := newLoader(t, indexed(1000), LoaderConfig{BatchSize: 8, Prefetch: 6})
	b, _ := l.Next(context.Background())
	l.Release(b)
	waitFull(t, l)
	stalls := l.Stalls()
	for range 6 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		l.Release(b)
	}
	if got := l.Stalls(); got != stalls {
		t.Errorf("%d stalls draining a full queue", got-stalls)
	}
}

func waitFull(t testing.TB, l *Loader) {
	deadline := time.Now().Add(5 * time.Second)
	for len(l.ready) < cap(l.ready) {
		if time.Now().After(deadline) {
			t.Fatal("prefetch queue never filled")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestLoaderZeroAllocs(t *testing.T) {
	ds, _ := Synthetic(SyntheticConfig{N: 200, Seed: 1})
	l := newLoader(t, ds, LoaderConfig{BatchSize: 64, Train: true, Shuffle: true, Seed: 1, Prefetch: 4,
		Transform: TransformConfig{CropSize: 24, Mirror: true, Scale: 1.0 / 255}})
	ctx := context.Background()
	for range 10 { // through several epochs: reshuffles must not allocate either
		b, _ := l.Next(ctx)
		l.Release(b)
	}
	allocs := testing.AllocsPerRun(50, func() {
		b, err := l.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l.Release(b)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}

func TestNewLoaderErrors(t *testing.T) {
	ds := indexed(5)
	cases := []struct {
		name string
		cfg  LoaderConfig
		want string
	}{
		{"batch", LoaderConfig{}, "batch size 0"},
		{"world", LoaderConfig{BatchSize: 1, World: -1}, "world size -1"},
		{"rank", LoaderConfig{BatchSize: 1, Rank: 2, World: 2}, "rank 2 out of range 0..1"},
		{"too many workers", LoaderConfig{BatchSize: 1, World: 6}, "6 workers but only 5 images"},
		{"prefetch", LoaderConfig{BatchSize: 1, Prefetch: -1}, "prefetch -1"},
	}
	for _, tc := range cases {
		_, err := NewLoader(ds, tc.cfg)
		wantErr(t, err, "loader for indexed", tc.want)
	}
	bad := indexed(5)
	bad.Labels = bad.Labels[:3]
	_, err := NewLoader(bad, LoaderConfig{BatchSize: 1})
	wantErr(t, err, "3 labels for 5 images")
}

func BenchmarkLoaderNext(b *testing.B) {
	ds, err := Synthetic(SyntheticConfig{N: 2048, C: 1, H: 28, W: 28, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	l := newLoader(b, ds, LoaderConfig{BatchSize: 64, Train: true, Shuffle: true, Seed: 1,
		Transform: TransformConfig{Scale: 1.0 / 256}})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(64 * 28 * 28 * 4)
	for b.Loop() {
		batch, err := l.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		l.Release(batch)
	}
	b.ReportMetric(float64(l.Stalls())/float64(b.N), "stalls/op")
}

// TestLoaderRandSkip: rand_skip starts the first epoch at a position
// drawn below it, as Caffe's DataLayer skips rand() % rand_skip records,
// then reads on in order; 0 and 1 skip nothing.
func TestLoaderRandSkip(t *testing.T) {
	starts := map[int]bool{}
	for seed := range uint64(40) {
		for _, skip := range []int{0, 1, 7} {
			l := newLoader(t, indexed(20), LoaderConfig{BatchSize: 4, Seed: seed, RandSkip: skip})
			idx, _ := take(t, l, 2)
			first := idx[0][0]
			if first < 0 || first >= max(skip, 1) {
				t.Fatalf("seed %d rand_skip %d: first record %d", seed, skip, first)
			}
			for i, v := range slices.Concat(idx...) {
				if v != (first+i)%20 {
					t.Fatalf("seed %d rand_skip %d: records %v do not follow in order from %d", seed, skip, idx, first)
				}
			}
			if skip == 7 {
				starts[first] = true
			}
			l.Close()
		}
	}
	if len(starts) < 5 {
		t.Errorf("rand_skip 7 over 40 seeds started at only %v", starts)
	}
}
