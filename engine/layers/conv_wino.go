package layers

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"dsgd/engine/tensor"

	"dsgd/engine/tensor/dnnl"
)

// winoState is a convolution layer's side of dsgd's own Winograd
// convolution (wino.go), used when on: the forward and the backward data
// pass run on it, and the weights pass too when wOn (else on oneDNN or,
// without oneDNN, on im2col + GEMM).
type winoState struct {
	on   bool
	why  string    // when on: why this layer runs it (for Kernel)
	fwd  winoShape // forward: C -> K on h×w, pad p
	back winoShape // data pass: K -> C on oh×ow, pad 2-p
	// sc is the scratch of the passes, shared by the layers of a net
	// (winoScratchFor).
	sc *winoScratch
	// kernel function bound once, so passing it allocates nothing; the
	// current pass's arguments.
	kernFn, runFn, padFn func(lo, hi, w int)
	passBack             bool
	// fwdWide and backWide: whether the threads split each chunk of the
	// forward and of the data pass (winoWide) rather than share out the
	// chunks; the bound functions of a split chunk's three steps, and the
	// current chunk's tiles.
	fwdWide, backWide   bool
	inFn, gemmFn, outFn func(lo, hi, w int)
	nt                  int

	// The weights pass (wino.go's winoWts*), when wOn: wts is the forward
	// shape with the weights pass's chunk; the bound functions and the
	// current chunk's tiles.
	wOn                            bool
	wts                            winoShape
	wPadFn, wInFn, wGemmFn, wOutFn func(lo, hi, w int)
	wNt                            int
	wFirst                         bool
}

// winoMode overrides the rule in winoRule for tests: 0 follows it, 1
// forces dsgd's Winograd on every geometry it takes, -1 keeps it off.
var winoMode int

// winoTile is the output tile side m of F(m×m, 3×3).
const winoTile = 4

// winoRule says whether dsgd's Winograd should run a convolution: a 3×3,
// stride-1, pad 0 or 1, undilated one (of any groups) whose forward runs on
// oneDNN's direct kernels although Winograd was asked for (SetWinograd),
// i.e. where oneDNN 2.6 has no Winograd kernel (below AVX-512), at the
// AVX2 level, where it was measured faster (docs/benchmarks.md; under SSE
// and AVX it was not measured, and without AVX2 its transforms run as Go
// loops). A fixed rule, decided by the kernel and ISA oneDNN names, not
// by a timing at start-up, so a run repeats its bits.
func (l *convLayer) winoRule() (on bool, why string) {
	g := &l.geom
	dh, dw := g.dilation()
	if g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || dh != 1 || dw != 1 ||
		g.ph != g.pw || g.ph > 1 || l.num == 0 || !winoGroupsFit(g.c, l.cfg.NumOutput, l.cfg.Group) {
		return false, ""
	}
	switch winoMode {
	case 1:
		return true, "forced by a test"
	case -1:
		return false, ""
	}
	if !dnnlWinograd || !l.dn.on || strings.Contains(l.dn.impl.Forward, "wino") {
		return false, ""
	}
	if _, isa, _ := strings.Cut(dnnl.Info(), "ISA "); !strings.HasPrefix(isa, "avx2") {
		return false, "" // measured at AVX2 only
	}
	return true, "oneDNN has no Winograd at AVX2, and its " + l.dn.impl.Forward + " measured slower"
}

// winoGroupMin is the fewest input and output channels per group that
// dsgd's Winograd takes: its GEMMs are per group, and a depthwise or
// narrow-group convolution would run α² tiny GEMMs per group and chunk
// (oneDNN has a kernel of its own for those).
const winoGroupMin = 16

// winoGroupsFit says whether c input and k output channels in groups
// groups suit dsgd's Winograd: one group, or every group at least
// winoGroupMin channels in and out.
func winoGroupsFit(c, k, groups int) bool {
	return groups == 1 || c/groups >= winoGroupMin && k/groups >= winoGroupMin
}

// winoSetup decides and sizes the Winograd side after dnnlSetup.
func (l *convLayer) winoSetup() {
	ws := &l.wg
	ws.on, ws.why = l.winoRule()
	if !ws.on {
		return
	}
	g := &l.geom
	k := l.cfg.NumOutput
	groups := l.cfg.Group
	ws.fwd = newWinoShape(winoTile, l.num, g.c, g.h, g.w, k, g.ph).withGroups(groups)
	ws.back = newWinoShape(winoTile, l.num, k, g.oh, g.ow, g.c, 2-g.ph).withGroups(groups)
	a2 := ws.fwd.alpha() * ws.fwd.alpha()
	if ws.sc == nil {
		ws.sc = winoScratchFor(l.pool)
	}
	sc := ws.sc
	sc.u = growBuf(sc.u, a2*k*g.c/groups)
	for len(sc.bufs) < l.threads {
		sc.bufs = append(sc.bufs, winoBuf{})
	}
	for w := range l.threads {
		b := &sc.bufs[w]
		b.fit(&ws.fwd)
		b.fit(&ws.back)
		b.ker = fitBuf(b.ker, 9*max(k, g.c))
	}
	if ws.kernFn == nil {
		ws.kernFn = l.winoKernelPart
		ws.runFn = l.winoRunPart
		ws.padFn = l.winoPadPart
		ws.inFn = l.winoInPart
		ws.gemmFn = l.winoGemmPart
		ws.outFn = l.winoOutPart
	}
	ws.fwdWide = winoWide(&ws.fwd, l.num, l.threads)
	ws.backWide = winoWide(&ws.back, l.num, l.threads)
	hp, wp := ws.fwd.padded()
	hb, wb := ws.back.padded()
	sc.pad = growBuf(sc.pad, l.num*max(g.c*hp*wp, k*hb*wb))
	ws.wOn = l.winoWtsRule()
	if ws.wOn {
		ws.wts = winoWtsChunk(ws.fwd, l.num)
		sc.bufs[0].fit(&ws.wts)
		sc.padX = growBuf(sc.padX, l.num*g.c*hp*wp)
		if ws.wPadFn == nil {
			ws.wPadFn = l.winoWtsPadPart
			ws.wInFn = l.winoWtsInPart
			ws.wGemmFn = l.winoWtsGemmPart
			ws.wOutFn = l.winoWtsOutPart
		}
	}
}

// winoWtsMode overrides winoWtsRule for tests: 0 follows it, 1 puts the
// weights pass of every layer on dsgd's Winograd on it too, -1 keeps it on
// oneDNN (or im2col + GEMM).
var winoWtsMode int

// winoWtsRule says whether a layer on dsgd's Winograd runs its weights
// pass on it too: always (where winoRule puts the layer on it). Measured
// on ResNet-18's four 3×3 shapes at batch 16, one thread, under the AVX2
// cap (BenchmarkWinogradWeights, docs/benchmarks.md), it took about 0.5–0.7×
// oneDNN's jit:avx2 weights pass on every one of them. A fixed rule, so a
// run repeats its bits.
func (l *convLayer) winoWtsRule() bool {
	switch winoWtsMode {
	case 1:
		return true
	case -1:
		return false
	}
	return true
}

// winoWtsPadPart pads planes [lo, hi) of the input for the weights pass
// (on the forward's shape) and, beyond them, of dy for the data pass's.
func (l *convLayer) winoWtsPadPart(lo, hi, _ int) {
	ws := &l.wg
	nx := l.num * l.geom.c
	if lo < nx {
		winoPad(&ws.fwd, l.in.Data, ws.sc.padX, lo, min(hi, nx))
	}
	if hi > nx {
		winoPad(&ws.back, l.out.Diff, ws.sc.pad, max(lo, nx)-nx, hi-nx)
	}
}

// winoWtsInPart transforms channels [lo, hi) of the current chunk.
func (l *convLayer) winoWtsInPart(lo, hi, _ int) {
	ws := &l.wg
	winoWtsIn(&ws.wts, &ws.back, ws.sc.padX, ws.sc.pad, &ws.sc.bufs[0], ws.wNt, lo, hi)
}

// winoWtsGemmPart runs the current chunk's GEMMs [lo, hi) into u.
func (l *convLayer) winoWtsGemmPart(lo, hi, _ int) {
	ws := &l.wg
	winoWtsGemm(&ws.wts, &ws.sc.bufs[0], ws.wNt, ws.sc.u, ws.wFirst, lo, hi)
}

// winoWtsOutPart adds output channels [lo, hi)'s weight and bias
// gradients (those wanted) to the params' diffs.
func (l *convLayer) winoWtsOutPart(lo, hi, w int) {
	ws := &l.wg
	if l.want(0) {
		winoWtsOut(&ws.wts, ws.sc.u, l.weight.Diff, lo, hi, &ws.sc.bufs[w].ker)
	}
	if l.bias != nil && l.want(1) {
		planeBiasGrad(l.out.Diff, l.bias.Diff, l.num, l.cfg.NumOutput, l.geom.oh*l.geom.ow, lo, hi)
	}
}

// winoWeights is the weights pass on dsgd's Winograd: the input and dy
// padded (dy for the data pass too), then chunk by chunk the transforms
// split by channel and the GEMMs by ξ across the threads, summing into u,
// then the gradients back from the Winograd domain.
func (l *convLayer) winoWeights() {
	ws := &l.wg
	k, c := l.cfg.NumOutput, l.geom.c
	l.pool.For(l.num*(c+k), l.threads, ws.wPadFn)
	s := &ws.wts
	a2 := s.alpha() * s.alpha()
	for ch := 0; l.want(0) && ch < s.chunks(l.num); ch++ {
		ws.wNt = winoWtsTiles(s, &ws.back, l.num, ch, &ws.sc.bufs[0])
		ws.wFirst = ch == 0
		l.pool.For(c+k, l.threads, ws.wInFn)
		l.pool.For(a2, l.threads, ws.wGemmFn)
	}
	l.pool.For(k, l.threads, ws.wOutFn)
}

// winoKernelPart transforms rows [lo, hi) of the current pass's kernel.
func (l *convLayer) winoKernelPart(lo, hi, w int) {
	ws := &l.wg
	winoKernel(ws.fwd.m, l.weight.Data, l.cfg.NumOutput, l.geom.c, ws.fwd.g, ws.passBack, ws.sc.u, lo, hi, &ws.sc.bufs[w].ker)
}

// winoCur is the current pass's shape, output and bias (nil: none).
func (l *convLayer) winoCur() (s *winoShape, out, bias []float32) {
	ws := &l.wg
	if ws.passBack {
		return &ws.back, l.in.Diff, nil
	}
	if l.bias != nil {
		bias = l.bias.Data
	}
	return &ws.fwd, l.out.Data, bias
}

// winoRunPart runs chunks [lo, hi) of the current pass on worker w.
func (l *convLayer) winoRunPart(lo, hi, w int) {
	s, out, bias := l.winoCur()
	winoRun(s, l.num, l.wg.sc.pad, l.wg.sc.u, bias, out, &l.wg.sc.bufs[w], lo, hi)
}

// winoInPart transforms input channels [lo, hi) of the current split
// chunk (its tiles in worker 0's buffer).
func (l *convLayer) winoInPart(lo, hi, _ int) {
	s, _, _ := l.winoCur()
	winoInput(s, l.wg.sc.pad, &l.wg.sc.bufs[0], l.wg.nt, lo, hi)
}

// winoGemmPart runs the current split chunk's GEMMs ξ in [lo, hi).
func (l *convLayer) winoGemmPart(lo, hi, _ int) {
	s, _, _ := l.winoCur()
	winoGemm(s, l.wg.sc.u, &l.wg.sc.bufs[0], l.wg.nt, lo, hi)
}

// winoOutPart inverse-transforms output channels [lo, hi) of the current
// split chunk on worker w's scratch.
func (l *convLayer) winoOutPart(lo, hi, w int) {
	s, out, bias := l.winoCur()
	winoOutput(s, bias, &l.wg.sc.bufs[0], l.wg.sc.bufs[w].d, l.wg.nt, out, lo, hi)
}

// winoWideMode overrides winoWide for tests: 0 follows it, 1 splits
// every chunk across the threads, -1 shares out the chunks.
var winoWideMode int

// winoWide says whether the threads should split each chunk of shape s
// over n images (its transforms by channel, its GEMMs by ξ) rather than
// share out whole chunks: when sharing out the chunks would leave the
// busiest thread more than 1/0.9 of an even share of the tiles, as with
// an odd number of few chunks (ResNet-18's 28×28 layers at batch 32 have
// 7 of 256 tiles) or a short last one. Splitting costs three barriers per chunk. Either way every
// output element is computed by the same arithmetic in the same order,
// so the choice never changes the bits.
func winoWide(s *winoShape, n, threads int) bool {
	switch winoWideMode {
	case 1:
		return threads > 1
	case -1:
		return false
	}
	chunks := s.chunks(n)
	threads = min(threads, chunks)
	if threads <= 1 {
		return false
	}
	total := n * s.th * s.tw
	busiest := 0
	for w := range threads {
		lo, hi := tensor.Chunk(chunks, threads, w) // as the pool shares them out
		busiest = max(busiest, min(hi*s.chunk, total)-lo*s.chunk)
	}
	return float64(total) < 0.9*float64(threads*busiest)
}

// winoPadPart pads planes [lo, hi) of the current pass's input.
func (l *convLayer) winoPadPart(lo, hi, _ int) {
	ws := &l.wg
	if ws.passBack {
		winoPad(&ws.back, l.out.Diff, ws.sc.pad, lo, hi)
		return
	}
	winoPad(&ws.fwd, l.in.Data, ws.sc.pad, lo, hi)
}

// winoPass runs the forward (back false) or the backward data pass on
// dsgd's Winograd: the kernel transform, the padded input (unless padded:
// the weights pass padded dy), then the tile chunks: shared out across the
// threads, or each split across them (winoWide).
func (l *convLayer) winoPass(back, padded bool) {
	ws := &l.wg
	ws.passBack = back
	rows := l.cfg.NumOutput
	s := &ws.fwd
	if back {
		rows, s = l.geom.c, &ws.back
	}
	l.pool.For(rows, l.threads, ws.kernFn)
	if !padded {
		l.pool.For(l.num*s.c, l.threads, ws.padFn)
	}
	wide := ws.fwdWide
	if back {
		wide = ws.backWide
	}
	if wide {
		a2 := s.alpha() * s.alpha()
		b0 := &ws.sc.bufs[0]
		b0.fit(s) // the weights pass may have fitted it to its own chunk
		for ch := range s.chunks(l.num) {
			ws.nt = winoTiles(s, l.num, ch, b0)
			l.pool.For(s.c, l.threads, ws.inFn)
			l.pool.For(a2, l.threads, ws.gemmFn)
			l.pool.For(s.k, l.threads, ws.outFn)
		}
		return
	}
	l.pool.For(s.chunks(l.num), l.threads, ws.runFn)
}

// winoBackward is Backward for a layer on dsgd's Winograd: the param
// gradients (on it when wOn, else on oneDNN or im2col + GEMM), then the
// data pass.
func (l *convLayer) winoBackward(propagateDown bool) {
	padded := false
	if l.want(0) || l.bias != nil && l.want(1) {
		switch {
		case l.wg.wOn:
			l.winoWeights()
			padded = true
		case l.dn.on && !l.dn.ownWeights:
			l.propDown, l.noParams = false, false
			l.dnnlBackwardAll()
		default:
			l.propDown, l.noParams = false, false
			l.ownBackward()
		}
	}
	if propagateDown {
		l.winoPass(true, padded)
	}
}

// winoKernelName is Kernel's text for a layer on dsgd's Winograd.
func (l *convLayer) winoKernelName() string {
	if l.wg.wOn {
		return fmt.Sprintf("dsgd Winograd F(%d,3) forward, data and weights passes (%s)", l.wg.fwd.m, l.wg.why)
	}
	k := fmt.Sprintf("dsgd Winograd F(%d,3) forward and data pass (%s)", l.wg.fwd.m, l.wg.why)
	if l.dn.on && !l.dn.ownWeights {
		_, wimpl, _ := strings.Cut(l.dn.impl.Backward, " / ")
		if wimpl == "" {
			wimpl = l.dn.impl.Backward
		}
		return k + "; weights pass on oneDNN " + wimpl
	}
	return k + "; weights pass on im2col + GEMM"
}

// winoScratch is the Winograd scratch that lives within one pass of one
// layer: the transformed kernel (the weights pass's sums), the padded
// input or dy, the weights pass's padded input, and each worker's chunk
// buffers. Nothing in it is kept from one pass to the next, so the layers
// of a net, whose passes run one at a time on the net's tensor.Pool, share
// one (as oneDNN's primitives share a scratchpad): the largest layer's
// needs, not their sum. Every layer grows it to its needs in Reshape, so
// the passes allocate nothing.
type winoScratch struct {
	u, pad, padX []float32
	bufs         []winoBuf // per worker
}

// winoScratches maps a net's pool to its layers' scratch, without keeping
// the pool reachable: its entry goes when the pool is collected.
var winoScratches struct {
	sync.Mutex
	m map[weak.Pointer[tensor.Pool]]*winoScratch
}

// winoScratchFor is the scratch shared by the layers that run on pool p;
// a nil pool (a layer built alone, in tests) gets a scratch of its own.
func winoScratchFor(p *tensor.Pool) *winoScratch {
	if p == nil {
		return new(winoScratch)
	}
	wp := weak.Make(p)
	winoScratches.Lock()
	defer winoScratches.Unlock()
	if sc, ok := winoScratches.m[wp]; ok {
		return sc
	}
	if winoScratches.m == nil {
		winoScratches.m = map[weak.Pointer[tensor.Pool]]*winoScratch{}
	}
	sc := new(winoScratch)
	winoScratches.m[wp] = sc
	runtime.AddCleanup(p, func(wp weak.Pointer[tensor.Pool]) {
		winoScratches.Lock()
		delete(winoScratches.m, wp)
		winoScratches.Unlock()
	}, wp)
	return sc
}

// growBuf returns buf if it holds n floats, else a new buffer of n: a
// shared buffer keeps the largest length asked for.
func growBuf(buf []float32, n int) []float32 {
	if len(buf) >= n {
		return buf
	}
	return make([]float32, n)
}
