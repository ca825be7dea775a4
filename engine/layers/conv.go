package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Type returns "Convolution".
func (*ConvolutionConfig) Type() string { return "Convolution" }

// Build validates the config and returns an unset-up Convolution layer that
// splits each batch's images across ctx.NumThreads() goroutines.
func (c *ConvolutionConfig) Build(ctx Context) (Layer, error) {
	hw := c.ND == nil // with ND, Setup checks the geometry it resolves
	switch {
	case c.NumOutput <= 0:
		return nil, fmt.Errorf("layers: Convolution: num_output must be positive, got %d", c.NumOutput)
	case hw && (c.KernelH <= 0 || c.KernelW <= 0):
		return nil, fmt.Errorf("layers: Convolution: kernel size must be positive, got %dx%d", c.KernelH, c.KernelW)
	case hw && (c.StrideH <= 0 || c.StrideW <= 0):
		return nil, fmt.Errorf("layers: Convolution: stride must be positive, got %dx%d", c.StrideH, c.StrideW)
	case hw && (c.PadH < 0 || c.PadW < 0):
		return nil, fmt.Errorf("layers: Convolution: pad must not be negative, got %dx%d", c.PadH, c.PadW)
	case hw && (c.DilationH < 0 || c.DilationW < 0):
		return nil, fmt.Errorf("layers: Convolution: dilation must be positive, got %dx%d", c.DilationH, c.DilationW)
	case c.Group <= 0:
		return nil, fmt.Errorf("layers: Convolution: group must be positive, got %d", c.Group)
	case c.NumOutput%c.Group != 0:
		return nil, fmt.Errorf("layers: Convolution: num_output %d is not a multiple of group %d", c.NumOutput, c.Group)
	}
	l := &convLayer{cfg: *c, threads: ctx.NumThreads(), pool: ctx.Pool, blockCols: blockColumns}
	l.fwdFn = l.forwardImages
	l.bwdFn = l.backwardImages
	l.dnFwdFn = l.dnnlForward
	l.dnBwdFn = l.dnnlBackward
	return l, nil
}

// convLayer is Caffe's Convolution layer (2-D, NCHW): im2col then GEMM,
// or oneDNN (conv_dnnl.go). Several bottom/top pairs run one after the
// other through the same weights. Any other geometry (other than 2
// spatial axes, a channel axis other than 1, force_nd_im2col) runs on
// ndConvLayer (conv_nd.go), which Setup puts in nd.
//
// Images are processed in fixed blocks of blk images (blk depends only on
// the geometry): a block's column matrices sit side by side, so one GEMM
// per group covers the whole block, which keeps the GEMMs wide when each
// image has few output pixels. Blocks are split across worker goroutines;
// each worker owns its column and block buffers and, for the parameter
// gradients, an accumulation buffer (worker 0 accumulates straight into the
// param diffs, the others are added to them in worker order after each
// backward pass). Forward outputs and bottom diffs are therefore identical
// for any thread count, and param diffs equal up to the order of that sum.
//
// When the batch's column matrices fit in cacheFloats, Forward builds them
// in a layer-wide cache and Backward reuses them instead of running im2col
// again: like Caffe, Backward assumes the bottom is unchanged since
// Forward. A 1x1, stride-1, unpadded convolution needs no columns at all.
type convLayer struct {
	paramGrads
	cfg     ConvolutionConfig
	threads int
	pool    *tensor.Pool

	weight, bias *tensor.Blob
	params       []Param

	geom     convGeom
	oneByOne bool // 1x1 kernel, stride 1, no pad: the image is its own column matrix
	num      int
	blk      int // images per block
	// blockCols is the number of GEMM columns a block aims for: the
	// blockColumns constant, lowered by tests to exercise many blocks.
	blockCols int

	ones []float32   // blk·colCols ones: the bias multiplier
	cols [][]float32 // per worker: colRows × blk·colCols
	// cache, when the batch's column matrices fit in cacheFloats, holds
	// them all (block by block, each colRows × b·colCols) from Forward, so
	// Backward need not rebuild them.
	cache []float32
	// cached says cache holds the columns of the last Forward's bottom.
	cached bool
	outs   [][]float32 // per worker, when blk > 1: num_output × blk·colCols
	wdiff  [][]float32 // per worker ≥ 1: weight-gradient partial sums
	bdiff  [][]float32 // per worker ≥ 1: bias-gradient partial sums
	used   []bool      // per worker: ran at least one block this pass

	// Arguments of the current Forward/Backward, read by the workers. The
	// worker funcs are bound once in Build so passing them allocates nothing.
	in, out  *tensor.Blob
	propDown bool
	// noParams leaves the param gradients to the other engine: the pass
	// now running computes the bottom diff only.
	noParams     bool
	fwdFn, bwdFn func(lo, hi, worker int)

	// dn is the oneDNN side (conv_dnnl.go), used when dn.on.
	dn               dnnlState
	dnFwdFn, dnBwdFn func(lo, hi, worker int)

	// wg is dsgd's own Winograd side (conv_wino.go), used when wg.on.
	wg winoState

	// th is dsgd's direct weights pass for few input channels
	// (conv_thin.go), used beside oneDNN when th.on.
	th thinState

	// nd, set by Setup when the geometry is not plain 2-D NCHW (other
	// than 2 spatial axes, axis != 1, force_nd_im2col), runs the layer.
	nd *ndConvLayer
}

// blockColumns is the number of GEMM columns a block of images aims for,
// blockFloats caps a worker's column buffer, and cacheFloats caps the
// column cache of a layer.
const (
	blockColumns = 512
	blockFloats  = 1 << 20
	cacheFloats  = 8 << 20
)

func (l *convLayer) Type() string { return "Convolution" }

func (l *convLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkPairs("Convolution", bottom, top); err != nil {
		return err
	}
	b := bottom[0]
	g, err := l.cfg.resolveND("Convolution", b.Shape)
	if err != nil {
		return err
	}
	if !g.plain2D() {
		l.nd = newNDConv("Convolution", false, l.cfg, g, l.threads, l.pool)
		return l.nd.Setup(bottom, top)
	}
	c := &l.cfg
	c.set2D(g)
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: Convolution: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	ch := b.Shape[1]
	if ch%l.cfg.Group != 0 {
		return fmt.Errorf("layers: Convolution: bottom %q has %d channels, not a multiple of group %d", b.Name, ch, l.cfg.Group)
	}
	l.geom.c = ch
	l.weight = tensor.NewBlob("weight", l.cfg.NumOutput, ch/l.cfg.Group, l.cfg.KernelH, l.cfg.KernelW)
	l.params = []Param{{Blob: l.weight, Filler: l.cfg.WeightFiller}}
	if l.cfg.BiasTerm {
		l.bias = tensor.NewBlob("bias", l.cfg.NumOutput)
		l.params = append(l.params, Param{Blob: l.bias, Filler: l.cfg.BiasFiller})
	}
	l.wdiff = make([][]float32, l.threads)
	l.bdiff = make([][]float32, l.threads)
	// Worker 0 accumulates into the param diffs on im2col; on oneDNN,
	// which overwrites, every worker has its own buffer.
	for w := 0; w < l.threads; w++ {
		l.wdiff[w] = make([]float32, l.weight.Count())
		if l.bias != nil {
			l.bdiff[w] = make([]float32, l.cfg.NumOutput)
		}
	}
	l.cols = make([][]float32, l.threads)
	l.outs = make([][]float32, l.threads)
	l.used = make([]bool, l.threads)
	return nil
}

func (l *convLayer) Params() []Param {
	if l.nd != nil {
		return l.nd.Params()
	}
	return l.params
}

func (l *convLayer) Reshape(bottom, top []*tensor.Blob) error {
	if l.nd != nil {
		return l.nd.Reshape(bottom, top)
	}
	if err := checkSameShapes("Convolution", bottom); err != nil {
		return err
	}
	b := bottom[0]
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: Convolution: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	if b.Shape[1] != l.geom.c {
		return fmt.Errorf("layers: Convolution: bottom %q has %d channels, the layer was set up for %d", b.Name, b.Shape[1], l.geom.c)
	}
	c := &l.cfg
	g := convGeom{
		c: b.Shape[1], h: b.Shape[2], w: b.Shape[3],
		kh: c.KernelH, kw: c.KernelW,
		sh: c.StrideH, sw: c.StrideW,
		ph: c.PadH, pw: c.PadW,
		dh: c.DilationH, dw: c.DilationW,
	}
	eh, ew := g.extent()
	if g.h+2*g.ph < eh || g.w+2*g.pw < ew {
		return fmt.Errorf("layers: Convolution: kernel %dx%d (dilated to %dx%d) is larger than bottom %q padded to %dx%d",
			g.kh, g.kw, eh, ew, b.Name, g.h+2*g.ph, g.w+2*g.pw)
	}
	g.oh = (g.h+2*g.ph-eh)/g.sh + 1
	g.ow = (g.w+2*g.pw-ew)/g.sw + 1
	g.ys, g.xs = l.geom.ys, l.geom.xs
	g.initRanges()
	l.geom = g
	l.num = b.Shape[0]
	l.oneByOne = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0
	for _, t := range top {
		t.Reshape(l.num, c.NumOutput, g.oh, g.ow)
	}
	l.dnnlSetup()
	l.winoSetup()
	l.th.on = false
	if !l.wg.on {
		l.thinSetup()
	}
	if l.dn.on || l.wg.on {
		l.cache, l.cached = nil, false
		if l.dn.on && !l.dn.ownData && !l.dn.ownWeights {
			return nil
		}
		// A backward pass on im2col + GEMM beside oneDNN's forward: its
		// buffers, but no column cache (the forward builds no columns).
		l.ownSetup(false)
		return nil
	}
	l.ownSetup(true)
	return nil
}

// ownSetup sizes the im2col + GEMM path's buffers for the geometry Reshape
// computed; cache allows the batch-wide column cache.
func (l *convLayer) ownSetup(cache bool) {
	g, c := &l.geom, &l.cfg
	ohw, k := g.colCols(), g.colRows()
	l.blk = 1
	if !l.oneByOne {
		l.blk = max(1, min(l.blockCols/max(ohw, 1), blockFloats/max(k*ohw, 1)))
	}
	cols := l.blk * ohw
	if len(l.ones) != cols {
		l.ones = fitBuf(l.ones, cols)
		for i := range l.ones {
			l.ones[i] = 1
		}
	}
	l.cached = false
	if n := l.num * k * ohw; cache && !l.oneByOne && n <= cacheFloats {
		l.cache = fitBuf(l.cache, n)
	} else {
		l.cache = nil
	}
	for w := range l.cols {
		if !l.oneByOne {
			l.cols[w] = fitBuf(l.cols[w], k*cols)
		}
		if l.blk > 1 {
			l.outs[w] = fitBuf(l.outs[w], c.NumOutput*cols)
		}
	}
}

// blocks is the number of image blocks in the batch.
func (l *convLayer) blocks() int { return (l.num + l.blk - 1) / l.blk }

// Forward runs each bottom/top pair through the layer.
func (l *convLayer) Forward(bottom, top []*tensor.Blob) {
	if l.nd != nil {
		l.nd.Forward(bottom, top)
		return
	}
	for i := range bottom {
		l.forward(bottom[i], top[i])
	}
}

func (l *convLayer) forward(bottom, top *tensor.Blob) {
	l.in, l.out = bottom, top
	if l.wg.on {
		l.winoPass(false, false)
		l.in, l.out = nil, nil
		return
	}
	l.th.fresh = false
	if l.th.on && l.th.fwd {
		l.thinForward()
		l.in, l.out = nil, nil
		return
	}
	if l.dn.on {
		l.dnnlForwardAll()
		l.in, l.out = nil, nil
		return
	}
	l.cached = false
	l.pool.For(l.blocks(), l.threads, l.fwdFn)
	l.cached = l.cache != nil
	l.in, l.out = nil, nil
}

// columns returns the column matrix of images [n0, n0+b), leading
// dimension b·colCols: the image itself for a 1x1 convolution (where b is
// 1), else built in the cache (or, without one, in worker w's buffer), or
// read from the cache when reuse is set and Forward filled it.
func (l *convLayer) columns(n0, b, w int, reuse bool) []float32 {
	g := &l.geom
	inSize := g.c * g.h * g.w
	if l.oneByOne {
		return l.in.Data[n0*inSize : (n0+1)*inSize]
	}
	ohw := g.colCols()
	col := l.cols[w]
	if l.cache != nil {
		k := g.colRows()
		col = l.cache[n0*k*ohw : (n0+b)*k*ohw]
		if reuse && l.cached {
			return col
		}
	}
	for i := 0; i < b; i++ {
		im2col(col[i*ohw:], l.in.Data[(n0+i)*inSize:(n0+i+1)*inSize], g, b*ohw)
	}
	return col
}

// forwardImages computes the tops of image blocks [lo, hi) with worker w's
// buffers.
func (l *convLayer) forwardImages(lo, hi, w int) {
	g := &l.geom
	m, ohw := l.cfg.NumOutput, g.colCols()
	groups := l.cfg.Group
	mg, kg := m/groups, g.colRows()/groups
	outSize := m * ohw
	weight := l.weight.Data
	for n0 := lo * l.blk; n0 < min(hi*l.blk, l.num); n0 += l.blk {
		b := min(l.blk, l.num-n0)
		ld := b * ohw
		col := l.columns(n0, b, w, false)
		out := l.out.Data[n0*outSize : (n0+1)*outSize]
		if b > 1 {
			out = l.outs[w]
		}
		for gi := 0; gi < groups; gi++ {
			tensor.Gemm(false, false, mg, ld, kg,
				1, weight[gi*mg*kg:], kg, col[gi*kg*ld:], ld,
				0, out[gi*mg*ld:], ld)
		}
		if l.bias != nil {
			// top += bias·1ᵀ as a rank-1 GEMM, vectorised by BLAS.
			tensor.Gemm(false, false, m, ld, 1, 1, l.bias.Data, 1, l.ones, ld, 1, out, ld)
		}
		if b > 1 {
			for i := 0; i < b; i++ {
				top := l.out.Data[(n0+i)*outSize : (n0+i+1)*outSize]
				for mi := 0; mi < m; mi++ {
					copy(top[mi*ohw:(mi+1)*ohw], out[mi*ld+i*ohw:])
				}
			}
		}
	}
}

// Backward accumulates each pair's param gradients and writes its bottom
// diff. With several pairs, the column cache (im2col) and the oneDNN
// primitives' saved forward state hold the last pair's, so every pair
// rebuilds its own.
func (l *convLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if l.nd != nil {
		l.nd.Backward(top, propagateDown, bottom)
		return
	}
	for i := range bottom {
		if len(bottom) > 1 {
			// Each pair's forward overwrote the last one's columns and
			// padded input: rebuild them.
			l.cached = false
			clear(l.dn.fresh)
			l.th.fresh = false
		}
		l.backward(top[i], propagateDown[i], bottom[i])
	}
}

func (l *convLayer) backward(top *tensor.Blob, propagateDown bool, bottom *tensor.Blob) {
	l.in, l.out = bottom, top
	l.propDown, l.noParams = propagateDown, false
	if l.wg.on {
		l.winoBackward(propagateDown)
		l.propDown, l.noParams = propagateDown, false
		l.in, l.out = nil, nil
		return
	}
	if !l.dn.on {
		if l.th.on {
			// The data pass on im2col + GEMM, the weights pass on the
			// direct kernel.
			l.noParams = true
			if propagateDown {
				l.ownBackward()
			}
			if l.want(0) || l.bias != nil && l.want(1) {
				l.thinWeights()
			}
		} else {
			l.ownBackward()
		}
		l.propDown, l.noParams = propagateDown, false
		l.in, l.out = nil, nil
		return
	}
	// On oneDNN, but a pass may run on im2col + GEMM (dnnlSetup's rules)
	// or the weights pass on dsgd's direct kernel (th): oneDNN does its
	// passes first, then the own kernels theirs.
	l.propDown, l.noParams = propagateDown && !l.dn.ownData, l.dn.ownWeights || l.th.on
	if l.propDown || !l.noParams {
		l.dnnlBackwardAll()
	}
	if l.th.on && (l.want(0) || l.bias != nil && l.want(1)) {
		l.thinWeights()
	}
	if propagateDown && l.dn.ownData || l.dn.ownWeights {
		l.propDown, l.noParams = propagateDown && l.dn.ownData, !l.dn.ownWeights
		l.ownBackward()
	}
	l.propDown, l.noParams = propagateDown, false
	l.in, l.out = nil, nil
}

// ownBackward is the backward pass on im2col + GEMM.
func (l *convLayer) ownBackward() {
	clear(l.used)
	l.pool.For(l.blocks(), l.threads, l.bwdFn)
	if !l.noParams {
		l.addWorkerGrads(l.weight, l.bias, l.wdiff, l.bdiff, l.used, 1)
	}
}

// backwardImages accumulates the param gradients of image blocks [lo, hi)
// into worker w's buffers (worker 0: the param diffs themselves) and, when
// asked, writes their bottom diffs.
func (l *convLayer) backwardImages(lo, hi, w int) {
	g := &l.geom
	m, ohw := l.cfg.NumOutput, g.colCols()
	groups := l.cfg.Group
	mg, kg := m/groups, g.colRows()/groups
	inSize, outSize := g.c*g.h*g.w, m*ohw
	weight := l.weight.Data
	wd, bd := l.weight.Diff, []float32(nil)
	if l.bias != nil {
		bd = l.bias.Diff
	}
	var beta float32 = 1
	if w > 0 {
		wd, bd, beta = l.wdiff[w], l.bdiff[w], 0
	}
	l.used[w] = true
	for n0 := lo * l.blk; n0 < min(hi*l.blk, l.num); n0 += l.blk {
		b := min(l.blk, l.num-n0)
		ld := b * ohw
		td := l.out.Diff[n0*outSize : (n0+1)*outSize]
		if b > 1 {
			td = l.outs[w]
			for i := 0; i < b; i++ {
				top := l.out.Diff[(n0+i)*outSize : (n0+i+1)*outSize]
				for mi := 0; mi < m; mi++ {
					copy(td[mi*ld+i*ohw:mi*ld+(i+1)*ohw], top[mi*ohw:])
				}
			}
		}
		if l.want(0) && !l.noParams {
			// Caffe's param_propagate_down: no weight gradient for
			// lr_mult 0, and no columns to make for it.
			col := l.columns(n0, b, w, true)
			for gi := 0; gi < groups; gi++ {
				tensor.Gemm(false, true, mg, kg, ld,
					1, td[gi*mg*ld:], ld, col[gi*kg*ld:], ld,
					beta, wd[gi*mg*kg:], kg)
			}
		}
		if bd != nil && l.want(1) && !l.noParams {
			// bias diff += top diff·1, a GEMV.
			tensor.Gemm(false, false, m, 1, ld, 1, td, ld, l.ones, 1, beta, bd, 1)
		}
		beta = 1
		if !l.propDown {
			continue
		}
		dcol := l.in.Diff[n0*inSize : (n0+1)*inSize]
		if !l.oneByOne {
			dcol = l.cols[w]
		}
		for gi := 0; gi < groups; gi++ {
			tensor.Gemm(true, false, kg, ld, mg,
				1, weight[gi*mg*kg:], kg, td[gi*mg*ld:], ld,
				0, dcol[gi*kg*ld:], ld)
		}
		if !l.oneByOne {
			for i := 0; i < b; i++ {
				col2im(l.in.Diff[(n0+i)*inSize:(n0+i+1)*inSize], dcol[i*ohw:], g, ld)
			}
		}
	}
}

// SetParamPropagate implements ParamPropagator, for the N-D path too.
func (l *convLayer) SetParamPropagate(on []bool) {
	l.paramGrads.SetParamPropagate(on)
	if l.nd != nil {
		l.nd.SetParamPropagate(on)
	}
}

// addWorkerGrads adds the weight and bias gradients that workers from on
// summed in their own buffers (those that ran: used) into the params'
// diffs, leaving out a param whose gradient is not wanted. The
// convolution family's backward passes end with it.
func (g *paramGrads) addWorkerGrads(weight, bias *tensor.Blob, wdiff, bdiff [][]float32, used []bool, from int) {
	for w := from; w < len(used); w++ {
		if !used[w] {
			continue
		}
		if g.want(0) {
			tensor.AddTo(weight.Diff, wdiff[w])
		}
		if bias != nil && g.want(1) {
			tensor.AddTo(bias.Diff, bdiff[w])
		}
	}
}
