//go:build !purego

package dnnl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refConv is the float64 reference: Caffe's convolution by its definition.
type refConv struct{ s ConvSpec }

func (r refConv) each(fn func(n, oc, oh, ow, ic, kh, kw, ih, iw int)) {
	s := r.s
	cg, og := s.C/s.Groups, s.OC/s.Groups
	for n := 0; n < s.N; n++ {
		for oc := 0; oc < s.OC; oc++ {
			g := oc / og
			for oh := 0; oh < s.OH; oh++ {
				for ow := 0; ow < s.OW; ow++ {
					for ic := 0; ic < cg; ic++ {
						for kh := 0; kh < s.KH; kh++ {
							ih := oh*s.SH - s.PT + kh*s.DH
							if ih < 0 || ih >= s.H {
								continue
							}
							for kw := 0; kw < s.KW; kw++ {
								iw := ow*s.SW - s.PL + kw*s.DW
								if iw < 0 || iw >= s.W {
									continue
								}
								fn(n, oc, oh, ow, g*cg+ic, kh, kw, ih, iw)
							}
						}
					}
				}
			}
		}
	}
}

func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func specFor(n, c, h, w, oc, k, st, pad, dil, g int, bias bool) ConvSpec {
	ke := (k-1)*dil + 1
	oh, ow := (h+2*pad-ke)/st+1, (w+2*pad-ke)/st+1
	return ConvSpec{N: n, C: c, H: h, W: w, OC: oc, OH: oh, OW: ow, KH: k, KW: k, SH: st, SW: st,
		PT: pad, PL: pad, PB: PadAfter(h, pad, k, st, dil, oh), PR: PadAfter(w, pad, k, st, dil, ow),
		DH: dil, DW: dil, Groups: g, Bias: bias}
}

func TestConvAgainstReference(t *testing.T) {
	if err := Load(); err != nil {
		t.Skipf("oneDNN not available: %v", err)
	}
	t.Logf("%s", Info())
	cases := []ConvSpec{
		specFor(2, 3, 9, 9, 8, 3, 1, 1, 1, 1, true),
		specFor(3, 20, 12, 12, 50, 5, 1, 0, 1, 1, true),  // LeNet conv2
		specFor(2, 4, 11, 10, 6, 3, 2, 1, 1, 2, true),    // groups, stride, floor on the far side
		specFor(1, 16, 13, 13, 32, 3, 1, 2, 2, 1, false), // dilation
		specFor(2, 3, 32, 32, 32, 5, 1, 2, 1, 1, true),   // cifar10_quick conv1
		specFor(2, 3, 35, 35, 16, 11, 4, 0, 1, 1, true),  // CaffeNet conv1's shape, smaller
		specFor(2, 32, 7, 7, 32, 1, 1, 0, 1, 1, true),    // 1x1
	}
	for i, s := range cases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			c, err := NewConv(s)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ns, nw, nd := s.Sizes()
			src, wei, bias := randSlice(r, ns), randSlice(r, nw), randSlice(r, s.OC)
			ddst := randSlice(r, nd)
			dst := make([]float32, nd)
			c.Forward(src, wei, bias, dst)
			dsrc, dwei, dbias := make([]float32, ns), make([]float32, nw), make([]float32, s.OC)
			for j := range dwei {
				dwei[j] = 99 // overwritten, not accumulated
			}
			c.Backward(src, ddst, wei, dsrc, dwei, dbias, true)

			want := make([]float64, nd)
			wsrc := make([]float64, ns)
			wwei := make([]float64, nw)
			wbias := make([]float64, s.OC)
			cg := s.C / s.Groups
			ref := refConv{s}
			ref.each(func(n, oc, oh, ow, ic, kh, kw, ih, iw int) {
				o := ((n*s.OC+oc)*s.OH+oh)*s.OW + ow
				x := ((n*s.C+ic)*s.H+ih)*s.W + iw
				k := ((oc*cg+ic%cg)*s.KH+kh)*s.KW + kw
				want[o] += float64(src[x]) * float64(wei[k])
				wsrc[x] += float64(ddst[o]) * float64(wei[k])
				wwei[k] += float64(ddst[o]) * float64(src[x])
			})
			for n := 0; n < s.N; n++ {
				for oc := 0; oc < s.OC; oc++ {
					for p := 0; p < s.OH*s.OW; p++ {
						o := (n*s.OC+oc)*s.OH*s.OW + p
						if s.Bias {
							want[o] += float64(bias[oc])
						}
						wbias[oc] += float64(ddst[o])
					}
				}
			}
			near(t, "dst", dst, want)
			near(t, "diff src", dsrc, wsrc)
			near(t, "diff weights", dwei, wwei)
			if s.Bias {
				near(t, "diff bias", dbias, wbias)
			}
			// Without dsrc, and with src reordered again, the weight
			// gradients are the same.
			for _, fresh := range []bool{true, false} {
				dwei2 := make([]float32, nw)
				c.Backward(src, ddst, wei, nil, dwei2, dbias, fresh)
				near(t, fmt.Sprintf("diff weights without diff src, fresh %v", fresh), dwei2, wwei)
			}
			// A src changed since Forward, not promised fresh, is read anew.
			src2 := randSlice(r, ns)
			c.Backward(src2, ddst, wei, nil, dwei, dbias, false)
			c.Forward(src2, wei, bias, dst)
			dwei3 := make([]float32, nw)
			c.Backward(src2, ddst, wei, nil, dwei3, dbias, true)
			near(t, "diff weights of a new src", dwei, float64s(dwei3))
		})
	}
}

func near(t *testing.T, name string, got []float32, want []float64) {
	t.Helper()
	var scale float64
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= 1e-5*scale+1e-5) {
			t.Fatalf("%s[%d] = %g, want %g (scale %g)", name, i, got[i], want[i], scale)
		}
	}
}

func float64s(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestPadAfter(t *testing.T) {
	for _, tc := range []struct{ in, pad, k, s, d, out, want int }{
		{28, 0, 5, 1, 1, 24, 0},
		{11, 1, 3, 2, 1, 6, 1}, // (11+2-3)/2+1 = 6 outputs use both pads
		{10, 1, 3, 2, 1, 5, 0}, // (10+2-3)/2+1 = 5: the floor leaves the far pad unused
		{227, 0, 11, 4, 1, 55, 0},
		{13, 2, 3, 1, 2, 13, 2},
		{56, 0, 1, 2, 1, 28, 0}, // ResNet's 1x1/2 projection: the last row is in no window
		{14, 0, 1, 2, 1, 7, 0},
		{56, 0, 1, 2, 1, 30, 3},   // beyond the input: padding needed
		{56, 0, 1, 2, 1, 20, -17}, // not reachable: the caller refuses it
	} {
		if got := PadAfter(tc.in, tc.pad, tc.k, tc.s, tc.d, tc.out); got != tc.want {
			t.Errorf("PadAfter(%v) = %d, want %d", tc, got, tc.want)
		}
	}
}

func TestNewConvRejectsInvalid(t *testing.T) {
	if _, err := NewConv(ConvSpec{}); err == nil {
		t.Fatal("an empty spec was accepted")
	}
}
