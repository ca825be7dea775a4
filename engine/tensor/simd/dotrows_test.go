package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotRows4x3 checks DotRows4x3 against the same sums in float64 on
// random rows, over shapes with one and several vectors a row and taps at
// scattered offsets, accumulating onto a non-zero acc; and, where the
// fused kernel runs, that the Go loop (which rounds each product) agrees
// with it within float32 rounding.
func TestDotRows4x3(t *testing.T) {
	for _, tc := range []struct{ rows, ow, wp int }{{1, 8, 8}, {3, 8, 12}, {32, 32, 36}, {24, 24, 28}, {5, 64, 70}} {
		r := rand.New(rand.NewPCG(uint64(tc.rows), uint64(tc.ow)))
		var dy [4][]float32
		for k := range dy {
			dy[k] = make([]float32, tc.rows*tc.ow)
			for i := range dy[k] {
				dy[k][i] = float32(r.NormFloat64())
			}
		}
		x := make([]float32, 3*(tc.rows+4)*tc.wp)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		off := [3]int{0, tc.wp + tc.wp - tc.ow, len(x) - (tc.rows-1)*tc.wp - tc.ow}
		var acc, accGo [96]float32
		for i := range acc {
			acc[i] = float32(i) / 10
		}
		accGo = acc
		DotRows4x3(&acc, &dy, x, &off, tc.rows, tc.ow, tc.wp)
		dotRows4x3Go(&accGo, &dy, x, &off, tc.rows, tc.ow, tc.wp)
		for k := range 4 {
			for tp := range 3 {
				for l := range 8 {
					i := (3*k+tp)*8 + l
					want := float64(float32(i) / 10) // acc's start
					var mag float64
					for y := range tc.rows {
						for v := 0; v < tc.ow; v += 8 {
							p := float64(dy[k][y*tc.ow+v+l]) * float64(x[off[tp]+y*tc.wp+v+l])
							want += p
							mag += math.Abs(p)
						}
					}
					tol := 1e-6 * (mag + 10)
					if d := math.Abs(float64(acc[i]) - want); d > tol {
						t.Errorf("%+v: acc[%d] = %g, want %g (error %.3g > %.3g)", tc, i, acc[i], want, d, tol)
					}
					if d := math.Abs(float64(accGo[i]) - want); d > tol {
						t.Errorf("%+v: Go loop acc[%d] = %g, want %g", tc, i, accGo[i], want)
					}
				}
			}
		}
	}
}

// TestDotRows4x3Bounds checks the panics on arguments that do not fit.
func TestDotRows4x3Bounds(t *testing.T) {
	var acc [96]float32
	dy := [4][]float32{make([]float32, 16), make([]float32, 16), make([]float32, 16), make([]float32, 16)}
	x := make([]float32, 40)
	for _, tc := range []struct {
		name         string
		off          [3]int
		rows, ow, wp int
		dyShort      bool
	}{
		{"ow not a multiple of 8", [3]int{}, 1, 12, 12, false},
		{"wp narrower than ow", [3]int{}, 1, 16, 8, false},
		{"tap past x", [3]int{0, 0, 30}, 2, 8, 8, false},
		{"negative offset", [3]int{-1, 0, 0}, 1, 8, 8, false},
		{"dy short", [3]int{}, 3, 8, 8, true},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			d := dy
			if tc.dyShort {
				d[2] = d[2][:8]
			}
			DotRows4x3(&acc, &d, x, &tc.off, tc.rows, tc.ow, tc.wp)
		}()
	}
}

// TestConvTaps4x3 checks ConvTaps4x3 against the same sums in float64,
// with and without a bias, over tap counts from 1 to 75 at scattered
// offsets and vectors from different rows; the channels' planes lie apart
// and the outputs around the block stay untouched.
func TestConvTaps4x3(t *testing.T) {
	for _, taps := range []int{1, 2, 25, 75} {
		for _, withBias := range []bool{false, true} {
			r := rand.New(rand.NewPCG(uint64(taps), 5))
			const plane = 40
			x := make([]float32, 400)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			w := make([]float32, 4*taps)
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			off := make([]int, taps)
			for i := range off {
				off[i] = r.IntN(200)
			}
			xo := [3]int{0, 17, 150}
			var bias []float32
			if withBias {
				bias = []float32{0.5, -1, 2, 0.25}
			}
			out := make([]float32, 3*plane+24+8)
			for i := range out {
				out[i] = 99
			}
			ConvTaps4x3(out[8:], plane, w, x, &xo, NewTaps(off), bias)
			for i, v := range out {
				k, rem := (i-8)/plane, (i-8)%plane
				if i < 8 || k > 3 || rem >= 24 {
					if v != 99 {
						t.Fatalf("%d taps: out[%d] = %g outside the block, want it untouched", taps, i, v)
					}
					continue
				}
				vv, l := rem/8, rem%8
				var want, mag float64
				for tp := range taps {
					p := float64(w[k*taps+tp]) * float64(x[xo[vv]+off[tp]+l])
					want += p
					mag += math.Abs(p)
				}
				if withBias {
					want += float64(bias[k])
				}
				if d := math.Abs(float64(v) - want); d > 1e-6*(mag+1) {
					t.Errorf("%d taps, bias %v: out[%d] (k %d, vector %d, lane %d) = %g, want %g", taps, withBias, i, k, vv, l, v, want)
				}
			}
		}
	}
}
