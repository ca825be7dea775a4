package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// RecurrentConfig is Caffe's RecurrentParameter, shared by the LSTM and RNN
// layers.
type RecurrentConfig struct {
	// NumOutput is the hidden state size H; it must be positive.
	NumOutput int
	// WeightFiller fills every weight matrix, BiasFiller every bias.
	WeightFiller Filler
	BiasFiller   Filler
	// DebugInfo is accepted for compatibility; it has no effect (Caffe logs
	// its unrolled net with it).
	DebugInfo bool
	// ExposeHidden adds the initial hidden state as extra bottoms (h0, and
	// c0 for LSTM, each 1×N×H) and the final one as extra tops (hT, and cT
	// for LSTM). Without it the layer carries its final state over to the
	// next Forward, as Caffe does.
	ExposeHidden bool
}

// LSTMConfig configures Caffe's LSTM layer.
type LSTMConfig struct{ RecurrentConfig }

// RNNConfig configures Caffe's RNN layer.
type RNNConfig struct{ RecurrentConfig }

// Type returns "LSTM".
func (*LSTMConfig) Type() string { return "LSTM" }

// Type returns "RNN".
func (*RNNConfig) Type() string { return "RNN" }

// Build returns an LSTM layer. Bottoms: x (T×N×...), cont (T×N; 0 starts a
// sequence), optionally x_static (N×...), then with ExposeHidden h0 and c0
// (1×N×H). Tops: h (T×N×H), then with ExposeHidden hT and cT (1×N×H).
// Params, in Caffe's order: W_xc (4H×D), b_c (4H), W_xc_static (4H×S, with
// x_static only), W_hc (4H×H); the 4H gate rows are Caffe's i, f, o, g.
func (c *LSTMConfig) Build(ctx Context) (Layer, error) {
	if err := c.validate("LSTM"); err != nil {
		return nil, err
	}
	l := &lstmLayer{}
	l.recurrent = newRecurrent("LSTM", c.RecurrentConfig, 2, 4)
	l.gemm.init(ctx)
	l.unitFwdFn, l.unitBwdFn = l.unitForwardStreams, l.unitBackwardStreams
	return l, nil
}

// Build returns an RNN layer: h_t = tanh(W_hh·(cont_t·h_{t−1}) + W_xh·x_t
// + b_h [+ W_xh_static·x_static]) and the output o_t = tanh(W_ho·h_t + b_o).
// Bottoms: x (T×N×...), cont (T×N), optionally x_static (N×...), then with
// ExposeHidden h0 (1×N×H). Tops: o (T×N×H), then with ExposeHidden hT.
// Params, in Caffe's order: W_xh (H×D), b_h (H), W_xh_static (H×S, with
// x_static only), W_hh (H×H), W_ho (H×H), b_o (H).
func (c *RNNConfig) Build(ctx Context) (Layer, error) {
	if err := c.validate("RNN"); err != nil {
		return nil, err
	}
	l := &rnnLayer{}
	l.recurrent = newRecurrent("RNN", c.RecurrentConfig, 1, 1)
	l.gemm.init(ctx)
	return l, nil
}

func (c *RecurrentConfig) validate(typ string) error {
	if c.NumOutput <= 0 {
		return fmt.Errorf("layers: %s: num_output must be positive, got %d", typ, c.NumOutput)
	}
	for _, f := range []Filler{c.WeightFiller, c.BiasFiller} {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("layers: %s: %w", typ, err)
		}
	}
	return nil
}

// recurrent is what the LSTM and RNN layers share: Caffe's RecurrentLayer
// without the unrolled net. Both compute the input transform of every
// timestep in one GEMM, run the recurrence one timestep at a time (one
// N×G·H×H GEMM each), and compute the weight and input gradients over all
// timesteps in one GEMM each.
//
// Gradients: Caffe refuses to backpropagate to cont; here its diff is
// zeroed when asked for. Unlike Caffe's unrolled net, which leaves the
// diffs of h0/c0 untouched and ignores those of hT/cT, the exposed state
// takes part in the gradient: hT/cT diffs flow back through time and h0/c0
// receive theirs (identical results for the usual nets, whose hT/cT carry
// no loss). No gradient crosses Forward calls when the state is carried.
// Caffe fixes the number of timesteps at setup (its unrolled net); here it
// may change from one Reshape to the next, as the number of streams may
// (which restarts a carried state from zero).
type recurrent struct {
	typ    string
	cfg    RecurrentConfig
	nrec   int // recurrent state blobs: 2 (h, c) for LSTM, 1 for RNN
	gates  int // rows of the input transforms per hidden unit: 4 or 1
	static bool
	hdim   int // H
	d, s   int // inputs per timestep and example; static inputs per example
	t, n   int // timesteps and streams of the current shapes

	wx, bx, ws, wh *tensor.Blob
	params         []Param

	// When the state is not exposed, state is the initial h (and c) of the
	// current pass, N×H each, and next the final state of the last
	// Forward, which begin copies into state: Backward still needs the
	// initial state after Forward has produced the next.
	state, next [][]float32

	gemm parGemm
}

// newRecurrent returns the shared part of a layer; the layer then calls
// gemm.init on its own copy (init binds methods to the struct's address).
func newRecurrent(typ string, cfg RecurrentConfig, nrec, gates int) recurrent {
	return recurrent{typ: typ, cfg: cfg, nrec: nrec, gates: gates, hdim: cfg.NumOutput}
}

func (r *recurrent) Type() string    { return r.typ }
func (r *recurrent) Params() []Param { return r.params }

// exposed is the number of exposed state bottoms (and extra tops).
func (r *recurrent) exposed() int {
	if r.cfg.ExposeHidden {
		return r.nrec
	}
	return 0
}

// stateBottom is the index of the first exposed state bottom.
func (r *recurrent) stateBottom() int {
	if r.static {
		return 3
	}
	return 2
}

// setup checks the blob counts and shapes and creates W_x, b_x, W_static
// (with a static input) and W_h, with g·H rows each.
func (r *recurrent) setup(bottom, top []*tensor.Blob) error {
	base := 2 + r.exposed()
	if err := checkBlobCount(r.typ, bottom, top, base, base+1, 1+r.exposed(), 1+r.exposed()); err != nil {
		if r.cfg.ExposeHidden {
			return fmt.Errorf("%w (expose_hidden: x, cont, [x_static], then %d initial state blob(s); as many extra tops)", err, r.nrec)
		}
		return err
	}
	r.static = len(bottom) == base+1
	if err := r.checkShapes(bottom); err != nil {
		return err
	}
	if r.t < 1 {
		return fmt.Errorf("layers: %s: bottom %q of shape %v has no timesteps", r.typ, bottom[0].Name, bottom[0].Shape)
	}
	r.d = bottom[0].Shape.CountFrom(2)
	if r.static {
		r.s = bottom[2].Shape.CountFrom(1)
	}
	gh := r.gates * r.hdim
	names := [4]string{"W_xc", "b_c", "W_xc_static", "W_hc"}
	if r.typ == "RNN" {
		names = [4]string{"W_xh", "b_h", "W_xh_static", "W_hh"}
	}
	r.wx = tensor.NewBlob(names[0], gh, r.d)
	r.bx = tensor.NewBlob(names[1], gh)
	r.params = []Param{{Blob: r.wx, Filler: r.cfg.WeightFiller}, {Blob: r.bx, Filler: r.cfg.BiasFiller}}
	if r.static {
		r.ws = tensor.NewBlob(names[2], gh, r.s)
		r.params = append(r.params, Param{Blob: r.ws, Filler: r.cfg.WeightFiller})
	}
	r.wh = tensor.NewBlob(names[3], gh, r.hdim)
	r.params = append(r.params, Param{Blob: r.wh, Filler: r.cfg.WeightFiller})
	return nil
}

// checkShapes validates the bottoms' shapes and sets t and n.
func (r *recurrent) checkShapes(bottom []*tensor.Blob) error {
	x, cont := bottom[0], bottom[1]
	if len(x.Shape) < 2 {
		return fmt.Errorf("layers: %s: bottom %q has shape %v; it needs at least 2 axes (timesteps, streams, ...)", r.typ, x.Name, x.Shape)
	}
	r.t, r.n = x.Shape[0], x.Shape[1]
	if len(cont.Shape) != 2 || cont.Shape[0] != r.t || cont.Shape[1] != r.n {
		return fmt.Errorf("layers: %s: the sequence continuation bottom %q has shape %v; it must be (timesteps, streams) = (%d, %d) to match bottom %q",
			r.typ, cont.Name, cont.Shape, r.t, r.n, x.Name)
	}
	if r.static {
		xs := bottom[2]
		if len(xs.Shape) < 1 || xs.Shape[0] != r.n {
			return fmt.Errorf("layers: %s: the static input bottom %q has shape %v; its first axis must be the %d streams of bottom %q",
				r.typ, xs.Name, xs.Shape, r.n, x.Name)
		}
	}
	for i := 0; i < r.exposed(); i++ {
		b := bottom[r.stateBottom()+i]
		if !b.Shape.Equal(tensor.Shape{1, r.n, r.hdim}) {
			return fmt.Errorf("layers: %s: the initial state bottom %q has shape %v; it must be (1, %d, %d)", r.typ, b.Name, b.Shape, r.n, r.hdim)
		}
	}
	return nil
}

// reshape re-validates the bottoms, shapes the tops and, when the number
// of streams changes, resets the carried state to zero.
func (r *recurrent) reshape(bottom, top []*tensor.Blob) error {
	if err := r.checkShapes(bottom); err != nil {
		return err
	}
	if d := bottom[0].Shape.CountFrom(2); d != r.d {
		return fmt.Errorf("layers: %s: bottom %q of shape %v has %d inputs per timestep, the layer was set up for %d", r.typ, bottom[0].Name, bottom[0].Shape, d, r.d)
	}
	if r.static {
		if s := bottom[2].Shape.CountFrom(1); s != r.s {
			return fmt.Errorf("layers: %s: static bottom %q of shape %v has %d inputs per stream, the layer was set up for %d", r.typ, bottom[2].Name, bottom[2].Shape, s, r.s)
		}
	}
	top[0].Reshape(r.t, r.n, r.hdim)
	for i := 1; i < len(top); i++ {
		top[i].Reshape(1, r.n, r.hdim)
	}
	nh := r.n * r.hdim
	if r.state == nil || len(r.state[0]) != nh {
		r.state, r.next = make([][]float32, r.nrec), make([][]float32, r.nrec)
		for i := range r.state {
			r.state[i], r.next[i] = make([]float32, nh), make([]float32, nh)
		}
	}
	return nil
}

// begin starts a Forward: a carried state becomes the initial one.
func (r *recurrent) begin() {
	if !r.cfg.ExposeHidden {
		for i := range r.state {
			copy(r.state[i], r.next[i])
		}
	}
}

// initial returns state blob i at the start of Forward: the exposed
// bottom, or the carried state.
func (r *recurrent) initial(bottom []*tensor.Blob, i int) []float32 {
	if r.cfg.ExposeHidden {
		return bottom[r.stateBottom()+i].Data
	}
	return r.state[i]
}

// finish publishes final state i (N×H): to the extra top, or to the state
// the next Forward starts from.
func (r *recurrent) finish(top []*tensor.Blob, i int, final []float32) {
	if r.cfg.ExposeHidden {
		copy(top[1+i].Data, final)
	} else {
		copy(r.next[i], final)
	}
}

// inputTransform writes pre = x·W_xᵀ + b_x (T·N × G·H), plus
// W_static·x_static at every timestep with a static input; static receives
// W_static·x_static (N × G·H).
func (r *recurrent) inputTransform(bottom []*tensor.Blob, pre, static []float32) {
	gh, tn := r.gates*r.hdim, r.t*r.n
	r.gemm.run(false, true, tn, gh, r.d, bottom[0].Data, r.d, r.wx.Data, r.d, 0, pre, gh)
	b := r.bx.Data[:gh]
	for i := 0; i < tn; i++ {
		row := pre[i*gh : (i+1)*gh]
		for j, v := range b {
			row[j] += v
		}
	}
	if r.static {
		r.gemm.run(false, true, r.n, gh, r.s, bottom[2].Data, r.s, r.ws.Data, r.s, 0, static, gh)
		ng := r.n * gh
		for t := 0; t < r.t; t++ {
			tensor.Axpy(1, static[:ng], pre[t*ng:(t+1)*ng])
		}
	}
}

// contHidden writes hc = cont_t·h (N×H), Caffe's h_conted_{t−1}.
func (r *recurrent) contHidden(cont, h, hc []float32) {
	H := r.hdim
	for i, c := range cont[:r.n] {
		dst, src := hc[i*H:(i+1)*H], h[i*H:(i+1)*H]
		for j, v := range src {
			dst[j] = c * v
		}
	}
}

// scaleByCont sets d_i ·= cont_i for each stream row i (N×H).
func (r *recurrent) scaleByCont(cont, d []float32) {
	H := r.hdim
	for i, c := range cont[:r.n] {
		row := d[i*H : (i+1)*H]
		for j := range row {
			row[j] *= c
		}
	}
}

// inputBackward accumulates, from the gradient dpre (T·N × G·H) of the
// gate pre-activations and hc (T·N × H, the cont-scaled previous hidden
// states), the gradients of W_h, W_x, b_x and W_static, and writes those
// of x and x_static where propagateDown asks. sum (N × G·H) is scratch.
func (r *recurrent) inputBackward(dpre, hc, sum []float32, propagateDown []bool, bottom []*tensor.Blob) {
	gh, tn := r.gates*r.hdim, r.t*r.n
	r.gemm.run(true, false, gh, r.hdim, tn, dpre, gh, hc, r.hdim, 1, r.wh.Diff, r.hdim)
	r.gemm.run(true, false, gh, r.d, tn, dpre, gh, bottom[0].Data, r.d, 1, r.wx.Diff, r.d)
	db := r.bx.Diff[:gh]
	for i := 0; i < tn; i++ {
		for j, v := range dpre[i*gh : (i+1)*gh] {
			db[j] += v
		}
	}
	if propagateDown[0] {
		r.gemm.run(false, false, tn, r.d, gh, dpre, gh, r.wx.Data, r.d, 0, bottom[0].Diff, r.d)
	}
	if propagateDown[1] {
		clear(bottom[1].Diff[:tn])
	}
	if r.static {
		ng := r.n * gh
		sum = sum[:ng]
		copy(sum, dpre[:ng])
		for t := 1; t < r.t; t++ {
			tensor.Axpy(1, dpre[t*ng:(t+1)*ng], sum)
		}
		r.gemm.run(true, false, gh, r.s, r.n, sum, gh, bottom[2].Data, r.s, 1, r.ws.Diff, r.s)
		if propagateDown[2] {
			r.gemm.run(false, false, r.n, r.s, gh, sum, gh, r.ws.Data, r.s, 0, bottom[2].Diff, r.s)
		}
	}
}

// parGemm runs tensor.Gemm split among a pool's threads, along the rows of
// C or, when C is wider than tall, its columns, in units of gemmUnit; GEMMs
// too small to pay for threads run inline. Its loop bodies are bound once,
// so a call does not allocate.
type parGemm struct {
	pool    *tensor.Pool
	threads int

	transA, transB bool
	m, n, k        int
	a, b, c        []float32
	lda, ldb, ldc  int
	beta           float32
	rowsFn, colsFn func(lo, hi, worker int)
}

func (g *parGemm) init(ctx Context) {
	g.pool, g.threads = ctx.Pool, ctx.NumThreads()
	g.rowsFn, g.colsFn = g.rows, g.cols
}

// run computes C = op(A)·op(B) + beta·C as tensor.Gemm with alpha 1.
func (g *parGemm) run(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	dim, fn := m, g.rowsFn
	if n > m {
		dim, fn = n, g.colsFn
	}
	th := gemmThreads(g.threads, m, n, k, dim)
	if th <= 1 {
		tensor.Gemm(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	g.transA, g.transB, g.m, g.n, g.k = transA, transB, m, n, k
	g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc = a, lda, b, ldb, beta, c, ldc
	g.pool.For((dim+gemmUnit-1)/gemmUnit, th, fn)
	g.a, g.b, g.c = nil, nil, nil
}

func (g *parGemm) rows(lo, hi, _ int) {
	i, j := unitRange(lo, hi, g.m)
	var as []float32
	if g.transA {
		as = g.a[i:] // A is k×m: the rows of op(A) are its columns
	} else {
		as = g.a[i*g.lda:]
	}
	tensor.Gemm(g.transA, g.transB, j-i, g.n, g.k, 1, as, g.lda, g.b, g.ldb, g.beta, g.c[i*g.ldc:], g.ldc)
}

func (g *parGemm) cols(lo, hi, _ int) {
	i, j := unitRange(lo, hi, g.n)
	var bs []float32
	if g.transB {
		bs = g.b[i*g.ldb:] // B is n×k
	} else {
		bs = g.b[i:]
	}
	tensor.Gemm(g.transA, g.transB, g.m, j-i, g.k, 1, g.a, g.lda, bs, g.ldb, g.beta, g.c[i:], g.ldc)
}
