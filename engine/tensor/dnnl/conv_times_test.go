//go:build !purego

package dnnl

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkConvVariantTimes (DSGD_CONV_TIMES=reps, under the ISA cap to study)
// prints, for convolutions of cifar10_quick (batch 100) and ResNet-18 and
// CaffeNet (batch 8), the min and median ms of forward+backward (and of
// forward alone) for each variant, interleaved round by round: the
// activations blocked (what oneDNN picks; what dsgd runs), plain NCHW
// (ConvSpec.Plain, x64:gemm:jit there: 1.6-2.6x slower under AVX2) and
// the blocked layout run over the batch in chunks of 10 images (within
// the noise of one call, but 0.87x on cifar10_quick's conv1 under AVX2).
// It asserts nothing about time.
func BenchmarkConvVariantTimes(b *testing.B) {
	reps := 8 // DSGD_CONV_TIMES=N for more
	if v, err := strconv.Atoi(os.Getenv("DSGD_CONV_TIMES")); err == nil && v > 0 {
		reps = v
	}
	if err := Load(); err != nil {
		b.Skip(err)
	}
	specs := []struct {
		name string
		s    ConvSpec
		prop bool
	}{
		{"conv1", ConvSpec{C: 3, H: 32, W: 32, OC: 32, OH: 32, OW: 32, KH: 5, KW: 5, SH: 1, SW: 1, PT: 2, PL: 2, PB: 2, PR: 2, DH: 1, DW: 1, Groups: 1, Bias: true}, false},
		{"conv2", ConvSpec{C: 32, H: 16, W: 16, OC: 32, OH: 16, OW: 16, KH: 5, KW: 5, SH: 1, SW: 1, PT: 2, PL: 2, PB: 2, PR: 2, DH: 1, DW: 1, Groups: 1, Bias: true}, true},
		{"conv3", ConvSpec{C: 32, H: 8, W: 8, OC: 64, OH: 8, OW: 8, KH: 5, KW: 5, SH: 1, SW: 1, PT: 2, PL: 2, PB: 2, PR: 2, DH: 1, DW: 1, Groups: 1, Bias: true}, true},
		{"r18_conv1", ConvSpec{C: 3, H: 224, W: 224, OC: 64, OH: 112, OW: 112, KH: 7, KW: 7, SH: 2, SW: 2, PT: 3, PL: 3, PB: 2, PR: 2, DH: 1, DW: 1, Groups: 1}, false},
		{"caffenet_conv1", ConvSpec{C: 3, H: 227, W: 227, OC: 96, OH: 55, OW: 55, KH: 11, KW: 11, SH: 4, SW: 4, DH: 1, DW: 1, Groups: 1, Bias: true}, false},
		{"r18_3x3_56", ConvSpec{C: 64, H: 56, W: 56, OC: 64, OH: 56, OW: 56, KH: 3, KW: 3, SH: 1, SW: 1, PT: 1, PL: 1, PB: 1, PR: 1, DH: 1, DW: 1, Groups: 1}, true},
	}
	const N = 100
	type variant struct {
		name  string
		plain bool
		k     int
	}
	vs := []variant{{"blocked", false, N}, {"plain", true, N}, {"blocked/k10", false, 10}}
	for _, sp := range specs {
		n := N
		if sp.name[0] != 'c' || sp.name == "caffenet_conv1" {
			n = 8
		}
		ms := make([][]float64, len(vs))
		fms := make([][]float64, len(vs))
		convs := make([]*Conv, len(vs))
		for i, v := range vs {
			s := sp.s
			s.N, s.Plain = min(v.k, n), v.plain
			c, err := NewConv(s)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			convs[i] = c
		}
		s := sp.s
		s.N = n
		ns, nw, nd := s.Sizes()
		src, dst, wei := make([]float32, ns), make([]float32, nd), make([]float32, nw)
		dsrc, dw, db := make([]float32, ns), make([]float32, nw), make([]float32, s.OC)
		for i := range src {
			src[i] = float32((i*7919)%1000) / 1000
		}
		for i := range wei {
			wei[i] = float32((i*31)%100) / 1000
		}
		bias := make([]float32, s.OC)
		is, os := ns/n, nd/n
		for r := 0; r < reps+1; r++ {
			for i, v := range vs {
				c, k := convs[i], min(v.k, n)
				t0 := time.Now()
				for j := 0; j < n; j += k {
					c.Forward(src[j*is:(j+k)*is], wei, bias, dst[j*os:(j+k)*os])
				}
				if r > 0 {
					fms[i] = append(fms[i], float64(time.Since(t0).Microseconds())/1000)
				}
				for j := 0; j < n; j += k {
					var ds []float32
					if sp.prop {
						ds = dsrc[j*is : (j+k)*is]
					}
					c.Backward(src[j*is:(j+k)*is], dst[j*os:(j+k)*os], wei, ds, dw, db, false)
				}
				if r > 0 {
					ms[i] = append(ms[i], float64(time.Since(t0).Microseconds())/1000)
				}
			}
		}
		for i, v := range vs {
			slices.Sort(ms[i])
			slices.Sort(fms[i])
			b.Logf("%s n=%d %-6s fwd+bwd min %7.2f med %7.2f ms, fwd min %7.2f med %7.2f  %v", sp.name, n, v.name, ms[i][0], ms[i][len(ms[i])/2], fms[i][0], fms[i][len(fms[i])/2], convs[i].Impl())
		}
	}
}
