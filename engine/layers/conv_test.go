package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// hlBlob returns a blob of the given shape filled with N(0, 1) noise.
func hlBlob(r *rand.Rand, name string, shape ...int) *tensor.Blob {
	b := tensor.NewBlob(name, shape...)
	fillGaussian(b, 1, r)
	return b
}

// hlClose fails the test unless got and want agree elementwise within tol
// relative to max(|want|, 1).
func hlClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.Abs(g-w) > tol*math.Max(math.Abs(w), 1) || math.IsNaN(g) != math.IsNaN(w) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.7g, want %.7g", what, i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(got))
	}
}

// hlErrContains fails unless err is non-nil and mentions want.
func hlErrContains(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not mention %q", err, want)
	}
}

// refConv is a direct (seven nested loops, float64) Caffe convolution.
func refConv(x *tensor.Blob, weight, bias []float32, c *ConvolutionConfig) (out []float32, oh, ow int) {
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	oh = (h+2*c.PadH-c.KernelH)/c.StrideH + 1
	ow = (w+2*c.PadW-c.KernelW)/c.StrideW + 1
	m := c.NumOutput
	cg, mg := ch/c.Group, m/c.Group
	out = make([]float32, n*m*oh*ow)
	for in := 0; in < n; in++ {
		for om := 0; om < m; om++ {
			g := om / mg
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					var s float64
					if bias != nil {
						s = float64(bias[om])
					}
					for cl := 0; cl < cg; cl++ {
						ci := g*cg + cl
						for ki := 0; ki < c.KernelH; ki++ {
							iy := oy*c.StrideH - c.PadH + ki
							if iy < 0 || iy >= h {
								continue
							}
							for kj := 0; kj < c.KernelW; kj++ {
								ix := ox*c.StrideW - c.PadW + kj
								if ix < 0 || ix >= w {
									continue
								}
								wv := weight[((om*cg+cl)*c.KernelH+ki)*c.KernelW+kj]
								s += float64(wv) * float64(x.Data[((in*ch+ci)*h+iy)*w+ix])
							}
						}
					}
					out[((in*m+om)*oh+oy)*ow+ox] = float32(s)
				}
			}
		}
	}
	return out, oh, ow
}

// convCase is a convolution configuration exercised by the tests.
type convCase struct {
	name       string
	cfg        ConvolutionConfig
	n, c, h, w int
}

func convCases() []convCase {
	cfg := func(m, kh, kw, sh, sw, ph, pw, g int, bias bool) ConvolutionConfig {
		return ConvolutionConfig{NumOutput: m, KernelH: kh, KernelW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw, Group: g, BiasTerm: bias}
	}
	return []convCase{
		{"3x3", cfg(4, 3, 3, 1, 1, 0, 0, 1, true), 2, 3, 6, 5},
		{"stride2_pad1", cfg(3, 3, 3, 2, 2, 1, 1, 1, true), 2, 2, 7, 6},
		{"group2", cfg(4, 3, 3, 1, 1, 1, 1, 2, true), 2, 4, 5, 5},
		{"rect_kernel", cfg(3, 3, 2, 2, 1, 1, 0, 1, true), 2, 2, 6, 5},
		{"1x1", cfg(5, 1, 1, 1, 1, 0, 0, 1, true), 2, 3, 4, 3},
		{"1x1_group3", cfg(6, 1, 1, 1, 1, 0, 0, 3, true), 2, 6, 3, 3},
		{"1x1_stride2", cfg(3, 1, 1, 2, 2, 0, 0, 1, true), 2, 2, 5, 5},
		{"no_bias", cfg(3, 2, 2, 1, 1, 0, 0, 1, false), 2, 2, 4, 4},
		{"big_pad", cfg(2, 3, 3, 3, 2, 2, 3, 1, true), 1, 2, 4, 5},
		{"kernel_eq_input", cfg(3, 4, 5, 1, 1, 0, 0, 1, true), 3, 2, 4, 5},
	}
}

func TestConvForwardMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := convCases()
	// Random shapes on top of the fixed table.
	for i := 0; i < 12; i++ {
		g := 1 + r.IntN(3)
		kh, kw := 1+r.IntN(4), 1+r.IntN(4)
		c := convCase{
			name: fmt.Sprintf("random%d", i),
			cfg: ConvolutionConfig{
				NumOutput: g * (1 + r.IntN(4)), KernelH: kh, KernelW: kw,
				StrideH: 1 + r.IntN(3), StrideW: 1 + r.IntN(3),
				PadH: r.IntN(kh + 1), PadW: r.IntN(kw + 1), Group: g, BiasTerm: r.IntN(2) == 0,
			},
			n: 1 + r.IntN(4), c: g * (1 + r.IntN(3)), h: kh + r.IntN(8), w: kw + r.IntN(8),
		}
		cases = append(cases, c)
	}
	for _, tc := range cases {
		for _, threads := range []int{1, 3} {
			for _, bc := range convBlockCols {
				t.Run(fmt.Sprintf("%s/threads%d/block%d", tc.name, threads, bc), func(t *testing.T) {
					bottom := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
					top := tensor.NewBlob("y")
					l := newConvLayer(t, &tc.cfg, threads, bc, bottom, top)
					l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
					var bias []float32
					if tc.cfg.BiasTerm {
						bias = l.Params()[1].Blob.Data
					}
					want, oh, ow := refConv(bottom, l.Params()[0].Blob.Data, bias, &tc.cfg)
					if !top.Shape.Equal(tensor.Shape{tc.n, tc.cfg.NumOutput, oh, ow}) {
						t.Fatalf("top shape %v, want %v", top.Shape, []int{tc.n, tc.cfg.NumOutput, oh, ow})
					}
					hlClose(t, "top", top.Data, want, 1e-4)
				})
			}
		}
	}
}

// convBlockCols are block widths the tests force: one image per block,
// blocks of about two or three small images (so batches end in a partial
// block), and the default.
var convBlockCols = []int{1, 40, blockColumns}

// newConvLayer is newTestLayer for a convolution whose image blocks aim
// for blockCols GEMM columns.
func newConvLayer(t *testing.T, cfg *ConvolutionConfig, threads, blockCols int, bottom, top *tensor.Blob) Layer {
	t.Helper()
	bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
	l := newTestLayer(t, cfg, Context{Threads: threads}, bs, ts)
	l.(*convLayer).blockCols = blockCols
	if err := l.Reshape(bs, ts); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConvGradients(t *testing.T) {
	for _, tc := range convCases() {
		for _, bc := range []int{1, blockColumns} {
			t.Run(fmt.Sprintf("%s/block%d", tc.name, bc), func(t *testing.T) {
				r := rand.New(rand.NewPCG(11, 12))
				bottom := hlBlob(r, "x", tc.n+1, tc.c, tc.h, tc.w)
				top := tensor.NewBlob("y")
				l := newConvLayer(t, &tc.cfg, 2, bc, bottom, top)
				checkGradients(t, l, []*tensor.Blob{bottom}, []*tensor.Blob{top}, gradCheck{Seed: 5})
			})
		}
	}
}

// TestConvThreadsAgree runs the same layer with 1 and 3 threads: forward and
// bottom diffs are per-image and must match exactly, param diffs up to the
// reassociation of the per-worker sums.
func TestConvThreadsAgree(t *testing.T) {
	for _, tc := range convCases() {
		for _, bc := range convBlockCols {
			t.Run(fmt.Sprintf("%s/block%d", tc.name, bc), func(t *testing.T) {
				testConvThreadsAgree(t, tc, bc)
			})
		}
	}
}

func testConvThreadsAgree(t *testing.T, tc convCase, blockCols int) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 7 // not a multiple of 3: uneven chunks
	bottom := hlBlob(r, "x", n, tc.c, tc.h, tc.w)
	run := func(threads int) (top, bdiff []float32, pdiff [][]float32) {
		b := &tensor.Blob{Name: "x", Shape: bottom.Shape.Clone(), Data: append([]float32(nil), bottom.Data...), Diff: make([]float32, bottom.Count())}
		tp := tensor.NewBlob("y")
		l := newConvLayer(t, &tc.cfg, threads, blockCols, b, tp)
		l.Forward([]*tensor.Blob{b}, []*tensor.Blob{tp})
		rr := rand.New(rand.NewPCG(1, 1))
		for i := range tp.Diff {
			tp.Diff[i] = float32(rr.NormFloat64())
		}
		for _, p := range l.Params() {
			p.Blob.ZeroDiff()
		}
		l.Backward([]*tensor.Blob{tp}, []bool{true}, []*tensor.Blob{b})
		for _, p := range l.Params() {
			pdiff = append(pdiff, append([]float32(nil), p.Blob.Diff...))
		}
		return tp.Data, b.Diff, pdiff
	}
	top1, bd1, pd1 := run(1)
	top3, bd3, pd3 := run(3)
	hlClose(t, "top", top3, top1, 0)
	hlClose(t, "bottom diff", bd3, bd1, 0)
	for i := range pd1 {
		hlClose(t, fmt.Sprintf("param%d diff", i), pd3[i], pd1[i], 1e-5)
	}
}

// TestConvBackwardContract checks that Backward adds to param diffs,
// overwrites bottom diffs, and leaves them alone when not propagating.
func TestConvBackwardContract(t *testing.T) {
	for _, tc := range convCases()[:5] {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(15, 16))
			bottom := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l := newTestLayer(t, &tc.cfg, Context{Threads: 2}, bs, ts)
			l.Forward(bs, ts)
			fillGaussianDiff(top, r)
			for _, p := range l.Params() {
				p.Blob.ZeroDiff()
			}
			l.Backward(ts, []bool{true}, bs)
			once := append([]float32(nil), l.Params()[0].Blob.Diff...)
			bd := append([]float32(nil), bottom.Diff...)
			l.Backward(ts, []bool{true}, bs)
			twice := make([]float32, len(once))
			for i, v := range once {
				twice[i] = 2 * v
			}
			hlClose(t, "weight diff after two passes", l.Params()[0].Blob.Diff, twice, 1e-5)
			hlClose(t, "bottom diff after two passes", bottom.Diff, bd, 0)

			for i := range bottom.Diff {
				bottom.Diff[i] = 42
			}
			l.Backward(ts, []bool{false}, bs)
			for i, v := range bottom.Diff {
				if v != 42 {
					t.Fatalf("bottom diff[%d] = %v with propagateDown false, want untouched 42", i, v)
				}
			}
		})
	}
}

// fillGaussianDiff fills b's diff with N(0, 1) noise.
func fillGaussianDiff(b *tensor.Blob, r *rand.Rand) {
	for i := range b.Diff {
		b.Diff[i] = float32(r.NormFloat64())
	}
}

// TestConvParamViews replaces the param slices after Setup, as the model
// does, and checks the layer reads and writes the new ones.
func TestConvParamViews(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	cfg := &ConvolutionConfig{NumOutput: 3, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true}
	bottom := hlBlob(r, "x", 2, 2, 5, 5)
	top := tensor.NewBlob("y")
	bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
	l, err := cfg.Build(Context{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Setup(bs, ts); err != nil {
		t.Fatal(err)
	}
	ps := l.Params()
	if len(ps) != 2 || !ps[0].Blob.Shape.Equal(tensor.Shape{3, 2, 3, 3}) || !ps[1].Blob.Shape.Equal(tensor.Shape{3}) {
		t.Fatalf("params %v, %v; want 3x2x3x3 and 3", ps[0].Blob.Shape, ps[1].Blob.Shape)
	}
	flat := make([]float32, 2*(54+3))
	for i := range flat[:57] {
		flat[i] = float32(r.NormFloat64())
	}
	ps[0].Blob.Data, ps[0].Blob.Diff = flat[:54], flat[57:57+54]
	ps[1].Blob.Data, ps[1].Blob.Diff = flat[54:57], flat[57+54:]
	if err := l.Reshape(bs, ts); err != nil {
		t.Fatal(err)
	}
	l.Forward(bs, ts)
	want, _, _ := refConv(bottom, flat[:54], flat[54:57], cfg)
	hlClose(t, "top", top.Data, want, 1e-4)
	fillGaussianDiff(top, r)
	l.Backward(ts, []bool{true}, bs)
	nz := 0
	for _, v := range flat[57:] {
		if v != 0 {
			nz++
		}
	}
	if nz != 57 {
		t.Errorf("%d of 57 param diff entries written through the views, want all", nz)
	}
}

func TestConvBuildErrors(t *testing.T) {
	ok := ConvolutionConfig{NumOutput: 4, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, Group: 2, BiasTerm: true}
	tests := []struct {
		name string
		mod  func(*ConvolutionConfig)
		want string
	}{
		{"num_output", func(c *ConvolutionConfig) { c.NumOutput = 0 }, "num_output"},
		{"kernel_h", func(c *ConvolutionConfig) { c.KernelH = 0 }, "kernel"},
		{"kernel_w", func(c *ConvolutionConfig) { c.KernelW = -1 }, "kernel"},
		{"stride", func(c *ConvolutionConfig) { c.StrideW = 0 }, "stride"},
		{"pad", func(c *ConvolutionConfig) { c.PadH = -1 }, "pad"},
		{"group_zero", func(c *ConvolutionConfig) { c.Group = 0 }, "group"},
		{"group_divides_output", func(c *ConvolutionConfig) { c.Group = 3 }, "group"},
	}
	if _, err := ok.Build(Context{}); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			_, err := c.Build(Context{})
			hlErrContains(t, err, tc.want)
		})
	}
}

func TestConvSetupErrors(t *testing.T) {
	// 3x2: a square kernel without ND is Caffe's single kernel_size, good
	// for any number of spatial axes (caffe_conv_test.go).
	cfg := &ConvolutionConfig{NumOutput: 4, KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 1, Group: 2, BiasTerm: true}
	tests := []struct {
		name   string
		bottom []int
		nTop   int
		want   string
	}{
		{"not_4d", []int{2, 4, 5}, 1, "4-D"},
		{"5d", []int{1, 2, 4, 5, 5}, 1, "4-D"},
		{"channels_not_multiple_of_group", []int{2, 3, 5, 5}, 1, "group"},
		{"two_tops", []int{2, 4, 5, 5}, 2, "as many tops as bottoms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := cfg.Build(Context{})
			if err != nil {
				t.Fatal(err)
			}
			tops := []*tensor.Blob{tensor.NewBlob("y"), tensor.NewBlob("z")}[:tc.nTop]
			hlErrContains(t, l.Setup([]*tensor.Blob{tensor.NewBlob("x", tc.bottom...)}, tops), tc.want)
		})
	}
	t.Run("reshape_channels_changed", func(t *testing.T) {
		l, _ := cfg.Build(Context{})
		top := tensor.NewBlob("y")
		if err := l.Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 4, 5, 5)}, []*tensor.Blob{top}); err != nil {
			t.Fatal(err)
		}
		hlErrContains(t, l.Reshape([]*tensor.Blob{tensor.NewBlob("x", 2, 6, 5, 5)}, []*tensor.Blob{top}), "channels")
	})
	t.Run("kernel_larger_than_input", func(t *testing.T) {
		l, _ := cfg.Build(Context{})
		top := tensor.NewBlob("y")
		b := []*tensor.Blob{tensor.NewBlob("x", 2, 4, 2, 5)}
		if err := l.Setup(b, []*tensor.Blob{top}); err != nil {
			t.Fatal(err)
		}
		hlErrContains(t, l.Reshape(b, []*tensor.Blob{top}), "larger")
	})
}

// TestConvReshapeBatch checks a reshape to another batch size and image
// size gives the reference result.
func TestConvReshapeBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	cfg := &ConvolutionConfig{NumOutput: 3, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Group: 1, BiasTerm: true}
	b := hlBlob(r, "x", 2, 2, 5, 5)
	top := tensor.NewBlob("y")
	l := newTestLayer(t, cfg, Context{Threads: 2}, []*tensor.Blob{b}, []*tensor.Blob{top})
	for _, shape := range [][]int{{5, 2, 7, 6}, {1, 2, 3, 3}, {4, 2, 9, 9}} {
		b = hlBlob(r, "x", shape...)
		if err := l.Reshape([]*tensor.Blob{b}, []*tensor.Blob{top}); err != nil {
			t.Fatal(err)
		}
		l.Forward([]*tensor.Blob{b}, []*tensor.Blob{top})
		want, _, _ := refConv(b, l.Params()[0].Blob.Data, l.Params()[1].Blob.Data, cfg)
		hlClose(t, fmt.Sprint("top for ", shape), top.Data, want, 1e-4)
	}
}

// hlAllocs fails if a Forward plus Backward pass allocates. With one thread
// nothing may allocate; tensor.ParallelFor itself allocates when it starts
// goroutines, so only the single-threaded path is held to zero.
func hlAllocs(t *testing.T, l Layer, bottom, top []*tensor.Blob, prop []bool) {
	t.Helper()
	l.Forward(bottom, top)
	l.Backward(top, prop, bottom)
	a := testing.AllocsPerRun(10, func() {
		l.Forward(bottom, top)
		l.Backward(top, prop, bottom)
	})
	if a != 0 {
		t.Errorf("%s: Forward+Backward allocates %v times per pass, want 0", l.Type(), a)
	}
}

func TestConvNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range convCases()[:5] {
		b := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
		top := tensor.NewBlob("y")
		l := newTestLayer(t, &tc.cfg, Context{Threads: 1}, []*tensor.Blob{b}, []*tensor.Blob{top})
		hlAllocs(t, l, []*tensor.Blob{b}, []*tensor.Blob{top}, []bool{true})
	}
}

// lenetLayer is one heavy layer of LeNet (batch 64) for the benchmarks.
type lenetLayer struct {
	name   string
	cfg    Config
	bottom []int
	prop   bool  // propagate down (false for conv1, which sits on the data)
	flops  int64 // forward multiply-adds × 2 (conv only; 0 elsewhere)
}

func lenetLayers() []lenetLayer {
	conv := func(m, k int) *ConvolutionConfig {
		return &ConvolutionConfig{NumOutput: m, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true}
	}
	pool := &PoolingConfig{Method: PoolMax, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}
	ip := func(n int) *InnerProductConfig { return &InnerProductConfig{NumOutput: n, BiasTerm: true, Axis: 1} }
	return []lenetLayer{
		{"conv1", conv(20, 5), []int{64, 1, 28, 28}, false, 2 * 64 * 20 * 24 * 24 * 25},
		{"pool1", pool, []int{64, 20, 24, 24}, true, 0},
		{"conv2", conv(50, 5), []int{64, 20, 12, 12}, true, 2 * 64 * 50 * 8 * 8 * 500},
		{"pool2", pool, []int{64, 50, 8, 8}, true, 0},
		{"ip1", ip(500), []int{64, 50, 4, 4}, true, 2 * 64 * 800 * 500},
		{"ip2", ip(10), []int{64, 500}, true, 2 * 64 * 500 * 10},
	}
}

// BenchmarkLeNet times Forward and Backward of each heavy LeNet layer at
// batch 64, and a whole pass over all of them, with 1 and 2 threads.
// GFLOP/s counts the GEMM work: forward 2·M·N·K; backward twice that with
// the bottom diff, once without.
func BenchmarkLeNet(b *testing.B) {
	for _, threads := range []int{1, 2} {
		pool := tensor.NewPool(threads) // as the model gives its layers
		defer pool.Close()
		type built struct {
			lenetLayer
			l      Layer
			bs, ts []*tensor.Blob
			props  []bool
		}
		var all []built
		for _, ll := range lenetLayers() {
			r := rand.New(rand.NewPCG(1, 2))
			bottom := hlBlob(r, "x", ll.bottom...)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l, err := ll.cfg.Build(Context{Threads: threads, Pool: pool})
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Setup(bs, ts); err != nil {
				b.Fatal(err)
			}
			for _, p := range l.Params() {
				fillGaussian(p.Blob, 0.1, r)
			}
			if err := l.Reshape(bs, ts); err != nil {
				b.Fatal(err)
			}
			l.Forward(bs, ts)
			fillGaussianDiff(top, r)
			all = append(all, built{ll, l, bs, ts, []bool{ll.prop}})
		}
		for _, x := range all {
			b.Run(fmt.Sprintf("%s/threads%d/fwd", x.name, threads), func(b *testing.B) {
				b.ReportAllocs()
				start := cpuTime()
				for b.Loop() {
					x.l.Forward(x.bs, x.ts)
				}
				reportCPU(b, start)
				if x.flops > 0 {
					b.ReportMetric(float64(x.flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				}
			})
			b.Run(fmt.Sprintf("%s/threads%d/bwd", x.name, threads), func(b *testing.B) {
				b.ReportAllocs()
				start := cpuTime()
				for b.Loop() {
					x.l.Backward(x.ts, x.props, x.bs)
				}
				reportCPU(b, start)
				if x.flops > 0 {
					f := x.flops
					if x.prop {
						f *= 2
					}
					b.ReportMetric(float64(f)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				}
			})
		}
		b.Run(fmt.Sprintf("all/threads%d/fwd+bwd", threads), func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			defer reportCPU(b, start)
			for b.Loop() {
				for _, x := range all {
					x.l.Forward(x.bs, x.ts)
				}
				for i := len(all) - 1; i >= 0; i-- {
					all[i].l.Backward(all[i].ts, all[i].props, all[i].bs)
				}
			}
		})
	}
}

// TestLayersWithPoolBitIdentical runs LeNet's heavy layers with a shared
// tensor.Pool and without one, at the same thread count, and requires bit
// for bit the same tops, bottom diffs and param diffs: the pool splits work
// exactly as goroutines started per loop do. A pool narrower than Threads
// must still give the results of that narrower thread count.
func TestLayersWithPoolBitIdentical(t *testing.T) {
	type result struct{ top, bdiff, pdiff []float32 }
	run := func(ll lenetLayer, ctx Context) result {
		r := rand.New(rand.NewPCG(51, 52))
		bottom := hlBlob(r, "x", ll.bottom...)
		top := tensor.NewBlob("y")
		bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
		l := newTestLayer(t, ll.cfg, ctx, bs, ts)
		for _, p := range l.Params() {
			fillGaussian(p.Blob, 0.1, r)
		}
		var res result
		for range 2 { // twice: the second pass reuses every buffer
			for _, p := range l.Params() {
				p.Blob.ZeroDiff()
			}
			l.Forward(bs, ts)
			fillGaussianDiff(top, rand.New(rand.NewPCG(1, 1)))
			l.Backward(ts, []bool{true}, bs)
		}
		res.top, res.bdiff = slices.Clone(top.Data), slices.Clone(bottom.Diff)
		for _, p := range l.Params() {
			res.pdiff = append(res.pdiff, p.Blob.Diff...)
		}
		return res
	}
	same := func(a, b []float32) bool {
		return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
	}
	for _, ll := range lenetLayers() {
		for _, c := range []struct{ threads, pool, want int }{{2, 2, 2}, {3, 3, 3}, {3, 2, 2}, {1, 4, 1}} {
			pool := tensor.NewPool(c.pool)
			got := run(ll, Context{Threads: c.threads, Pool: pool})
			want := run(ll, Context{Threads: c.want})
			pool.Close()
			if !same(got.top, want.top) || !same(got.bdiff, want.bdiff) || !same(got.pdiff, want.pdiff) {
				t.Errorf("%s: threads %d with a pool of %d differs from %d threads without one", ll.name, c.threads, c.pool, c.want)
			}
		}
	}
}
