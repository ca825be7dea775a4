package layers

import (
	"fmt"
	"math/rand/v2"
	"unsafe"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// Type returns "Pooling".
func (*PoolingConfig) Type() string { return "Pooling" }

// Build validates the config and returns an unset-up Pooling layer that
// splits the N·C planes of a batch across ctx.NumThreads() goroutines.
func (c *PoolingConfig) Build(ctx Context) (Layer, error) {
	if c.Method != PoolMax && c.Method != PoolAve && c.Method != PoolStochastic {
		return nil, fmt.Errorf("layers: Pooling: unsupported pool method %d (MAX, AVE and STOCHASTIC are supported)", c.Method)
	}
	if c.Method == PoolStochastic {
		switch {
		case c.PadH != 0 || c.PadW != 0:
			// Caffe: "Padding implemented only for average and max pooling."
			return nil, fmt.Errorf("layers: Pooling: STOCHASTIC pooling takes no pad, got %dx%d", c.PadH, c.PadW)
		case ctx.Phase == Train && ctx.Rand == nil:
			return nil, fmt.Errorf("layers: Pooling: STOCHASTIC pooling in Train needs Context.Rand")
		}
	}
	if c.GlobalPooling {
		switch {
		case c.KernelH != 0 || c.KernelW != 0:
			return nil, fmt.Errorf("layers: Pooling: kernel size %dx%d cannot be set with global_pooling", c.KernelH, c.KernelW)
		case c.PadH != 0 || c.PadW != 0:
			return nil, fmt.Errorf("layers: Pooling: pad %dx%d cannot be set with global_pooling", c.PadH, c.PadW)
		case (c.StrideH != 0 && c.StrideH != 1) || (c.StrideW != 0 && c.StrideW != 1):
			return nil, fmt.Errorf("layers: Pooling: stride must be 1 with global_pooling, got %dx%d", c.StrideH, c.StrideW)
		}
	} else {
		switch {
		case c.KernelH <= 0 || c.KernelW <= 0:
			return nil, fmt.Errorf("layers: Pooling: kernel size must be positive, got %dx%d", c.KernelH, c.KernelW)
		case c.StrideH <= 0 || c.StrideW <= 0:
			return nil, fmt.Errorf("layers: Pooling: stride must be positive, got %dx%d", c.StrideH, c.StrideW)
		case c.PadH < 0 || c.PadW < 0:
			return nil, fmt.Errorf("layers: Pooling: pad must not be negative, got %dx%d", c.PadH, c.PadW)
		case c.PadH >= c.KernelH || c.PadW >= c.KernelW:
			return nil, fmt.Errorf("layers: Pooling: pad %dx%d must be smaller than kernel %dx%d", c.PadH, c.PadW, c.KernelH, c.KernelW)
		}
	}
	l := &poolLayer{cfg: *c, threads: ctx.NumThreads(), pool: ctx.Pool, workPerThread: poolWorkPerThread}
	switch {
	case c.Method == PoolMax:
		l.fwdFn, l.bwdFn = l.maxForward, l.maxBackward
	case c.Method == PoolAve:
		l.fwdFn, l.bwdFn = l.aveForward, l.aveBackward
	case ctx.Phase == Train:
		// The sampled element's index is kept in the mask, as MAX's
		// argmax is, and the gradient routed to it the same way.
		l.rand = ctx.Rand
		l.fwdFn, l.bwdFn = l.stoForwardTrain, l.maxBackward
	default:
		l.fwdFn, l.bwdFn = l.stoForwardTest, l.stoBackwardTest
	}
	l.dnFwdFn, l.dnBwdFn = l.dnnlForward, l.dnnlBackward
	return l, nil
}

// pooledSize is the number of pooling windows along an axis of the given
// size, by Caffe's rule: ceil((size + 2·pad − kernel)/stride) + 1, less one
// when padding would make the last window start in the padding past the
// input. It is ≤ 0 when no window fits.
func pooledSize(size, kernel, stride, pad int) int {
	return pooledSizeRound(size, kernel, stride, pad, false)
}

// pooledSizeRound is pooledSize, or with floor the same rule with
// floor((size + 2·pad − kernel)/stride) (Caffe's round_mode: FLOOR).
func pooledSizeRound(size, kernel, stride, pad int, floor bool) int {
	a := size + 2*pad - kernel
	// ceil(a/stride) or floor(a/stride) for a of either sign, stride > 0
	// (Go's division truncates toward zero).
	q := a / stride
	if a%stride != 0 {
		if !floor && a > 0 {
			q++
		} else if floor && a < 0 {
			q--
		}
	}
	pooled := q + 1
	if pad > 0 && (pooled-1)*stride >= size+pad {
		pooled--
	}
	return pooled
}

// poolLayer is Caffe's Pooling layer (MAX, AVE and STOCHASTIC, NCHW).
type poolLayer struct {
	cfg     PoolingConfig
	threads int
	pool    *tensor.Pool
	// workPerThread is poolWorkPerThread, lowered by tests to run small
	// inputs on several threads.
	workPerThread int

	geom convGeom // c, h, w, kernel, stride, pad, pooled size
	num  int
	// Per output row and column: the window clipped to the image
	// [ys, ye)×[xs, xe), and the window clipped to the padded image
	// (AVE's divisor is the product of the two padded extents).
	ys, ye, yn []int32
	xs, xe, xn []int32
	mask       []int32 // MAX, STOCHASTIC in Train: for each top element, its argmax (sample) within the plane
	// rows: MAX and AVE forward run a row of outputs at a time on the
	// simd kernels (poolRows); the outputs [oxLo, oxHi) have windows
	// wholly inside the plane's columns, the others take the loops.
	rows       bool
	oxLo, oxHi int
	aveBuf     [][]float32 // AVE backward on rows: per worker, a row's top diffs over their divisors
	// maskTop: MAX with a second top, which receives the mask as floats
	// (Caffe's top mask); the pooling then runs on the Go loops.
	maskTop bool
	// STOCHASTIC in Train: the layer's random source, and one uniform
	// draw on (0, 1] per top element, drawn in order before the threads
	// start so that the samples do not depend on the thread count.
	rand *rand.Rand
	draw []float32

	in, out      *tensor.Blob
	maskOut      *tensor.Blob // the mask top during Forward, when maskTop
	fwdFn, bwdFn func(lo, hi, worker int)

	// dn is the oneDNN side (pooling_dnnl.go), used when dn.on.
	dn               poolDnnl
	dnFwdFn, dnBwdFn func(lo, hi, worker int)
}

func (l *poolLayer) Type() string { return "Pooling" }

func (l *poolLayer) Setup(bottom, top []*tensor.Blob) error {
	if len(bottom) != 1 {
		return fmt.Errorf("layers: Pooling takes one bottom, got %d", len(bottom))
	}
	switch {
	case len(top) == 2 && l.cfg.Method != PoolMax:
		return fmt.Errorf("layers: Pooling: only MAX pooling has a second top (the argmax mask), got 2 tops")
	case len(top) != 1 && len(top) != 2:
		return fmt.Errorf("layers: Pooling takes one top, or two with MAX (the second is the argmax mask), got %d", len(top))
	}
	if l.maskTop = len(top) == 2; l.maskTop {
		l.fwdFn = l.maxForwardMaskTop
	}
	if len(bottom[0].Shape) != 4 {
		return fmt.Errorf("layers: Pooling: bottom %q must be 4-D (NCHW), got shape %v", bottom[0].Name, bottom[0].Shape)
	}
	return nil
}

func (l *poolLayer) Params() []Param { return nil }

func (l *poolLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: Pooling: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	c := &l.cfg
	g := convGeom{
		c: b.Shape[1], h: b.Shape[2], w: b.Shape[3],
		kh: c.KernelH, kw: c.KernelW,
		sh: c.StrideH, sw: c.StrideW,
		ph: c.PadH, pw: c.PadW,
	}
	if c.GlobalPooling {
		g.kh, g.kw, g.sh, g.sw, g.ph, g.pw = g.h, g.w, 1, 1, 0, 0
	}
	g.oh = pooledSizeRound(g.h, g.kh, g.sh, g.ph, c.RoundFloor)
	g.ow = pooledSizeRound(g.w, g.kw, g.sw, g.pw, c.RoundFloor)
	if g.oh <= 0 || g.ow <= 0 || g.h == 0 || g.w == 0 {
		return fmt.Errorf("layers: Pooling: kernel %dx%d with pad %dx%d does not fit bottom %q of %dx%d",
			g.kh, g.kw, g.ph, g.pw, b.Name, g.h, g.w)
	}
	ys, ye, yn := poolWindows(l.ys, l.ye, l.yn, g.oh, g.h, g.kh, g.sh, g.ph)
	xs, xe, xn := poolWindows(l.xs, l.xe, l.xn, g.ow, g.w, g.kw, g.sw, g.pw)
	l.ys, l.ye, l.yn, l.xs, l.xe, l.xn = ys, ye, yn, xs, xe, xn
	// A stride longer than the kernel can put the ceil rule's last window
	// wholly past an unpadded input (Caffe trims it only with padding).
	// AVE gives such a window Caffe's 0 over a negative extent (-0); MAX
	// and STOCHASTIC have no element to name, where Caffe writes -FLT_MAX
	// with the argmax -1 that its backward then writes through.
	if c.Method != PoolAve && (ys[g.oh-1] >= ye[g.oh-1] || xs[g.ow-1] >= xe[g.ow-1]) {
		return fmt.Errorf("layers: Pooling: kernel %dx%d with stride %dx%d and pad %dx%d leaves the last window of bottom %q (%dx%d) past its edge, outside the input, with no element for MAX to take (round_mode FLOOR, or a kernel at least the stride, avoids it)",
			g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, b.Name, g.h, g.w)
	}
	l.geom = g
	l.num = b.Shape[0]
	l.oxLo, l.oxHi = innerWindows(l.xs, l.xe, g.kw)
	l.rows = l.useRows()
	if l.rows && c.Method == PoolAve {
		if len(l.aveBuf) < l.threads {
			l.aveBuf = make([][]float32, l.threads)
		}
		for i := range l.aveBuf {
			l.aveBuf[i] = fitBuf(l.aveBuf[i], g.ow)
		}
	}
	top[0].Reshape(l.num, g.c, g.oh, g.ow)
	if l.maskTop {
		top[1].ReshapeLike(top[0])
	}
	if l.dnnlSetup(); l.dn.on {
		return nil
	}
	if c.Method == PoolMax || l.rand != nil {
		l.mask = fitInt32(l.mask, top[0].Count())
	}
	if l.rand != nil {
		l.draw = fitBuf(l.draw, top[0].Count())
	}
	return nil
}

// poolWindows fills, for each of out windows along an axis, its start and
// end clipped to [0, size) and its extent clipped to the padded axis
// [−pad, size+pad), reusing the given slices' storage.
func poolWindows(s, e, n []int32, out, size, kernel, stride, pad int) ([]int32, []int32, []int32) {
	if cap(s) < out {
		s, e, n = make([]int32, out), make([]int32, out), make([]int32, out)
	}
	s, e, n = s[:out], e[:out], n[:out]
	for o := range out {
		start := o*stride - pad
		end := min(start+kernel, size+pad)
		n[o] = int32(end - start)
		s[o] = int32(max(start, 0))
		e[o] = int32(min(end, size))
	}
	return s, e, n
}

// innerWindows is the range [lo, hi) of windows that lie wholly inside
// the axis (not clipped by padding or by the ceil rule's last window);
// windows advance by the stride, so they are contiguous.
func innerWindows(s, e []int32, kernel int) (lo, hi int) {
	for lo < len(s) && int(e[lo]-s[lo]) != kernel {
		lo++
	}
	hi = lo
	for hi < len(s) && int(e[hi]-s[hi]) == kernel {
		hi++
	}
	return lo, hi
}

// poolRowsOff turns the simd row kernels off (tests compare against the
// loops).
var poolRowsOff = false

// useRows says MAX and AVE forward take the simd row kernels: strides 1
// and 2 along W (the kernels' loads), and a row of at least four inner
// windows (fewer run on scalar code anyway). MAX on 2x2 tiles keeps
// maxForward2x2, whose test of a NaN differs from the scan's (a NaN first
// in a row stays).
func (l *poolLayer) useRows() bool {
	g := &l.geom
	m := l.cfg.Method
	return !poolRowsOff && (m == PoolMax || m == PoolAve) && (g.sw == 1 || g.sw == 2) && l.oxHi-l.oxLo >= 4 &&
		!(m == PoolMax && l.tiled2x2())
}

// poolWorkPerThread is the work (window elements visited, about a
// nanosecond each) below which another pooling thread costs more than it
// saves. It was 1<<18, which kept LeNet's pool2 (204,800) on one thread;
// once the pool's goroutines poll between loops (tensor.WaitPolicy) the
// hand-off is cheap and the second thread reads the half of conv2's output
// that it wrote itself: pool2's forward at 2 threads took 148 µs against
// 277–314 µs on one (dsgd train --timeline, chrt -f 10, 2026-11-24).
const poolWorkPerThread = 1 << 16

// poolThreads is how many threads to use for the given work.
func (l *poolLayer) poolThreads(work int) int {
	return max(1, min(l.threads, work/l.workPerThread))
}

func (l *poolLayer) Forward(bottom, top []*tensor.Blob) {
	l.in, l.out = bottom[0], top[0]
	g := &l.geom
	if l.dn.on {
		l.pool.For(l.num, l.dnnlThreads(), l.dnFwdFn)
		l.in, l.out = nil, nil
		return
	}
	if l.rand != nil {
		// Caffe draws uniform (0, 1] thresholds (curand's range).
		for i := range l.draw {
			l.draw[i] = 1 - l.rand.Float32()
		}
	}
	if l.maskTop {
		l.maskOut = top[1]
	}
	planes := l.num * g.c
	l.pool.For(planes, l.poolThreads(planes*g.oh*g.ow*g.kh*g.kw), l.fwdFn)
	l.in, l.out, l.maskOut = nil, nil, nil
}

func (l *poolLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	l.in, l.out = bottom[0], top[0]
	g := &l.geom
	if l.dn.on {
		l.pool.For(l.num, l.dnnlThreads(), l.dnBwdFn)
		l.in, l.out = nil, nil
		return
	}
	planes := l.num * g.c
	// Clearing the bottom diff is cheap per element; MAX then touches one
	// element per output, AVE a whole window.
	work := planes * g.h * g.w / 8
	if l.cfg.Method == PoolMax || l.rand != nil {
		work += planes * g.oh * g.ow
	} else {
		work += planes * g.oh * g.ow * g.kh * g.kw
	}
	l.pool.For(planes, l.poolThreads(work), l.bwdFn)
	l.in, l.out = nil, nil
}

// maxForward max-pools planes [lo, hi), recording each argmax in the mask.
// Ties keep the first maximum in row-major order, as Caffe does.
func (l *poolLayer) maxForward(lo, hi, _ int) {
	if l.rows {
		l.maxForwardRows(lo, hi)
		return
	}
	l.maxForwardLoops(lo, hi)
}

// maxForwardRows is maxForward on simd.MaxPoolRow: each output row's inner
// windows in one call (Caffe's scan, lane by lane, so bitwise the loops'
// result), the clipped ones at either end on scanMax.
func (l *poolLayer) maxForwardRows(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, xs, xe := l.ys, l.ye, l.xs, l.xe
	a, b := l.oxLo, l.oxHi
	x0 := int(xs[a])
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		mask := l.mask[p*ohw : (p+1)*ohw]
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			drow, mrow := dst[oy*ow:(oy+1)*ow], mask[oy*ow:(oy+1)*ow]
			for ox := range a {
				drow[ox], mrow[ox] = scanMax(src, w, y0, y1, int(xs[ox]), int(xe[ox]))
			}
			i := y0*w + x0
			simd.MaxPoolRow(drow[a:b], mrow[a:b], src[i:], w, y1-y0, g.kw, g.sw, int32(i))
			for ox := b; ox < ow; ox++ {
				drow[ox], mrow[ox] = scanMax(src, w, y0, y1, int(xs[ox]), int(xe[ox]))
			}
		}
	}
}

// maxForwardLoops is maxForward on Go loops.
func (l *poolLayer) maxForwardLoops(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, xs, xe := l.ys, l.ye, l.xs, l.xe
	if l.tiled2x2() {
		l.maxForward2x2(lo, hi)
		return
	}
	if g.kw == 3 {
		l.maxForwardW3(lo, hi)
		return
	}
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		mask := l.mask[p*ohw : (p+1)*ohw]
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			drow, mrow := dst[oy*ow:(oy+1)*ow], mask[oy*ow:(oy+1)*ow]
			for ox := range drow {
				drow[ox], mrow[ox] = scanMax(src, w, y0, y1, int(xs[ox]), int(xe[ox]))
			}
		}
	}
}

// maxForwardW3 is maxForward for windows three columns wide (the 3×3
// pools of CaffeNet, GoogLeNet and cifar10_quick): a window whose columns
// all lie inside the plane takes each row's first maximum by a two-step
// tree, then the rows' in order, keeping the earlier on ties. That is the
// sequential scan's first maximum in row-major order, with dependency
// chains of 2 + rows compares instead of 9, so the CPU overlaps windows.
// The value written is the input at the argmax. Windows clipped at the
// left or right edge take the plain scan.
//
// Safety of the unsafe reads: src is plane p, bounds-checked; a full
// window reads offsets y·w + x0 + {0, 1, 2} with 0 ≤ y < h (ys, ye are
// clipped to the plane) and x0 + 3 ≤ w (xe − xs = 3 means unclipped).
func (l *poolLayer) maxForwardW3(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, xs, xe := l.ys, l.ye, l.xs, l.xe
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		mask := l.mask[p*ohw : (p+1)*ohw]
		sp := unsafe.Pointer(unsafe.SliceData(src))
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			drow, mrow := dst[oy*ow:(oy+1)*ow], mask[oy*ow:(oy+1)*ow]
			for ox := range drow {
				x0, x1 := int(xs[ox]), int(xe[ox])
				if x1-x0 != 3 {
					drow[ox], mrow[ox] = scanMax(src, w, y0, y1, x0, x1)
					continue
				}
				arg, best := rowMax3(sp, y0*w+x0)
				nan := b2i(best != best)
				for y := y0 + 1; y < y1; y++ {
					i, v := rowMax3(sp, y*w+x0)
					nan |= b2i(v != v)
					arg += b2i(v > best) * (i - arg)
					best = *(*float32)(unsafe.Add(sp, 4*arg))
				}
				if nan != 0 {
					// A row began with NaN, which > never replaces: the
					// rare window takes the scan, whose result is Caffe's.
					best, a := scanMax(src, w, y0, y1, x0, x1)
					drow[ox], mrow[ox] = best, a
					continue
				}
				drow[ox], mrow[ox] = best, int32(arg)
			}
		}
	}
}

// rowMax3 is the first maximum of the three floats at offset i of sp, and
// its offset, by > alone: when the first float is NaN the result is NaN
// (nothing is greater), which the caller detects. See maxForwardW3 for
// why the reads are in bounds.
func rowMax3(sp unsafe.Pointer, i int) (int, float32) {
	r := (*[3]float32)(unsafe.Add(sp, 4*i))
	a, b, c := r[0], r[1], r[2]
	j := i + b2i(b > a)
	m := *(*float32)(unsafe.Add(sp, 4*j))
	j += b2i(c > m) * (i + 2 - j)
	return j, *(*float32)(unsafe.Add(sp, 4*j))
}

// scanMax is the first maximum of src's window [y0, y1)×[x0, x1) in
// row-major order (a row of width w) and its offset, as Caffe scans: an
// element replaces the current maximum when it is greater (wins). The
// value is the input at that offset, so -0 before +0 stays -0. Unlike
// Caffe, which starts from -FLT_MAX, a window of NaN or -Inf alone still
// names an element, so the backward pass always has one to route to.
//
// Not inlined: maxForwardW3 calls it only for clipped windows, and inlined
// there it would crowd the fast path's registers.
//
//go:noinline
func scanMax(src []float32, w, y0, y1, x0, x1 int) (float32, int32) {
	arg := y0*w + x0
	best := src[arg]
	for y := y0; y < y1; y++ {
		for i, v := range src[y*w+x0 : y*w+x1] {
			if wins(v, best) {
				best, arg = v, y*w+x0+i
			}
		}
	}
	return best, int32(arg)
}

// wins says whether v replaces cur as a window's maximum: it is greater,
// or cur is NaN and v is not (Caffe never takes a NaN: every comparison
// with one is false, and it starts from -FLT_MAX).
func wins(v, cur float32) bool { return v > cur || (cur != cur && v == v) }

// tiled2x2 says the windows are 2×2 with stride 2 and no pad over an
// even-sized plane (LeNet's pools), so they tile it exactly.
func (l *poolLayer) tiled2x2() bool {
	g := &l.geom
	return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && 2*g.oh == g.h && 2*g.ow == g.w
}

// maxForward2x2 is maxForward when tiled2x2: no window is clipped.
//
// Each output takes the first maximum of each row of its window, then the
// first of the two (the earlier on ties, as the sequential scan), without
// a branch: random data defeats the predictor. It reads through unsafe
// pointers because the compiler's bounds checks and the register spills
// they cause cost a quarter of the time. Safety: src is resliced to plane
// p, which is bounds-checked, and every offset read is
// (2·oy+r)·w + 2·ox + c with r, c ∈ {0, 1}, oy < oh, ox < ow, which is at
// most (2·oh−1)·w + 2·ow − 1 = h·w − 1 because the windows tile the plane.
func (l *poolLayer) maxForward2x2(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow, oh := g.h*g.w, g.oh*g.ow, g.w, g.ow, g.oh
	if 2*oh != g.h || 2*ow != w {
		panic("layers: maxForward2x2: windows do not tile the plane")
	}
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		mask := l.mask[p*ohw : (p+1)*ohw]
		sp := unsafe.Pointer(unsafe.SliceData(src))
		for oy := 0; oy < oh; oy++ {
			base := 2 * oy * w
			drow, mrow := dst[oy*ow:(oy+1)*ow], mask[oy*ow:(oy+1)*ow]
			row := unsafe.Add(sp, 4*base)
			for ox := range drow {
				x := 2 * ox
				r0 := (*[2]float32)(unsafe.Add(row, 4*x))
				r1 := (*[2]float32)(unsafe.Add(row, 4*(x+w)))
				i0 := x + b2i(r0[1] > r0[0])
				i1 := w + x + b2i(r1[1] > r1[0])
				a := *(*float32)(unsafe.Add(row, 4*i0))
				b := *(*float32)(unsafe.Add(row, 4*i1))
				i := i0 + b2i(b > a)*(i1-i0)
				drow[ox], mrow[ox] = *(*float32)(unsafe.Add(row, 4*i)), int32(base+i)
			}
		}
	}
}

// maxForwardMaskTop is maxForward that also writes each argmax, as a
// float, to the mask top: its index y·W + x within the plane, as Caffe.
func (l *poolLayer) maxForwardMaskTop(lo, hi, worker int) {
	l.maxForward(lo, hi, worker)
	ohw := l.geom.oh * l.geom.ow
	dst := l.maskOut.Data[lo*ohw : hi*ohw]
	for i, m := range l.mask[lo*ohw : hi*ohw] {
		dst[i] = float32(m)
	}
}

// stoForwardTrain is STOCHASTIC pooling in Train over planes [lo, hi), as
// Caffe's GPU kernel (its CPU path is not implemented): per window, with
// u the window's draw in (0, 1] and S the sum of its elements, the output
// is the first element, in row-major order, at which the running sum
// reaches u·S, and the mask records it. Sums are float32, as Caffe's. A
// window whose running sum never reaches u·S (negative sums, NaN; inputs
// the method is not for, where Caffe leaves a stale output) takes its
// last element.
func (l *poolLayer) stoForwardTrain(lo, hi, _ int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, xs, xe := l.ys, l.ye, l.xs, l.xe
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		mask := l.mask[p*ohw : (p+1)*ohw]
		draw := l.draw[p*ohw : (p+1)*ohw]
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			for ox := range ow {
				x0, x1 := int(xs[ox]), int(xe[ox])
				sum := windowSum(src, w, y0, y1, x0, x1)
				thres := draw[oy*ow+ox] * sum
				arg := (y1-1)*w + x1 - 1
				sum = 0
			scan:
				for y := y0; y < y1; y++ {
					for i, v := range src[y*w+x0 : y*w+x1] {
						if sum += v; sum >= thres {
							arg = y*w + x0 + i
							break scan
						}
					}
				}
				dst[oy*ow+ox], mask[oy*ow+ox] = src[arg], int32(arg)
			}
		}
	}
}

// stoForwardTest is STOCHASTIC pooling in Test over planes [lo, hi): each
// window's Σx²/Σx, or 0 where Σx ≤ 0, as Caffe's GPU kernel.
func (l *poolLayer) stoForwardTest(lo, hi, _ int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, xs, xe := l.ys, l.ye, l.xs, l.xe
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			for ox := range ow {
				x0, x1 := int(xs[ox]), int(xe[ox])
				var sum, sq float32
				for y := y0; y < y1; y++ {
					for _, v := range src[y*w+x0 : y*w+x1] {
						sum += v
						sq += v * v
					}
				}
				var out float32
				if sum > 0 {
					out = sq / sum
				}
				dst[oy*ow+ox] = out
			}
		}
	}
}

// stoBackwardTest is the gradient of stoForwardTest over planes [lo, hi):
// ∂(Σx²/Σx)/∂x_i = (2·x_i − out)/Σx, 0 where Σx ≤ 0. Caffe has none (its
// backward reads the Train samples, which a Test net never draws); a Test
// net is not trained, but a gradient asked of it is the true one.
func (l *poolLayer) stoBackwardTest(lo, hi, _ int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, xs, xe := l.ys, l.ye, l.xs, l.xe
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		bd := l.in.Diff[p*hw : (p+1)*hw]
		td := l.out.Diff[p*ohw : (p+1)*ohw]
		top := l.out.Data[p*ohw : (p+1)*ohw]
		clear(bd)
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			for ox := range ow {
				x0, x1 := int(xs[ox]), int(xe[ox])
				sum := windowSum(src, w, y0, y1, x0, x1)
				if !(sum > 0) {
					continue
				}
				t, out := td[oy*ow+ox], top[oy*ow+ox]
				for y := y0; y < y1; y++ {
					row := bd[y*w+x0 : y*w+x1]
					for i, v := range src[y*w+x0 : y*w+x1] {
						row[i] += t * (2*v - out) / sum
					}
				}
			}
		}
	}
}

// maxBackward routes each top diff of planes [lo, hi) to its argmax.
func (l *poolLayer) maxBackward(lo, hi, _ int) {
	g := &l.geom
	hw, ohw := g.h*g.w, g.oh*g.ow
	for p := lo; p < hi; p++ {
		bd := l.in.Diff[p*hw : (p+1)*hw]
		td := l.out.Diff[p*ohw : (p+1)*ohw]
		mask := l.mask[p*ohw : (p+1)*ohw]
		clear(bd)
		for i, v := range td {
			bd[mask[i]] += v
		}
	}
}

// aveForward average-pools planes [lo, hi). The divisor is the window's
// extent within the padded image, as in Caffe, so padding counts as zeros.
func (l *poolLayer) aveForward(lo, hi, _ int) {
	if l.rows {
		l.aveForwardRows(lo, hi)
		return
	}
	l.aveForwardLoops(lo, hi)
}

// aveForwardRows is aveForward on simd.AvePoolRow for each output row's
// inner windows (the same sums in the same order, so bitwise the loops'),
// the clipped ones at either end on windowSum.
func (l *poolLayer) aveForwardRows(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, yn, xs, xe, xn := l.ys, l.ye, l.yn, l.xs, l.xe, l.xn
	a, b := l.oxLo, l.oxHi
	x0 := int(xs[a])
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			drow := dst[oy*ow : (oy+1)*ow]
			for ox := range a {
				drow[ox] = windowSum(src, w, y0, y1, int(xs[ox]), int(xe[ox])) / float32(yn[oy]*xn[ox])
			}
			if y1 > y0 {
				// An inner window's extent in the padded plane is the kernel.
				simd.AvePoolRow(drow[a:b], src[y0*w+x0:], w, y1-y0, g.kw, g.sw, float32(int(yn[oy])*g.kw))
			} else {
				// A row of windows past an unpadded input (the ceil rule
				// with a stride longer than the kernel): Caffe's 0 over
				// their extents.
				for ox := a; ox < b; ox++ {
					drow[ox] = 0 / float32(yn[oy]*xn[ox])
				}
			}
			for ox := b; ox < ow; ox++ {
				drow[ox] = windowSum(src, w, y0, y1, int(xs[ox]), int(xe[ox])) / float32(yn[oy]*xn[ox])
			}
		}
	}
}

// aveForwardLoops is aveForward on Go loops.
func (l *poolLayer) aveForwardLoops(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, yn, xs, xe, xn := l.ys, l.ye, l.yn, l.xs, l.xe, l.xn
	for p := lo; p < hi; p++ {
		src := l.in.Data[p*hw : (p+1)*hw]
		dst := l.out.Data[p*ohw : (p+1)*ohw]
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			drow := dst[oy*ow : (oy+1)*ow]
			for ox := range drow {
				x0, x1 := int(xs[ox]), int(xe[ox])
				var s float32
				for y := y0; y < y1; y++ {
					for _, v := range src[y*w+x0 : y*w+x1] {
						s += v
					}
				}
				drow[ox] = s / float32(yn[oy]*xn[ox])
			}
		}
	}
}

// aveBackward spreads each top diff of planes [lo, hi) evenly over its
// window.
func (l *poolLayer) aveBackward(lo, hi, worker int) {
	if l.rows {
		l.aveBackwardRows(lo, hi, worker)
		return
	}
	l.aveBackwardLoops(lo, hi)
}

// aveBackwardRows is aveBackward with each output row's inner windows
// added a window column k at a time, k from the last to the first, with
// simd.AddTo (stride 1) or AddStrided2 (stride 2). An element of the
// bottom diff gets its windows' shares in the order of their outputs, as
// in the loops (a later output reaches it through an earlier column), so
// the sums are bitwise the loops'.
func (l *poolLayer) aveBackwardRows(lo, hi, worker int) {
	g := &l.geom
	hw, ohw, w, ow, kw := g.h*g.w, g.oh*g.ow, g.w, g.ow, g.kw
	ys, ye, yn, xs, xe, xn := l.ys, l.ye, l.yn, l.xs, l.xe, l.xn
	a, b := l.oxLo, l.oxHi
	x0 := int(xs[a])
	v := l.aveBuf[worker][:b-a]
	for p := lo; p < hi; p++ {
		bd := l.in.Diff[p*hw : (p+1)*hw]
		td := l.out.Diff[p*ohw : (p+1)*ohw]
		clear(bd)
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			trow := td[oy*ow : (oy+1)*ow]
			for ox := range a {
				aveSpread(bd, w, y0, y1, int(xs[ox]), int(xe[ox]), trow[ox]/float32(yn[oy]*xn[ox]))
			}
			div := float32(int(yn[oy]) * kw)
			for i, t := range trow[a:b] {
				v[i] = t / div
			}
			for y := y0; y < y1; y++ {
				row := bd[y*w+x0:]
				for k := kw - 1; k >= 0; k-- {
					if g.sw == 1 {
						simd.AddTo(row[k:k+len(v)], v)
					} else {
						simd.AddStrided2(row[k:], v)
					}
				}
			}
			for ox := b; ox < ow; ox++ {
				aveSpread(bd, w, y0, y1, int(xs[ox]), int(xe[ox]), trow[ox]/float32(yn[oy]*xn[ox]))
			}
		}
	}
}

// aveSpread adds v to the window [y0, y1)×[x0, x1) of a plane of width w.
func aveSpread(bd []float32, w, y0, y1, x0, x1 int, v float32) {
	for y := y0; y < y1; y++ {
		row := bd[y*w+x0 : y*w+x1]
		for i := range row {
			row[i] += v
		}
	}
}

// aveBackwardLoops is aveBackward on Go loops.
func (l *poolLayer) aveBackwardLoops(lo, hi int) {
	g := &l.geom
	hw, ohw, w, ow := g.h*g.w, g.oh*g.ow, g.w, g.ow
	ys, ye, yn, xs, xe, xn := l.ys, l.ye, l.yn, l.xs, l.xe, l.xn
	for p := lo; p < hi; p++ {
		bd := l.in.Diff[p*hw : (p+1)*hw]
		td := l.out.Diff[p*ohw : (p+1)*ohw]
		clear(bd)
		for oy := range ys {
			y0, y1 := int(ys[oy]), int(ye[oy])
			trow := td[oy*ow : (oy+1)*ow]
			for ox, t := range trow {
				x0, x1 := int(xs[ox]), int(xe[ox])
				v := t / float32(yn[oy]*xn[ox])
				for y := y0; y < y1; y++ {
					row := bd[y*w+x0 : y*w+x1]
					for i := range row {
						row[i] += v
					}
				}
			}
		}
	}
}

// fitInt32 returns buf resliced to n elements, reallocating only when its
// capacity is too small.
func fitInt32(buf []int32, n int) []int32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]int32, n)
}

// b2i is 1 for true and 0 for false; the compiler makes it a SETcc.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// windowSum is the sum of the window rows [y0, y1) and columns [x0, x1)
// of a plane of width w, row by row (stochastic pooling's total).
func windowSum(src []float32, w, y0, y1, x0, x1 int) float32 {
	var sum float32
	for y := y0; y < y1; y++ {
		for _, v := range src[y*w+x0 : y*w+x1] {
			sum += v
		}
	}
	return sum
}
