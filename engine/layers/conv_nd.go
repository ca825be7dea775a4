package layers

import (
	"fmt"
	"slices"

	"dsgd/engine/tensor"
)

// ndGeom is a convolution's geometry resolved against its bottom, as
// Caffe's BaseConvolutionLayer::LayerSetUp does: the channel axis and, per
// spatial axis, kernel, stride, pad and dilation.
type ndGeom struct {
	axis                      int // canonical channel axis of the bottom
	kernel, stride, pad, dila []int
	forceND                   bool
}

// plain2D says the 2-D NCHW path (oneDNN or im2col + GEMM) computes this
// convolution: channel axis 1 of a 4-D bottom, not forced onto N-D.
func (g *ndGeom) plain2D() bool { return g.axis == 1 && len(g.kernel) == 2 && !g.forceND }

// resolveND resolves c's geometry against bottom shape: for a config
// without ND, the H/W fields on a 4-D NCHW bottom.
func (c *ConvolutionConfig) resolveND(layer string, shape tensor.Shape) (*ndGeom, error) {
	nd := c.ND
	dh, dw := max(c.DilationH, 1), max(c.DilationW, 1)
	square := c.KernelH == c.KernelW && c.StrideH == c.StrideW && c.PadH == c.PadW && dh == dw
	switch {
	case nd == nil && len(shape) != 4 && square:
		// One value per field, as Caffe's single kernel_size, stride, pad
		// and dilation: the same on every spatial axis after axis 1.
		nd = &ConvND{Axis: 1, Kernel: []int{c.KernelH}, Stride: []int{c.StrideH}, Pad: []int{c.PadH}, Dilation: []int{dh}}
	case nd == nil && len(shape) != 4:
		return nil, fmt.Errorf("layers: %s: bottom shape %v must be 4-D (NCHW) for a %dx%d kernel, stride %dx%d, pad %dx%d, dilation %dx%d; N-D convolutions take ND",
			layer, shape, c.KernelH, c.KernelW, c.StrideH, c.StrideW, c.PadH, c.PadW, dh, dw)
	case nd == nil:
		nd = &ConvND{Axis: 1, KernelHW: true, StrideHW: true, PadHW: true,
			Dilation: []int{dh, dw}}
	}
	axis := nd.Axis
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) {
		return nil, fmt.Errorf("layers: %s: axis %d is out of range for the %d-D bottom %v", layer, nd.Axis, len(shape), shape)
	}
	g := &ndGeom{axis: axis, forceND: nd.ForceND}
	n := len(shape) - axis - 1 // spatial axes
	pick := func(name, hwName string, vals []int, hw bool, h, w, def int) ([]int, error) {
		out := make([]int, n)
		switch {
		case hw && n != 2:
			return nil, fmt.Errorf("layers: %s: %s_h and %s_w can only be used for 2-D convolution; the bottom %v has %d spatial axes after axis %d",
				layer, hwName, hwName, shape, n, axis)
		case hw:
			out[0], out[1] = h, w
		case len(vals) == 0 && def < 0 && n > 0:
			return nil, fmt.Errorf("layers: %s: needs %s (%d spatial axes)", layer, name, n)
		case len(vals) == 0:
			for i := range out {
				out[i] = def
			}
		case len(vals) == 1 || len(vals) == n:
			for i := range out {
				out[i] = vals[min(i, len(vals)-1)]
			}
		default:
			return nil, fmt.Errorf("layers: %s: %s must be given once, or once per spatial axis (given %d times; the bottom %v has %d spatial axes after axis %d)",
				layer, name, len(vals), shape, n, axis)
		}
		return out, nil
	}
	var err error
	if g.kernel, err = pick("kernel_size", "kernel", nd.Kernel, nd.KernelHW, c.KernelH, c.KernelW, -1); err != nil {
		return nil, err
	}
	if g.stride, err = pick("stride", "stride", nd.Stride, nd.StrideHW, c.StrideH, c.StrideW, 1); err != nil {
		return nil, err
	}
	if g.pad, err = pick("pad", "pad", nd.Pad, nd.PadHW, c.PadH, c.PadW, 0); err != nil {
		return nil, err
	}
	if g.dila, err = pick("dilation", "dilation", nd.Dilation, false, 0, 0, 1); err != nil {
		return nil, err
	}
	for i := range n {
		switch {
		case g.kernel[i] <= 0:
			return nil, fmt.Errorf("layers: %s: kernel size must be positive, got %v", layer, g.kernel)
		case g.stride[i] <= 0:
			return nil, fmt.Errorf("layers: %s: stride must be positive, got %v", layer, g.stride)
		case g.pad[i] < 0:
			return nil, fmt.Errorf("layers: %s: pad must not be negative, got %v", layer, g.pad)
		case g.dila[i] <= 0:
			return nil, fmt.Errorf("layers: %s: dilation must be positive, got %v", layer, g.dila)
		}
	}
	return g, nil
}

// checkPairs checks a Convolution's or Deconvolution's blobs: one or more
// bottom/top pairs.
func checkPairs(layer string, bottom, top []*tensor.Blob) error {
	if len(bottom) == 0 || len(bottom) != len(top) {
		return fmt.Errorf("layers: %s takes bottom/top pairs (at least one, as many tops as bottoms), got %d bottoms and %d tops", layer, len(bottom), len(top))
	}
	return nil
}

// checkSameShapes checks that every bottom has bottom[0]'s shape, which
// Caffe requires of a convolution's bottoms.
func checkSameShapes(layer string, bottom []*tensor.Blob) error {
	for i, b := range bottom[1:] {
		if !slices.Equal(b.Shape, bottom[0].Shape) {
			return fmt.Errorf("layers: %s: bottom %d %q has shape %v, bottom 0 %q has %v; every bottom must have the same shape",
				layer, i+1, b.Name, b.Shape, bottom[0].Name, bottom[0].Shape)
		}
	}
	return nil
}

// ndConvLayer is Caffe's N-D convolution (and, with deconv, its transpose)
// on the im2col_nd path: any number of spatial axes after the channel
// axis, the axes before it batch-like, one or more bottom/top pairs
// sharing the weights. Per image it runs im2colND and the package's GEMM,
// images split across worker goroutines as in deconvLayer.
type ndConvLayer struct {
	paramGrads
	name    string
	deconv  bool
	cfg     ConvolutionConfig
	g       ndGeom
	threads int
	pool    *tensor.Pool

	weight, bias *tensor.Blob
	params       []Param

	shape    []int // the bottom shape Setup saw (its axis count is fixed)
	channels int   // bottom channels
	num      int   // product of the axes before the channel axis
	// The convolution whose forward (Convolution) or transpose
	// (Deconvolution) this is: an image of imC channels over imSp,
	// giving outC channels over colSp.
	imC, outC   int
	imSp, colSp []int
	cols        [][]float32 // per worker: imC·Πkernel × Πcolsp
	idx         [][]int     // per worker: 2·spatial axes of index scratch
	wdiff       [][]float32
	bdiff       [][]float32
	used        []bool

	in, out  *tensor.Blob
	propDown bool
}

func newNDConv(name string, deconv bool, cfg ConvolutionConfig, g *ndGeom, threads int, pool *tensor.Pool) *ndConvLayer {
	return &ndConvLayer{name: name, deconv: deconv, cfg: cfg, g: *g, threads: threads, pool: pool}
}

func (l *ndConvLayer) Type() string    { return l.name }
func (l *ndConvLayer) Params() []Param { return l.params }

func (l *ndConvLayer) Setup(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	l.shape = slices.Clone(b.Shape)
	l.channels = b.Shape[l.g.axis]
	c := &l.cfg
	if l.channels%c.Group != 0 {
		return fmt.Errorf("layers: %s: bottom %q has %d channels (axis %d), not a multiple of group %d", l.name, b.Name, l.channels, l.g.axis, c.Group)
	}
	l.outC, l.imC = c.NumOutput, l.channels
	if l.deconv {
		l.outC, l.imC = l.channels, c.NumOutput
	}
	wshape := append([]int{l.outC, l.imC / c.Group}, l.g.kernel...)
	l.weight = tensor.NewBlob("weight", wshape...)
	l.params = []Param{{Blob: l.weight, Filler: c.WeightFiller}}
	if c.BiasTerm {
		l.bias = tensor.NewBlob("bias", c.NumOutput)
		l.params = append(l.params, Param{Blob: l.bias, Filler: c.BiasFiller})
	}
	l.cols = make([][]float32, l.threads)
	l.idx = make([][]int, l.threads)
	l.wdiff = make([][]float32, l.threads)
	l.bdiff = make([][]float32, l.threads)
	l.used = make([]bool, l.threads)
	for w := range l.threads {
		l.idx[w] = make([]int, 2*len(l.g.kernel))
		if w > 0 {
			l.wdiff[w] = make([]float32, l.weight.Count())
			if l.bias != nil {
				l.bdiff[w] = make([]float32, c.NumOutput)
			}
		}
	}
	return nil
}

func (l *ndConvLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := checkSameShapes(l.name, bottom); err != nil {
		return err
	}
	b := bottom[0]
	ax := l.g.axis
	if len(b.Shape) != len(l.shape) || b.Shape[ax] != l.channels {
		return fmt.Errorf("layers: %s: bottom %q has shape %v; the layer was set up for %d axes with %d channels on axis %d",
			l.name, b.Name, b.Shape, len(l.shape), l.channels, ax)
	}
	n := len(l.g.kernel)
	in := b.Shape[ax+1:]
	outSp := make([]int, n)
	for i := range n {
		ext := l.g.dila[i]*(l.g.kernel[i]-1) + 1
		if l.deconv {
			outSp[i] = l.g.stride[i]*(in[i]-1) + ext - 2*l.g.pad[i]
		} else {
			outSp[i] = (in[i]+2*l.g.pad[i]-ext)/l.g.stride[i] + 1
			if in[i]+2*l.g.pad[i] < ext {
				outSp[i] = 0
			}
		}
		if outSp[i] < 1 {
			return fmt.Errorf("layers: %s: bottom %q %v gives an empty top on spatial axis %d (kernel %v, stride %v, pad %v, dilation %v)",
				l.name, b.Name, b.Shape, i, l.g.kernel, l.g.stride, l.g.pad, l.g.dila)
		}
	}
	l.num = 1
	for _, d := range b.Shape[:ax] {
		l.num *= d
	}
	l.imSp, l.colSp = slices.Clone(in), outSp
	if l.deconv {
		l.imSp, l.colSp = outSp, slices.Clone(in)
	}
	tshape := append(append(slices.Clone(b.Shape[:ax]), l.cfg.NumOutput), outSp...)
	for _, t := range top {
		t.Reshape(tshape...)
	}
	rows := l.imC * prod(l.g.kernel)
	for w := range l.cols {
		l.cols[w] = fitBuf(l.cols[w], rows*prod(l.colSp))
	}
	return nil
}

// prod is the product of dims (1 for none).
func prod(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// im2colND moves between an image im (c channels over imSp, row-major) and
// its column matrix col ((c·Πkernel) × Πcolsp, row-major), as Caffe's
// im2col_nd: row (ch, k_1, ..., k_n), column (o_1, ..., o_n) is the pixel
// o_i·stride_i − pad_i + k_i·dilation_i of channel ch, or a zero of the
// padding. toCol writes col; otherwise col is added into im (col2im_nd).
// idx is 2n ints of scratch. Each row runs along the last axis in
// segments whose in-image part outRange bounds, so the inner loop neither
// divides nor tests bounds.
func (l *ndConvLayer) im2colND(im, col []float32, c int, idx []int, toCol bool) {
	g := &l.g
	n := len(g.kernel)
	kprod, cols, plane := prod(g.kernel), prod(l.colSp), prod(l.imSp)
	if n == 0 { // 0-D: the column matrix is the image
		if toCol {
			copy(col[:c], im[:c])
		} else {
			tensor.AddTo(im[:c], col[:c])
		}
		return
	}
	last := n - 1
	kidx, oidx := idx[:n], idx[n:2*n]
	ow, iw := l.colSp[last], l.imSp[last]
	s, p, d := g.stride[last], g.pad[last], g.dila[last]
	outer := cols / ow
	for ch := range c {
		img := im[ch*plane : (ch+1)*plane]
		for kr := range kprod {
			for i, rem := last, kr; i >= 0; i-- {
				kidx[i] = rem % g.kernel[i]
				rem /= g.kernel[i]
			}
			lo, hi := outRange(kidx[last]*d, iw, s, p, ow)
			shift := kidx[last]*d - p
			row := col[(ch*kprod+kr)*cols : (ch*kprod+kr+1)*cols]
			clear(oidx[:last])
			for o := range outer {
				off, inside := 0, true
				for i := range last {
					x := oidx[i]*g.stride[i] - g.pad[i] + kidx[i]*g.dila[i]
					if x < 0 || x >= l.imSp[i] {
						inside = false
						break
					}
					off = off*l.imSp[i] + x
				}
				seg := row[o*ow : (o+1)*ow]
				switch {
				case toCol && (!inside || lo >= hi):
					clear(seg)
				case toCol:
					clear(seg[:lo])
					base := off*iw + shift // may be negative; base + lo·s is not
					for j := lo; j < hi; j++ {
						seg[j] = img[base+j*s]
					}
					clear(seg[hi:])
				case inside && lo < hi:
					base := off*iw + shift
					for j := lo; j < hi; j++ {
						img[base+j*s] += seg[j]
					}
				}
				for i := last - 1; i >= 0; i-- {
					if oidx[i]++; oidx[i] < l.colSp[i] {
						break
					}
					oidx[i] = 0
				}
			}
		}
	}
}

func (l *ndConvLayer) Forward(bottom, top []*tensor.Blob) {
	for i := range bottom {
		l.in, l.out = bottom[i], top[i]
		l.pool.For(l.num, l.threads, l.forwardImages)
	}
	l.in, l.out = nil, nil
}

// sizes returns the floats per image of the bottom and the top and the
// spatial size of a top channel.
func (l *ndConvLayer) sizes() (inSize, outSize, topPlane int) {
	inSize = l.in.Count() / max(l.num, 1)
	outSize = l.out.Count() / max(l.num, 1)
	return inSize, outSize, outSize / l.cfg.NumOutput
}

func (l *ndConvLayer) forwardImages(lo, hi, w int) {
	groups := l.cfg.Group
	inSize, outSize, topPlane := l.sizes()
	cols := prod(l.colSp)
	kg := l.imC / groups * prod(l.g.kernel) // column rows per group
	og := l.outC / groups
	col := l.cols[w]
	for n := lo; n < hi; n++ {
		x := l.in.Data[n*inSize : (n+1)*inSize]
		y := l.out.Data[n*outSize : (n+1)*outSize]
		if l.deconv {
			// col_g = W_gᵀ·x_g, then col2im into the top.
			for gi := range groups {
				tensor.Gemm(true, false, kg, cols, og,
					1, l.weight.Data[gi*og*kg:], kg, x[gi*og*cols:], cols,
					0, col[gi*kg*cols:], cols)
			}
			clear(y)
			l.im2colND(y, col, l.imC, l.idx[w], false)
		} else {
			l.im2colND(x, col, l.imC, l.idx[w], true)
			for gi := range groups {
				tensor.Gemm(false, false, og, cols, kg,
					1, l.weight.Data[gi*og*kg:], kg, col[gi*kg*cols:], cols,
					0, y[gi*og*cols:], cols)
			}
		}
		if l.bias != nil {
			for m, v := range l.bias.Data {
				for i := m * topPlane; i < (m+1)*topPlane; i++ {
					y[i] += v
				}
			}
		}
	}
}

func (l *ndConvLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	for i := range bottom {
		l.in, l.out, l.propDown = bottom[i], top[i], propagateDown[i]
		clear(l.used)
		l.pool.For(l.num, l.threads, l.backwardImages)
		l.addWorkerGrads(l.weight, l.bias, l.wdiff, l.bdiff, l.used, 1)
	}
	l.in, l.out = nil, nil
}

func (l *ndConvLayer) backwardImages(lo, hi, w int) {
	groups := l.cfg.Group
	inSize, outSize, topPlane := l.sizes()
	cols := prod(l.colSp)
	kg := l.imC / groups * prod(l.g.kernel)
	og := l.outC / groups
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
	wantW := l.want(0)
	for n := lo; n < hi; n++ {
		x := l.in.Data[n*inSize : (n+1)*inSize]
		dy := l.out.Diff[n*outSize : (n+1)*outSize]
		for m := range bd {
			var s float32
			for _, v := range dy[m*topPlane : (m+1)*topPlane] {
				s += v
			}
			bd[m] += s
		}
		var dx []float32
		if l.propDown {
			dx = l.in.Diff[n*inSize : (n+1)*inSize]
		}
		if l.deconv {
			// The top diff's columns give dW_g += x_g·colᵀ and dx_g = W_g·col.
			l.im2colND(dy, col, l.imC, l.idx[w], true)
			for gi := 0; wantW && gi < groups; gi++ {
				tensor.Gemm(false, true, og, kg, cols,
					1, x[gi*og*cols:], cols, col[gi*kg*cols:], cols,
					1, wd[gi*og*kg:], kg)
			}
			if dx != nil {
				for gi := range groups {
					tensor.Gemm(false, false, og, cols, kg,
						1, l.weight.Data[gi*og*kg:], kg, col[gi*kg*cols:], cols,
						0, dx[gi*og*cols:], cols)
				}
			}
			continue
		}
		if wantW {
			l.im2colND(x, col, l.imC, l.idx[w], true)
			for gi := range groups {
				tensor.Gemm(false, true, og, kg, cols,
					1, dy[gi*og*cols:], cols, col[gi*kg*cols:], cols,
					1, wd[gi*og*kg:], kg)
			}
		}
		if dx != nil {
			for gi := range groups {
				tensor.Gemm(true, false, kg, cols, og,
					1, l.weight.Data[gi*og*kg:], kg, dy[gi*og*cols:], cols,
					0, col[gi*kg*cols:], cols)
			}
			clear(dx)
			l.im2colND(dx, col, l.imC, l.idx[w], false)
		}
	}
}

// set2D writes a plain 2-D geometry that resolveND worked out into the
// config's H/W fields, which the 2-D paths (oneDNN, im2col) read.
func (c *ConvolutionConfig) set2D(g *ndGeom) {
	c.KernelH, c.KernelW = g.kernel[0], g.kernel[1]
	c.StrideH, c.StrideW = g.stride[0], g.stride[1]
	c.PadH, c.PadW = g.pad[0], g.pad[1]
	c.DilationH, c.DilationW = g.dila[0], g.dila[1]
}
