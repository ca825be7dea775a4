// Package compress is the gradient compressor layer of the synchronous
// schemes (issue 26): one Reducer per worker sits where a worker's
// gradients go into the allreduce and come back as the sum, whatever the
// scheme (sync-ring, sync-tree, overlap, local-sgd averaging gradients)
// and whatever the transport (inproc, tcp, mpi). It replaces one
// allreduce of a range of float32 gradients by the collectives of its
// compressor on a smaller payload and leaves in the range the sum of what
// every worker contributed; the scheme's Scale then makes it the mean, as
// before. sync-ps's workers push their gradients to a server in one
// message instead: Push encodes it, and the server's Decoder decodes and
// sums (push.go).
//
// The compressors, all with error feedback (each worker keeps, per block,
// the residual its compressor dropped and adds it to the next step's
// gradient, so that over a run nothing is lost, only delayed):
//
//   - bf16: each value rounded to bfloat16 (round to nearest even). The
//     sums still travel as float32, so the wire carries as many bytes as
//     without compression: it measures what bf16's precision does to
//     training, not its traffic.
//   - powersgd:R: Vogels et al. 2019 (PyTorch's powerSGD_hook): a block of
//     n×m values (its first axis against the rest) is M; with Q (m×R,
//     warm-started from the last step's) P = M Q is summed over the
//     workers, orthonormalised by Gram-Schmidt, Q = Mᵀ P summed, and the
//     block's sum is P Qᵀ. Each worker's contribution is P (Mᵀ P)ᵀ, and
//     its residual M − P Pᵀ M (the paper's local error; PyTorch's hook
//     keeps M minus the mean instead). Blocks too small to profit (vectors,
//     and matrices where R·(n+m) ≥ n·m) are summed uncompressed.
//   - sign: EF-signSGD (Karimireddy et al. 2019): each block travels as
//     its values' signs, 32 to a float32 word, and one scale, the mean
//     magnitude; the workers exchange them by an allgather and each adds
//     scale·sign up in rank order.
//   - topk:F: each block keeps its ⌈F·n⌉ entries of largest magnitude;
//     the workers exchange (index, value) pairs by an allgather and each
//     adds them up in rank order. Blocks where the pairs would outweigh
//     the block are summed uncompressed.
//
// fp16 is not here: it is the tcp transport's wire encoding
// (comm/transport/tcp), which rounds every message, partial sums included.
//
// The first Warmup iterations of a run are plain allreduces (PyTorch's
// start_powerSGD_iter).
package compress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"dsgd/engine/tensor"
)

// Kind is a compressor.
type Kind uint8

const (
	// None exchanges float32 gradients as they are.
	None Kind = iota
	// FP16 is the tcp transport's half-precision wire (not a Reducer).
	FP16
	// BF16 rounds the gradients to bfloat16 with error feedback.
	BF16
	// PowerSGD is Vogels et al.'s rank-R power iteration.
	PowerSGD
	// TopK keeps the largest-magnitude fraction of each block.
	TopK
	// Sign sends each value's sign and one scale per block (EF-signSGD).
	Sign
)

// String names the kind as --compress does (without its argument).
func (k Kind) String() string {
	return [...]string{"none", "fp16", "bf16", "powersgd", "topk", "sign"}[k]
}

// Spec is a parsed --compress value.
type Spec struct {
	Kind Kind
	// Rank is PowerSGD's R (at least 1).
	Rank int
	// Fraction is top-k's F, in (0, 1].
	Fraction float64
}

// Parse reads a --compress value: none (or ""), fp16, bf16, powersgd:R
// (R ≥ 1), topk:F (0 < F ≤ 1) or sign.
func Parse(s string) (Spec, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "", "none", "fp16", "bf16", "sign":
		if hasArg {
			return Spec{}, fmt.Errorf("%q takes no argument", s)
		}
		switch name {
		case "fp16":
			return Spec{Kind: FP16}, nil
		case "bf16":
			return Spec{Kind: BF16}, nil
		case "sign":
			return Spec{Kind: Sign}, nil
		}
		return Spec{}, nil
	case "powersgd":
		r, err := strconv.Atoi(arg)
		if !hasArg || err != nil || r < 1 {
			return Spec{}, fmt.Errorf("%q: powersgd needs a rank R ≥ 1, as powersgd:2", s)
		}
		return Spec{Kind: PowerSGD, Rank: r}, nil
	case "topk":
		f, err := strconv.ParseFloat(arg, 64)
		if !hasArg || err != nil || !(f > 0 && f <= 1) {
			return Spec{}, fmt.Errorf("%q: topk needs a fraction F in (0, 1], as topk:0.01", s)
		}
		return Spec{Kind: TopK, Fraction: f}, nil
	}
	return Spec{}, fmt.Errorf("unknown compression %q (want none, fp16, bf16, powersgd:R, topk:F or sign)", s)
}

// String returns the value Parse reads.
func (s Spec) String() string {
	switch s.Kind {
	case FP16:
		return "fp16"
	case BF16:
		return "bf16"
	case PowerSGD:
		return fmt.Sprintf("powersgd:%d", s.Rank)
	case TopK:
		return "topk:" + strconv.FormatFloat(s.Fraction, 'g', -1, 64)
	case Sign:
		return "sign"
	}
	return "none"
}

// Gradient reports whether the compressor runs in this layer, over the
// gradients before the collectives (bf16, powersgd, topk, sign), rather than on
// the wire (fp16) or not at all.
func (s Spec) Gradient() bool { return s.Kind >= BF16 }

// Block is one parameter block of the gradient buffer: Rows×Cols values
// from Off, Rows its first axis (a vector has Rows 1).
type Block struct {
	Off, Rows, Cols int
}

// Len is the block's number of values.
func (b Block) Len() int { return b.Rows * b.Cols }

// Collective is what a Reducer needs of the rank's collectives.
type Collective interface {
	// Allreduce leaves in buf the sum over every worker.
	Allreduce(ctx context.Context, buf []float32) error
	// Allgather copies rank r's r-th equal part of buf into every
	// worker's buf (len(buf) is a multiple of the group's size).
	Allgather(ctx context.Context, buf []float32) error
	// Sent is the number of bytes this rank has sent so far (the
	// transport's count), or -1 when it cannot tell.
	Sent() int64
}

// Stats is what a Reducer sent.
type Stats struct {
	// Compressed and Plain count the reductions (calls of Reduce, or
	// of Push) of compressed and of warm-up steps.
	Compressed, Plain int
	// Floats and PlainFloats are the floats handed to the collectives in
	// those reductions: per worker, what its allreduces and its
	// allgather's own part hold.
	Floats, PlainFloats int64
	// Bytes and PlainBytes are the bytes the transport sent for them
	// (-1 when it cannot tell).
	Bytes, PlainBytes int64
}

// Reducer is one worker's compressor: its residuals and PowerSGD's Q
// matrices, per block. Reduce is called from one goroutine at a time.
type Reducer struct {
	spec   Spec
	blocks []Block
	size   int
	rank   int
	warmup int
	state  []blockState
	stats  Stats

	send, recv []float32 // scratch handed to the collectives
}

type blockState struct {
	steps    int       // reductions of this block so far (warm-up ones included)
	residual []float32 // what the compressor dropped, to add next step
	q        []float32 // PowerSGD's Q (Cols×R, row-major), warm start
	p        []float32 // PowerSGD's P (Rows×R)
	qw       []float32 // this worker's Mᵀ P
	idx      []int     // top-k's chosen indices
	mags     []uint32  // top-k's scratch
}

// New returns a worker's Reducer for spec (a Gradient one) over blocks
// (sorted by offset, disjoint) among size workers, this one rank. The
// first warmup reductions of each block are plain; start counts those a
// resumed run already did.
func New(spec Spec, blocks []Block, rank, size, warmup, start int) (*Reducer, error) {
	if !spec.Gradient() {
		return nil, fmt.Errorf("compress: %s is not a gradient compressor", spec)
	}
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("compress: rank %d of %d", rank, size)
	}
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b Block) int { return a.Off - b.Off })
	r := &Reducer{spec: spec, blocks: bs, size: size, rank: rank, warmup: warmup, state: make([]blockState, len(bs))}
	for i := range r.state {
		r.state[i].steps = start
	}
	return r, nil
}

// Stats reports what the Reducer sent so far.
func (r *Reducer) Stats() Stats { return r.stats }

// Compressible reports whether a block is compressed (after the warm-up)
// rather than summed as it is.
func (s Spec) Compressible(b Block) bool {
	switch s.Kind {
	case BF16:
		return b.Len() > 0
	case PowerSGD:
		return b.Rows > 1 && b.Cols > 1 && s.Rank*(b.Rows+b.Cols) < b.Len()
	case TopK:
		return 2*topK(s.Fraction, b.Len()) < b.Len()
	case Sign:
		return signWords(b.Len()) < b.Len()
	}
	return false
}

// Floats is how many floats a worker hands to the collectives for one
// compressed reduction of blocks (an allgather's own part counted once),
// against the sum of their lengths uncompressed.
func (s Spec) Floats(blocks []Block) (compressed, plain int) {
	for _, b := range blocks {
		plain += b.Len()
		switch {
		case !s.Compressible(b):
			compressed += b.Len()
		case s.Kind == PowerSGD:
			compressed += s.Rank * (b.Rows + b.Cols)
		case s.Kind == TopK:
			compressed += 2 * topK(s.Fraction, b.Len())
		case s.Kind == Sign:
			compressed += signWords(b.Len())
		default:
			compressed += b.Len()
		}
	}
	return compressed, plain
}

func topK(f float64, n int) int { return max(1, int(math.Ceil(f*float64(n)))) }

// segment is a piece of the reduced range: a whole block (i ≥ 0) or a
// stretch no block covers whole (i < 0), both summed as they are unless
// the block is compressed.
type segment struct {
	i      int // block index, or -1
	lo, hi int // in the range's coordinates
}

// Reduce leaves in buf (the gradients at offset lo of the rank's buffer)
// their sum over the workers, compressed after the warm-up.
func (r *Reducer) Reduce(ctx context.Context, lo int, buf []float32, c Collective) error {
	segs := r.segments(lo, len(buf))
	warm := r.warm(segs)
	before := c.Sent()
	var err error
	if warm {
		err = c.Allreduce(ctx, buf)
		r.stats.Plain++
		r.stats.PlainFloats += int64(len(buf))
	} else {
		r.stats.Compressed++
		switch r.spec.Kind {
		case BF16:
			err = r.bf16(ctx, buf, segs, c)
		case PowerSGD:
			err = r.powerSGD(ctx, buf, segs, c)
		case TopK:
			err = r.topk(ctx, buf, segs, c)
		case Sign:
			err = r.sign(ctx, buf, segs, c)
		default:
			err = errors.New("compress: no compressor")
		}
	}
	if err != nil {
		return err
	}
	r.finish(segs, warm, before, c.Sent())
	return nil
}

// finish closes a reduction of segs: each block's step count moves on,
// and the bytes sent since before are booked to the warm-up or the
// compressed steps.
func (r *Reducer) finish(segs []segment, warm bool, before, sent int64) {
	for _, s := range segs {
		if s.i >= 0 {
			r.state[s.i].steps++
		}
	}
	r.account(warm, before, sent)
}

// segments cuts [lo, lo+n) into whole blocks and the stretches between.
func (r *Reducer) segments(lo, n int) []segment {
	hi := lo + n
	var out []segment
	at := lo
	i, _ := slices.BinarySearchFunc(r.blocks, lo, func(b Block, off int) int { return b.Off - off })
	for ; i < len(r.blocks); i++ {
		b := r.blocks[i]
		if b.Off+b.Len() > hi {
			break
		}
		if b.Off > at {
			out = append(out, segment{-1, at - lo, b.Off - lo})
		}
		if b.Len() > 0 {
			out = append(out, segment{i, b.Off - lo, b.Off + b.Len() - lo})
		}
		at = b.Off + b.Len()
	}
	if at < hi {
		out = append(out, segment{-1, at - lo, hi - lo})
	}
	return out
}

// grow returns s resized to n floats (contents undefined).
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// addResidual adds block i's residual into m and returns its residual
// slice (allocated on first use).
func (r *Reducer) addResidual(i int, m []float32) []float32 {
	st := &r.state[i]
	if st.residual == nil {
		st.residual = make([]float32, len(m))
	}
	for j, e := range st.residual {
		m[j] += e
	}
	return st.residual
}

// compressed reports whether segment s is a compressed block.
func (r *Reducer) compressed(s segment) bool {
	return s.i >= 0 && r.spec.Compressible(r.blocks[s.i])
}

// bf16 rounds every compressible value (with its residual) to bfloat16
// and allreduces the range.
func (r *Reducer) bf16(ctx context.Context, buf []float32, segs []segment, c Collective) error {
	for _, s := range segs {
		if !r.compressed(s) {
			continue
		}
		m := buf[s.lo:s.hi]
		e := r.addResidual(s.i, m)
		for j, v := range m {
			q := BF16Round(v)
			e[j] = v - q
			m[j] = q
		}
	}
	r.stats.Floats += int64(len(buf))
	return c.Allreduce(ctx, buf)
}

// BF16Round rounds x to the nearest bfloat16 (ties to even), returned as
// a float32; NaN stays NaN.
func BF16Round(x float32) float32 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return math.Float32frombits(b | 0x00400000) // quiet NaN
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// powerSGD runs one PowerSGD step over the range: allreduce of the P
// matrices together with the uncompressed values, then of the Q matrices.
func (r *Reducer) powerSGD(ctx context.Context, buf []float32, segs []segment, c Collective) error {
	R := r.spec.Rank
	n := 0
	for _, s := range segs {
		if r.compressed(s) {
			n += r.blocks[s.i].Rows * R
		} else {
			n += s.hi - s.lo
		}
	}
	send := grow(r.send, n)
	r.send = send
	at := 0
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if !r.compressed(s) {
			at += copy(send[at:], m)
			continue
		}
		b, st := r.blocks[s.i], &r.state[s.i]
		r.addResidual(s.i, m)
		if st.q == nil || allZero(st.q) {
			st.q = initQ(st.q, b.Cols*R, uint64(s.i))
		}
		p := send[at : at+b.Rows*R]
		// P = M Q
		tensor.Gemm(false, false, b.Rows, R, b.Cols, 1, m, b.Cols, st.q, R, 0, p, R)
		at += len(p)
	}
	r.stats.Floats += int64(n)
	if err := c.Allreduce(ctx, send); err != nil {
		return err
	}
	// Orthonormalise each P, compute this worker's Q = Mᵀ P and residual.
	nq := 0
	at = 0
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if !r.compressed(s) {
			copy(m, send[at:at+len(m)])
			at += len(m)
			continue
		}
		b, st := r.blocks[s.i], &r.state[s.i]
		st.p = append(st.p[:0], send[at:at+b.Rows*R]...)
		at += b.Rows * R
		GramSchmidt(st.p, b.Rows, R)
		st.qw = grow(st.qw, b.Cols*R)
		// Qw = Mᵀ P; residual = M − P Qwᵀ.
		tensor.Gemm(true, false, b.Cols, R, b.Rows, 1, m, b.Cols, st.p, R, 0, st.qw, R)
		copy(st.residual, m)
		tensor.Gemm(false, true, b.Rows, b.Cols, R, -1, st.p, R, st.qw, R, 1, st.residual, b.Cols)
		nq += b.Cols * R
	}
	if nq == 0 {
		return nil
	}
	qs := grow(r.recv, nq)
	r.recv = qs
	at = 0
	for _, s := range segs {
		if r.compressed(s) {
			at += copy(qs[at:], r.state[s.i].qw)
		}
	}
	r.stats.Floats += int64(nq)
	if err := c.Allreduce(ctx, qs); err != nil {
		return err
	}
	at = 0
	for _, s := range segs {
		if !r.compressed(s) {
			continue
		}
		b, st := r.blocks[s.i], &r.state[s.i]
		st.q = append(st.q[:0], qs[at:at+b.Cols*R]...)
		at += b.Cols * R
		// The sum: P Qᵀ.
		tensor.Gemm(false, true, b.Rows, b.Cols, R, 1, st.p, R, st.q, R, 0, buf[s.lo:s.hi], b.Cols)
	}
	return nil
}

func allZero(s []float32) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}

// initQ fills q (n floats) with standard normal values from a source
// seeded by the block, the same on every worker.
func initQ(q []float32, n int, seed uint64) []float32 {
	q = grow(q, n)
	rng := rand.New(rand.NewPCG(seed, 0x5ee4d0c0ffee))
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	return q
}

// GramSchmidt orthonormalises the r columns of p (n×r, row-major) in
// order (modified Gram-Schmidt); a column that vanishes stays zero.
func GramSchmidt(p []float32, n, r int) {
	for k := 0; k < r; k++ {
		for l := 0; l < k; l++ {
			var d float64
			for i := 0; i < n; i++ {
				d += float64(p[i*r+k]) * float64(p[i*r+l])
			}
			for i := 0; i < n; i++ {
				p[i*r+k] -= float32(d) * p[i*r+l]
			}
		}
		var s float64
		for i := 0; i < n; i++ {
			s += float64(p[i*r+k]) * float64(p[i*r+k])
		}
		if s == 0 {
			continue
		}
		inv := float32(1 / math.Sqrt(s))
		for i := 0; i < n; i++ {
			p[i*r+k] *= inv
		}
	}
}

// topk exchanges each compressible block's largest entries as (index,
// value) pairs by one allgather, the other values by one allreduce.
func (r *Reducer) topk(ctx context.Context, buf []float32, segs []segment, c Collective) error {
	pairs, plain := 0, 0
	for _, s := range segs {
		if r.compressed(s) {
			pairs += topK(r.spec.Fraction, s.hi-s.lo)
		} else {
			plain += s.hi - s.lo
		}
	}
	all := grow(r.send, r.size*2*pairs+plain)
	r.send = all
	mine := all[r.rank*2*pairs : (r.rank+1)*2*pairs]
	dense := all[r.size*2*pairs:]
	at, pat := 0, 0
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if !r.compressed(s) {
			pat += copy(dense[pat:], m)
			continue
		}
		st := &r.state[s.i]
		e := r.addResidual(s.i, m)
		k := topK(r.spec.Fraction, len(m))
		st.idx, st.mags = largest(st.idx, st.mags, m, k)
		copy(e, m)
		for _, j := range st.idx {
			mine[at] = math.Float32frombits(uint32(j))
			mine[at+1] = m[j]
			e[j] = 0
			at += 2
		}
	}
	if pairs > 0 {
		r.stats.Floats += int64(2 * pairs)
		if err := c.Allgather(ctx, all[:r.size*2*pairs]); err != nil {
			return err
		}
	}
	if plain > 0 {
		r.stats.Floats += int64(plain)
		if err := c.Allreduce(ctx, dense); err != nil {
			return err
		}
	}
	pat = 0
	base := 0 // this segment's pairs' offset within a rank's part
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if !r.compressed(s) {
			pat += copy(m, dense[pat:pat+len(m)])
			continue
		}
		k := topK(r.spec.Fraction, len(m))
		clear(m)
		for w := 0; w < r.size; w++ {
			part := all[w*2*pairs+base : w*2*pairs+base+2*k]
			for x := 0; x < len(part); x += 2 {
				j := int(math.Float32bits(part[x]))
				if j >= len(m) {
					return fmt.Errorf("compress: top-k index %d from worker %d outside a block of %d", j, w, len(m))
				}
				m[j] += part[x+1]
			}
		}
		base += 2 * k
	}
	return nil
}

// Largest returns in idx (reused) the indices of the k entries of v of
// largest magnitude, in increasing index order (ties broken towards the
// lower index).
func Largest(idx []int, v []float32, k int) []int {
	idx, _ = largest(idx, nil, v, k)
	return idx
}

// largest is Largest with mags (reused) as scratch: it finds the k-th
// largest magnitude by quickselect over the magnitudes' bits (ordered as
// the magnitudes are), then takes every entry above it and the first
// entries equal to it, in one pass in index order.
func largest(idx []int, mags []uint32, v []float32, k int) ([]int, []uint32) {
	k = min(k, len(v))
	idx = idx[:0]
	if k <= 0 {
		return idx, mags
	}
	if cap(mags) < len(v) {
		mags = make([]uint32, len(v))
	}
	mags = mags[:len(v)]
	for i, x := range v {
		mags[i] = math.Float32bits(x) &^ (1 << 31)
	}
	thr := kthSmallest(mags, len(v)-k)
	above := 0
	for _, m := range mags {
		// kthSmallest reordered mags: counting needs no order.
		if m > thr {
			above++
		}
	}
	ties := k - above
	for i, x := range v {
		m := math.Float32bits(x) &^ (1 << 31)
		switch {
		case m > thr:
			idx = append(idx, i)
		case m == thr && ties > 0:
			idx = append(idx, i)
			ties--
		}
	}
	return idx, mags
}

// kthSmallest reorders a and returns the value that would be at index p
// were a sorted (Hoare's selection, median-of-three pivots).
func kthSmallest(a []uint32, p int) uint32 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		x, y, z := a[lo], a[lo+(hi-lo)/2], a[hi]
		pivot := max(min(x, y), min(max(x, y), z))
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case p <= j:
			hi = j
		case p >= i:
			lo = i
		default:
			return a[p]
		}
	}
	return a[p]
}

// signWords is how many floats a block of n values travels as under
// sign: its scale and its signs, 32 to a word.
func signWords(n int) int { return 1 + (n+31)/32 }

// sign exchanges each compressible block as a scale and packed signs by
// one allgather, the other values by one allreduce.
func (r *Reducer) sign(ctx context.Context, buf []float32, segs []segment, c Collective) error {
	words, plain := 0, 0
	for _, s := range segs {
		if r.compressed(s) {
			words += signWords(s.hi - s.lo)
		} else {
			plain += s.hi - s.lo
		}
	}
	all := grow(r.send, r.size*words+plain)
	r.send = all
	mine := all[r.rank*words : (r.rank+1)*words]
	dense := all[r.size*words:]
	at, pat := 0, 0
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if !r.compressed(s) {
			pat += copy(dense[pat:], m)
			continue
		}
		e := r.addResidual(s.i, m)
		encodeSign(m, e, mine[at:at+signWords(len(m))])
		at += signWords(len(m))
	}
	if words > 0 {
		r.stats.Floats += int64(words)
		if err := c.Allgather(ctx, all[:r.size*words]); err != nil {
			return err
		}
	}
	if plain > 0 {
		r.stats.Floats += int64(plain)
		if err := c.Allreduce(ctx, dense); err != nil {
			return err
		}
	}
	pat, base := 0, 0
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if !r.compressed(s) {
			pat += copy(m, dense[pat:pat+len(m)])
			continue
		}
		n := signWords(len(m))
		clear(m)
		for w := 0; w < r.size; w++ {
			addSigns(m, all[w*words+base:w*words+base+n])
		}
		base += n
	}
	return nil
}

// addSigns adds to m the scale·sign that in (a scale, then the signs 32
// to a word, a set bit negative) carries.
func addSigns(m, in []float32) {
	scale := in[0]
	for w, word := range in[1:] {
		bits := math.Float32bits(word)
		block := m[w*32 : min(w*32+32, len(m))]
		for j := range block {
			if bits&1 != 0 {
				block[j] -= scale
			} else {
				block[j] += scale
			}
			bits >>= 1
		}
	}
}

// encodeSign writes m as EF-signSGD sends it into out (signWords(len(m))
// words): the mean magnitude, then the signs packed 32 to a float32
// word; e gets the error, m minus what out stands for.
func encodeSign(m, e, out []float32) {
	var l1 float64
	for _, v := range m {
		l1 += math.Abs(float64(v))
	}
	scale := float32(l1 / float64(len(m)))
	out[0] = scale
	for w := range out[1:] {
		var word uint32
		for b := 0; b < 32 && w*32+b < len(m); b++ {
			j := w*32 + b
			if m[j] < 0 {
				word |= 1 << b
				e[j] = m[j] + scale
			} else {
				e[j] = m[j] - scale
			}
		}
		out[1+w] = math.Float32frombits(word)
	}
}
