package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// DeconvolutionConfig is Caffe's ConvolutionParameter as the Deconvolution
// layer reads it: the same fields, the roles of input and output swapped.
type DeconvolutionConfig struct {
	ConvolutionConfig
}

// Type returns "Deconvolution".
func (*DeconvolutionConfig) Type() string { return "Deconvolution" }

// Build returns Caffe's Deconvolution layer, the transpose of a
// Convolution: each input pixel scatters its channels through the kernel
// into a top of NumOutput channels and size stride·(in − 1) + dilated
// kernel − 2·pad on each spatial axis. The weight has shape (bottom
// channels, NumOutput/group, kernel...), as in Caffe, so a bilinear filler
// gives upsampling. 2-D NCHW runs here; other geometries (N-D, axis,
// force_nd_im2col) on ndConvLayer. Several bottom/top pairs share the
// weights.
func (c *DeconvolutionConfig) Build(ctx Context) (Layer, error) {
	conv := c.ConvolutionConfig
	if _, err := conv.Build(ctx); err != nil { // the same checks
		return nil, fmt.Errorf("layers: Deconvolution: %s", err.Error()[len("layers: Convolution: "):])
	}
	return &deconvLayer{cfg: conv, threads: ctx.NumThreads(), pool: ctx.Pool}, nil
}

// deconvLayer computes, per image and group, col = Wᵀ·x then col2im into
// the top (forward); im2col of the top diff gives the weight gradient
// (x·colᵀ) and the bottom diff (W·col). Images run in parallel, each
// worker with its own column buffer and weight-gradient sum.
type deconvLayer struct {
	paramGrads
	cfg     ConvolutionConfig
	threads int
	pool    *tensor.Pool

	weight, bias *tensor.Blob
	params       []Param
	cin          int
	geom         convGeom // the convolution whose transpose this is: over the top
	num          int
	cols         [][]float32
	wdiff        [][]float32
	bdiff        [][]float32
	used         []bool

	in, out  *tensor.Blob
	propDown bool

	// nd, set by Setup when the geometry is not plain 2-D NCHW, runs the
	// layer.
	nd *ndConvLayer
}

func (*deconvLayer) Type() string { return "Deconvolution" }

func (l *deconvLayer) Params() []Param {
	if l.nd != nil {
		return l.nd.Params()
	}
	return l.params
}

func (l *deconvLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkPairs("Deconvolution", bottom, top); err != nil {
		return err
	}
	b := bottom[0]
	g, err := l.cfg.resolveND("Deconvolution", b.Shape)
	if err != nil {
		return err
	}
	if !g.plain2D() {
		l.nd = newNDConv("Deconvolution", true, l.cfg, g, l.threads, l.pool)
		return l.nd.Setup(bottom, top)
	}
	c := &l.cfg
	c.set2D(g)
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: Deconvolution: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	l.cin = b.Shape[1]
	if l.cin%l.cfg.Group != 0 {
		return fmt.Errorf("layers: Deconvolution: bottom %q has %d channels, not a multiple of group %d", b.Name, l.cin, l.cfg.Group)
	}
	l.weight = tensor.NewBlob("weight", l.cin, c.NumOutput/c.Group, c.KernelH, c.KernelW)
	l.params = []Param{{Blob: l.weight, Filler: c.WeightFiller}}
	if c.BiasTerm {
		l.bias = tensor.NewBlob("bias", c.NumOutput)
		l.params = append(l.params, Param{Blob: l.bias, Filler: c.BiasFiller})
	}
	l.cols = make([][]float32, l.threads)
	l.wdiff = make([][]float32, l.threads)
	l.bdiff = make([][]float32, l.threads)
	l.used = make([]bool, l.threads)
	for w := 1; w < l.threads; w++ {
		l.wdiff[w] = make([]float32, l.weight.Count())
		if l.bias != nil {
			l.bdiff[w] = make([]float32, c.NumOutput)
		}
	}
	return nil
}

func (l *deconvLayer) Reshape(bottom, top []*tensor.Blob) error {
	if l.nd != nil {
		return l.nd.Reshape(bottom, top)
	}
	if err := checkSameShapes("Deconvolution", bottom); err != nil {
		return err
	}
	b := bottom[0]
	if len(b.Shape) != 4 || b.Shape[1] != l.cin {
		return fmt.Errorf("layers: Deconvolution: bottom %q has shape %v; the layer was set up for %d channels, NCHW", b.Name, b.Shape, l.cin)
	}
	c := &l.cfg
	g := convGeom{
		c: c.NumOutput, kh: c.KernelH, kw: c.KernelW,
		sh: c.StrideH, sw: c.StrideW, ph: c.PadH, pw: c.PadW,
		dh: c.DilationH, dw: c.DilationW,
		oh: b.Shape[2], ow: b.Shape[3], ys: l.geom.ys, xs: l.geom.xs,
	}
	eh, ew := g.extent()
	g.h = g.sh*(g.oh-1) + eh - 2*g.ph
	g.w = g.sw*(g.ow-1) + ew - 2*g.pw
	if g.h < 1 || g.w < 1 {
		return fmt.Errorf("layers: Deconvolution: bottom %q %v gives an empty top (%dx%d): the pad is too large", b.Name, b.Shape, g.h, g.w)
	}
	g.initRanges()
	l.geom = g
	l.num = b.Shape[0]
	for _, t := range top {
		t.Reshape(l.num, c.NumOutput, g.h, g.w)
	}
	for w := range l.cols {
		l.cols[w] = fitBuf(l.cols[w], g.colRows()*g.colCols())
	}
	return nil
}

// Forward runs each bottom/top pair through the layer.
func (l *deconvLayer) Forward(bottom, top []*tensor.Blob) {
	if l.nd != nil {
		l.nd.Forward(bottom, top)
		return
	}
	for i := range bottom {
		l.in, l.out = bottom[i], top[i]
		l.pool.For(l.num, l.threads, l.forwardImages)
	}
	l.in, l.out = nil, nil
}

func (l *deconvLayer) forwardImages(lo, hi, w int) {
	g := &l.geom
	groups := l.cfg.Group
	cg, kg := l.cin/groups, g.colRows()/groups // bottom channels and column rows per group
	hw, inSize, outSize := g.colCols(), l.cin*g.colCols(), g.c*g.h*g.w
	col := l.cols[w]
	for n := lo; n < hi; n++ {
		x := l.in.Data[n*inSize : (n+1)*inSize]
		for gi := range groups {
			tensor.Gemm(true, false, kg, hw, cg,
				1, l.weight.Data[gi*cg*kg:], kg, x[gi*cg*hw:], hw,
				0, col[gi*kg*hw:], hw)
		}
		y := l.out.Data[n*outSize : (n+1)*outSize]
		col2im(y, col, g, hw)
		if l.bias != nil {
			plane := g.h * g.w
			for m, v := range l.bias.Data {
				for i := m * plane; i < (m+1)*plane; i++ {
					y[i] += v
				}
			}
		}
	}
}

// Backward accumulates each pair's param gradients and writes its bottom
// diff.
func (l *deconvLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if l.nd != nil {
		l.nd.Backward(top, propagateDown, bottom)
		return
	}
	for i := range bottom {
		l.in, l.out, l.propDown = bottom[i], top[i], propagateDown[i]
		clear(l.used)
		l.pool.For(l.num, l.threads, l.backwardImages)
		l.addWorkerGrads(l.weight, l.bias, l.wdiff, l.bdiff, l.used, 1)
	}
	l.in, l.out = nil, nil
}

func (l *deconvLayer) backwardImages(lo, hi, w int) {
	g := &l.geom
	groups := l.cfg.Group
	cg, kg := l.cin/groups, g.colRows()/groups
	hw, inSize, outSize := g.colCols(), l.cin*g.colCols(), g.c*g.h*g.w
	col := l.cols[w]
	wd, bd := l.weight.Diff, []float32(nil)
	if l.bias != nil {
		bd = l.bias.Diff
	}
	if w > 0 {
		wd, bd = l.wdiff[w], l.bdiff[w]
		clear(wd)
		clear(bd)
	}
	l.used[w] = true
	if !l.want(1) {
		bd = nil
	}
	plane := g.h * g.w
	for n := lo; n < hi; n++ {
		dy := l.out.Diff[n*outSize : (n+1)*outSize]
		for m := range bd { // no bias: bd is nil
			var s float32
			for _, v := range dy[m*plane : (m+1)*plane] {
				s += v
			}
			bd[m] += s
		}
		im2col(col, dy, g, hw)
		x := l.in.Data[n*inSize : (n+1)*inSize]
		for gi := 0; l.want(0) && gi < groups; gi++ {
			// dW_g += x_g · col_gᵀ
			tensor.Gemm(false, true, cg, kg, hw,
				1, x[gi*cg*hw:], hw, col[gi*kg*hw:], hw,
				1, wd[gi*cg*kg:], kg)
		}
		if !l.propDown {
			continue
		}
		dx := l.in.Diff[n*inSize : (n+1)*inSize]
		for gi := range groups {
			tensor.Gemm(false, false, cg, hw, kg,
				1, l.weight.Data[gi*cg*kg:], kg, col[gi*kg*hw:], hw,
				0, dx[gi*cg*hw:], hw)
		}
	}
}

// SetParamPropagate implements ParamPropagator, for the N-D path too.
func (l *deconvLayer) SetParamPropagate(on []bool) {
	l.paramGrads.SetParamPropagate(on)
	if l.nd != nil {
		l.nd.SetParamPropagate(on)
	}
}
