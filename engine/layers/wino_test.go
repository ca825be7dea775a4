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

// winoCases are the geometries the Winograd tests run: odd sizes, pad 0
// and 1, channel counts that are not multiples of 8, one image and
// several, a size smaller than a tile.
var winoCases = []struct{ n, c, h, w, k, pad int }{
	{1, 3, 5, 5, 2, 1},
	{2, 5, 7, 9, 3, 0},
	{3, 13, 11, 10, 17, 1},
	{1, 8, 3, 3, 8, 0},
	{2, 19, 14, 14, 21, 1},
	{4, 16, 9, 13, 12, 0},
	{2, 33, 28, 28, 24, 1},
	{1, 64, 7, 7, 64, 1},
}

// convRef64 is the direct convolution in float64: out = w ⋆ in + bias,
// and the data gradient din = wᵀ ⋆ dout.
func convRef64(n, c, h, w, k, pad int, in, wt, bias, dout []float32) (out, din []float64) {
	oh, ow := h+2*pad-2, w+2*pad-2
	out = make([]float64, n*k*oh*ow)
	din = make([]float64, n*c*h*w)
	for b := 0; b < n; b++ {
		for ko := 0; ko < k; ko++ {
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					o := (b*k+ko)*oh*ow + y*ow + x
					s := 0.0
					if bias != nil {
						s = float64(bias[ko])
					}
					for ci := 0; ci < c; ci++ {
						for i := 0; i < 3; i++ {
							for j := 0; j < 3; j++ {
								iy, ix := y-pad+i, x-pad+j
								if iy < 0 || iy >= h || ix < 0 || ix >= w {
									continue
								}
								wv := float64(wt[((ko*c+ci)*3+i)*3+j])
								s += wv * float64(in[((b*c+ci)*h+iy)*w+ix])
								din[((b*c+ci)*h+iy)*w+ix] += wv * float64(dout[o])
							}
						}
					}
					out[o] = s
				}
			}
		}
	}
	return out, din
}

// relErr is max |got − want| over max |want|.
func relErr(got []float32, want []float64) float64 {
	var e, m float64
	for i := range want {
		e = max(e, math.Abs(float64(got[i])-want[i]))
		m = max(m, math.Abs(want[i]))
	}
	return e / max(m, 1e-30)
}

// normErr is relErr against a float32 reference.
func normErr(got, want []float32) float64 {
	w := make([]float64, len(want))
	for i, v := range want {
		w[i] = float64(v)
	}
	return relErr(got, w)
}

// winoConv runs the forward (and data pass) of one case on dsgd's
// Winograd F(m,3) directly, over threads workers.
func winoConv(m, threads, n, c, h, w, k, pad int, in, wt, bias, dout []float32) (out, din []float32) {
	f, b := newWinoShape(m, n, c, h, w, k, pad), newWinoShape(m, n, k, h+2*pad-2, w+2*pad-2, c, 2-pad)
	a2 := (m + 2) * (m + 2)
	u, ub := make([]float32, a2*k*c), make([]float32, a2*k*c)
	var scratch []float32
	winoKernel(m, wt, k, c, 1, false, u, 0, k, &scratch)
	winoKernel(m, wt, k, c, 1, true, ub, 0, c, &scratch)
	out = make([]float32, n*k*f.oh*f.ow)
	din = make([]float32, n*c*h*w)
	bufs := make([]winoBuf, threads)
	hp, wp := f.padded()
	pf := make([]float32, n*c*hp*wp)
	winoPad(&f, in, pf, 0, n*c)
	hp, wp = b.padded()
	pb := make([]float32, n*k*hp*wp)
	winoPad(&b, dout, pb, 0, n*k)
	tensor.ParallelFor(f.chunks(n), threads, func(lo, hi, wk int) { winoRun(&f, n, pf, u, bias, out, &bufs[wk], lo, hi) })
	tensor.ParallelFor(b.chunks(n), threads, func(lo, hi, wk int) { winoRun(&b, n, pb, ub, nil, din, &bufs[wk], lo, hi) })
	return out, din
}

// TestWinogradMatchesReference checks dsgd's Winograd F(2,3) and F(4,3),
// forward and data pass, against the direct convolution in float64 on
// random inputs, and reports the float32 im2col + GEMM path's error
// beside it. Tolerance: 1e-5 relative to the largest output for F(2,3),
// 1e-4 for F(4,3) (as oneDNN's F(4,3) was accepted: SetWinograd); at the
// same time each must be no more than 10 (F(2,3)) or 100 (F(4,3)) times
// im2col's error on the same case.
func TestWinogradMatchesReference(t *testing.T) {
	for _, tc := range winoCases {
		r := rand.New(rand.NewPCG(uint64(tc.c), uint64(tc.k)))
		oh, ow := tc.h+2*tc.pad-2, tc.w+2*tc.pad-2
		in, wt := randSlice(r, tc.n*tc.c*tc.h*tc.w, 1), randSlice(r, tc.k*tc.c*9, 1/math.Sqrt(float64(9*tc.c)))
		bias, dout := randSlice(r, tc.k, 0.1), randSlice(r, tc.n*tc.k*oh*ow, 1)
		wantOut, wantDin := convRef64(tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, wt, bias, dout)
		imOut, imDin := im2colConv(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, wt, bias, dout)
		imF, imB := relErr(imOut, wantOut), relErr(imDin, wantDin)
		for _, m := range []int{2, 4} {
			tol, ratio := 1e-5, 10.0
			if m == 4 {
				tol, ratio = 1e-4, 100
			}
			out, din := winoConv(m, 1, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, wt, bias, dout)
			ef, eb := relErr(out, wantOut), relErr(din, wantDin)
			name := fmt.Sprintf("F(%d,3) %+v", m, tc)
			t.Logf("%s: forward %.2g (im2col %.2g), data %.2g (im2col %.2g)", name, ef, imF, eb, imB)
			if ef > tol || eb > tol || ef > ratio*max(imF, 1e-7) || eb > ratio*max(imB, 1e-7) {
				t.Errorf("%s: relative error forward %.3g, data %.3g; im2col's %.3g, %.3g", name, ef, eb, imF, imB)
			}
			out2, din2 := winoConv(m, 2, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, wt, bias, dout)
			if !slices.Equal(out, out2) || !slices.Equal(din, din2) {
				t.Errorf("%s: 2 threads' bits differ from 1 thread's", name)
			}
		}
	}
}

func randSlice(r *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64() * scale)
	}
	return s
}

// im2colConv runs one case through the convolution layer on im2col +
// GEMM (the float32 baseline the Winograd error is compared with).
func im2colConv(t *testing.T, n, c, h, w, k, pad int, in, wt, bias, dout []float32) (out, din []float32) {
	t.Helper()
	defer func(off bool, mode int) { dnnlOff, winoMode = off, mode }(dnnlOff, winoMode)
	dnnlOff, winoMode = true, -1
	l, bs, ts := winoLayer(t, n, c, h, w, k, pad, 1, in, wt, bias)
	l.Forward(bs, ts)
	copy(ts[0].Diff, dout)
	l.Backward(ts, []bool{true}, bs)
	return slices.Clone(ts[0].Data), slices.Clone(bs[0].Diff)
}

// winoLayer builds a 3×3 stride-1 convolution layer with these weights
// over a bottom holding in.
func winoLayer(t testing.TB, n, c, h, w, k, pad, threads int, in, wt, bias []float32) (Layer, []*tensor.Blob, []*tensor.Blob) {
	t.Helper()
	return winoLayerG(t, n, c, h, w, k, pad, 1, threads, in, wt, bias)
}

// winoLayerG is winoLayer in groups groups (wt is K×C/groups×3×3).
func winoLayerG(t testing.TB, n, c, h, w, k, pad, groups, threads int, in, wt, bias []float32) (Layer, []*tensor.Blob, []*tensor.Blob) {
	t.Helper()
	cfg := &ConvolutionConfig{NumOutput: k, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: pad, PadW: pad, Group: groups, BiasTerm: true}
	bottom := tensor.NewBlob("x", n, c, h, w)
	copy(bottom.Data, in)
	bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{tensor.NewBlob("y")}
	l := newTestLayer(t, cfg, Context{Threads: threads}, bs, ts)
	ps := l.Params()
	copy(ps[0].Blob.Data, wt)
	copy(ps[1].Blob.Data, bias)
	for _, p := range ps {
		p.Blob.ZeroDiff()
	}
	return l, bs, ts
}

// TestWinogradLayer runs convolution layers forced onto dsgd's Winograd
// (winoMode, whatever the ISA): Kernel names it; tops and diffs agree with
// im2col + GEMM within 1e-4 relative; one thread allocates nothing per
// pass; two runs give the same bits, and so do 1 and 2 threads (forward,
// bottom diff, weight and bias diffs: the weights pass is on Winograd too,
// winoWtsMode); a finite-difference gradient check.
func TestWinogradLayer(t *testing.T) {
	defer func(mode, wmode, wide int) { winoMode, winoWtsMode, winoWideMode = mode, wmode, wide }(winoMode, winoWtsMode, winoWideMode)
	for _, tc := range winoCases[:6] {
		r := rand.New(rand.NewPCG(7, uint64(tc.c)))
		oh, ow := tc.h+2*tc.pad-2, tc.w+2*tc.pad-2
		in, wt := randSlice(r, tc.n*tc.c*tc.h*tc.w, 1), randSlice(r, tc.k*tc.c*9, 0.3)
		bias, dout := randSlice(r, tc.k, 0.1), randSlice(r, tc.n*tc.k*oh*ow, 1)
		wantOut, wantDin := im2colConv(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, wt, bias, dout)
		wantW, wantB := im2colWts(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, dout)
		winoMode, winoWtsMode = 1, 1
		var first [4][]float32
		// Two threads share out the chunks (wide -1) or split each one
		// (wide 1): both must give the one thread's bits.
		for run, rc := range []struct{ threads, wide int }{{1, 0}, {1, 0}, {2, -1}, {2, 1}} {
			threads := rc.threads
			winoWideMode = rc.wide
			l, bs, ts := winoLayer(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, threads, in, wt, bias)
			if k := l.(KernelReporter).Kernel(); !strings.HasPrefix(k, "dsgd Winograd F(4,3) forward, data and weights passes") {
				t.Fatalf("%+v: runs %q, want dsgd Winograd F(4,3) for all three passes", tc, k)
			}
			l.Forward(bs, ts)
			copy(ts[0].Diff, dout)
			l.Backward(ts, []bool{true}, bs)
			name := fmt.Sprintf("%+v, %d threads, wide mode %d", tc, threads, rc.wide)
			hlClose(t, name+": top", ts[0].Data, wantOut, 1e-4)
			hlClose(t, name+": bottom diff", bs[0].Diff, wantDin, 1e-4)
			ps := l.Params()
			// The weight diff is a sum over n·oh·ow products, and the
			// Winograd's rounding grows with the largest of those sums,
			// not with each element: it is held to 1e-4 of the largest
			// element (the bound TestWinogradMatchesReference and
			// oneDNN's F(4,3) use), not of each. Element-wise, a small
			// element missed 1e-4 under OpenBLAS's Haswell kernels by
			// 8e-6 (2e-6 of the largest).
			if e := normErr(ps[0].Blob.Diff, wantW); e > 1e-4 {
				t.Errorf("%s: weight diff: largest error %.3g of the largest element, want at most 1e-4", name, e)
			}
			hlClose(t, name+": bias diff", ps[1].Blob.Diff, wantB, 1e-5)
			if run == 0 {
				first = [4][]float32{slices.Clone(ts[0].Data), slices.Clone(bs[0].Diff), slices.Clone(ps[0].Blob.Diff), slices.Clone(ps[1].Blob.Diff)}
				hlAllocs(t, l, bs, ts, []bool{true}) // after the clones: it reruns the passes
			} else if !slices.Equal(first[0], ts[0].Data) || !slices.Equal(first[1], bs[0].Diff) ||
				!slices.Equal(first[2], ps[0].Blob.Diff) || !slices.Equal(first[3], ps[1].Blob.Diff) {
				t.Errorf("%s: bits differ from the first run's (1 thread)", name)
			}
		}
		l, bs, ts := winoLayer(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, 2, in, wt, bias)
		// The objective is linear in the bottom and params, so a central
		// difference is exact at any step; a large one keeps Winograd's
		// rounding (1e-5 of an output) from swamping it.
		checkGradients(t, l, bs, ts, gradCheck{Step: 1, Threshold: 1e-3, MaxPerBlob: 40, Seed: 3})
		winoMode, winoWtsMode, winoWideMode = 0, 0, 0
	}
}

// TestWinogradGrouped runs grouped convolutions (Caffe's group, as in
// AlexNet's conv2, conv4 and conv5) on dsgd's Winograd, forced whatever the
// ISA: Kernel names it; the top and the data gradient agree with the
// direct convolution in float64, group by group (convRef64 on each
// group's channels), within 1e-4 of the largest element (the bound of
// TestWinogradMatchesReference's F(4,3)); top, bottom, weight and bias
// gradients agree with the grouped im2col + GEMM path within the bounds of
// TestWinogradLayer; 1 and 2 threads, sharing out the chunks or splitting
// them, give the same bits; a finite-difference check; and a depthwise or
// narrow-group convolution is left to the other kernels (winoGroupsFit).
func TestWinogradGrouped(t *testing.T) {
	defer func(mode, wmode, wide int, off bool) {
		winoMode, winoWtsMode, winoWideMode, dnnlOff = mode, wmode, wide, off
	}(winoMode, winoWtsMode, winoWideMode, dnnlOff)
	for _, tc := range []struct{ n, c, h, w, k, pad, g int }{
		{2, 32, 9, 11, 48, 1, 2},
		{3, 48, 13, 13, 32, 0, 2},
		{1, 64, 7, 10, 64, 1, 4},
		{2, 51, 6, 6, 34, 1, 1}, // one group, channels not multiples of 8
	} {
		r := rand.New(rand.NewPCG(17, uint64(tc.c*tc.g)))
		oh, ow := tc.h+2*tc.pad-2, tc.w+2*tc.pad-2
		cg, kg := tc.c/tc.g, tc.k/tc.g
		in, wt := randSlice(r, tc.n*tc.c*tc.h*tc.w, 1), randSlice(r, tc.k*cg*9, 0.3)
		bias, dout := randSlice(r, tc.k, 0.1), randSlice(r, tc.n*tc.k*oh*ow, 1)
		// The float64 reference, group by group: each group is the
		// ungrouped convolution of its channels.
		refOut, refDin := make([]float64, len(dout)), make([]float64, len(in))
		for gi := range tc.g {
			gin, gdout := make([]float32, tc.n*cg*tc.h*tc.w), make([]float32, tc.n*kg*oh*ow)
			for b := range tc.n {
				copy(gin[b*cg*tc.h*tc.w:(b+1)*cg*tc.h*tc.w], in[(b*tc.c+gi*cg)*tc.h*tc.w:])
				copy(gdout[b*kg*oh*ow:(b+1)*kg*oh*ow], dout[(b*tc.k+gi*kg)*oh*ow:])
			}
			o, d := convRef64(tc.n, cg, tc.h, tc.w, kg, tc.pad, gin, wt[gi*kg*cg*9:(gi+1)*kg*cg*9], bias[gi*kg:(gi+1)*kg], gdout)
			for b := range tc.n {
				copy(refOut[(b*tc.k+gi*kg)*oh*ow:], o[b*kg*oh*ow:(b+1)*kg*oh*ow])
				copy(refDin[(b*tc.c+gi*cg)*tc.h*tc.w:], d[b*cg*tc.h*tc.w:(b+1)*cg*tc.h*tc.w])
			}
		}
		pass := func(threads int) (Layer, [4][]float32) {
			l, bs, ts := winoLayerG(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, tc.g, threads, in, wt, bias)
			l.Forward(bs, ts)
			copy(ts[0].Diff, dout)
			l.Backward(ts, []bool{true}, bs)
			ps := l.Params()
			return l, [4][]float32{slices.Clone(ts[0].Data), slices.Clone(bs[0].Diff), slices.Clone(ps[0].Blob.Diff), slices.Clone(ps[1].Blob.Diff)}
		}
		// The grouped im2col + GEMM path, the layer's own without oneDNN.
		off0 := dnnlOff
		dnnlOff, winoMode = true, -1
		_, want := pass(1)
		dnnlOff = off0
		winoMode, winoWtsMode = 1, 1
		var first [4][]float32
		for run, rc := range []struct{ threads, wide int }{{1, 0}, {2, -1}, {2, 1}} {
			winoWideMode = rc.wide
			l, got := pass(rc.threads)
			name := fmt.Sprintf("%+v, %d threads, wide mode %d", tc, rc.threads, rc.wide)
			if k := l.(KernelReporter).Kernel(); !strings.HasPrefix(k, "dsgd Winograd F(4,3) forward, data and weights passes") {
				t.Fatalf("%s: runs %q, want dsgd Winograd F(4,3) for all three passes", name, k)
			}
			if ef, eb := relErr(got[0], refOut), relErr(got[1], refDin); ef > 1e-4 || eb > 1e-4 {
				t.Errorf("%s: relative error against float64: forward %.3g, data %.3g, want at most 1e-4", name, ef, eb)
			}
			hlClose(t, name+": top", got[0], want[0], 1e-4)
			hlClose(t, name+": bottom diff", got[1], want[1], 1e-4)
			if e := normErr(got[2], want[2]); e > 1e-4 {
				t.Errorf("%s: weight diff: largest error %.3g of the largest element, want at most 1e-4", name, e)
			}
			hlClose(t, name+": bias diff", got[3], want[3], 1e-5)
			if run == 0 {
				first = got
				continue
			}
			for i := range got {
				if !slices.Equal(got[i], first[i]) {
					t.Errorf("%s: output %d's bits differ from one thread's", name, i)
				}
			}
		}
		winoWideMode = 0
		l, bs, ts := winoLayerG(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, tc.g, 2, in, wt, bias)
		checkGradients(t, l, bs, ts, gradCheck{Step: 1, Threshold: 1e-3, MaxPerBlob: 40, Seed: 5})
		winoMode, winoWtsMode = 0, 0
	}
	// Depthwise and 8-channel groups stay off it, even when forced.
	winoMode = 1
	for _, tc := range []struct{ c, k, g int }{{32, 32, 32}, {32, 64, 4}, {64, 16, 2}} {
		l, _, _ := winoLayerG(t, 2, tc.c, 9, 9, tc.k, 1, tc.g, 1, make([]float32, 2*tc.c*81), make([]float32, tc.k*tc.c/tc.g*9), make([]float32, tc.k))
		if k := l.(KernelReporter).Kernel(); strings.Contains(k, "Winograd") {
			t.Errorf("%d→%d channels in %d groups: runs %q, want it off dsgd's Winograd", tc.c, tc.k, tc.g, k)
		}
	}
}

// TestWinogradWide checks winoWide's rule on ResNet-18's 3×3 shapes: two
// threads share out the chunks where that keeps the busiest thread within
// 1/0.9 of an even share of the tiles, and split each chunk where it
// would not; one thread never splits.
func TestWinogradWide(t *testing.T) {
	for _, tc := range []struct {
		n, c, hw, threads int
		want              bool
	}{
		{32, 64, 56, 2, false},  // 6,272 tiles in 25 chunks of 256: 13 and 12
		{16, 64, 56, 2, true},   // 3,136 tiles in 13 chunks, the last of 64: 1,792 and 1,344
		{32, 128, 28, 2, true},  // 1,568 tiles in 7 chunks of 256, the last of 32: 1,024 and 544
		{16, 256, 14, 2, false}, // 256 tiles in 2 chunks of 128
		{16, 512, 7, 2, false},  // 64 tiles in 2 chunks of 32
		{32, 512, 14, 2, true},  // 512 tiles in 3 chunks of 224 (the budget's): 448 and 64
		{32, 512, 7, 1, false},  // one thread
		{32, 64, 56, 16, true},  // 25 chunks over 16 threads: 2 chunks and 1
		{2, 19, 14, 2, false},   // 32 tiles in 2 chunks of 16
	} {
		s := newWinoShape(winoTile, tc.n, tc.c, tc.hw, tc.hw, tc.c, 1)
		if got := winoWide(&s, tc.n, tc.threads); got != tc.want {
			t.Errorf("n %d, %d channels %d×%d, %d threads: %d tiles in %d chunks of %d: wide %v, want %v",
				tc.n, tc.c, tc.hw, tc.hw, tc.threads, tc.n*s.th*s.tw, s.chunks(tc.n), s.chunk, got, tc.want)
		}
	}
}

// convWtsRef64 is the direct weight gradient in float64: dw[k][c][i][j] =
// Σ dout[n][k][y][x]·in[n][c][y−pad+i][x−pad+j], and db[k] = Σ dout[n][k].
func convWtsRef64(n, c, h, w, k, pad int, in, dout []float32) (dw, db []float64) {
	oh, ow := h+2*pad-2, w+2*pad-2
	dw, db = make([]float64, k*c*9), make([]float64, k)
	for b := 0; b < n; b++ {
		for ko := 0; ko < k; ko++ {
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					g := float64(dout[((b*k+ko)*oh+y)*ow+x])
					db[ko] += g
					for ci := 0; ci < c; ci++ {
						for i := 0; i < 3; i++ {
							for j := 0; j < 3; j++ {
								iy, ix := y-pad+i, x-pad+j
								if iy < 0 || iy >= h || ix < 0 || ix >= w {
									continue
								}
								dw[((ko*c+ci)*3+i)*3+j] += g * float64(in[((b*c+ci)*h+iy)*w+ix])
							}
						}
					}
				}
			}
		}
	}
	return dw, db
}

// winoWts runs the weights pass of one case on dsgd's Winograd F(m,3)
// directly, over threads workers, as the layer does: the transforms split
// by channel and the GEMMs by ξ, chunk after chunk.
func winoWts(m, threads, n, c, h, w, k, pad int, in, dout []float32) (dw, db []float32) {
	f, b := newWinoShape(m, n, c, h, w, k, pad), newWinoShape(m, n, k, h+2*pad-2, w+2*pad-2, c, 2-pad)
	s := winoWtsChunk(f, n)
	a2 := (m + 2) * (m + 2)
	sum := make([]float32, a2*k*c)
	hp, wp := s.padded()
	px := make([]float32, n*c*hp*wp)
	winoPad(&s, in, px, 0, n*c)
	hp, wp = b.padded()
	pdy := make([]float32, n*k*hp*wp)
	winoPad(&b, dout, pdy, 0, n*k)
	var buf winoBuf
	for ch := 0; ch < s.chunks(n); ch++ {
		nt := winoWtsTiles(&s, &b, n, ch, &buf)
		tensor.ParallelFor(c+k, threads, func(lo, hi, _ int) { winoWtsIn(&s, &b, px, pdy, &buf, nt, lo, hi) })
		tensor.ParallelFor(a2, threads, func(lo, hi, _ int) { winoWtsGemm(&s, &buf, nt, sum, ch == 0, lo, hi) })
	}
	dw, db = make([]float32, k*c*9), make([]float32, k)
	scratch := make([][]float32, threads)
	tensor.ParallelFor(k, threads, func(lo, hi, wk int) {
		winoWtsOut(&s, sum, dw, lo, hi, &scratch[wk])
		planeBiasGrad(dout, db, n, k, s.oh*s.ow, lo, hi)
	})
	return dw, db
}

// im2colWts is the weight and bias gradient of one case on im2col + GEMM.
func im2colWts(t *testing.T, n, c, h, w, k, pad int, in, dout []float32) (dw, db []float32) {
	t.Helper()
	defer func(off bool, mode int) { dnnlOff, winoMode = off, mode }(dnnlOff, winoMode)
	dnnlOff, winoMode = true, -1
	l, bs, ts := winoLayer(t, n, c, h, w, k, pad, 1, in, make([]float32, k*c*9), make([]float32, k))
	l.Forward(bs, ts)
	copy(ts[0].Diff, dout)
	l.Backward(ts, []bool{false}, bs)
	ps := l.Params()
	return slices.Clone(ps[0].Blob.Diff), slices.Clone(ps[1].Blob.Diff)
}

// TestWinogradWeightsMatchesReference checks the Winograd weights pass
// (F(2,3) and F(4,3)) against the direct weight gradient in float64 on
// the cases of TestWinogradMatchesReference, with the float32 im2col +
// GEMM path's error beside it, as max |error| / max |dW|; the bounds are
// the forward's (1e-5 and 10× im2col's for F(2,3), 1e-4 and 100× for
// F(4,3)). The bias gradient is checked to 1e-6 of the largest; 1 and 2
// threads give the same bits.
func TestWinogradWeightsMatchesReference(t *testing.T) {
	for _, tc := range winoCases {
		r := rand.New(rand.NewPCG(uint64(tc.c), uint64(tc.k)))
		oh, ow := tc.h+2*tc.pad-2, tc.w+2*tc.pad-2
		in, dout := randSlice(r, tc.n*tc.c*tc.h*tc.w, 1), randSlice(r, tc.n*tc.k*oh*ow, 1)
		wantW, wantB := convWtsRef64(tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, dout)
		imW, _ := im2colWts(t, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, dout)
		imE := relErr(imW, wantW)
		for _, m := range []int{2, 4} {
			tol, ratio := 1e-5, 10.0
			if m == 4 {
				tol, ratio = 1e-4, 100
			}
			dw, db := winoWts(m, 1, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, dout)
			e, eb := relErr(dw, wantW), relErr(db, wantB)
			name := fmt.Sprintf("F(%d,3) %+v", m, tc)
			t.Logf("%s: weights %.2g (im2col %.2g), bias %.2g", name, e, imE, eb)
			if e > tol || e > ratio*max(imE, 1e-7) || eb > 1e-6 {
				t.Errorf("%s: relative error weights %.3g, bias %.3g; im2col's %.3g", name, e, eb, imE)
			}
			dw2, db2 := winoWts(m, 2, tc.n, tc.c, tc.h, tc.w, tc.k, tc.pad, in, dout)
			if !slices.Equal(dw, dw2) || !slices.Equal(db, db2) {
				t.Errorf("%s: 2 threads' bits differ from 1 thread's", name)
			}
		}
	}
}

// TestWinogradSharedScratch runs two Winograd layers of different shapes
// on one tensor.Pool, so that they share their scratch (winoScratchFor),
// their passes interleaved (forward A, forward B, backward A, backward B),
// and checks that every output and gradient has the bits of the same
// layers each on a pool of its own.
func TestWinogradSharedScratch(t *testing.T) {
	defer func(mode, wmode int) { winoMode, winoWtsMode = mode, wmode }(winoMode, winoWtsMode)
	winoMode, winoWtsMode = 1, 1
	cases := []struct{ n, c, h, w, k, pad int }{{2, 19, 14, 14, 21, 1}, {3, 8, 9, 11, 40, 0}}
	run := func(shared bool) [][]float32 {
		p := tensor.NewPool(2)
		defer p.Close()
		var ls []Layer
		var bss, tss [][]*tensor.Blob
		for i, tc := range cases {
			if !shared && i > 0 {
				p = tensor.NewPool(2)
				defer p.Close()
			}
			r := rand.New(rand.NewPCG(9, uint64(i)))
			cfg := &ConvolutionConfig{NumOutput: tc.k, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: tc.pad, PadW: tc.pad, Group: 1, BiasTerm: true}
			bottom := tensor.NewBlob("x", tc.n, tc.c, tc.h, tc.w)
			copy(bottom.Data, randSlice(r, len(bottom.Data), 1))
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{tensor.NewBlob("y")}
			l := newTestLayer(t, cfg, Context{Threads: 2, Pool: p}, bs, ts)
			for _, pr := range l.Params() {
				copy(pr.Blob.Data, randSlice(r, len(pr.Blob.Data), 0.3))
				pr.Blob.ZeroDiff()
			}
			ls, bss, tss = append(ls, l), append(bss, bs), append(tss, ts)
		}
		for i, l := range ls {
			l.Forward(bss[i], tss[i])
			copy(tss[i][0].Diff, randSlice(rand.New(rand.NewPCG(11, uint64(i))), len(tss[i][0].Diff), 1))
		}
		var got [][]float32
		for i, l := range ls {
			l.Backward(tss[i], []bool{true}, bss[i])
			got = append(got, slices.Clone(tss[i][0].Data), slices.Clone(bss[i][0].Diff))
			for _, pr := range l.Params() {
				got = append(got, slices.Clone(pr.Blob.Diff))
			}
		}
		if shared && ls[0].(*convLayer).wg.sc != ls[1].(*convLayer).wg.sc {
			t.Fatal("two layers on one pool have scratches of their own")
		}
		return got
	}
	want, got := run(false), run(true)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("result %d: shared scratch gives other bits", i)
		}
	}
}
