package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// Type returns "InnerProduct".
func (*InnerProductConfig) Type() string { return "InnerProduct" }

// Build validates the config and returns an unset-up InnerProduct layer
// whose GEMMs use ctx.NumThreads() goroutines.
func (c *InnerProductConfig) Build(ctx Context) (Layer, error) {
	if c.NumOutput <= 0 {
		return nil, fmt.Errorf("layers: InnerProduct: num_output must be positive, got %d", c.NumOutput)
	}
	l := &innerProductLayer{cfg: *c, threads: ctx.NumThreads(), pool: ctx.Pool}
	l.fwdFn, l.wgradFn, l.dgradFn = l.forwardCols, l.weightGradCols, l.bottomGradCols
	return l, nil
}

// innerProductLayer is Caffe's InnerProduct layer: top = bottom·Wᵀ + b with
// the bottom flattened to M×K at Axis, W of shape N×K (K×N when Transpose).
//
// Each of its three GEMMs is split among threads along the dimension that
// partitions W (N for the forward and the weight gradient, K for the bottom
// gradient), one GEMM call per thread: each thread streams only its share
// of the weights, which dominate the memory traffic. (Cutting into fixed
// blocks independent of the thread count would make results bit-identical
// across thread counts, but re-packing the other operand per block costs
// 20-30% on LeNet's ip1; as it is, results agree to rounding.) Small GEMMs
// run on one thread: below gemmWorkPerThread multiply-adds per thread,
// starting goroutines costs more than it saves.
type innerProductLayer struct {
	paramGrads
	cfg     InnerProductConfig
	threads int
	pool    *tensor.Pool

	weight, bias *tensor.Blob
	params       []Param
	k            int // inputs per example, fixed at Setup
	m            int // examples: the count before the axis

	// Arguments of the current pass, read by the bound worker funcs.
	x, dy, y, dx []float32
	fwdFn        func(lo, hi, worker int)
	wgradFn      func(lo, hi, worker int)
	dgradFn      func(lo, hi, worker int)
}

// gemmWorkPerThread is the number of multiply-adds (about 10 µs of GEMM)
// below which adding a thread to a GEMM does not pay for starting it.
const gemmWorkPerThread = 1 << 19

// gemmUnit is the granularity, in rows or columns of W, of a GEMM split
// among threads.
const gemmUnit = 16

// gemmThreads is how many threads a GEMM of m·n·k multiply-adds, split in
// units of gemmUnit along a dimension of size dim, should use.
func gemmThreads(threads, m, n, k, dim int) int {
	return max(1, min(threads, m*n*k/gemmWorkPerThread, (dim+gemmUnit-1)/gemmUnit))
}

// unitRange maps units [lo, hi) of gemmUnit to [a, b) within [0, dim).
func unitRange(lo, hi, dim int) (a, b int) {
	return lo * gemmUnit, min(hi*gemmUnit, dim)
}

func (l *innerProductLayer) Type() string { return "InnerProduct" }

// axis resolves the configured axis against a bottom shape, negative
// counting from the end, as Caffe's CanonicalAxisIndex does.
func (l *innerProductLayer) axis(b *tensor.Blob) (int, error) {
	a := l.cfg.Axis
	if a < 0 {
		a += len(b.Shape)
	}
	if a < 0 || a >= len(b.Shape) {
		return 0, fmt.Errorf("layers: InnerProduct: axis %d is out of range for bottom %q of shape %v", l.cfg.Axis, b.Name, b.Shape)
	}
	return a, nil
}

func (l *innerProductLayer) Setup(bottom, top []*tensor.Blob) error {
	if len(bottom) != 1 || len(top) != 1 {
		return fmt.Errorf("layers: InnerProduct takes one bottom and one top, got %d and %d", len(bottom), len(top))
	}
	b := bottom[0]
	a, err := l.axis(b)
	if err != nil {
		return err
	}
	l.k = b.Shape.CountFrom(a)
	if l.k == 0 {
		return fmt.Errorf("layers: InnerProduct: bottom %q of shape %v has no inputs from axis %d", b.Name, b.Shape, a)
	}
	n := l.cfg.NumOutput
	if l.cfg.Transpose {
		l.weight = tensor.NewBlob("weight", l.k, n)
	} else {
		l.weight = tensor.NewBlob("weight", n, l.k)
	}
	l.params = []Param{{Blob: l.weight, Filler: l.cfg.WeightFiller}}
	if l.cfg.BiasTerm {
		l.bias = tensor.NewBlob("bias", n)
		l.params = append(l.params, Param{Blob: l.bias, Filler: l.cfg.BiasFiller})
	}
	return nil
}

func (l *innerProductLayer) Params() []Param { return l.params }

func (l *innerProductLayer) Reshape(bottom, top []*tensor.Blob) error {
	b := bottom[0]
	a, err := l.axis(b)
	if err != nil {
		return err
	}
	if k := b.Shape.CountFrom(a); k != l.k {
		return fmt.Errorf("layers: InnerProduct: bottom %q of shape %v has %d inputs from axis %d, the layer was set up for %d",
			b.Name, b.Shape, k, a, l.k)
	}
	l.m = b.Shape.CountRange(0, a)
	shape := append(b.Shape[:a:a], l.cfg.NumOutput)
	top[0].Reshape(shape...)
	return nil
}

// parallel runs fn over the gemmUnit units of a dimension of size dim
// with as many threads as an m·n·k GEMM deserves.
func (l *innerProductLayer) parallel(fn func(lo, hi, worker int), m, n, k, dim int) {
	units := (dim + gemmUnit - 1) / gemmUnit
	l.pool.For(units, gemmThreads(l.threads, m, n, k, dim), fn)
}

func (l *innerProductLayer) Forward(bottom, top []*tensor.Blob) {
	l.x, l.y = bottom[0].Data, top[0].Data
	l.parallel(l.fwdFn, l.m, l.cfg.NumOutput, l.k, l.cfg.NumOutput)
	if l.bias != nil {
		n := l.cfg.NumOutput
		b := l.bias.Data[:n]
		for i := 0; i < l.m; i++ {
			row := l.y[i*n : (i+1)*n]
			for j, v := range b {
				row[j] += v
			}
		}
	}
	l.x, l.y = nil, nil
}

// forwardCols computes the top columns of units [lo, hi), [a, b):
// top[:, a:b] = x·W[a:b]ᵀ.
func (l *innerProductLayer) forwardCols(lo, hi, _ int) {
	m, n, k := l.m, l.cfg.NumOutput, l.k
	a, b := unitRange(lo, hi, n)
	w := l.weight.Data
	if l.cfg.Transpose {
		tensor.Gemm(false, false, m, b-a, k, 1, l.x, k, w[a:], n, 0, l.y[a:], n)
	} else {
		tensor.Gemm(false, true, m, b-a, k, 1, l.x, k, w[a*k:], k, 0, l.y[a:], n)
	}
}

func (l *innerProductLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	m, n, k := l.m, l.cfg.NumOutput, l.k
	l.x, l.dy = bottom[0].Data, top[0].Diff
	if l.want(0) {
		l.parallel(l.wgradFn, m, n, k, n)
	}
	if l.bias != nil && l.want(1) {
		db := l.bias.Diff[:n]
		for i := 0; i < m; i++ {
			for j, v := range l.dy[i*n : (i+1)*n] {
				db[j] += v
			}
		}
	}
	if propagateDown[0] {
		l.dx = bottom[0].Diff
		l.parallel(l.dgradFn, m, n, k, k)
	}
	l.x, l.dy, l.dx = nil, nil, nil
}

// weightGradCols accumulates the weight gradient of the outputs of units
// [lo, hi), [a, b): rows a:b of W (its columns with Transpose) gain
// top_diff[:, a:b]ᵀ·x.
func (l *innerProductLayer) weightGradCols(lo, hi, _ int) {
	m, n, k := l.m, l.cfg.NumOutput, l.k
	a, b := unitRange(lo, hi, n)
	dw := l.weight.Diff
	if l.cfg.Transpose {
		tensor.Gemm(true, false, k, b-a, m, 1, l.x, k, l.dy[a:], n, 1, dw[a:], n)
	} else {
		tensor.Gemm(true, false, b-a, k, m, 1, l.dy[a:], n, l.x, k, 1, dw[a*k:], k)
	}
}

// bottomGradCols writes the bottom diff columns of units [lo, hi), [a, b):
// dx[:, a:b] = top_diff·W[:, a:b].
func (l *innerProductLayer) bottomGradCols(lo, hi, _ int) {
	m, n, k := l.m, l.cfg.NumOutput, l.k
	a, b := unitRange(lo, hi, k)
	w := l.weight.Data
	if l.cfg.Transpose {
		tensor.Gemm(false, true, m, b-a, n, 1, l.dy, n, w[a*n:], n, 0, l.dx[a:], k)
	} else {
		tensor.Gemm(false, false, m, b-a, n, 1, l.dy, n, w[a:], k, 0, l.dx[a:], k)
	}
}
