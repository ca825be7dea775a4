package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Im2colConfig configures Caffe's Im2col layer from the window fields of
// its ConvolutionParameter (2-D; num_output and the fillers are unused).
type Im2colConfig struct {
	KernelH, KernelW     int
	StrideH, StrideW     int // default 1
	PadH, PadW           int // default 0
	DilationH, DilationW int // default 1 (0 reads as 1)
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
	l := &im2colLayer{cfg: *c, threads: ctx.NumThreads(), pool: ctx.Pool}
	l.fwdFn, l.bwdFn = l.forwardImages, l.backwardImages
	return l, nil
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
