package scheme

import (
	"fmt"
	"strings"
)

// StreamingMix is streaming-diloco's default mixing factor (Config.Mix;
// Douillard et al. 2025, §2.2: α = 0.5).
const StreamingMix = 0.5

// tagStream is the first tag of streaming-diloco's quantised ring; its
// steps add their index.
const tagStream uint32 = 3 << 20

// xchBase is the first Done ID of streaming-diloco's exchange program,
// so that its answers are told from the iteration loop's (which count up
// from 1).
const xchBase = 1 << 30

// Fragment is one of streaming-diloco's fragments: a contiguous run of
// the net's parameter blocks, in net order.
type Fragment struct {
	// Lo and Hi bound the fragment's weights in the flat buffers.
	Lo, Hi int
	// First and Last are the indices of its first and last blocks in
	// Layout.Blocks.
	First, Last int
	// Offset is its place in the schedule: it synchronises after the
	// iterations it with (it+1) mod H = Offset.
	Offset int
	// Bytes is what one worker sends for one synchronisation of it (the
	// most over the workers).
	Bytes int64
}

// FragmentPlan splits c's parameter blocks into c.Fragments contiguous
// groups in net order (sequential fragments), the largest as small as
// the blocks allow and the rest as even as they can be (balancedCuts),
// and gives each its offset in the H-step cycle, fragment p at
// (p+1)·H/P mod H, and its bytes. The fragments tile [0, N), so a
// weight outside every block (none, in the nets dsgd builds) still
// synchronises. For diloco it is one fragment, the whole net, at offset
// 0.
func (c Config) FragmentPlan() []Fragment { return c.fragmentPlan(c.info().Streaming) }

// fragmentPlan is FragmentPlan for a scheme that streams its fragments
// or (streaming false) synchronises the whole net at once.
func (c Config) fragmentPlan(streaming bool) []Fragment {
	var blocks []int // indices of the non-empty blocks
	for i, b := range c.Layout.Blocks {
		if b.Hi > b.Lo {
			blocks = append(blocks, i)
		}
	}
	p, bits := max(c.Fragments, 1), c.bits(streaming)
	if !streaming {
		p = 1
	}
	if len(blocks) == 0 {
		return []Fragment{{Lo: 0, Hi: c.Layout.N, First: 0, Last: -1, Bytes: ringBytes(c.Workers, c.Layout.N, bits)}}
	}
	p = min(p, len(blocks))
	prefix := make([]int, len(blocks)+1) // sizes of blocks[:j]
	for j, i := range blocks {
		b := c.Layout.Blocks[i]
		prefix[j+1] = prefix[j] + b.Hi - b.Lo
	}
	cuts := balancedCuts(prefix, p)
	h := max(c.Interval, 1)
	out := make([]Fragment, p)
	for k := range out {
		first, last := blocks[cuts[k]], blocks[cuts[k+1]-1]
		f := Fragment{Lo: 0, Hi: c.Layout.Blocks[last].Hi, First: first, Last: last, Offset: (k + 1) * h / p % h}
		if k > 0 {
			f.Lo = out[k-1].Hi
		}
		if k == p-1 {
			f.Hi = c.Layout.N
		}
		f.Bytes = ringBytes(c.Workers, f.Hi-f.Lo, bits)
		out[k] = f
	}
	return out
}

// balancedCuts splits the blocks whose sizes' prefix sums are prefix
// into p non-empty contiguous runs: cuts[k] is the first block of run k,
// cuts[p] the block count. The largest run is as small as it can be (it
// sets the peak bytes per step), and among such splits the sum of the
// squared sizes is the least (the others as even as they can be).
func balancedCuts(prefix []int, p int) []int {
	nb := len(prefix) - 1
	type cost struct{ most, sq int64 }
	better := func(a, b cost) bool { return a.most < b.most || (a.most == b.most && a.sq < b.sq) }
	// best[k][j]: blocks [0, j) in k runs; from[k][j]: where the last
	// run starts.
	best := make([][]cost, p+1)
	from := make([][]int, p+1)
	for k := range best {
		best[k] = make([]cost, nb+1)
		from[k] = make([]int, nb+1)
	}
	for j := 1; j <= nb; j++ {
		sz := int64(prefix[j])
		best[1][j] = cost{sz, sz * sz}
	}
	for k := 2; k <= p; k++ {
		for j := k; j <= nb; j++ {
			first := true
			for i := k - 1; i < j; i++ {
				sz := int64(prefix[j] - prefix[i])
				c := cost{max(best[k-1][i].most, sz), best[k-1][i].sq + sz*sz}
				if first || better(c, best[k][j]) {
					best[k][j], from[k][j], first = c, i, false
				}
			}
		}
	}
	cuts := make([]int, p+1)
	cuts[p] = nb
	for k, j := p, nb; k > 1; k-- {
		j = from[k][j]
		cuts[k-1] = j
	}
	return cuts
}

// bits is OuterBits for a scheme that streams its fragments, 32 when
// unset or (streaming false) for any other.
func (c Config) bits(streaming bool) int {
	if c.OuterBits == 0 || !streaming {
		return 32
	}
	return c.OuterBits
}

// ringBytes is what one of n workers sends (the most over the workers)
// to average l weights at bits per weight: a ring allreduce of float32
// (2(n−1)/n of the values, as collective's ring), or the quantised
// ring's messages.
func ringBytes(n, l, bits int) int64 {
	if n < 2 {
		return 0
	}
	if bits == 32 {
		return int64(2*(n-1)) * int64(l) * 4 / int64(n)
	}
	var most int64
	for r := range n {
		var words int
		for s := 0; s < n-1; s++ {
			k := mod(r-s, n) // reduce-scatter
			words += QuantWords(chunkLen(l, n, k), bits)
			k = mod(r+1-s, n) // allgather
			words += QuantWords(chunkLen(l, n, k), bits)
		}
		most = max(most, int64(words)*4)
	}
	return most
}

// PeakSyncBytes is, for an Outer scheme, the most bytes one worker sends
// for the synchronisations that start at one step: diloco's whole model,
// streaming-diloco's largest fragment.
func (c Config) PeakSyncBytes() int64 {
	var most int64
	for _, f := range c.FragmentPlan() {
		most = max(most, f.Bytes)
	}
	return most
}

// StreamingSummary is one line for the run header of an Outer scheme:
// for streaming-diloco its fragments, offsets, overlap, precision and
// peak bytes per step; for diloco its peak bytes per step.
func (c Config) StreamingSummary() string {
	full := ringBytes(c.Workers, c.Layout.N, 32)
	if !c.info().Streaming {
		return fmt.Sprintf("every weight in one outer step every H=%d iterations, peak %d bytes per step per worker (diloco: %d)", max(c.Interval, 1), c.PeakSyncBytes(), full)
	}
	plan := c.FragmentPlan()
	var frags, offs []string
	for _, f := range plan {
		frags = append(frags, fmt.Sprintf("%d", f.Hi-f.Lo))
		offs = append(offs, fmt.Sprintf("%d", f.Offset))
	}
	mix := "replace"
	if c.Overlap > 0 {
		mix = fmt.Sprintf("mix %g", c.Mix)
	}
	noun := "fragments"
	if len(plan) == 1 {
		noun = "fragment"
	}
	return fmt.Sprintf("%d %s (weights %s), offsets %s mod H=%d, overlap %d (%s), %d-bit pseudo-gradients, peak %d bytes per step per worker (diloco: %d)",
		len(plan), noun, strings.Join(frags, "+"), strings.Join(offs, ","), max(c.Interval, 1), c.Overlap, mix, c.bits(true),
		c.PeakSyncBytes(), full)
}

func mod(a, n int) int { return ((a % n) + n) % n }

// chunkLen is the length of chunk k of l values split into n.
func chunkLen(l, n, k int) int { return (k+1)*l/n - k*l/n }

// checkStreaming rejects settings streaming-diloco cannot run with,
// naming the flag.
func checkStreaming(c Config) error {
	h := max(c.Interval, 1)
	p := max(c.Fragments, 1)
	nb := 0
	for _, b := range c.Layout.Blocks {
		if b.Hi > b.Lo {
			nb++
		}
	}
	nb = max(nb, 1)
	switch {
	case c.Fragments < 0:
		return fmt.Errorf("scheme: Config.Fragments must be at least 1, got %d", c.Fragments)
	case p > nb:
		return fmt.Errorf("scheme: Config.Fragments %d is more than the net's %d parameter blocks", p, nb)
	case h%p != 0:
		return fmt.Errorf("scheme: Config.Interval %d is not a multiple of Config.Fragments %d: the fragments synchronise every H/P steps", h, p)
	case c.Overlap < 0 || c.Overlap >= h/p:
		return fmt.Errorf("scheme: Config.Overlap %d must be in [0, H/P) = [0, %d) (Config.Interval %d, Config.Fragments %d): one fragment in flight at a time", c.Overlap, h/p, h, p)
	case c.OuterBits != 0 && !validBits(c.OuterBits):
		return fmt.Errorf("scheme: Config.OuterBits %d is not one of %v", c.OuterBits, OuterBitsChoices)
	case c.Mix < 0 || c.Mix > 1:
		return fmt.Errorf("scheme: Config.Mix %g must be in [0, 1]", c.Mix)
	}
	if bits := c.bits(true); bits < 32 && c.Workers > 1 {
		for _, f := range c.fragmentPlan(true) {
			words := 0
			for k := range c.Workers {
				words += QuantWords(chunkLen(f.Hi-f.Lo, c.Workers, k), bits)
			}
			if words > c.Layout.N {
				return fmt.Errorf("scheme: Config.OuterBits %d: %d workers' packed chunks of a %d-weight fragment do not fit the %d-weight buffer", bits, c.Workers, f.Hi-f.Lo, c.Layout.N)
			}
		}
	}
	return nil
}

// streaming is a streaming-diloco worker (Douillard et al. 2025,
// "Streaming DiLoCo with overlapping communication"): DiLoCo whose
// outer step is taken fragment by fragment (FragmentPlan), fragment p
// after the iterations it with (it+1) mod H = (p+1)·H/P mod H, so at
// most one fragment's pseudo-gradient travels at a time.
//
// Each synchronisation of fragment p: Δ_p = θ_p − θ_p,i (θ_p the global
// copy in Aux, as of p's last synchronisation), averaged over the
// workers (an allreduce at 32 bits, else a ring of quantised messages,
// dequantised and summed in float32), and the outer Nesterov step of
// diloco on θ_p and p's momentum (Spare's range of p). The exchange runs
// beside the inner steps (a program of its own); its result lands
// Overlap = τ inner steps after the send, as θ_p,i ← Mix·θ_p,i + (1 −
// Mix)·θ_p when τ > 0, θ_p,i ← θ_p when τ = 0. At the end every fragment
// whose local weights have moved since they last equalled θ_p takes one
// more synchronisation with replacement, so the replicas end equal. With
// P = 1, τ = 0 and 32 bits it is diloco, bit for bit.
type streaming struct {
	main, xch program
	out       []Action
	cfg       Config
	rank      int
	frags     []Fragment
	inflight  int  // the fragment whose exchange runs (−1: none)
	applyAt   int  // the iteration after which it lands
	xbusy     bool // the exchange program has work left
	dirty     []bool
}

func newStreaming(c Config, rank int) Rank {
	w := &streaming{cfg: c, rank: rank, inflight: -1, frags: c.fragmentPlan(true)}
	w.dirty = make([]bool, len(w.frags))
	w.xch.nextID = xchBase
	w.main.iter = c.StartIter
	w.main.first = func() {
		// θ is the weights every worker starts from.
		n := c.Layout.N
		w.main.local(Action{Op: Copy, R: Range{Aux, 0, n}, Src: Range{Params, 0, n}})
		w.main.loop(c.MaxIter, w.iteration, w.end)
	}
	return w
}

func (w *streaming) Step(ev Event) []Action {
	w.out = w.out[:0]
	if ev.Kind == Done && ev.ID > xchBase {
		w.out = append(w.out, w.xch.step(ev)...)
	} else {
		w.out = append(w.out, w.main.Step(ev)...)
	}
	// Each program may release the other (an exchange started, one
	// ended): run both until neither moves.
	nudge := Event{Kind: GradsReady}
	for {
		before := w.main.ran + w.xch.ran
		w.out = append(w.out, w.xch.step(nudge)...)
		w.out = append(w.out, w.main.step(nudge)...)
		if w.main.ran+w.xch.ran == before {
			return w.out
		}
	}
}

// rng is fragment p's range of buffer b.
func (w *streaming) rng(b Buffer, p int) Range { return Range{b, w.frags[p].Lo, w.frags[p].Hi} }

// due is the fragment that synchronises after iteration it, or −1.
func (w *streaming) due(it int) int {
	h := max(w.cfg.Interval, 1)
	for p, f := range w.frags {
		if (it+1)%h == f.Offset {
			return p
		}
	}
	return -1
}

// iteration appends inner step it, and the landing and sending of
// fragments it is due for.
func (w *streaming) iteration(it int) {
	m := &w.main
	m.do(Action{Op: Compute}, true)
	m.local(Action{Op: Update, Iter: it})
	for p := range w.dirty {
		w.dirty[p] = true
	}
	if w.inflight >= 0 && it == w.applyAt {
		w.land(false)
	}
	if p := w.due(it); p >= 0 {
		w.send(p)
		w.applyAt = it + w.cfg.Overlap
		if w.cfg.Overlap == 0 {
			w.land(true)
		}
	}
}

// end lands the exchange in flight and synchronises every fragment that
// moved since, so the replicas end equal.
func (w *streaming) end(int) {
	if w.inflight >= 0 {
		w.land(w.cfg.Overlap == 0)
	}
	for p := range w.frags {
		if w.dirty[p] {
			w.send(p)
			w.land(true)
		}
	}
}

// send appends fragment p's pseudo-gradient (taken now, between two
// inner steps) and starts its exchange and outer step.
func (w *streaming) send(p int) {
	m := &w.main
	m.local(Action{Op: Copy, R: w.rng(Delta, p), Src: w.rng(Aux, p)})
	m.local(Action{Op: Axpy, R: w.rng(Delta, p), Src: w.rng(Params, p), Factor: -1})
	w.inflight = p
	m.then(func() {
		// Now, not when the step is appended: at the end of a run
		// several exchanges are appended at once, each waited for.
		w.xbusy = true
		w.exchange(p)
	})
}

// land appends the wait for the exchange in flight and its landing:
// replacement, or the mix.
func (w *streaming) land(replace bool) {
	m := &w.main
	p := w.inflight
	m.waitUntil(func() bool { return !w.xbusy })
	if replace || w.cfg.Overlap == 0 {
		m.local(Action{Op: Copy, R: w.rng(Params, p), Src: w.rng(Aux, p)})
		w.dirty[p] = false
	} else {
		m.local(Action{Op: Scale, R: w.rng(Params, p), Factor: w.cfg.Mix})
		m.local(Action{Op: Axpy, R: w.rng(Params, p), Src: w.rng(Aux, p), Factor: 1 - w.cfg.Mix})
	}
	w.inflight = -1
}

// exchange appends fragment p's averaging and outer step to the
// exchange program.
func (w *streaming) exchange(p int) {
	x := &w.xch
	n := w.cfg.Workers
	d := w.rng(Delta, p)
	if n > 1 {
		if w.cfg.bits(true) == 32 {
			// As diloco's: the fragment's blocks in backward order, or
			// packed, the fragment as one message.
			msgs := []Range{d}
			if !w.cfg.Pack && len(w.cfg.Layout.Blocks) > 0 {
				msgs = msgs[:0]
				for _, r := range w.cfg.messages(Delta) {
					if r.Lo >= d.Lo && r.Hi <= d.Hi {
						msgs = append(msgs, r)
					}
				}
			}
			for _, r := range msgs {
				x.do(Action{Op: Allreduce, R: r, Algo: AlgoRing}, false)
			}
			x.barrier()
		} else {
			w.ring(p)
		}
		x.local(Action{Op: Scale, R: d, Factor: 1 / float32(n)})
	}
	lr := w.cfg.Alpha
	if lr == 0 {
		lr = DiLoCoOuterLR
	}
	mu := w.cfg.OuterMomentum
	b, th := w.rng(Spare, p), w.rng(Aux, p)
	x.local(Action{Op: Scale, R: b, Factor: mu})
	x.local(Action{Op: Axpy, R: b, Src: d, Factor: 1})
	x.local(Action{Op: Axpy, R: d, Src: b, Factor: mu})
	x.local(Action{Op: Axpy, R: th, Src: d, Factor: -lr})
	x.then(func() { w.xbusy = false })
}

// ring appends the sum of fragment p's pseudo-gradients over the
// workers at OuterBits: a ring reduce-scatter whose every message is the
// partial sum of a chunk quantised (the receiver dequantises it and adds
// its own in float32), then an allgather of each chunk's sum quantised
// once, which every worker, its owner too, dequantises, so all hold the
// same bits. Sends and receives alternate by rank parity, as a send may
// wait for its receiver.
func (w *streaming) ring(p int) {
	x := &w.xch
	n, r, bits := w.cfg.Workers, w.rank, w.cfg.bits(true)
	f := w.frags[p]
	l := f.Hi - f.Lo
	chunk := func(k int) Range { return Range{Delta, f.Lo + k*l/n, f.Lo + (k+1)*l/n} }
	slots := make([]Range, n)
	off := 0
	for k := range slots {
		words := QuantWords(chunkLen(l, n, k), bits)
		slots[k] = Range{Wire, off, off + words}
		off += words
	}
	next, prev := (r+1)%n, (r+n-1)%n
	tag := tagStream
	swap := func(send, recv int) {
		s := Action{Op: Send, R: slots[send], Peer: next, Tag: tag}
		v := Action{Op: Recv, R: slots[recv], Peer: prev, Tag: tag}
		if r%2 == 0 {
			x.do(s, true)
			x.do(v, true)
		} else {
			x.do(v, true)
			x.do(s, true)
		}
		tag++
	}
	for s := 0; s < n-1; s++ {
		send, recv := mod(r-s, n), mod(r-s-1, n)
		x.local(Action{Op: Quantize, R: slots[send], Src: chunk(send), Bits: bits})
		swap(send, recv)
		x.local(Action{Op: Dequantize, R: chunk(recv), Src: slots[recv], Bits: bits, Add: true})
	}
	own := mod(r+1, n)
	x.local(Action{Op: Quantize, R: slots[own], Src: chunk(own), Bits: bits})
	x.local(Action{Op: Dequantize, R: chunk(own), Src: slots[own], Bits: bits})
	for s := 0; s < n-1; s++ {
		send, recv := mod(r+1-s, n), mod(r-s, n)
		swap(send, recv)
		x.local(Action{Op: Dequantize, R: chunk(recv), Src: slots[recv], Bits: bits})
	}
}
