package compress

import (
	"context"
	"fmt"
	"math"
)

// A parameter server's workers push their gradients in one message each
// (sync-ps): Push encodes a worker's range with error feedback, and a
// Decoder on the server adds what each worker pushed. bf16 packs two
// values to a float32 word there (half the bytes), top-k sends its pairs
// and sign its scale and words; PowerSGD, which needs two rounds among
// the workers, has no push.

// Pusher is what Push needs of the rank's transport: one message to the
// server.
type Pusher interface {
	// Send sends payload to the server.
	Send(ctx context.Context, payload []float32) error
	// Sent is as Collective's.
	Sent() int64
}

// Pushable reports whether spec has a push encoding.
func (s Spec) Pushable() bool { return s.Kind == BF16 || s.Kind == TopK || s.Kind == Sign }

// pushCompressible reports whether a block's push is encoded.
func (s Spec) pushCompressible(n int) bool {
	switch s.Kind {
	case BF16:
		return (n+1)/2 < n
	case TopK:
		return 2*topK(s.Fraction, n) < n
	case Sign:
		return signWords(n) < n
	}
	return false
}

// pushLen is the floats a block of n values pushes as.
func (s Spec) pushLen(n int) int {
	if !s.pushCompressible(n) {
		return n
	}
	switch s.Kind {
	case BF16:
		return (n + 1) / 2
	case TopK:
		return 2 * topK(s.Fraction, n)
	}
	return signWords(n)
}

// PushFloats is what one compressed push of blocks holds, in floats,
// against their lengths.
func (s Spec) PushFloats(blocks []Block) (compressed, plain int) {
	for _, b := range blocks {
		compressed += s.pushLen(b.Len())
		plain += b.Len()
	}
	return compressed, plain
}

// payloadLen is the length of the push of the range at lo (n values)
// whose segments are segs, warm or not.
func (s Spec) payloadLen(segs []segment, warm bool) int {
	n := 0
	for _, sg := range segs {
		if warm || sg.i < 0 {
			n += sg.hi - sg.lo
		} else {
			n += s.pushLen(sg.hi - sg.lo)
		}
	}
	return n
}

// Push sends the gradients buf (at offset lo) to the server through p:
// plain during the warm-up, else each block encoded with its residual
// added and what the encoding dropped kept as the new residual.
func (r *Reducer) Push(ctx context.Context, lo int, buf []float32, p Pusher) error {
	if !r.spec.Pushable() {
		return fmt.Errorf("compress: %s has no push encoding", r.spec)
	}
	segs := r.segments(lo, len(buf))
	warm := r.warm(segs)
	before := p.Sent()
	var payload []float32
	if warm {
		payload = buf
		r.stats.Plain++
		r.stats.PlainFloats += int64(len(buf))
	} else {
		payload = grow(r.send, r.spec.payloadLen(segs, false))
		r.send = payload
		at := 0
		for _, s := range segs {
			m := buf[s.lo:s.hi]
			if s.i < 0 || !r.spec.pushCompressible(len(m)) {
				at += copy(payload[at:], m)
				continue
			}
			e := r.addResidual(s.i, m)
			out := payload[at : at+r.spec.pushLen(len(m))]
			r.encode(s.i, m, e, out)
			at += len(out)
		}
		r.stats.Compressed++
		r.stats.Floats += int64(len(payload))
	}
	if err := p.Send(ctx, payload); err != nil {
		return err
	}
	r.finish(segs, warm, before, p.Sent())
	return nil
}

// warm reports whether a range's reduction is still in the warm-up.
func (r *Reducer) warm(segs []segment) bool {
	for _, s := range segs {
		if s.i >= 0 && r.state[s.i].steps < r.warmup {
			return true
		}
	}
	return false
}

// account adds the bytes sent between before and after to the stats.
func (r *Reducer) account(warm bool, before, after int64) {
	switch {
	case before < 0 || after < 0 || r.stats.Bytes < 0:
		r.stats.Bytes, r.stats.PlainBytes = -1, -1
	case warm:
		r.stats.PlainBytes += after - before
	default:
		r.stats.Bytes += after - before
	}
}

// encode writes block i's values m (residual added) into out and leaves
// in e what out does not carry.
func (r *Reducer) encode(i int, m, e, out []float32) {
	switch r.spec.Kind {
	case BF16:
		for j := 0; j < len(m); j += 2 {
			a := BF16Round(m[j])
			e[j] = m[j] - a
			word := math.Float32bits(a) >> 16
			if j+1 < len(m) {
				b := BF16Round(m[j+1])
				e[j+1] = m[j+1] - b
				word |= math.Float32bits(b) &^ 0xffff
			}
			out[j/2] = math.Float32frombits(word)
		}
	case TopK:
		st := &r.state[i]
		st.idx, st.mags = largest(st.idx, st.mags, m, len(out)/2)
		copy(e, m)
		for x, j := range st.idx {
			out[2*x] = math.Float32frombits(uint32(j))
			out[2*x+1] = m[j]
			e[j] = 0
		}
	case Sign:
		encodeSign(m, e, out)
	}
}

// decodeAdd adds the block of len(m) values that in carries into m.
func (s Spec) decodeAdd(m, in []float32) error {
	switch s.Kind {
	case BF16:
		for j := range m {
			w := math.Float32bits(in[j/2])
			if j%2 == 0 {
				m[j] += math.Float32frombits(w << 16)
			} else {
				m[j] += math.Float32frombits(w &^ 0xffff)
			}
		}
	case TopK:
		for x := 0; x < len(in); x += 2 {
			j := int(math.Float32bits(in[x]))
			if j >= len(m) {
				return fmt.Errorf("compress: top-k index %d outside a block of %d", j, len(m))
			}
			m[j] += in[x+1]
		}
	case Sign:
		addSigns(m, in)
	}
	return nil
}

// Decoder is the server's side of the workers' pushes: it knows, per
// worker and block, whether a push is still in the warm-up. Pull is
// called from one goroutine at a time.
type Decoder struct {
	spec    Spec
	blocks  *Reducer // the layout and its segments; no state of its own
	steps   [][]int  // per worker, per block
	warmup  int
	scratch []float32
}

// NewDecoder returns the server's decoder of workers' pushes of spec
// over blocks, warm-up and start as New's.
func NewDecoder(spec Spec, blocks []Block, workers, warmup, start int) (*Decoder, error) {
	if !spec.Pushable() {
		return nil, fmt.Errorf("compress: %s has no push encoding", spec)
	}
	lay, err := New(spec, blocks, 0, 1, warmup, start)
	if err != nil {
		return nil, err
	}
	d := &Decoder{spec: spec, blocks: lay, warmup: warmup, steps: make([][]int, workers)}
	for w := range d.steps {
		d.steps[w] = make([]int, len(lay.blocks))
		for i := range d.steps[w] {
			d.steps[w][i] = start
		}
	}
	return d, nil
}

// Pull receives worker w's push of the range at lo through recv (which
// fills a payload of the length given) and writes it into buf, or adds
// it when add is set.
func (d *Decoder) Pull(ctx context.Context, w, lo int, buf []float32, add bool, recv func(ctx context.Context, payload []float32) error) error {
	if w < 0 || w >= len(d.steps) {
		return fmt.Errorf("compress: a push from worker %d of %d", w, len(d.steps))
	}
	segs := d.blocks.segments(lo, len(buf))
	warm := false
	for _, s := range segs {
		if s.i >= 0 && d.steps[w][s.i] < d.warmup {
			warm = true
		}
	}
	payload := grow(d.scratch, d.spec.payloadLen(segs, warm))
	d.scratch = payload
	if err := recv(ctx, payload); err != nil {
		return err
	}
	if !add {
		clear(buf)
	}
	at := 0
	for _, s := range segs {
		m := buf[s.lo:s.hi]
		if warm || s.i < 0 || !d.spec.pushCompressible(len(m)) {
			for j, v := range payload[at : at+len(m)] {
				m[j] += v
			}
			at += len(m)
			continue
		}
		n := d.spec.pushLen(len(m))
		if err := d.spec.decodeAdd(m, payload[at:at+n]); err != nil {
			return fmt.Errorf("%w (from worker %d)", err, w)
		}
		at += n
	}
	for _, s := range segs {
		if s.i >= 0 {
			d.steps[w][s.i]++
		}
	}
	return nil
}
