package layers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/engine/tensor"
)

// BenchmarkConvEngineTimes (DSGD_CONV_TIMES=reps, under the ISA cap to study)
// prints, for convolution shapes of the benchmark nets, the forward and
// backward ms of one layer on oneDNN (whatever dnnlChannelsFit says) and on
// im2col + GEMM, the two interleaved rep by rep, min and median: the
// measurements behind dnnlMinChannelUse8 and dnnlPassRules. It asserts nothing about time.
func BenchmarkConvEngineTimes(b *testing.B) {
	reps := 8 // DSGD_CONV_TIMES=N for more
	if v, err := strconv.Atoi(os.Getenv("DSGD_CONV_TIMES")); err == nil && v > 0 {
		reps = v
	}
	if !dnnlReady() {
		b.Skip("oneDNN not available")
	}
	threads, _ := strconv.Atoi(os.Getenv("DSGD_CONV_THREADS"))
	threads = max(threads, 1)
	conv := func(m, k, s, p int) *ConvolutionConfig {
		return &ConvolutionConfig{NumOutput: m, KernelH: k, KernelW: k, StrideH: s, StrideW: s, PadH: p, PadW: p, Group: 1, BiasTerm: true}
	}
	cases := []struct {
		name   string
		cfg    *ConvolutionConfig
		bottom []int
		prop   bool
	}{
		{"lenet conv1 1->20", conv(20, 5, 1, 0), []int{64, 1, 28, 28}, false},
		{"lenet conv2 20->50", conv(50, 5, 1, 0), []int{64, 20, 12, 12}, true},
		{"cifar conv1 3->32", conv(32, 5, 1, 2), []int{100, 3, 32, 32}, false},
		{"cifar conv2 32->32", conv(32, 5, 1, 2), []int{100, 32, 16, 16}, true},
		{"cifar conv3 32->64", conv(64, 5, 1, 2), []int{100, 32, 8, 8}, true},
		{"20->50 3x3 pad 1", conv(50, 3, 1, 1), []int{32, 20, 14, 14}, true},
		{"12->20 5x5", conv(20, 5, 1, 2), []int{32, 12, 14, 14}, true},
		{"20->50 5x5 24x24", conv(50, 5, 1, 0), []int{32, 20, 24, 24}, true},
		{"20->50 5x5 pad 2 12x12", conv(50, 5, 1, 2), []int{64, 20, 12, 12}, true},
		{"24->56 5x5 12x12", conv(56, 5, 1, 0), []int{64, 24, 12, 12}, true},
		{"32->64 5x5 12x12", conv(64, 5, 1, 0), []int{64, 32, 12, 12}, true},
		{"12->20 3x3 28", conv(20, 3, 1, 1), []int{32, 12, 28, 28}, true},
		{"resnet 64->64 3x3 56", conv(64, 3, 1, 1), []int{8, 64, 56, 56}, true},
		{"resnet 128->128 3x3 28", conv(128, 3, 1, 1), []int{16, 128, 28, 28}, true},
		{"resnet 256->256 3x3 14", conv(256, 3, 1, 1), []int{16, 256, 14, 14}, true},
		{"resnet 512->512 3x3 7", conv(512, 3, 1, 1), []int{16, 512, 7, 7}, true},
		{"resnet 256->512 3x3/2 14", conv(512, 3, 2, 1), []int{16, 256, 14, 14}, true},
		{"googlenet 5x5 16->32 28", conv(32, 5, 1, 2), []int{16, 16, 28, 28}, true},
		{"googlenet 5x5 24->64 14", conv(64, 5, 1, 2), []int{16, 24, 14, 14}, true},
	}
	pool := tensor.NewPool(threads)
	defer pool.Close()
	defer func(off, ign bool) { dnnlOff, dnnlIgnoreFit = off, ign }(dnnlOff, dnnlIgnoreFit)
	dnnlIgnoreFit = true
	for _, tc := range cases {
		if f := os.Getenv("DSGD_CONV_ONLY"); f != "" && !strings.Contains(tc.name, f) {
			continue
		}
		type side struct {
			l       Layer
			bs, ts  []*tensor.Blob
			f, w, d []float64
		}
		var sides [2]*side
		for i, own := range []bool{false, true} {
			dnnlOff = own
			r := rand.New(rand.NewPCG(1, 2))
			bs := []*tensor.Blob{hlBlob(r, "x", tc.bottom...)}
			ts := []*tensor.Blob{tensor.NewBlob("y")}
			l, err := tc.cfg.Build(Context{Threads: threads, Pool: pool})
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
			fillGaussianDiff(ts[0], r)
			sides[i] = &side{l: l, bs: bs, ts: ts}
		}
		for r := 0; r <= reps; r++ {
			for _, s := range sides {
				pp := s.l.(ParamPropagator)
				t0 := time.Now()
				s.l.Forward(s.bs, s.ts)
				t1 := time.Now()
				pp.SetParamPropagate([]bool{true, true})
				s.l.Backward(s.ts, []bool{false}, s.bs) // weights pass alone
				t2 := time.Now()
				if tc.prop {
					pp.SetParamPropagate([]bool{false, false})
					s.l.Backward(s.ts, []bool{true}, s.bs) // data pass alone
					pp.SetParamPropagate([]bool{true, true})
				}
				t3 := time.Now()
				if r > 0 {
					ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
					s.f = append(s.f, ms(t1.Sub(t0)))
					s.w = append(s.w, ms(t2.Sub(t1)))
					s.d = append(s.d, ms(t3.Sub(t2)))
				}
			}
		}
		stat := func(x []float64) string {
			slices.Sort(x)
			return fmt.Sprintf("%6.2f (%6.2f)", x[0], x[len(x)/2])
		}
		for _, s := range sides {
			b.Logf("%-26s %v: fwd %s weights %s data %s  %s", tc.name, tc.bottom, stat(s.f), stat(s.w), stat(s.d), s.l.(KernelReporter).Kernel())
		}
	}
}

// BenchmarkConvSplitTimes (DSGD_CONV_TIMES=reps) prints forward+backward ms of
// LeNet's convolutions (batch 64) with each backward pass on either
// engine, the forward on oneDNN, beside all on im2col + GEMM: interleaved,
// min and median. It asserts nothing about time.
func BenchmarkConvSplitTimes(b *testing.B) {
	reps := 8 // DSGD_CONV_TIMES=N for more
	if v, err := strconv.Atoi(os.Getenv("DSGD_CONV_TIMES")); err == nil && v > 0 {
		reps = v
	}
	if !dnnlReady() {
		b.Skip("oneDNN not available")
	}
	defer func(off, ign bool) { dnnlOff, dnnlIgnoreFit = off, ign }(dnnlOff, dnnlIgnoreFit)
	dnnlIgnoreFit = true
	conv := func(m, k, p int) *ConvolutionConfig {
		return &ConvolutionConfig{NumOutput: m, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1, PadH: p, PadW: p, Group: 1, BiasTerm: true}
	}
	for _, tc := range []struct {
		name   string
		cfg    *ConvolutionConfig
		bottom []int
		prop   bool
	}{
		{"lenet conv1", conv(20, 5, 0), []int{64, 1, 28, 28}, false},
		{"lenet conv2", conv(50, 5, 0), []int{64, 20, 12, 12}, true},
		{"caffenet conv1", &ConvolutionConfig{NumOutput: 96, KernelH: 11, KernelW: 11, StrideH: 4, StrideW: 4, Group: 1, BiasTerm: true}, []int{4, 3, 227, 227}, false},
	} {
		if f := os.Getenv("DSGD_CONV_ONLY"); f != "" && !strings.Contains(tc.name, f) {
			continue
		}
		type variant struct {
			name                 string
			own, ownData, ownWei bool
			l                    Layer
			bs, ts               []*tensor.Blob
			ms                   []float64
		}
		vs := []*variant{{name: "im2col"}, {name: "oneDNN"}, {name: "oneDNN, own data"}, {name: "oneDNN, own weights"}, {name: "oneDNN, own both"}}
		vs[0].own, vs[2].ownData, vs[3].ownWei, vs[4].ownData, vs[4].ownWei = true, true, true, true, true
		for _, v := range vs {
			dnnlOff = v.own
			r := rand.New(rand.NewPCG(1, 2))
			v.bs = []*tensor.Blob{hlBlob(r, "x", tc.bottom...)}
			v.ts = []*tensor.Blob{tensor.NewBlob("y")}
			l := newTestLayer(b, tc.cfg, Context{Threads: 1}, v.bs, v.ts).(*convLayer)
			if !v.own {
				l.dn.ownData, l.dn.ownWeights = v.ownData, v.ownWei
				l.ownSetup(false)
			}
			for _, p := range l.Params() {
				fillGaussian(p.Blob, 0.1, r)
			}
			v.l = l
			l.Forward(v.bs, v.ts)
			fillGaussianDiff(v.ts[0], r)
		}
		// The other layers of a net run between a layer's forward and
		// backward passes: evict the caches there, and time the passes
		// without the eviction.
		evict := make([]float32, 8<<20)
		for r := 0; r <= reps; r++ {
			for _, v := range vs {
				for i := range evict {
					evict[i]++
				}
				t0 := time.Now()
				v.l.Forward(v.bs, v.ts)
				d := time.Since(t0)
				for i := range evict {
					evict[i]++
				}
				t0 = time.Now()
				v.l.Backward(v.ts, []bool{tc.prop}, v.bs)
				d += time.Since(t0)
				if r > 0 {
					v.ms = append(v.ms, float64(d.Microseconds())/1000)
				}
			}
		}
		for _, v := range vs {
			slices.Sort(v.ms)
			b.Logf("%s: %-20s fwd+bwd min %6.2f med %6.2f ms", tc.name, v.name, v.ms[0], v.ms[len(v.ms)/2])
		}
	}
}
