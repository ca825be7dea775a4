package layers

import (
	"fmt"
	"strings"

	"dsgd/engine/tensor/dnnl"
	"dsgd/engine/tensor/simd"
)

// thinState is a convolution layer's side of dsgd's direct weights pass
// for few input channels (a net's first layer: 1 to 4 channels), used when
// on: the weight and bias gradients run on it, while the forward and the
// data pass stay on oneDNN or im2col + GEMM.
//
// The weight gradient of a stride-1 convolution is, per output channel k
// and tap t = (c, i, j),
//
//	dW[k][t] = Σ_n Σ_y Σ_x dy[n][k][y][x] · xpad[n][c][y+i][x+j]
//
// With few input channels there are few taps (75 for a 3-channel 5×5
// kernel), and both im2col + GEMM and oneDNN spend as long moving the
// columns or the blocked layout as multiplying. Here the input is padded
// once, and simd.DotRows4x3 sums 4 output channels × 3 taps at a time,
// eight lanes along x, straight from the gradient's rows and the padded
// image's: each loaded vector feeds three or four FMAs. A block's lanes
// accumulate over the images in order and are summed lane by lane at the
// end, so the result is the same bits at any thread count (the threads
// share out the blocks).
type thinState struct {
	on      bool
	hp, wp  int   // a padded input plane
	taps    []int // per tap (c, i, j): its window's offset in a padded image
	kb, tb  int   // blocks of 4 output channels and of 3 taps
	acc     []float32
	padded  []float32 // the batch's inputs, padded
	padFn   func(lo, hi, w int)
	blockFn func(lo, hi, w int)
	sumFn   func(lo, hi, w int)

	// fwd: the forward runs on the direct kernel too (thinFwdRule), with
	// the taps for simd.ConvTaps4x3; fresh: padded holds the bottom the
	// last forward read (Caffe's Backward assumes it unchanged since).
	fwd   bool
	fresh bool
	tapsK *simd.Taps
	fwdFn func(lo, hi, w int)
}

// thinMode overrides thinRule for tests: 0 follows it, 1 runs the
// weights pass on it wherever the geometry allows, -1 never.
var thinMode int

// thinMaxChannels is the most input channels the direct weights pass takes.
const thinMaxChannels = 4

// thinRule says whether the weights pass runs on dsgd's direct kernel: a
// convolution of one group of at most thinMaxChannels input channels,
// stride 1, undilated, an output row a multiple of 8 wide, on a CPU with
// AVX2 and FMA (simd.DotRowsFused), unless the kernels are dsgd's
// reference ones (SetKernels("own"): im2col + GEMM throughout) or oneDNN
// runs the layer at AVX-512 on a direct (jit:) weights kernel.
//
// Measured on an AMD EPYC Zen 4, one thread (BenchmarkConvEngineTimes, min
// of 20 passes, ms; weights pass with the bias gradient), against what ran
// it before: cifar10_quick's conv1 (3→32, 5×5 pad 2, 32×32, batch 100)
// 6.05 against oneDNN's jit:avx2 8.81 under the AVX2 cap, and 6.02 against
// jit:avx512_core's 6.26 at AVX-512; LeNet's (1→20, 5×5, 24×24, batch 64)
// 0.53 against OpenBLAS's im2col + GEMM 1.21 (AVX2 cap) and 0.55 against
// jit:avx512_core's 0.94. The whole nets under the AVX2 cap (dsgd time,
// alternating processes): cifar10_quick 73.7–74.4 → 71.6–71.7 ms at one
// thread, 40.2–41.6 → 37.9–39.0 at two; LeNet 13.5–14.0 → 13.1–13.2 at
// one. The forward on the kernel too (thinFwdRule), against oneDNN's with
// its reorder of the top to NCHW: cifar10_quick's conv1 5.21 against
// 5.88 ms (AVX2 cap) and 5.26 against 5.54 (AVX-512), LeNet's 0.52 against
// 0.70 (AVX2 cap); cifar10_quick's iteration 71.5–72.4 → 69.0–69.5 ms at
// one thread. A fixed rule, so that a run repeats its bits.
func (l *convLayer) thinRule() bool {
	g := &l.geom
	dh, dw := g.dilation()
	if dnnlOff || l.num == 0 || l.cfg.Group != 1 || g.c > thinMaxChannels || g.sh != 1 || g.sw != 1 ||
		dh != 1 || dw != 1 || g.ow%8 != 0 || g.ow == 0 {
		return false
	}
	switch thinMode {
	case 1:
		return true
	case -1:
		return false
	}
	if l.dn.on {
		// At AVX-512, oneDNN's direct kernels use 512-bit FMAs, which
		// most Intel server cores run at twice this kernel's 256-bit
		// rate; on a Zen 4 (256-bit units) it was level with them
		// (cifar10_quick's conv1, below). Leave oneDNN such a layer.
		_, isa, _ := strings.Cut(dnnl.Info(), "ISA ")
		_, wimpl, _ := strings.Cut(l.dn.impl.Backward, " / ")
		if strings.HasPrefix(isa, "avx512") && strings.HasPrefix(wimpl, "jit:") {
			return false
		}
	}
	return simd.DotRowsFused
}

// thinSetup decides and sizes the direct weights pass after dnnlSetup.
func (l *convLayer) thinSetup() {
	th := &l.th
	th.on = l.thinRule()
	if !th.on {
		return
	}
	g := &l.geom
	th.hp, th.wp = g.h+2*g.ph, g.w+2*g.pw
	th.taps = th.taps[:0]
	for c := range g.c {
		for i := range g.kh {
			for j := range g.kw {
				th.taps = append(th.taps, c*th.hp*th.wp+i*th.wp+j)
			}
		}
	}
	th.kb, th.tb = (l.cfg.NumOutput+3)/4, (len(th.taps)+2)/3
	th.acc = fitBuf(th.acc, th.kb*th.tb*96)
	th.padded = fitBuf(th.padded, l.num*g.c*th.hp*th.wp)
	th.fresh = false
	if th.padFn == nil {
		th.padFn, th.blockFn, th.sumFn, th.fwdFn = l.thinPadPart, l.thinBlockPart, l.thinSumPart, l.thinFwdPart
	}
	th.fwd = l.thinFwdRule()
	if th.fwd {
		th.tapsK = simd.NewTaps(th.taps)
	}
}

// thinFwdMode overrides thinFwdRule for tests: 0 follows it, 1 runs the
// forward on the direct kernel wherever the weights pass is and the
// shape allows, -1 never.
var thinFwdMode int

// thinFwdRule says whether the forward of a layer whose weights pass is on
// the direct kernel runs on it too (simd.ConvTaps4x3): 4 output channels
// or more and 3 vectors of 8 outputs or more a plane, where it was
// measured faster than oneDNN's forward with its reorder to NCHW
// (BenchmarkConvEngineTimes, see thinRule's figures).
func (l *convLayer) thinFwdRule() bool {
	if l.cfg.NumOutput < 4 || l.geom.oh*l.geom.ow < 24 || thinFwdMode < 0 {
		return false
	}
	return true
}

// thinForward is the forward on the direct kernel: the bottom padded,
// then each image's 4-channel × 3-vector blocks.
func (l *convLayer) thinForward() {
	th := &l.th
	l.pool.For(l.num*l.geom.c, l.threads, th.padFn)
	l.pool.For(l.num, l.threads, th.fwdFn)
	th.fresh = true
	clear(l.dn.fresh) // oneDNN's forward did not read this bottom
}

// thinFwdPart computes images [lo, hi)'s tops. Blocks at the end of the
// channels or of a plane overlap the one before, which recomputes the
// same outputs with the same arithmetic.
func (l *convLayer) thinFwdPart(lo, hi, _ int) {
	th, g := &l.th, &l.geom
	k, taps := l.cfg.NumOutput, len(th.taps)
	plane, img := g.oh*g.ow, g.c*th.hp*th.wp
	vecs, rowVecs := plane/8, g.ow/8
	var xo [3]int
	for n := lo; n < hi; n++ {
		x := th.padded[n*img : (n+1)*img]
		out := l.out.Data[n*k*plane : (n+1)*k*plane]
		for kb := 0; kb < k; kb += 4 {
			k0 := min(kb, k-4)
			var bias []float32
			if l.bias != nil {
				bias = l.bias.Data[k0 : k0+4]
			}
			w := l.weight.Data[k0*taps : (k0+4)*taps]
			for jb := 0; jb < vecs; jb += 3 {
				j0 := min(jb, vecs-3)
				for v := range xo {
					j := j0 + v
					xo[v] = j/rowVecs*th.wp + j%rowVecs*8
				}
				simd.ConvTaps4x3(out[k0*plane+j0*8:], plane, w, x, &xo, th.tapsK, bias)
			}
		}
	}
}

// thinPadPart copies input planes [lo, hi) into th.padded, zeros around.
func (l *convLayer) thinPadPart(lo, hi, _ int) {
	th, g := &l.th, &l.geom
	padPlanes(l.in.Data, th.padded, g.h, g.w, th.hp, th.wp, g.ph, g.pw, lo, hi)
}

// thinBlockPart runs blocks [lo, hi) (block b: output channels 4·(b/tb)…,
// taps 3·(b%tb)…) over every image in order, into their lanes in th.acc.
// A block's missing channels or taps repeat its last one; their sums are
// not used.
func (l *convLayer) thinBlockPart(lo, hi, _ int) {
	th, g := &l.th, &l.geom
	k := l.cfg.NumOutput
	ohw, img := g.oh*g.ow, g.c*th.hp*th.wp
	clear(th.acc[lo*96 : hi*96])
	var dy [4][]float32
	var off [3]int
	for n := range l.num {
		x := th.padded[n*img : (n+1)*img]
		for b := lo; b < hi; b++ {
			k0, t0 := b/th.tb*4, b%th.tb*3
			for q := range dy {
				kq := min(k0+q, k-1)
				dy[q] = l.out.Diff[(n*k+kq)*ohw : (n*k+kq+1)*ohw]
			}
			for q := range off {
				off[q] = th.taps[min(t0+q, len(th.taps)-1)]
			}
			simd.DotRows4x3((*[96]float32)(th.acc[b*96:(b+1)*96]), &dy, x, &off, g.oh, g.ow, th.wp)
		}
	}
}

// thinSumPart adds output channels [lo, hi)'s sums to the weight
// gradient, each block's eight lanes summed in order, and their bias
// gradients (those wanted).
func (l *convLayer) thinSumPart(lo, hi, _ int) {
	th, g := &l.th, &l.geom
	taps := len(th.taps)
	if l.want(0) {
		wd := l.weight.Diff
		for k := lo; k < hi; k++ {
			for t := range taps {
				a := th.acc[((k/4*th.tb+t/3)*12+k%4*3+t%3)*8:][:8]
				s := a[0]
				for _, v := range a[1:] {
					s += v
				}
				wd[k*taps+t] += s
			}
		}
	}
	if l.bias != nil && l.want(1) {
		planeBiasGrad(l.out.Diff, l.bias.Diff, l.num, l.cfg.NumOutput, g.oh*g.ow, lo, hi)
	}
}

// thinWeights is the weights pass on the direct kernel, on the input the
// forward padded if it ran on the kernel too.
func (l *convLayer) thinWeights() {
	th := &l.th
	if l.want(0) {
		if !th.fresh {
			l.pool.For(l.num*l.geom.c, l.threads, th.padFn)
		}
		l.pool.For(th.kb*th.tb, l.threads, th.blockFn)
	}
	l.pool.For(l.cfg.NumOutput, l.threads, th.sumFn)
}

// thinKernelName is Kernel's note on the passes on the direct kernel.
func (l *convLayer) thinKernelName() string {
	if l.th.fwd {
		return fmt.Sprintf("; forward and weights pass on dsgd's direct kernel (%d input channels, AVX2 FMA)", l.geom.c)
	}
	return fmt.Sprintf("; weights pass on dsgd's direct kernel (%d input channels, AVX2 FMA rows)", l.geom.c)
}
