package layers

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
	"dsgd/engine/tensor/dnnl"
)

// TestEnginesAgree runs each layer oneDNN takes over on oneDNN and on
// dsgd's own kernels, from the same weights and inputs, and requires the
// same tops, bottom diffs and param diffs within float32 tolerance: the
// issue's "the same numbers as today".
func TestEnginesAgree(t *testing.T) {
	if !dnnlReady() {
		t.Skip("oneDNN not available: only dsgd's own kernels run here")
	}
	conv := func(m, k, s, p, g int) *ConvolutionConfig {
		return &ConvolutionConfig{NumOutput: m, KernelH: k, KernelW: k, StrideH: s, StrideW: s, PadH: p, PadW: p, Group: g, BiasTerm: true}
	}
	// Every case runs on oneDNN but convolutions whose channel counts fill
	// too little of oneDNN's blocks (dnnlChannelsFit: LeNet's, at 16
	// channels a block).
	cases := []struct {
		name   string
		cfg    Config
		bottom []int
	}{
		{"lenet conv1", conv(20, 5, 1, 0, 1), []int{16, 1, 28, 28}},
		{"lenet conv2", conv(50, 5, 1, 0, 1), []int{16, 20, 12, 12}},
		{"conv 16->32", conv(32, 5, 1, 0, 1), []int{16, 16, 12, 12}},
		{"caffenet conv2 (groups)", conv(64, 5, 1, 2, 2), []int{4, 32, 13, 13}},
		{"dilated conv", &ConvolutionConfig{NumOutput: 32, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2,
			DilationH: 2, DilationW: 2, Group: 1, BiasTerm: true}, []int{4, 16, 11, 11}},
		{"3x3 stride 1 (Winograd from AVX-512 up)", conv(32, 3, 1, 1, 1), []int{4, 32, 14, 14}},
		{"3x3 stride 1, 7x7, 128 channels (Winograd)", conv(128, 3, 1, 1, 1), []int{2, 128, 7, 7}},
		{"strided first layer", conv(16, 11, 4, 0, 1), []int{4, 3, 51, 51}},
		{"1x1 stride 2 projection, last row in no window", &ConvolutionConfig{NumOutput: 32, KernelH: 1, KernelW: 1, StrideH: 2, StrideW: 2,
			Group: 1}, []int{4, 16, 14, 14}},
		{"max pool 2/2, not tiling", &PoolingConfig{Method: PoolMax, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}, []int{8, 20, 25, 25}},
		{"max pool 3/2 ceil", &PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, []int{8, 32, 32, 32}},
		{"max pool 3/1 pad 1", &PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, []int{4, 16, 14, 14}},
		{"ave pool 3/2 ceil", &PoolingConfig{Method: PoolAve, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, []int{8, 32, 16, 16}},
		{"lrn across", &LRNConfig{LocalSize: 5, Alpha: 1e-4, Beta: 0.75, K: 1, NormRegion: AcrossChannels}, []int{4, 32, 13, 13}},
		{"lrn across, C not a multiple of 8 or 16", &LRNConfig{LocalSize: 5, Alpha: 1e-3, Beta: 0.75, K: 2, NormRegion: AcrossChannels}, []int{4, 20, 7, 7}},
	}
	type result struct{ top, bdiff, pdiff []float32 }
	run := func(name string, cfg Config, shape []int, own bool, threads int) result {
		defer func(off bool) { dnnlOff = off }(dnnlOff)
		dnnlOff = own
		r := rand.New(rand.NewPCG(71, 72))
		bottom := hlBlob(r, "x", shape...)
		top := tensor.NewBlob("y")
		bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
		l := newTestLayer(t, cfg, Context{Threads: threads}, bs, ts)
		want := !own
		_, isa, _ := strings.Cut(dnnl.Info(), "ISA ")
		switch c := cfg.(type) {
		case *ConvolutionConfig:
			// oneDNN takes a convolution only where its channels fill
			// oneDNN's blocks (8 channels on AVX2, 16 on AVX-512).
			want = want && dnnlChannelsFit(shape[1]/c.Group, c.NumOutput/c.Group)
		case *LRNConfig:
			// oneDNN 2.6's LRN backward is JIT only on whole channel
			// blocks and from AVX2 up; elsewhere the Go loops beat its
			// reference code.
			want = want && shape[1]%dnnl.Block() == 0 && isa != "sse41" && isa != "avx"
		case *PoolingConfig:
			// MAX pools on oneDNN only where it has a JIT kernel for
			// plain NCHW (AVX-512); below, the Go loops beat its blocked
			// kernel with the reorders. AVE takes the blocked kernel.
			want = want && (c.Method != PoolMax || strings.HasPrefix(isa, "avx512"))
		}
		if onDnnl(l) != want {
			t.Fatalf("%s: on oneDNN %v, want %v (%s)", name, onDnnl(l), want, l.(KernelReporter).Kernel())
		}
		// 3×3 stride-1 convolutions take oneDNN's Winograd kernels
		// where it has them (AVX-512), dsgd's own Winograd at AVX2 (pad
		// 0 or 1), the weights pass on it too.
		dsgdWino := false
		if c, ok := cfg.(*ConvolutionConfig); ok && want && c.KernelH == 3 && c.StrideH == 1 && c.DilationH <= 1 && c.Group == 1 {
			k := l.(KernelReporter).Kernel()
			if wino := strings.HasPrefix(isa, "avx512"); strings.Contains(k, "wino") != wino {
				t.Fatalf("%s: runs %q on ISA %s, want oneDNN's Winograd %v", name, k, isa, wino)
			}
			dsgdWino = strings.HasPrefix(isa, "avx2") && c.PadH <= 1
			if strings.HasPrefix(k, "dsgd Winograd") != dsgdWino {
				t.Fatalf("%s: runs %q on ISA %s, want dsgd's Winograd %v", name, k, isa, dsgdWino)
			}
		}
		// Never oneDNN's reference code: its JIT kernels, or dsgd's own.
		if k := l.(KernelReporter).Kernel(); want && !dsgdWino && (!strings.HasPrefix(k, "oneDNN ") || strings.Contains(k, "ref")) {
			t.Fatalf("%s: runs %q, want oneDNN's JIT kernels", name, k)
		}
		for _, p := range l.Params() {
			fillGaussian(p.Blob, 0.1, r)
			p.Blob.ZeroDiff()
		}
		l.Forward(bs, ts)
		fillGaussianDiff(top, rand.New(rand.NewPCG(1, 1)))
		l.Backward(ts, []bool{true}, bs)
		res := result{top: slices.Clone(top.Data), bdiff: slices.Clone(bottom.Diff)}
		for _, p := range l.Params() {
			res.pdiff = append(res.pdiff, p.Blob.Diff...)
		}
		return res
	}
	for _, tc := range cases {
		for _, threads := range []int{1, 2} {
			own, dn := run(tc.name, tc.cfg, tc.bottom, true, threads), run(tc.name, tc.cfg, tc.bottom, false, threads)
			hlClose(t, tc.name+": top", dn.top, own.top, 1e-4)
			hlClose(t, tc.name+": bottom diff", dn.bdiff, own.bdiff, 1e-4)
			// A weight gradient sums batch×pixels products (9,216 for
			// conv1 here) in a different order on each engine.
			hlClose(t, tc.name+": param diffs", dn.pdiff, own.pdiff, 5e-4)
		}
	}
}

// onDnnl says whether a layer runs on oneDNN.
func onDnnl(l Layer) bool {
	switch l := l.(type) {
	case *convLayer:
		return l.dn.on
	case *poolLayer:
		return l.dn.on
	case *lrnLayer:
		return l.dn.on
	}
	return false
}
