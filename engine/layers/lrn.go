package layers

import (
	"fmt"
	"math"

	"dsgd/engine/tensor"
)

// Type returns "LRN".
func (*LRNConfig) Type() string { return "LRN" }

// Build validates the config and returns an unset-up LRN layer that splits
// the batch across ctx.NumThreads() goroutines.
func (c *LRNConfig) Build(ctx Context) (Layer, error) {
	switch {
	case c.LocalSize <= 0 || c.LocalSize%2 == 0:
		return nil, fmt.Errorf("layers: LRN: local_size must be a positive odd number, got %d", c.LocalSize)
	case c.NormRegion != AcrossChannels && c.NormRegion != WithinChannel:
		return nil, fmt.Errorf("layers: LRN: unknown norm_region %d", c.NormRegion)
	case math.IsNaN(float64(c.Alpha)) || math.IsNaN(float64(c.Beta)) || math.IsNaN(float64(c.K)):
		return nil, fmt.Errorf("layers: LRN: alpha, beta and k must be numbers, got %v, %v, %v", c.Alpha, c.Beta, c.K)
	}
	l := &lrnLayer{cfg: *c, threads: ctx.NumThreads()}
	if c.NormRegion == AcrossChannels {
		l.fwdFn, l.bwdFn = l.acrossForward, l.acrossBackward
	} else {
		l.fwdFn, l.bwdFn = l.withinForward, l.withinBackward
	}
	l.dnFwdFn, l.dnBwdFn = l.dnnlForward, l.dnnlBackward
	return l, nil
}

// lrnLayer is Caffe's LRN layer.
//
// ACROSS_CHANNELS: scale = k + α/n·Σ x² over the n channels centred on
// each one (clipped to the image's channels), top = x·scale^−β.
//
// WITHIN_CHANNEL (Caffe builds it from square, AVE pooling and power
// layers, so k is unused): scale = 1 + α·(Σ x² over the n×n spatial window
// centred on each pixel, clipped to the image)/n², top = x·scale^−β.
//
// Forward keeps scale and scale^−β for Backward, which reads the bottom
// data again: the layer cannot run in place.
type lrnLayer struct {
	cfg     LRNConfig
	threads int

	num, c, h, w int
	scale, norm  []float32   // N×C×H×W: scale and scale^−β from Forward
	buf          [][]float32 // per worker scratch

	in, out      *tensor.Blob
	fwdFn, bwdFn func(lo, hi, worker int)

	// dn is the oneDNN side (lrn_dnnl.go), used when dn.on.
	dn               lrnDnnl
	dnFwdFn, dnBwdFn func(lo, hi, worker int)
}

func (l *lrnLayer) Type() string { return "LRN" }

func (l *lrnLayer) Setup(bottom, top []*tensor.Blob) error {
	if len(bottom) != 1 || len(top) != 1 {
		return fmt.Errorf("layers: LRN takes one bottom and one top, got %d and %d", len(bottom), len(top))
	}
	if bottom[0] == top[0] {
		return fmt.Errorf("layers: LRN cannot run in place (bottom and top are both %q)", bottom[0].Name)
	}
	if len(bottom[0].Shape) != 4 {
		return fmt.Errorf("layers: LRN: bottom %q must be 4-D (NCHW), got shape %v", bottom[0].Name, bottom[0].Shape)
	}
	l.buf = make([][]float32, l.threads)
	return nil
}

func (l *lrnLayer) Params() []Param { return nil }

func (l *lrnLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	if len(b.Shape) != 4 {
		return fmt.Errorf("layers: LRN: bottom %q must be 4-D (NCHW), got shape %v", b.Name, b.Shape)
	}
	l.num, l.c, l.h, l.w = b.Shape[0], b.Shape[1], b.Shape[2], b.Shape[3]
	top[0].ReshapeLike(b)
	if l.dnnlSetup(); l.dn.on {
		return nil
	}
	n := b.Count()
	l.scale, l.norm = fitBuf(l.scale, n), fitBuf(l.norm, n)
	hw := l.h * l.w
	var per int
	if l.cfg.NormRegion == AcrossChannels {
		per = (l.c+l.cfg.LocalSize-1)*hw + hw // padded squares or ratios, and a running sum
	} else {
		per = 2 * hw // one plane of squares or ratios, and one of row sums
	}
	for w := range l.buf {
		l.buf[w] = fitBuf(l.buf[w], per)
	}
	return nil
}

func (l *lrnLayer) Forward(bottom, top []*tensor.Blob) {
	l.in, l.out = bottom[0], top[0]
	if l.dn.on {
		l.dnnlParallel(l.dnFwdFn)
		l.in, l.out = nil, nil
		return
	}
	l.parallel(l.fwdFn)
	l.in, l.out = nil, nil
}

func (l *lrnLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if !propagateDown[0] {
		return
	}
	l.in, l.out = bottom[0], top[0]
	if l.dn.on {
		l.dnnlParallel(l.dnBwdFn)
		l.in, l.out = nil, nil
		return
	}
	l.parallel(l.bwdFn)
	l.in, l.out = nil, nil
}

// parallel runs fn over images (across channels) or planes (within).
func (l *lrnLayer) parallel(fn func(lo, hi, worker int)) {
	n := l.num
	if l.cfg.NormRegion == WithinChannel {
		n *= l.c
	}
	tensor.ParallelFor(n, l.threads, fn)
}

// powNeg computes s^−β into dst, with fast paths for the common β in
// single precision (the compiler turns float32(math.Sqrt(float64(f))) into
// one SQRTSS): s^−0.75 = 1/√(s·√s), s^−0.5 = 1/√s.
func powNeg(dst, s []float32, beta float32) {
	s = s[:len(dst)]
	switch beta {
	case 0.75:
		for i, v := range s {
			dst[i] = 1 / float32(math.Sqrt(float64(v*float32(math.Sqrt(float64(v))))))
		}
	case 0.5:
		for i, v := range s {
			dst[i] = 1 / float32(math.Sqrt(float64(v)))
		}
	case 1:
		for i, v := range s {
			dst[i] = 1 / v
		}
	default:
		nb := -float64(beta)
		for i, v := range s {
			dst[i] = float32(math.Pow(float64(v), nb))
		}
	}
}

// acrossForward normalises images [lo, hi) across channels. Like Caffe it
// slides the channel window: each scale is the previous plus the square
// entering the window minus the one leaving it.
func (l *lrnLayer) acrossForward(lo, hi, worker int) {
	c, hw, size := l.c, l.h*l.w, l.cfg.LocalSize
	pre := (size - 1) / 2
	aos := l.cfg.Alpha / float32(size)
	padded := l.buf[worker][:(c+size-1)*hw]
	clear(padded[:pre*hw])
	clear(padded[(pre+c)*hw:])
	img := c * hw
	for n := lo; n < hi; n++ {
		x := l.in.Data[n*img : (n+1)*img]
		sc := l.scale[n*img : (n+1)*img]
		sq := padded[pre*hw : (pre+c)*hw]
		for i, v := range x {
			sq[i] = v * v
		}
		first := sc[:hw]
		for i := range first {
			first[i] = l.cfg.K
		}
		for j := 0; j < size-1; j++ {
			tensor.Axpy(aos, padded[j*hw:(j+1)*hw], first)
		}
		// Channel ci's window is padded channels [ci, ci+size).
		for ci := 0; ci < c; ci++ {
			cur := sc[ci*hw : (ci+1)*hw]
			if ci > 0 {
				copy(cur, sc[(ci-1)*hw:ci*hw])
			}
			tensor.Axpy(aos, padded[(ci+size-1)*hw:(ci+size)*hw], cur)
			if ci > 0 {
				tensor.Axpy(-aos, padded[(ci-1)*hw:ci*hw], cur)
			}
		}
		nm := l.norm[n*img : (n+1)*img]
		powNeg(nm, sc, l.cfg.Beta)
		y := l.out.Data[n*img : (n+1)*img]
		for i, v := range x {
			y[i] = v * nm[i]
		}
	}
}

// acrossBackward is Caffe's CPU backward across channels: bottom_diff =
// top_diff·scale^−β − 2αβ/n · x · Σ_window top_diff·top/scale.
func (l *lrnLayer) acrossBackward(lo, hi, worker int) {
	c, hw, size := l.c, l.h*l.w, l.cfg.LocalSize
	pre := (size - 1) / 2
	cache := 2 * l.cfg.Alpha * l.cfg.Beta / float32(size)
	buf := l.buf[worker]
	padded := buf[:(c+size-1)*hw]
	accum := buf[(c+size-1)*hw : (c+size)*hw]
	clear(padded[:pre*hw])
	clear(padded[(pre+c)*hw:])
	img := c * hw
	for n := lo; n < hi; n++ {
		x := l.in.Data[n*img : (n+1)*img]
		dx := l.in.Diff[n*img : (n+1)*img]
		dy := l.out.Diff[n*img : (n+1)*img]
		sc := l.scale[n*img : (n+1)*img]
		nm := l.norm[n*img : (n+1)*img]
		ratio := padded[pre*hw : (pre+c)*hw]
		ratio, dy, sc, nm, dx = ratio[:len(x)], dy[:len(x)], sc[:len(x)], nm[:len(x)], dx[:len(x)]
		for i, v := range x {
			dx[i] = dy[i] * nm[i]
			ratio[i] = dy[i] * (v * nm[i]) / sc[i]
		}
		clear(accum)
		for j := 0; j < size-1; j++ {
			tensor.AddTo(accum, padded[j*hw:(j+1)*hw])
		}
		for ci := 0; ci < c; ci++ {
			tensor.AddTo(accum, padded[(ci+size-1)*hw:(ci+size)*hw])
			xc, dxc := x[ci*hw:(ci+1)*hw], dx[ci*hw:(ci+1)*hw]
			for i, a := range accum {
				dxc[i] -= cache * (xc[i] * a)
			}
			tensor.Axpy(-1, padded[ci*hw:(ci+1)*hw], accum)
		}
	}
}

// boxSum writes into dst (h×w) the sum of src over the size×size window
// centred on each pixel, clipped to the plane; tmp holds the row sums.
func boxSum(dst, src, tmp []float32, h, w, size int) {
	r := size / 2
	for y := 0; y < h; y++ {
		s, t := src[y*w:(y+1)*w], tmp[y*w:(y+1)*w]
		for x := range t {
			var acc float32
			for _, v := range s[max(x-r, 0):min(x+r+1, w)] {
				acc += v
			}
			t[x] = acc
		}
	}
	for y := 0; y < h; y++ {
		d := dst[y*w : (y+1)*w]
		clear(d)
		for yy := max(y-r, 0); yy < min(y+r+1, h); yy++ {
			tensor.AddTo(d, tmp[yy*w:(yy+1)*w])
		}
	}
}

// withinForward normalises planes [lo, hi) within each channel. The scale
// buffer first receives the window sums, then the scale itself.
func (l *lrnLayer) withinForward(lo, hi, worker int) {
	hw, size := l.h*l.w, l.cfg.LocalSize
	pool := float32(size * size)
	alpha := l.cfg.Alpha
	buf := l.buf[worker]
	sq, tmp := buf[:hw], buf[hw:2*hw]
	for p := lo; p < hi; p++ {
		x := l.in.Data[p*hw : (p+1)*hw]
		sc := l.scale[p*hw : (p+1)*hw]
		for i, v := range x {
			sq[i] = v * v
		}
		boxSum(sc, sq, tmp, l.h, l.w, size)
		for i, s := range sc {
			sc[i] = 1 + alpha*(s/pool)
		}
		nm := l.norm[p*hw : (p+1)*hw]
		powNeg(nm, sc, l.cfg.Beta)
		y := l.out.Data[p*hw : (p+1)*hw]
		for i, v := range x {
			y[i] = v * nm[i]
		}
	}
}

// withinBackward differentiates withinForward for planes [lo, hi):
// bottom_diff = top_diff·scale^−β − 2αβ/n² · x · Σ_window top_diff·top/scale
// (the window sum is its own adjoint: the windows are symmetric).
func (l *lrnLayer) withinBackward(lo, hi, worker int) {
	hw, size := l.h*l.w, l.cfg.LocalSize
	cache := 2 * l.cfg.Alpha * l.cfg.Beta / float32(size*size)
	buf := l.buf[worker]
	ratio, tmp := buf[:hw], buf[hw:2*hw]
	for p := lo; p < hi; p++ {
		x := l.in.Data[p*hw : (p+1)*hw]
		dx := l.in.Diff[p*hw : (p+1)*hw]
		dy := l.out.Diff[p*hw : (p+1)*hw]
		sc := l.scale[p*hw : (p+1)*hw]
		nm := l.norm[p*hw : (p+1)*hw]
		for i, v := range x {
			ratio[i] = dy[i] * (v * nm[i]) / sc[i]
		}
		// dx temporarily holds the window sums of ratio.
		boxSum(dx, ratio, tmp, l.h, l.w, size)
		for i, v := range x {
			dx[i] = dy[i]*nm[i] - cache*(v*dx[i])
		}
	}
}
