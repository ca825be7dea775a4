package layers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/dnnl"
)

// TestDnnlPassRules checks which backward passes dnnlPassRules sends to
// im2col + GEMM, for given geometries, implementations and block sizes
// (not this machine's).
func TestDnnlPassRules(t *testing.T) {
	spec := func(c, oc, k, pad int) dnnl.ConvSpec {
		return dnnl.ConvSpec{C: c, OC: oc, KH: k, KW: k, SH: 1, SW: 1, PT: pad, PL: pad, PB: pad, PR: pad, Groups: 1}
	}
	strided := spec(3, 96, 11, 0)
	strided.SH, strided.SW = 4, 4
	direct := dnnl.Impl{Forward: "jit:avx2", Backward: "jit:avx2 / jit:avx2"}
	gemmW := dnnl.Impl{Forward: "jit:avx2", Backward: "jit:avx2 / x64:gemm:jit"}
	for _, tc := range []struct {
		name          string
		s             dnnl.ConvSpec
		impl          dnnl.Impl
		block         int
		data, weights bool
	}{
		{"LeNet conv1, gemm weights pass", spec(1, 20, 5, 0), gemmW, 8, false, true},
		{"LeNet conv1 on AVX-512", spec(1, 20, 5, 0), gemmW, 16, false, true},
		{"cifar10_quick conv1, direct weights pass", spec(3, 32, 5, 2), direct, 8, false, false},
		{"CaffeNet conv1 under SSE41: strided", strided, gemmW, 8, false, false},
		{"LeNet conv2 on 8-channel blocks", spec(20, 50, 5, 0), direct, 8, true, false},
		{"LeNet conv2 on 16-channel blocks", spec(20, 50, 5, 0), direct, 16, false, false},
		{"padded, partial block", spec(20, 50, 5, 2), direct, 8, false, false},
		{"unpadded, whole blocks", spec(24, 56, 5, 0), direct, 8, false, false},
		{"many channels, gemm weights pass", spec(32, 64, 3, 1), gemmW, 8, false, false},
		{"LeNet conv2 under SSE41 (gemm data pass)", spec(20, 50, 5, 0), dnnl.Impl{Forward: "x64:gemm:jit", Backward: "x64:gemm:jit / x64:gemm:jit"}, 8, false, false},
	} {
		d, w, why := dnnlPassRules(tc.s, tc.impl, tc.block, false)
		if d != tc.data || w != tc.weights {
			t.Errorf("%s: own data %v, own weights %v (%q), want %v, %v", tc.name, d, w, why, tc.data, tc.weights)
		}
		if (d || w) != (why != "") {
			t.Errorf("%s: reason %q for own data %v, own weights %v", tc.name, why, d, w)
		}
	}
}

// TestConvPassSplitAgrees runs convolutions with their forward on oneDNN
// and each backward pass forced onto im2col + GEMM (as dnnlPassRules may
// choose), for every combination of bottom diff and param gradients
// wanted, and requires the results of the all-im2col layer within float32
// tolerance, with no gradient left out or counted twice, and the same bits
// from a second run.
func TestConvPassSplitAgrees(t *testing.T) {
	if !dnnlReady() {
		t.Skip("oneDNN not available: only dsgd's own kernels run here")
	}
	conv := func(m, k, p int) *ConvolutionConfig {
		return &ConvolutionConfig{NumOutput: m, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1, PadH: p, PadW: p, Group: 1, BiasTerm: true}
	}
	cases := []struct {
		name   string
		cfg    *ConvolutionConfig
		bottom []int
	}{
		{"first layer", conv(16, 5, 0), []int{8, 1, 20, 20}},
		{"32->32 unpadded", conv(32, 5, 0), []int{8, 32, 12, 12}},
		{"16->32 padded", conv(32, 3, 1), []int{5, 16, 9, 9}},
	}
	type result struct{ top, bdiff, pdiff []float32 }
	run := func(tc int, own bool, threads int, ownData, ownWeights, prop, params bool) result {
		defer func(off bool, thin int) { dnnlOff, thinMode = off, thin }(dnnlOff, thinMode)
		dnnlOff, thinMode = own, -1 // the split between oneDNN and im2col, not the direct weights pass

		c := cases[tc]
		r := rand.New(rand.NewPCG(81, 82))
		bottom := hlBlob(r, "x", c.bottom...)
		top := tensor.NewBlob("y")
		bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
		l := newTestLayer(t, c.cfg, Context{Threads: threads}, bs, ts).(*convLayer)
		if !own {
			if !l.dn.on {
				t.Skipf("%s: not on oneDNN here (%s)", c.name, l.Kernel())
			}
			l.dn.ownData, l.dn.ownWeights, l.dn.ownWhy = ownData, ownWeights, "forced by the test"
			l.ownSetup(false)
		}
		for _, p := range l.Params() {
			fillGaussian(p.Blob, 0.1, r)
			for i := range p.Blob.Diff {
				p.Blob.Diff[i] = 1 // accumulated onto, as Caffe's diffs are
			}
		}
		l.SetParamPropagate([]bool{params, params})
		for i := range bottom.Diff {
			bottom.Diff[i] = 7 // overwritten where prop, else left alone
		}
		l.Forward(bs, ts)
		fillGaussianDiff(top, rand.New(rand.NewPCG(3, 4)))
		l.Backward(ts, []bool{prop}, bs)
		res := result{top: slices.Clone(top.Data), bdiff: slices.Clone(bottom.Diff)}
		for _, p := range l.Params() {
			res.pdiff = append(res.pdiff, p.Blob.Diff...)
		}
		return res
	}
	for tc := range cases {
		for _, threads := range []int{1, 2} {
			for _, split := range [][2]bool{{true, false}, {false, true}, {true, true}} {
				for _, wants := range [][2]bool{{true, true}, {true, false}, {false, true}} {
					name := fmt.Sprintf("%s, %d threads, own data %v weights %v, prop %v params %v",
						cases[tc].name, threads, split[0], split[1], wants[0], wants[1])
					want := run(tc, true, threads, false, false, wants[0], wants[1])
					got := run(tc, false, threads, split[0], split[1], wants[0], wants[1])
					// A fixed configuration repeats its bits.
					again := run(tc, false, threads, split[0], split[1], wants[0], wants[1])
					if !slices.Equal(again.top, got.top) || !slices.Equal(again.bdiff, got.bdiff) || !slices.Equal(again.pdiff, got.pdiff) {
						t.Errorf("%s: a second run gave other bits", name)
					}
					hlClose(t, name+": top", got.top, want.top, 1e-4)
					hlClose(t, name+": bottom diff", got.bdiff, want.bdiff, 1e-4)
					hlClose(t, name+": param diffs", got.pdiff, want.pdiff, 5e-4)
				}
			}
		}
	}
}

// TestConvKernelNamesSplit checks that Kernel names a pass moved to
// im2col + GEMM and why.
func TestConvKernelNamesSplit(t *testing.T) {
	if !dnnlReady() {
		t.Skip("oneDNN not available")
	}
	r := rand.New(rand.NewPCG(1, 2))
	bs := []*tensor.Blob{hlBlob(r, "x", 4, 32, 12, 12)}
	ts := []*tensor.Blob{tensor.NewBlob("y")}
	cfg := &ConvolutionConfig{NumOutput: 32, KernelH: 5, KernelW: 5, StrideH: 1, StrideW: 1, Group: 1}
	l := newTestLayer(t, cfg, Context{Threads: 1}, bs, ts).(*convLayer)
	if !l.dn.on {
		t.Skipf("not on oneDNN here: %s", l.Kernel())
	}
	l.dn.ownData, l.dn.ownWhy = true, "data pass: a reason"
	if k := l.Kernel(); !strings.HasPrefix(k, "oneDNN ") || !strings.HasSuffix(k, "; im2col + GEMM for the data pass: a reason") {
		t.Errorf("Kernel() = %q", k)
	}
}
