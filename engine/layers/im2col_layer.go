package layers

import (
	"fmt"
	"slices"

	"dsgd/engine/tensor"
)

// Im2colConfig configures Caffe's Im2col layer from the window fields of
// its ConvolutionParameter (2-D; num_output and the fillers are unused).
type Im2colConfig struct {
	KernelH, KernelW     int
	StrideH, StrideW     int // default 1
	PadH, PadW           int // default 0
	DilationH, DilationW int // default 1 (0 reads as 1)
	// ND, when set, is the window as Caffe's repeated fields and axis give
	// it, resolved against the bottom at Setup: any number of spatial axes
	// after the channel axis, or force_nd_im2col. A plain 2-D NCHW window
	// runs the 2-D path either way.
	ND *ConvND
}

// Type returns "Im2col".
func (*Im2colConfig) Type() string { return "Im2col" }

// Build returns an Im2col layer: each image of its NCHW bottom becomes
// the column matrix a convolution with this window would multiply, as a
// top of shape (N, C·kh·kw, oh, ow): channel (c·kh + i)·kw + j at output
// (y, x) holds the pixel (y·sh − ph + i·dh, x·sw − pw + j·dw) of channel c,
// or 0 in the padding. Backward sums each column entry back into its
// pixel (col2im).
func (c *Im2colConfig) Build(ctx Context) (Layer, error) {
	if c.ND != nil {
		return &im2colSwitch{cfg: *c, threads: ctx.NumThreads(), pool: ctx.Pool}, nil
	}
	switch {
	case c.KernelH <= 0 || c.KernelW <= 0:
		return nil, fmt.Errorf("layers: Im2col: kernel size must be positive, got %dx%d", c.KernelH, c.KernelW)
	case c.StrideH <= 0 || c.StrideW <= 0:
		return nil, fmt.Errorf("layers: Im2col: stride must be positive, got %dx%d", c.StrideH, c.StrideW)
	case c.PadH < 0 || c.PadW < 0:
		return nil, fmt.Errorf("layers: Im2col: pad must not be negative, got %dx%d", c.PadH, c.PadW)
	case c.DilationH < 0 || c.DilationW < 0:
		return nil, fmt.Errorf("layers: Im2col: dilation must be positive, got %dx%d", c.DilationH, c.DilationW)
	}
	return newIm2col2D(*c, ctx.NumThreads(), ctx.Pool), nil
}

func newIm2col2D(c Im2colConfig, threads int, pool *tensor.Pool) *im2colLayer {
	l := &im2colLayer{cfg: c, threads: threads, pool: pool}
	l.fwdFn, l.bwdFn = l.forwardImages, l.backwardImages
	return l
}

// im2colSwitch is an Im2col whose window is resolved against its bottom
// at Setup: the 2-D layer for a plain NCHW window, else im2colND.
type im2colSwitch struct {
	cfg     Im2colConfig
	threads int
	pool    *tensor.Pool
	Layer
}

func (*im2colSwitch) Type() string { return "Im2col" }

func (l *im2colSwitch) Params() []Param {
	if l.Layer == nil {
		return nil
	}
	return l.Layer.Params()
}

func (l *im2colSwitch) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Im2col", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	c := l.cfg
	conv := ConvolutionConfig{KernelH: c.KernelH, KernelW: c.KernelW, StrideH: c.StrideH, StrideW: c.StrideW,
		PadH: c.PadH, PadW: c.PadW, DilationH: c.DilationH, DilationW: c.DilationW, ND: c.ND}
	g, err := conv.resolveND("Im2col", bottom[0].Shape)
	if err != nil {
		return err
	}
	if g.plain2D() {
		conv.set2D(g)
		c.KernelH, c.KernelW, c.StrideH, c.StrideW = conv.KernelH, conv.KernelW, conv.StrideH, conv.StrideW
		c.PadH, c.PadW, c.DilationH, c.DilationW = conv.PadH, conv.PadW, conv.DilationH, conv.DilationW
		c.ND = nil
		l.Layer = newIm2col2D(c, l.threads, l.pool)
	} else {
		l.Layer = &im2colND{conv: ndConvLayer{name: "Im2col", g: *g, threads: l.threads, pool: l.pool}}
	}
	return l.Layer.Setup(bottom, top)
}

// im2colND is Caffe's Im2col on the im2col_nd path: each item of the axes
// before the channel axis becomes its column matrix, a top of shape
// (axes before, C·Πkernel, output spatial axes...).
type im2colND struct {
	conv     ndConvLayer // the geometry and im2colND's moves; no weights
	channels int
	idx      [][]int
	in, out  *tensor.Blob
}

func (*im2colND) Type() string    { return "Im2col" }
func (*im2colND) Params() []Param { return nil }

func (l *im2colND) Setup(bottom, top []*tensor.Blob) error {
	l.conv.shape = slices.Clone(bottom[0].Shape)
	l.channels = bottom[0].Shape[l.conv.g.axis]
	l.idx = make([][]int, l.conv.threads)
	for w := range l.idx {
		l.idx[w] = make([]int, 2*len(l.conv.g.kernel))
	}
	return l.Reshape(bottom, top)
}

func (l *im2colND) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	g := &l.conv.g
	ax := g.axis
	if len(b.Shape) != len(l.conv.shape) || b.Shape[ax] != l.channels {
		return fmt.Errorf("layers: Im2col: bottom %q has shape %v; the layer was set up for %d axes with %d channels on axis %d",
			b.Name, b.Shape, len(l.conv.shape), l.channels, ax)
	}
	in := b.Shape[ax+1:]
	out := make([]int, len(g.kernel))
	for i := range out {
		ext := g.dila[i]*(g.kernel[i]-1) + 1
		if in[i]+2*g.pad[i] < ext {
			return fmt.Errorf("layers: Im2col: the window (kernel %v, dilation %v) does not fit bottom %q %v padded by %v on spatial axis %d",
				g.kernel, g.dila, b.Name, b.Shape, g.pad, i)
		}
		out[i] = (in[i]+2*g.pad[i]-ext)/g.stride[i] + 1
	}
	l.conv.imSp, l.conv.colSp = slices.Clone(in), out
	l.conv.imC = l.channels
	l.conv.num = 1
	for _, d := range b.Shape[:ax] {
		l.conv.num *= d
	}
	top[0].Reshape(append(append(slices.Clone(b.Shape[:ax]), l.channels*prod(g.kernel)), out...)...)
	return nil
}

func (l *im2colND) Forward(bottom, top []*tensor.Blob) {
	l.in, l.out = bottom[0], top[0]
	l.conv.pool.For(l.conv.num, min(l.conv.threads, l.conv.num), l.forwardItems)
	l.in, l.out = nil, nil
}

func (l *im2colND) forwardItems(lo, hi, w int) {
	in, out := l.in.Count()/l.conv.num, l.out.Count()/l.conv.num
	for n := lo; n < hi; n++ {
		l.conv.im2colND(l.in.Data[n*in:(n+1)*in], l.out.Data[n*out:(n+1)*out], l.channels, l.idx[w], true)
	}
}

func (l *im2colND) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	l.in, l.out = bottom[0], top[0]
	l.conv.pool.For(l.conv.num, min(l.conv.threads, l.conv.num), l.backwardItems)
	l.in, l.out = nil, nil
}

// backwardItems sums each column entry back into its pixel (col2im_nd).
func (l *im2colND) backwardItems(lo, hi, w int) {
	in, out := l.in.Count()/l.conv.num, l.out.Count()/l.conv.num
	for n := lo; n < hi; n++ {
		dx := l.in.Diff[n*in : (n+1)*in]
		clear(dx)
		l.conv.im2colND(dx, l.out.Diff[n*out:(n+1)*out], l.channels, l.idx[w], false)
	}
}

type im2colLayer struct {
	cfg     Im2colConfig
	threads int
	pool    *tensor.Pool
	geom    convGeom
	num     int

	in, out      *tensor.Blob
	fwdFn, bwdFn func(lo, hi, worker int)
}

func (*im2colLayer) Type() string    { return "Im2col" }
func (*im2colLayer) Params() []Param { return nil }

func (l *im2colLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Im2col", bottom, top, 1, 1, 1, 1); err != nil {
		return err
	}
	return l.Reshape(bottom, top)
}

func (l *im2colLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: Im2col: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	c := &l.cfg
	g := convGeom{
		c: b.Shape[1], h: b.Shape[2], w: b.Shape[3],
		kh: c.KernelH, kw: c.KernelW, sh: c.StrideH, sw: c.StrideW,
		ph: c.PadH, pw: c.PadW, dh: c.DilationH, dw: c.DilationW,
		ys: l.geom.ys, xs: l.geom.xs,
	}
	eh, ew := g.extent()
	if g.h+2*g.ph < eh || g.w+2*g.pw < ew {
		return fmt.Errorf("layers: Im2col: the %dx%d window (dilated) does not fit bottom %q of %dx%d padded by %dx%d",
			eh, ew, b.Name, g.h, g.w, g.ph, g.pw)
	}
	g.oh = (g.h+2*g.ph-eh)/g.sh + 1
	g.ow = (g.w+2*g.pw-ew)/g.sw + 1
	g.initRanges()
	l.geom = g
	l.num = b.Shape[0]
	top[0].Reshape(l.num, g.colRows(), g.oh, g.ow)
	return nil
}

func (l *im2colLayer) forwardImages(lo, hi, _ int) {
	in, out := l.in.Shape.CountFrom(1), l.out.Shape.CountFrom(1)
	for n := lo; n < hi; n++ {
		im2col(l.out.Data[n*out:(n+1)*out], l.in.Data[n*in:(n+1)*in], &l.geom, l.geom.colCols())
	}
}

func (l *im2colLayer) backwardImages(lo, hi, _ int) {
	in, out := l.in.Shape.CountFrom(1), l.out.Shape.CountFrom(1)
	for n := lo; n < hi; n++ {
		col2im(l.in.Diff[n*in:(n+1)*in], l.out.Diff[n*out:(n+1)*out], &l.geom, l.geom.colCols())
	}
}

func (l *im2colLayer) Forward(bottom, top []*tensor.Blob) {
	l.in, l.out = bottom[0], top[0]
	l.pool.For(l.num, min(l.threads, l.num), l.fwdFn)
	l.in, l.out = nil, nil
}

func (l *im2colLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	l.in, l.out = bottom[0], top[0]
	l.pool.For(l.num, min(l.threads, l.num), l.bwdFn)
	l.in, l.out = nil, nil
}
