package data

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultPrefetch is how many batches a Loader prepares ahead unless told
// otherwise, as ShmCaffe does.
const DefaultPrefetch = 10

// ErrClosed is returned by Next once the Loader is closed.
var ErrClosed = errors.New("data: loader closed")

// LoaderConfig says how a Loader turns a Dataset into batches.
type LoaderConfig struct {
	// BatchSize is the number of images per batch; it must be positive.
	BatchSize int
	// Train enables random crop offsets; without it crops are centred.
	// Mirroring follows Transform.Mirror in either phase, as in Caffe.
	Train bool
	// Shuffle draws the shards at random from Seed and visits each shard
	// in a fresh random order every epoch. Without it shards are
	// contiguous blocks visited in file order.
	Shuffle bool
	// Seed determines the shards, every epoch's order and every crop and
	// mirror: the same seed gives the same batches.
	Seed uint64
	// Rank and World shard the data: worker Rank of World sees only its
	// shard, the shards are disjoint and together cover the data. World 0
	// means 1.
	Rank, World int
	// Slice, instead of sharding, makes the workers split each global
	// batch: the data set is one sequence (every epoch a permutation of
	// all images, from Seed), global batch g is its positions
	// [g·World·BatchSize, (g+1)·World·BatchSize), and worker Rank takes
	// the Rank-th BatchSize of them. Crops and mirrors are drawn per
	// position. So World workers with batch b read, iteration by
	// iteration, the images one worker with batch World·b reads: the
	// data-order contract that makes a synchronous run independent of
	// the worker count.
	Slice bool
	// Start is the global batch the first batch is (a resumed run).
	// Slice only.
	Start int64
	// Offset moves every global batch Offset positions further along the
	// sequence: global batch g is positions Offset + [g·World·BatchSize,
	// (g+1)·World·BatchSize). An elastic group whose size changed goes on
	// from the position its earlier generations reached, with Start 0.
	// Slice only.
	Offset int64
	// Transform is applied to each image (Caffe's transform_param).
	Transform TransformConfig
	// Prefetch is the number of batches prepared ahead by the background
	// goroutine; 0 means DefaultPrefetch.
	Prefetch int
	// DecodeThreads is how many goroutines decode the encoded images
	// (JPEG, PNG) of each batch; 0 means the number of cores, at most 4.
	// Raw images need no decoding and ignore it.
	DecodeThreads int
	// Reshape lets the batches of a streamed database, or of encoded
	// images (an image list), each take the shape of their first record
	// (an encoded image's decoded shape), as Caffe's Data and ImageData
	// layers reshape their top to each batch's first image: what a layer
	// of batch_size 1 does over images of differing shapes (Variable).
	// Without it every image must transform to the first one's shape (a
	// crop that fits reads raw records of differing sizes; encoded images
	// must decode to the first one's size), and one that does not is an
	// error naming it.
	Reshape bool
	// RandSkip, when positive, starts the first epoch at a random
	// position below RandSkip drawn from Seed, as Caffe's
	// data_param.rand_skip skips that many records at the start.
	RandSkip int
}

// Batch is one batch of transformed images. A Batch is owned by its Loader
// and reused: it is valid from Next until it is given to Release.
type Batch struct {
	// Data holds the images, float32 in NCHW order with the shape Shape.
	Data []float32
	// Labels holds each image's class as a float32, as Caffe's data layers
	// emit it.
	Labels []float32
	// Index holds each image's index in the Dataset.
	Index []int
	// Extra holds the batch's values of each of the Dataset's Extra
	// columns, item after item.
	Extra [][]float32
	// Shape is the loader's output shape {B, C, H', W'}.
	Shape [4]int
	// Seq numbers the batches of a Loader from 0.
	Seq int64
	// Epoch is the epoch of the batch's first image, counted from 0; a
	// batch may run on into the next epoch, as Caffe's data layers do.
	Epoch int

	owner *Loader
	out   bool // handed out by Next, not yet released
}

// Loader makes batches from a Dataset in a background goroutine, Prefetch
// batches ahead, through a fixed set of reused buffers: in steady state
// neither producing nor consuming a batch allocates.
//
// Next and Release may be called from any goroutine, but the batch
// sequence is one stream: the same LoaderConfig gives the same batches in
// the same order whatever the prefetch depth or timing. Close stops the
// goroutine.
type Loader struct {
	ds        *Dataset
	shape     [4]int
	shardSize int
	free      chan *Batch // buffers ready to be filled
	ready     chan *Batch // filled batches, in order
	stop      chan struct{}
	done      chan struct{} // closed when the goroutine has returned
	closeOnce sync.Once
	stalls    atomic.Int64
	broken    chan struct{} // closed when the producer failed; err says why
	err       error
	variable  bool
	// peekMu guards peeked, the batch Peek took from ready for the next
	// Next to return.
	peekMu sync.Mutex
	peeked *Batch
}

// NewLoader checks cfg against ds and starts the background goroutine.
// Errors name the data set and the offending setting. A mean file named in
// cfg.Transform is read here.
func NewLoader(ds *Dataset, cfg LoaderConfig) (*Loader, error) {
	if err := ds.Check(); err != nil {
		return nil, err
	}
	name := "loader for " + ds.Name
	if cfg.World == 0 {
		cfg.World = 1
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = DefaultPrefetch
	}
	switch {
	case cfg.BatchSize < 1:
		return nil, fmt.Errorf("%s: batch size %d, want at least 1", name, cfg.BatchSize)
	case cfg.World < 1:
		return nil, fmt.Errorf("%s: world size %d, want at least 1", name, cfg.World)
	case cfg.Rank < 0 || cfg.Rank >= cfg.World:
		return nil, fmt.Errorf("%s: rank %d out of range 0..%d", name, cfg.Rank, cfg.World-1)
	case cfg.World > ds.N:
		return nil, fmt.Errorf("%s: %d workers but only %d images; every shard needs at least one", name, cfg.World, ds.N)
	case cfg.DecodeThreads < 0:
		return nil, fmt.Errorf("%s: %d decode threads, want at least 1 (0 means one per core)", name, cfg.DecodeThreads)
	case cfg.RandSkip < 0:
		return nil, fmt.Errorf("%s: rand_skip %d is negative", name, cfg.RandSkip)
	case cfg.Start < 0 || (cfg.Start > 0 && !cfg.Slice):
		return nil, fmt.Errorf("%s: start batch %d needs Slice and must not be negative", name, cfg.Start)
	case cfg.Offset < 0 || (cfg.Offset > 0 && !cfg.Slice):
		return nil, fmt.Errorf("%s: offset %d needs Slice and must not be negative", name, cfg.Offset)
	case cfg.Prefetch < 0:
		return nil, fmt.Errorf("%s: prefetch %d, want at least 1 (0 means %d)", name, cfg.Prefetch, DefaultPrefetch)
	}
	if ds.Untransformed && !isIdentity(cfg.Transform) {
		return nil, fmt.Errorf("%s: float data (HDF5) takes no transform_param, as in Caffe", name)
	}
	t, err := newTransformer(name, cfg.Transform, ds.C, ds.H, ds.W, cfg.Train)
	if err != nil {
		return nil, err
	}
	s, err := newSampler(ds, t, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &Loader{
		ds:        ds,
		shape:     [4]int{cfg.BatchSize, ds.C, t.oh, t.ow},
		shardSize: len(s.shard),
		free:      make(chan *Batch, cfg.Prefetch+2),
		ready:     make(chan *Batch, cfg.Prefetch),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		broken:    make(chan struct{}),
		variable:  cfg.Reshape && (ds.Stream != nil || ds.Encoded != nil),
	}
	per := ds.C * t.oh * t.ow
	for range cfg.Prefetch + 2 {
		b := &Batch{
			Data:   make([]float32, cfg.BatchSize*per),
			Labels: make([]float32, cfg.BatchSize),
			Index:  make([]int, cfg.BatchSize),
			Shape:  l.shape,
			owner:  l,
		}
		for _, c := range ds.Extra {
			b.Extra = append(b.Extra, make([]float32, cfg.BatchSize*c.ItemSize()))
		}
		l.free <- b
	}
	go l.run(s)
	return l, nil
}

// run is the producer: it fills free buffers in sequence order until Close.
func (l *Loader) run(s *sampler) {
	defer close(l.done)
	defer s.close()
	for {
		var b *Batch
		select {
		case b = <-l.free:
		case <-l.stop:
			return
		}
		if err := s.fill(b); err != nil {
			l.err = err
			close(l.broken)
			return
		}
		select {
		case l.ready <- b:
		case <-l.stop:
			return
		}
	}
}

// Shape returns the shape of every batch's Data: {B, C, H', W'}, where H'
// and W' are the crop size when cropping. When Variable, it is the
// first record's, and a batch's own Shape may differ.
func (l *Loader) Shape() [4]int { return l.shape }

// Variable reports whether batches may differ in shape: a streamed
// database or encoded images (an image list) read with
// LoaderConfig.Reshape, whose batches each take the shape of their first
// record (an encoded image's decoded), as Caffe's Data and ImageData
// layers reshape their top to each batch's first image (without a crop,
// images of differing sizes make batches of differing sizes).
func (l *Loader) Variable() bool { return l.variable }

// Peek returns the shape of the next batch without taking it: the next
// Next returns that batch. It waits as Next does and returns its errors.
// A caller whose batches vary (Variable) peeks to shape what the batch
// goes into before taking it.
func (l *Loader) Peek(ctx context.Context) ([4]int, error) {
	l.peekMu.Lock()
	defer l.peekMu.Unlock()
	if l.peeked == nil {
		b, err := l.next(ctx)
		if err != nil {
			return [4]int{}, err
		}
		l.peeked = b
	}
	return l.peeked.Shape, nil
}

// ItemName names image i of the loader's Dataset (a Batch's Index) for
// errors: its database record and key, list line or HDF5 item.
func (l *Loader) ItemName(i int) string { return l.ds.ItemName(i) }

// ShardSize returns the number of images in this rank's shard: one epoch.
func (l *Loader) ShardSize() int { return l.shardSize }

// Stalls returns how many calls to Next found no batch ready and had to
// wait, the first call included. In steady state it stays put.
func (l *Loader) Stalls() int64 { return l.stalls.Load() }

// Next returns the next batch, waiting for it if none is ready. The batch
// is the caller's until it is passed to Release. A caller may hold up to
// Prefetch+1 batches at once; holding more makes Next wait until ctx ends.
// Next returns ctx's error if ctx ends first, ErrClosed after Close, and
// the producer's error (an image that cannot be decoded, named by its key
// or list line) once the batches before it are taken.
func (l *Loader) Next(ctx context.Context) (*Batch, error) {
	select {
	case <-l.stop:
		return nil, ErrClosed
	default:
	}
	l.peekMu.Lock()
	b := l.peeked
	l.peeked = nil
	l.peekMu.Unlock()
	if b != nil {
		b.out = true
		return b, nil
	}
	b, err := l.next(ctx)
	if err != nil {
		return nil, err
	}
	b.out = true
	return b, nil
}

// next takes the next filled batch, waiting for it (Next's stalls and
// errors), without marking it handed out.
func (l *Loader) next(ctx context.Context) (*Batch, error) {
	select {
	case <-l.stop:
		return nil, ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case b := <-l.ready:
		return b, nil
	default:
	}
	l.stalls.Add(1)
	select {
	case b := <-l.ready:
		return b, nil
	case <-l.broken:
		select {
		case b := <-l.ready:
			return b, nil
		default:
		}
		return nil, l.err
	case <-l.stop:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Release gives a batch from Next back for reuse; b must not be used
// afterwards. Releasing nil does nothing; releasing a batch twice, or one
// from another Loader, panics. Release may be called after Close.
func (l *Loader) Release(b *Batch) {
	if b == nil {
		return
	}
	if b.owner != l {
		panic("data: Release of a batch from another loader")
	}
	if !b.out {
		panic("data: batch released twice")
	}
	b.out = false
	l.free <- b // never blocks: free has room for every buffer
}

// Close stops the background goroutine and waits for it to return. It is
// safe to call more than once and from any goroutine.
func (l *Loader) Close() error {
	l.closeOnce.Do(func() { close(l.stop) })
	<-l.done
	return nil
}

// All returns the batches as an endless sequence (epochs wrap), for use
// with range: each batch is valid only inside the loop body and is
// released when the body returns. On an error (ctx ended, Close) it
// yields (nil, err) once and stops.
func (l *Loader) All(ctx context.Context) iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		for {
			b, err := l.Next(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			more := yield(b, nil)
			l.Release(b)
			if !more {
				return
			}
		}
	}
}

// sampler is the loader's synchronous core: it decides which images go in
// each batch and transforms them. It is not safe for concurrent use; the
// Loader's goroutine owns it.
type sampler struct {
	ds      *Dataset
	t       *transformer
	batch   int
	shuffle bool
	seed    uint64
	shard   []int // this rank's images, ascending
	order   []int // this epoch's visiting order
	pos     int   // next position in order
	epoch   int
	seq     int64
	// Separate streams for epoch orders and for crops and mirrors, each
	// reseeded from the seed and the epoch or batch number alone.
	orderPCG, augPCG *rand.PCG
	orderRng, augRng *rand.Rand
	// For an encoded Dataset: one decoded image per decoding goroutine,
	// and the batch's images with their errors.
	scratch [][]uint8
	jobs    []decodeJob
	errs    []error
	slice   *sliceState   // LoaderConfig.Slice; nil: shards
	rd      *streamReader // a streamed Dataset's cursor; nil: in memory
	// shapes holds the transformers of streamed records whose shape is
	// not the first record's (shaped), and first the shape of the
	// batch's first record.
	shapes  map[[3]int]*transformer
	first   [3]int
	reshape bool // LoaderConfig.Reshape
}

func newSampler(ds *Dataset, t *transformer, cfg LoaderConfig) (*sampler, error) {
	all := make([]int, ds.N)
	for i := range all {
		all[i] = i
	}
	if cfg.Shuffle {
		r := rand.New(rand.NewPCG(mix(cfg.Seed, tagShard), uint64(cfg.World)))
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	}
	lo := int(int64(cfg.Rank) * int64(ds.N) / int64(cfg.World))
	hi := int(int64(cfg.Rank+1) * int64(ds.N) / int64(cfg.World))
	if cfg.Slice {
		// One sequence over every image: the epochs' permutations
		// are of all of them.
		slices.Sort(all)
		lo, hi = 0, ds.N
	}
	shard := all[lo:hi:hi]
	slices.Sort(shard)
	s := &sampler{
		ds:       ds,
		t:        t,
		batch:    cfg.BatchSize,
		reshape:  cfg.Reshape,
		shuffle:  cfg.Shuffle,
		seed:     cfg.Seed,
		shard:    shard,
		order:    make([]int, len(shard)),
		orderPCG: rand.NewPCG(0, 0),
		augPCG:   rand.NewPCG(0, 0),
	}
	s.orderRng = rand.New(s.orderPCG)
	s.augRng = rand.New(s.augPCG)
	if ds.Stream != nil {
		rd, err := newStreamReader(ds.Stream)
		if err != nil {
			return nil, err
		}
		s.rd = rd
	}
	if ds.Encoded != nil || (ds.Stream != nil && ds.Stream.kind == streamEncoded) {
		threads := cfg.DecodeThreads
		if threads == 0 {
			threads = min(runtime.GOMAXPROCS(0), 4)
		}
		threads = min(threads, cfg.BatchSize)
		for range threads {
			s.scratch = append(s.scratch, make([]uint8, ds.ImageSize()))
		}
		s.jobs = make([]decodeJob, cfg.BatchSize)
		s.errs = make([]error, cfg.BatchSize)
	}
	if cfg.Slice {
		s.slice = &sliceState{rank: int64(cfg.Rank), world: int64(cfg.World), next: cfg.Start, offset: cfg.Offset}
	}
	s.startEpoch(0)
	if cfg.RandSkip > 0 {
		r := rand.New(rand.NewPCG(mix(cfg.Seed, tagSkip), uint64(cfg.Rank)))
		s.pos = r.IntN(cfg.RandSkip) % len(s.order)
	}
	return s, nil
}

// close releases the sampler's cursor, if it has one.
func (s *sampler) close() {
	if s.rd != nil {
		s.rd.close()
	}
}

// startEpoch sets the visiting order of epoch e: a permutation of the
// shard that depends only on the seed and e.
func (s *sampler) startEpoch(e int) {
	s.epoch, s.pos = e, 0
	copy(s.order, s.shard)
	if !s.shuffle {
		return
	}
	s.orderPCG.Seed(mix(s.seed, tagEpoch), uint64(e))
	for i := len(s.order) - 1; i > 0; i-- {
		j := s.orderRng.IntN(i + 1)
		s.order[i], s.order[j] = s.order[j], s.order[i]
	}
}

// fill writes the next batch into b, running on into the next epoch when
// this one ends. Its only error is an encoded image that does not decode.
func (s *sampler) fill(b *Batch) error {
	if s.slice != nil {
		return s.fillSlice(b)
	}
	if s.pos == len(s.order) {
		s.startEpoch(s.epoch + 1)
	}
	b.Seq, b.Epoch = s.seq, s.epoch
	s.augPCG.Seed(mix(s.seed, tagAugment), uint64(s.seq))
	for i := range s.batch {
		if s.pos == len(s.order) {
			s.startEpoch(s.epoch + 1)
		}
		idx := s.order[s.pos]
		s.pos++
		if err := s.place(b, i, idx); err != nil {
			return err
		}
	}
	s.seq++
	return s.decodePending(b.Data, s.ds.C*s.t.oh*s.t.ow)
}

// draw draws one image's crop offsets and mirror for t, in that order.
func (s *sampler) draw(t *transformer) (hOff, wOff int, mirror bool) {
	hOff, wOff = t.offsets(s.augRng)
	return hOff, wOff, t.mirror && s.augRng.IntN(2) == 1
}

// place puts image idx of the data set at position i of b: its label and
// index, and its pixels — queued for decoding (encoded data), or
// transformed now, with its crop and mirror drawn. A streamed image is
// read from its record here; its errors are a record that cannot be
// read, or one whose shape does not fit (shaped).
func (s *sampler) place(b *Batch, i, idx int) error {
	b.Index[i] = idx
	if s.rd != nil {
		v, err := s.rd.read(idx)
		if err != nil {
			return err
		}
		b.Labels[i] = float32(v.Label)
		if v.Encoded && s.reshape {
			return s.placeDecoded(b, i, idx, v.Data)
		}
		if v.Encoded {
			hOff, wOff, mirror := s.draw(s.t)
			// The record's bytes live only until the cursor moves.
			s.jobs[i] = decodeJob{idx: idx, hOff: hOff, wOff: wOff, mirror: mirror, enc: append(s.jobs[i].enc[:0], v.Data...)}
			return nil
		}
		t, err := s.shaped(b, i, idx, int(v.Channels), int(v.Height), int(v.Width))
		if err != nil {
			return err
		}
		hOff, wOff, mirror := s.draw(t)
		per := t.c * t.oh * t.ow
		if len(v.Floats) > 0 {
			t.applyFloat(b.Data[i*per:(i+1)*per], v.Floats, hOff, wOff, mirror)
		} else {
			t.apply(b.Data[i*per:(i+1)*per], v.Data, hOff, wOff, mirror)
		}
		return nil
	}
	b.Labels[i] = float32(s.ds.Labels[idx])
	if s.ds.Encoded != nil && s.reshape {
		// An image list's images, each of its own size (ImageData).
		return s.placeDecoded(b, i, idx, s.ds.Encoded[idx])
	}
	hOff, wOff, mirror := s.draw(s.t)
	per := s.ds.C * s.t.oh * s.t.ow
	for c, col := range s.ds.Extra {
		sz := col.ItemSize()
		copy(b.Extra[c][i*sz:(i+1)*sz], col.Values[idx*sz:(idx+1)*sz])
	}
	switch {
	case s.ds.Floats != nil:
		sz := s.ds.ImageSize()
		s.t.applyFloat(b.Data[i*per:(i+1)*per], s.ds.Floats[idx*sz:(idx+1)*sz], hOff, wOff, mirror)
	case s.scratch != nil:
		s.jobs[i] = decodeJob{idx: idx, hOff: hOff, wOff: wOff, mirror: mirror}
	default:
		s.t.apply(b.Data[i*per:(i+1)*per], s.ds.Image(idx), hOff, wOff, mirror)
	}
	return nil
}

// placeDecoded places encoded image idx (enc) at position i of b with
// Reshape: each image may have its own size, so it is decoded here, for
// its shape (shaped), before its crop is drawn.
func (s *sampler) placeDecoded(b *Batch, i, idx int, enc []byte) error {
	dec := s.ds.Decoding
	pix, c, h, w, err := DecodeImage(enc, dec.Channels, dec.Height, dec.Width)
	if err != nil {
		return fmt.Errorf("%s: %s: %v", s.ds.Name, s.ds.ItemName(idx), err)
	}
	t, err := s.shaped(b, i, idx, c, h, w)
	if err != nil {
		return err
	}
	hOff, wOff, mirror := s.draw(t)
	per := t.c * t.oh * t.ow
	t.apply(b.Data[i*per:(i+1)*per], pix, hOff, wOff, mirror)
	return nil
}

// errAt names image idx (its database record and key, or list line) in
// err.
func (s *sampler) errAt(idx int, err error) error {
	if s.rd != nil {
		return s.rd.st.errAt(idx, s.rd.st.key(idx), err)
	}
	return fmt.Errorf("%s: %s: %w", s.ds.Name, s.ds.ItemName(idx), err)
}

// maxShapes bounds the transformers a sampler keeps for record shapes
// other than the first record's; past it they are compiled afresh.
const maxShapes = 256

// shaped returns the transformer for streamed record idx, of shape
// c×h×w (an encoded one's decoded), compiled for its shape when that is
// not the first record's. With Reshape it
// shapes b as Caffe's DataLayer does, by the batch's first record (its
// transformed shape), the buffer grown if it must be, and a later record
// of the batch must transform to that shape too (the same channels, and
// the same height and width, or a crop): otherwise, as a CHECK of Caffe's
// DataTransformer, an error naming it. So at batch size 1 every record
// may have its own shape. Without Reshape every record must transform to
// the first record's shape.
func (s *sampler) shaped(b *Batch, i, idx, c, h, w int) (*transformer, error) {
	t := s.t
	if c != t.c || h != t.h || w != t.w {
		key := [3]int{c, h, w}
		if t = s.shapes[key]; t == nil {
			var err error
			if t, err = s.t.reshaped(c, h, w); err != nil {
				return nil, s.errAt(idx, err)
			}
			if s.shapes == nil || len(s.shapes) >= maxShapes {
				s.shapes = map[[3]int]*transformer{}
			}
			s.shapes[key] = t
		}
	}
	if i == 0 && s.reshape {
		s.first = [3]int{c, h, w}
		if want := [4]int{s.batch, t.c, t.oh, t.ow}; b.Shape != want {
			n := s.batch * t.c * t.oh * t.ow
			if cap(b.Data) < n {
				b.Data = make([]float32, n)
			}
			b.Data, b.Shape = b.Data[:n], want
		}
		return t, nil
	}
	if t.c != b.Shape[1] || t.oh != b.Shape[2] || t.ow != b.Shape[3] {
		f, whose := s.first, "its batch's first record's"
		if !s.reshape {
			f, whose = [3]int{s.ds.C, s.ds.H, s.ds.W}, "the first record's"
		}
		return nil, s.errAt(idx, fmt.Errorf("the Datum's shape %dx%dx%d (CxHxW) differs from %s %dx%dx%d: Caffe's Data layer shapes each batch by its first record, so records of differing shapes need batch_size 1 (or a crop_size that fits every record)", c, h, w, whose, f[0], f[1], f[2]))
	}
	return t, nil
}

// decodePending decodes the images place queued, if any (a reshaping
// stream's encoded images were decoded as they were placed).
func (s *sampler) decodePending(data []float32, per int) error {
	if s.scratch != nil && !s.reshape {
		return s.decodeBatch(data, per)
	}
	return nil
}

// decodeJob is one encoded image of a batch and how to place it.
type decodeJob struct {
	idx, hOff, wOff int
	mirror          bool
	enc             []byte // a streamed image's bytes; nil: in the Dataset
}

// decodeBatch decodes and transforms the batch's encoded images (s.jobs)
// into data, on len(s.scratch) goroutines. The crops and flips were drawn
// in order beforehand, so the result does not depend on the goroutines'
// timing; of several bad images, the first in the batch is reported.
func (s *sampler) decodeBatch(data []float32, per int) error {
	work := func(scratch []uint8, i int) {
		j := s.jobs[i]
		if j.enc != nil {
			s.errs[i] = s.ds.decodeBytes(j.enc, s.ds.Stream.name(j.idx), scratch)
		} else {
			s.errs[i] = s.ds.decodeInto(j.idx, scratch)
		}
		if s.errs[i] == nil {
			s.t.apply(data[i*per:(i+1)*per], scratch, j.hOff, j.wOff, j.mirror)
		}
	}
	if len(s.scratch) == 1 {
		for i := range s.jobs {
			work(s.scratch[0], i)
			if s.errs[i] != nil {
				return s.errs[i]
			}
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, sc := range s.scratch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(s.jobs) {
					return
				}
				work(sc, i)
			}
		}()
	}
	wg.Wait()
	for _, err := range s.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// isIdentity reports whether t changes nothing.
func isIdentity(t TransformConfig) bool {
	return (t.Scale == 0 || t.Scale == 1) && len(t.MeanValue) == 0 && t.MeanFile == "" && t.CropSize == 0 && !t.Mirror
}
