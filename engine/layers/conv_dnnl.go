package layers

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"dsgd/engine/tensor/dnnl"
)

// Convolutions run on oneDNN's kernels when the library loads and has an
// implementation for the geometry, else on im2col and GEMM. The choice is
// per layer, made in Reshape, and ConvEngine says what the process has.
//
// On oneDNN a batch is split into one contiguous chunk of images per worker
// goroutine (tensor.Pool's chunks), each with its own dnnl.Conv run on one
// thread. Forward outputs and bottom diffs are per image, so they do not
// depend on the thread count; weight and bias gradients are summed over the
// workers' chunks in worker order, like the im2col path's.

// dnnlOff keeps every layer on dsgd's own kernels (convolutions on
// im2col+GEMM, pooling on the Go loops): SetKernels("own"), and tests.
var dnnlOff bool

var (
	dnnlOnce sync.Once
	dnnlErr  error
)

func dnnlReady() bool {
	if dnnlOff {
		return false
	}
	dnnlOnce.Do(func() { dnnlErr = dnnl.Load() })
	return dnnlErr == nil
}

// SetKernels chooses the kernels of the layers built after it:
// "auto" (oneDNN where it loads and has an implementation, else dsgd's
// own), "onednn" (the same, but an error when oneDNN cannot be loaded) or
// "own" (im2col+GEMM convolutions and the Go pooling loops).
func SetKernels(k string) error {
	switch k {
	case "auto":
		dnnlOff = false
	case "own":
		dnnlOff = true
	case "onednn":
		dnnlOff = false
		if !dnnlReady() {
			return dnnlErr
		}
	default:
		return fmt.Errorf("unknown kernels %q: want auto, onednn or own", k)
	}
	return nil
}

// ConvEngine describes the convolution and pooling kernels this process
// uses, and why when it is not oneDNN: the run header prints it.
func ConvEngine() (engine string, why string) {
	if dnnlReady() {
		return dnnl.Info(), ""
	}
	if dnnlOff {
		return "im2col + GEMM", "--kernels own"
	}
	return "im2col + GEMM", dnnlErr.Error()
}

// dnnlWinograd sends 3×3 stride-1 convolutions to oneDNN's Winograd
// kernels where it has them (AVX-512 and up; below, and for any pass it
// lacks, the direct ones run). On ResNet-18 at batch 16 on one thread
// (Emerald Rapids) they take 35-45 % less time than the direct kernels on
// the 56×56 to 14×14 layers, forward and backward, and no more at 7×7; the
// result differs from the direct kernels' by rounding (F(4×4, 3×3)
// transforms; TestEnginesAgree bounds it). A fixed rule, not a timing
// made at start-up, so that the numbers a run computes do not depend on
// the machine's load. Tests turn it off to compare the two.
var dnnlWinograd = true

// SetWinograd chooses, for the convolutions built after it, whether 3×3
// stride-1 convolutions take oneDNN's Winograd kernels where it has them
// and dsgd's own (F(4×4, 3×3), conv_wino.go) where oneDNN has none but
// runs the layer (below AVX-512; pad 0 or 1, one group or groups of 16 channels or more) — true, the
// default — or always oneDNN's direct ones, whose results are closer to
// im2col+GEMM's (within 1e-5 relative, against Winograd's 1e-4).
func SetWinograd(on bool) { dnnlWinograd = on }

// dnnlState is a convolution layer's oneDNN side.
type dnnlState struct {
	on  bool
	why string // when not on: why (for Kernel)
	// ownData and ownWeights, when on, run that backward pass on im2col
	// + GEMM instead (dnnlPassRules), for the reason in ownWhy.
	ownData, ownWeights bool
	ownWhy              string
	impl                dnnl.Impl     // when on: what oneDNN runs
	spec                dnnl.ConvSpec // whole batch; each worker's Conv has its chunk's N
	convs               perWorker[*dnnl.Conv]
	fresh               []bool // per worker: its Conv's last Forward read the current bottom
}

// dnnlSetup decides, for the geometry Reshape just computed, whether
// oneDNN runs this layer, and builds the first worker's Conv to find out.
func (l *convLayer) dnnlSetup() {
	d := &l.dn
	d.on, d.why = false, ownWhy()
	d.convs.reset(l.threads)
	d.fresh = make([]bool, l.threads)
	if !dnnlReady() || l.num == 0 {
		return
	}
	g := &l.geom
	dh, dw := g.dilation()
	s := dnnl.ConvSpec{N: l.num, C: g.c, H: g.h, W: g.w, OC: l.cfg.NumOutput, OH: g.oh, OW: g.ow,
		KH: g.kh, KW: g.kw, SH: g.sh, SW: g.sw, PT: g.ph, PL: g.pw,
		PB: dnnl.PadAfter(g.h, g.ph, g.kh, g.sh, dh, g.oh), PR: dnnl.PadAfter(g.w, g.pw, g.kw, g.sw, dw, g.ow),
		DH: dh, DW: dw, Groups: l.cfg.Group, Bias: l.bias != nil}
	s.Winograd = dnnlWinograd && s.KH == 3 && s.KW == 3 && s.SH == 1 && s.SW == 1 && dh == 1 && dw == 1 && s.Groups == 1
	if !s.Valid() {
		d.why = "geometry oneDNN does not take"
		return
	}
	if in, out := g.c/l.cfg.Group, l.cfg.NumOutput/l.cfg.Group; !dnnlChannelsFit(in, out) && !dnnlIgnoreFit {
		d.why = fmt.Sprintf("%d->%d channels fill under %.0f%% of oneDNN's %d-channel blocks", in, out, 100*dnnlMinUse(dnnl.Block()), dnnl.Block())
		return
	}
	d.spec = s
	if err := d.convs.first(l.num, l.threads, l.newDnnlConv); err != nil {
		d.why = buildWhy(err)
		return
	}
	d.on, d.why = true, ""
	d.impl = d.convs.items[0].Impl()
	d.ownData, d.ownWeights, d.ownWhy = dnnlPassRules(s, d.impl, dnnl.Block(), l.thinRule())
}

// dnnlPassRules says which backward passes of a convolution that runs
// forward on oneDNN (spec s, implementations impl, channel block block)
// go to im2col + GEMM instead, and why; with thin, the weights pass is
// dsgd's direct kernel's (conv_thin.go) and stays off both. Fixed rules from measurements, not
// a timing at start-up, so that a run's numbers do not depend on the
// machine's load (the engines round differently: TestEnginesAgree).
//
// The measurements: BenchmarkConvEngineTimes (DSGD_CONV_TIMES=8, one thread,
// ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell, Emerald Rapids,
// 2026-11-27, load average 5-7 from other work, so the min of 8 interleaved
// repetitions), ms per pass, oneDNN against im2col + GEMM:
//
//	layer (batch)                 forward       weights pass       data pass
//	LeNet conv1 1->20 (64)        2.04 / 2.37   4.37 / 2.51 (gemm)  -
//	LeNet conv2 20->50 12x12 (64) 5.53 / 9.88   6.12 / 5.45         8.56 / 6.74
//	20->50 5x5 24x24 (32)         16.2 / 21.8   19.1 / 19.1         21.7 / 21.8
//	20->50 5x5 pad 2 12x12 (64)   11.1 / 23.9   12.2 / 13.6         10.2 / 15.9
//	24->56 5x5 12x12 (64)         4.62 / 11.2   4.24 / 6.73         7.46 / 8.88
//	32->64 5x5 12x12 (64)         8.29 / 16.6   9.72 / 10.5         10.2 / 13.6
//	20->50 3x3 pad 1 14x14 (32)   3.17 / 5.80   3.22 / 3.36         2.92 / 3.84
//	12->20 5x5 pad 2 14x14 (32)   1.78 / 4.26   1.58 / 2.33         1.58 / 2.92
//	cifar10_quick conv1 3->32     10.5 / 22.8   17.1 / 21.4         -
//	cifar10_quick conv2 32->32    21.3 / 69.6   24.0 / 67.0         21.6 / 53.4
//	cifar10_quick conv3 32->64    9.90 / 38.1   12.2 / 17.3         10.0 / 24.4
//	ResNet 64->64 3x3 56x56 (8)   31.0 / 45.6   36.3 / 47.7         32.0 / 47.5
//
// (cifar10_quick at batch 100; the weights pass with the bias gradient.)
// oneDNN's forward wins everywhere; its passes lose in two places, which
// the rules name:
//
//   - the weights pass of a stride-1 first layer (up to 4 input
//     channels) where oneDNN runs it as its own im2col + GEMM
//     (x64:gemm:jit): the same algorithm on OpenBLAS's SGEMM took 0.57x
//     the time (LeNet conv1; under SSE41 0.89x, forward+backward 5.71
//     against 6.40 ms); where oneDNN has a direct kernel for it
//     (cifar10_quick's conv1 under AVX2, jit:avx2) that stays. Not for a
//     strided one: CaffeNet's conv1 (11x11 stride 4, batch 4) took 1.08x
//     (SSE41) and 1.26x (AVX2) oneDNN's forward+backward with it;
//   - on 8-channel blocks (AVX2 and below), the data pass of an unpadded
//     convolution whose input channels do not fill the blocks, where
//     oneDNN runs it on a direct kernel: jit:avx2's backward-data kernel
//     then spends its time on the partial block's edges (LeNet conv2, 20
//     channels in blocks of 24: 1.27x im2col's; at 24x24 level with it;
//     padded or with whole blocks, 0.64-0.84x). Under SSE41 oneDNN runs
//     that pass as x64:gemm:jit, level with im2col's, and keeps it.
//
// LeNet's layers, forward+backward with the split against without it
// (BenchmarkConvSplitTimes, 40 interleaved repetitions, twice, min / median
// ms): conv1 3.52-3.59 / 5.08-5.37 against 4.10-4.35 / 6.58-6.77 all on
// oneDNN; conv2 12.7-12.9 / 13.9-14.1 against 14.9-15.0 / 16.1-16.2 all
// on im2col (where dnnlMinChannelUse8 did not send it before) and
// 15.3-15.4 / 16.0-16.4 all on oneDNN.
func dnnlPassRules(s dnnl.ConvSpec, impl dnnl.Impl, block int, thin bool) (ownData, ownWeights bool, why string) {
	dimpl, wimpl, _ := strings.Cut(impl.Backward, " / ")
	var whys []string
	if !thin && s.C <= 4 && s.SH == 1 && s.SW == 1 && strings.Contains(wimpl, "gemm") {
		ownWeights = true
		whys = append(whys, "weights pass: oneDNN's is "+wimpl+", OpenBLAS's GEMM is faster")
	}
	unpadded := s.PT == 0 && s.PL == 0 && s.PB == 0 && s.PR == 0
	direct := strings.HasPrefix(dimpl, "jit:") // a direct kernel, not oneDNN's GEMM convolution
	if in := s.C / s.Groups; block == 8 && direct && unpadded && in > 4 && in%block != 0 {
		ownData = true
		whys = append(whys, fmt.Sprintf("data pass: unpadded, %d input channels in %d-channel blocks", in, block))
	}
	return ownData, ownWeights, strings.Join(whys, "; ")
}

// Kernel says which kernels the convolution runs on: oneDNN's (naming its
// implementations) or im2col and GEMM, and why.
func (l *convLayer) Kernel() string {
	if l.nd != nil {
		return "im2col_nd + GEMM"
	}
	if l.wg.on {
		return l.winoKernelName()
	}
	k := kernelName(l.dn.on, l.dn.impl, "im2col + GEMM", l.dn.why)
	if l.dn.on && l.dn.ownWhy != "" {
		k += "; im2col + GEMM for the " + l.dn.ownWhy
	}
	if l.th.on {
		k += l.thinKernelName()
	}
	return k
}

// newDnnlConv builds a worker's Conv for n images. oneDNN's reference
// convolution (its last resort, where no JIT or JIT-GEMM kernel takes the
// geometry) is refused: im2col and GEMM are faster.
func (l *convLayer) newDnnlConv(n int) (*dnnl.Conv, error) {
	s := l.dn.spec
	s.N = n
	c, err := dnnl.NewConv(s)
	if err != nil {
		return nil, err
	}
	if impl := c.Impl(); !impl.JIT() {
		c.Close()
		return nil, fmt.Errorf("oneDNN has only its reference convolution here (%s)", impl)
	}
	return c, nil
}

// dnnlMinChannelUse is the share of oneDNN's channel blocks that must hold
// real channels for a convolution to go to oneDNN: its kernels pad channel
// counts to the block (16 on AVX-512) and compute the padding. LeNet's
// conv2 (20 -> 50 channels: 20/32 x 50/64 = 49 %) runs 1.2-1.3x slower
// there than on im2col+GEMM; cifar10_quick's and CaffeNet's (all multiples
// of 16) run 2-5x faster. A fixed rule rather than timing both at start-up,
// so that a run's numbers do not depend on a measurement.
//
// On 8-channel blocks (AVX2 and below) the share is dnnlMinChannelUse8:
// there LeNet's conv2 fills 74 % (20/24 x 50/56) and its forward takes
// 0.56x im2col's time, a 12 -> 20 convolution (62.5 %) 0.42-0.68x in every
// pass (dnnlPassRules' table, under ONEDNN_MAX_CPU_ISA=AVX2).
const (
	dnnlMinChannelUse  = 0.75
	dnnlMinChannelUse8 = 0.6
)

// dnnlIgnoreFit, set by the measurement tests, sends a convolution to
// oneDNN whatever dnnlChannelsFit says.
var dnnlIgnoreFit bool

// dnnlChannelsFit applies dnnlMinChannelUse to a group's input and output
// channels. A first layer (up to 4 input channels) reads its input
// unblocked, so only its output channels count.
func dnnlChannelsFit(in, out int) bool {
	b := dnnl.Block()
	if b == 0 {
		return false
	}
	use := func(c int) float64 { return float64(c) / float64((c+b-1)/b*b) }
	u := use(out)
	if in > 4 {
		u *= use(in)
	}
	return u >= dnnlMinUse(b)
}

// dnnlMinUse is the channel share dnnlChannelsFit asks for on blocks of b.
func dnnlMinUse(b int) float64 {
	if b == 8 {
		return dnnlMinChannelUse8
	}
	return dnnlMinChannelUse
}

// chunkOf is chunk w of n items over threads workers, as tensor.Pool.For
// cuts them.
func chunkOf(n, threads, w int) (lo, hi int) {
	threads = max(1, min(threads, n))
	size, rem := n/threads, n%threads
	lo = w*size + min(w, rem)
	hi = lo + size
	if w < rem {
		hi++
	}
	return lo, hi
}

// dnnlConv returns worker w's Conv for a chunk of n images.
func (l *convLayer) dnnlConv(w, n int) *dnnl.Conv {
	c, built := l.dn.convs.get(w, n, "Convolution", l.newDnnlConv)
	if built {
		l.dn.fresh[w] = false
	}
	return c
}

func (l *convLayer) dnnlForward(lo, hi, w int) {
	if lo >= hi {
		return
	}
	inSize, outSize := l.geom.c*l.geom.h*l.geom.w, l.cfg.NumOutput*l.geom.oh*l.geom.ow
	c := l.dnnlConv(w, hi-lo)
	var bias []float32
	if l.bias != nil {
		bias = l.bias.Data
	}
	c.Forward(l.in.Data[lo*inSize:hi*inSize], l.weight.Data, bias, l.out.Data[lo*outSize:hi*outSize])
	l.dn.fresh[w] = true
}

func (l *convLayer) dnnlBackward(lo, hi, w int) {
	if lo >= hi {
		return
	}
	inSize, outSize := l.geom.c*l.geom.h*l.geom.w, l.cfg.NumOutput*l.geom.oh*l.geom.ow
	c := l.dnnlConv(w, hi-lo)
	var dsrc []float32
	if l.propDown {
		dsrc = l.in.Diff[lo*inSize : hi*inSize]
	}
	dw, db := l.wdiff[w], l.bdiff[w]
	if l.noParams || !l.want(0) && (l.bias == nil || !l.want(1)) {
		dw, db = nil, nil // no param gradient wanted: data backward only
	}
	c.Backward(l.in.Data[lo*inSize:hi*inSize], l.out.Diff[lo*outSize:hi*outSize], l.weight.Data,
		dsrc, dw, db, l.dn.fresh[w])
	l.used[w] = true
}

// dnnlForwardAll and dnnlBackwardAll are Forward and Backward on oneDNN.
func (l *convLayer) dnnlForwardAll() {
	l.pool.For(l.num, l.threads, l.dnFwdFn)
}

func (l *convLayer) dnnlBackwardAll() {
	clear(l.used)
	l.pool.For(l.num, l.threads, l.dnBwdFn)
	if !l.noParams {
		l.addWorkerGrads(l.weight, l.bias, l.wdiff, l.bdiff, l.used, 0)
	}
	for w := range l.dn.fresh {
		l.dn.fresh[w] = false
	}
}

// perWorker holds one oneDNN primitive per worker goroutine, each built
// for the number of images in that worker's chunk of the batch (a
// primitive is not safe for concurrent use, and its shape is fixed).
type perWorker[T interface{ Close() }] struct {
	items []T
	n     []int // images items[w] was built for; 0: none
}

// reset closes every primitive and makes room for workers.
func (p *perWorker[T]) reset(workers int) {
	for w, n := range p.n {
		if n > 0 {
			p.items[w].Close()
		}
	}
	p.items, p.n = make([]T, workers), make([]int, workers)
}

// get returns worker w's primitive for n images, building it with build
// when it has none or one for another n. It reports whether it built one.
// A build error panics: Reshape built the same layer for the first chunk,
// so oneDNN refusing another batch size is a library fault, not bad input.
func (p *perWorker[T]) get(w, n int, layer string, build func(n int) (T, error)) (T, bool) {
	if p.n[w] == n {
		return p.items[w], false
	}
	if p.n[w] > 0 {
		p.items[w].Close()
		p.n[w] = 0
	}
	x, err := build(n)
	if err != nil {
		panic(fmt.Sprintf("layers: %s: oneDNN accepted the layer for one batch size but not %d images: %v", layer, n, err))
	}
	p.items[w], p.n[w] = x, n
	return x, true
}

// first builds worker 0's primitive for its chunk of num images over
// threads workers; an error means oneDNN has no implementation (or only
// its reference code), and the layer stays on dsgd's own kernels.
func (p *perWorker[T]) first(num, threads int, build func(n int) (T, error)) error {
	lo, hi := chunkOf(num, threads, 0)
	x, err := build(hi - lo)
	if err != nil {
		return err
	}
	p.items[0], p.n[0] = x, hi-lo
	return nil
}

// KernelReporter is implemented by the layers that choose between oneDNN
// and dsgd's own kernels (Convolution, Pooling, LRN): Kernel says, after
// Reshape, which implementation runs and, when it is dsgd's own, why.
type KernelReporter interface {
	Kernel() string
}

// ownWhy says why a layer is not on oneDNN when the process as a whole
// is not: --kernels own, or the library's load error.
func ownWhy() string {
	if dnnlOff {
		return "--kernels own"
	}
	if !dnnlReady() {
		return "oneDNN not loaded"
	}
	return ""
}

// buildWhy is the reason a layer gives for staying off oneDNN when
// building its primitive failed: short for "only reference code", the
// library's error otherwise.
func buildWhy(err error) string {
	if e, ok := errors.AsType[*dnnl.NoJITError](err); ok {
		return e.Short()
	}
	return err.Error()
}

// kernelName is what Kernel reports: "oneDNN jit:avx2 on nChw8c", or own
// with the reason in brackets.
func kernelName(on bool, impl dnnl.Impl, own, why string) string {
	if on {
		return "oneDNN " + impl.String()
	}
	if why == "" {
		return own
	}
	return own + " (" + why + ")"
}
