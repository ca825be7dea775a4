package layers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// TestThinWeights runs first-layer convolutions (1 to 4 input channels)
// with their weights pass, and their forward or not (thinFwdMode), forced
// onto dsgd's direct kernel (thinMode) and checks: Kernel names it; the
// weight and bias gradients agree with im2col + GEMM's within 1e-4
// (relative to max(|want|, 1)) and are added to the diffs already there;
// the top agrees with im2col + GEMM's within 1e-5 (the direct forward) or
// is unchanged (oneDNN's where it loads, else im2col + GEMM's), and so is
// the bottom diff; 1 and 2 threads give the same bits; lr_mult 0 on the weights
// leaves their diff alone; a finite-difference check. The cases cover a
// partial block of output channels and of taps, and a rectangular kernel.
func TestThinWeights(t *testing.T) {
	defer func(mode, fwd int, off bool) { thinMode, thinFwdMode, dnnlOff = mode, fwd, off }(thinMode, thinFwdMode, dnnlOff)
	for _, fwd := range []int{1, -1} {
		thinFwdMode = fwd
		for _, tc := range []struct{ n, c, h, w, k, kh, kw, pad int }{
			{2, 1, 28, 28, 20, 5, 5, 0}, // LeNet's conv1
			{3, 3, 32, 32, 32, 5, 5, 2}, // cifar10_quick's
			{2, 2, 10, 8, 7, 5, 5, 2},   // 50 taps: a block of 2; 7 channels: a block of 3
			{1, 4, 9, 18, 5, 3, 5, 1},   // rectangular kernel, 4 channels
		} {
			cfg := ConvolutionConfig{NumOutput: tc.k, KernelH: tc.kh, KernelW: tc.kw, StrideH: 1, StrideW: 1,
				PadH: tc.pad, PadW: tc.pad, Group: 1, BiasTerm: true}
			r := rand.New(rand.NewPCG(23, uint64(tc.c*tc.k)))
			in := randSlice(r, tc.n*tc.c*tc.h*tc.w, 1)
			wt, bias := randSlice(r, tc.k*tc.c*tc.kh*tc.kw, 0.3), randSlice(r, tc.k, 0.1)
			wd0, bd0 := randSlice(r, len(wt), 1), randSlice(r, tc.k, 1) // diffs already there
			oh, ow := tc.h+2*tc.pad-tc.kh+1, tc.w+2*tc.pad-tc.kw+1
			dout := randSlice(r, tc.n*tc.k*oh*ow, 1)
			build := func(threads int) (Layer, []*tensor.Blob, []*tensor.Blob) {
				bottom := tensor.NewBlob("x", tc.n, tc.c, tc.h, tc.w)
				copy(bottom.Data, in)
				bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{tensor.NewBlob("y")}
				l := newTestLayer(t, &cfg, Context{Threads: threads}, bs, ts)
				ps := l.Params()
				copy(ps[0].Blob.Data, wt)
				copy(ps[1].Blob.Data, bias)
				copy(ps[0].Blob.Diff, wd0)
				copy(ps[1].Blob.Diff, bd0)
				return l, bs, ts
			}
			pass := func(threads int) (Layer, [4][]float32) {
				l, bs, ts := build(threads)
				l.Forward(bs, ts)
				copy(ts[0].Diff, dout)
				l.Backward(ts, []bool{true}, bs)
				ps := l.Params()
				return l, [4][]float32{slices.Clone(ts[0].Data), slices.Clone(bs[0].Diff), slices.Clone(ps[0].Blob.Diff), slices.Clone(ps[1].Blob.Diff)}
			}
			name := fmt.Sprintf("%+v, forward mode %d", tc, fwd)
			thinMode, dnnlOff = 0, true
			_, want := pass(1) // im2col + GEMM throughout
			dnnlOff, thinMode = false, -1
			_, other := pass(1) // oneDNN (where it loads and takes the layer) throughout
			thinMode = 1
			l, got := pass(1)
			wantKernel := "; weights pass on dsgd's direct kernel"
			if fwd > 0 {
				wantKernel = "; forward and weights pass on dsgd's direct kernel"
			}
			if k := l.(KernelReporter).Kernel(); !strings.Contains(k, wantKernel) {
				t.Fatalf("%s: runs %q, want %q", name, k, wantKernel)
			}
			if fwd > 0 {
				hlClose(t, name+": top", got[0], want[0], 1e-5)
			} else if !slices.Equal(got[0], other[0]) {
				t.Errorf("%s: the top changed with the weights pass's kernel", name)
			}
			if !slices.Equal(got[1], other[1]) {
				t.Errorf("%s: the bottom diff changed with the direct kernel", name)
			}
			hlClose(t, name+": weight diff", got[2], want[2], 1e-4)
			hlClose(t, name+": bias diff", got[3], want[3], 1e-5)
			_, got2 := pass(2)
			for i := range got {
				if !slices.Equal(got[i], got2[i]) {
					t.Errorf("%s: output %d's bits differ between 1 and 2 threads", name, i)
				}
			}
			// lr_mult 0 on the weights: their diff stays as it was; the bias's
			// is still computed.
			l, bs, ts := build(2)
			l.(ParamPropagator).SetParamPropagate([]bool{false, true})
			l.Forward(bs, ts)
			copy(ts[0].Diff, dout)
			l.Backward(ts, []bool{false}, bs)
			if ps := l.Params(); !slices.Equal(ps[0].Blob.Diff, wd0) || slices.Equal(ps[1].Blob.Diff, bd0) {
				t.Errorf("%s: with lr_mult 0 on the weights, their diff changed or the bias's did not", name)
			}
			l, bs, ts = build(2)
			for _, p := range l.Params() {
				p.Blob.ZeroDiff()
			}
			checkGradients(t, l, bs, ts, gradCheck{Step: 1, Threshold: 1e-3, MaxPerBlob: 40, Seed: 7})
		}
	}
}

// TestThinTwoPairs runs a first layer with two bottom/top pairs through
// the same weights (Caffe's several-bottom convolution) on the direct
// kernel, forward and weights pass: each pair's backward must read its own
// bottom, not the padded input the last forward left, so the weight
// gradient agrees with im2col + GEMM's.
func TestThinTwoPairs(t *testing.T) {
	defer func(mode, fwd int, off bool) { thinMode, thinFwdMode, dnnlOff = mode, fwd, off }(thinMode, thinFwdMode, dnnlOff)
	cfg := ConvolutionConfig{NumOutput: 8, KernelH: 5, KernelW: 5, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, Group: 1, BiasTerm: true}
	r := rand.New(rand.NewPCG(29, 30))
	in0, in1 := randSlice(r, 2*3*8*8, 1), randSlice(r, 2*3*8*8, 1)
	wt, bias := randSlice(r, 8*3*25, 0.3), randSlice(r, 8, 0.1)
	d0, d1 := randSlice(r, 2*8*8*8, 1), randSlice(r, 2*8*8*8, 1)
	run := func() [3][]float32 {
		b0, b1 := tensor.NewBlob("x0", 2, 3, 8, 8), tensor.NewBlob("x1", 2, 3, 8, 8)
		copy(b0.Data, in0)
		copy(b1.Data, in1)
		bs, ts := []*tensor.Blob{b0, b1}, []*tensor.Blob{tensor.NewBlob("y0"), tensor.NewBlob("y1")}
		l := newTestLayer(t, &cfg, Context{Threads: 1}, bs, ts)
		ps := l.Params()
		copy(ps[0].Blob.Data, wt)
		copy(ps[1].Blob.Data, bias)
		for _, p := range ps {
			p.Blob.ZeroDiff()
		}
		l.Forward(bs, ts)
		copy(ts[0].Diff, d0)
		copy(ts[1].Diff, d1)
		l.Backward(ts, []bool{false, false}, bs)
		return [3][]float32{slices.Concat(ts[0].Data, ts[1].Data), slices.Clone(ps[0].Blob.Diff), slices.Clone(ps[1].Blob.Diff)}
	}
	dnnlOff, thinMode, thinFwdMode = true, 0, 0
	want := run()
	dnnlOff, thinMode, thinFwdMode = false, 1, 1
	got := run()
	hlClose(t, "tops", got[0], want[0], 1e-5)
	hlClose(t, "weight diff", got[1], want[1], 1e-4)
	hlClose(t, "bias diff", got[2], want[2], 1e-5)
}
