package scheme

import (
	"math"
	"math/rand"
	"testing"
)

// TestQuantRoundTrip: every format's error stays within its bound, for
// values spread over several orders of magnitude, both signs and exact
// zeros, on runs whose length is not a multiple of the codes per word.
func TestQuantRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	src := make([]float32, 1001)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * math.Pow(10, -3*rng.Float64()))
		if i%97 == 0 {
			src[i] = 0
		}
	}
	var s float32
	for _, v := range src {
		s = max(s, abs32(v))
	}
	tests := []struct {
		bits  int
		bound func(x float32) float64
	}{
		{32, func(float32) float64 { return 0 }},
		// bfloat16: 8 significant bits, half an ulp.
		{16, func(x float32) float64 { return math.Abs(float64(x)) * 0x1p-8 }},
		{8, func(float32) float64 { return float64(s)/254 + float64(s)*1e-6 }},
		{4, func(x float32) float64 { return max(math.Abs(float64(x))/3, float64(s)*0x1p-7) * (1 + 1e-6) }},
	}
	for _, tc := range tests {
		packed := make([]float32, QuantWords(len(src), tc.bits))
		PackQuantized(packed, src, tc.bits)
		got := make([]float32, len(src))
		UnpackQuantized(got, packed, tc.bits, false)
		worst := 0.0
		for i, x := range src {
			e := math.Abs(float64(got[i]) - float64(x))
			if e > tc.bound(x) {
				t.Fatalf("%d bits: %g comes back as %g (error %g, bound %g)", tc.bits, x, got[i], e, tc.bound(x))
			}
			if x == 0 && got[i] != 0 {
				t.Errorf("%d bits: 0 comes back as %g", tc.bits, got[i])
			}
			worst = max(worst, e)
		}
		if tc.bits < 32 && worst == 0 {
			t.Errorf("%d bits: no value lost anything: the format is not applied", tc.bits)
		}
		if want := (len(src)*tc.bits + 31) / 32; tc.bits < 32 && len(packed) != 1+want {
			t.Errorf("%d bits: %d words, want 1+%d", tc.bits, len(packed), want)
		}
	}
}

// TestQuant4BitGrid: the 4-bit format's values are ±s·2^(e−7), e = 1..7,
// and zero, each value rounded to the nearest of them.
func TestQuant4BitGrid(t *testing.T) {
	src := []float32{8, -8, 4, 5.9, 6.1, -3, 0.2, 0.124, 0.126, 0.0624, 0.0626, 0.01, 0}
	want := []float32{8, -8, 4, 4, 8, -4, 0.25, 0.125, 0.125, 0, 0.125, 0, 0}
	packed := make([]float32, QuantWords(len(src), 4))
	PackQuantized(packed, src, 4)
	got := make([]float32, len(src))
	UnpackQuantized(got, packed, 4, false)
	for i := range src {
		if got[i] != want[i] {
			t.Errorf("%g: %g, want %g", src[i], got[i], want[i])
		}
	}
}

// TestQuantSumInFloat32: Dequantize with Add sums in float32: three
// workers' 4-bit pseudo-gradients of different scales added into a
// float32 accumulator give the float32 sum of their values, which the
// 4-bit grid could not hold.
func TestQuantSumInFloat32(t *testing.T) {
	workers := [][]float32{
		{1, -0.5, 0.25, 0.3},
		{0.01, 0.02, -0.03, 0.04},
		{3, 3, 3, -3},
	}
	acc := make([]float32, 4)
	want := make([]float32, 4)
	for _, w := range workers {
		packed := make([]float32, QuantWords(len(w), 4))
		PackQuantized(packed, w, 4)
		one := make([]float32, len(w))
		UnpackQuantized(one, packed, 4, false)
		for i := range want {
			want[i] += one[i]
		}
		UnpackQuantized(acc, packed, 4, true)
	}
	offGrid := false
	for i := range acc {
		if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
			t.Errorf("value %d: sum %g, want the float32 sum %g", i, acc[i], want[i])
		}
		// A 4-bit value is ±s·2^k: its mantissa is 1.
		if f, _ := math.Frexp(math.Abs(float64(acc[i]))); acc[i] != 0 && f != 0.5 {
			offGrid = true
		}
	}
	if !offGrid {
		t.Errorf("sums %v are all on a 4-bit grid: the test proves nothing", acc)
	}
}

// TestQuantNonFinite: a non-finite pseudo-gradient (a diverged run) comes
// back non-finite at every precision instead of as zeros, and does not
// spill into its neighbours' codes.
func TestQuantNonFinite(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		for _, bits := range []int{16, 8, 4} {
			src := []float32{0.5, bad, -0.25, 0, 1, 2, 3, 4, 5}
			packed := make([]float32, QuantWords(len(src), bits))
			PackQuantized(packed, src, bits)
			got := make([]float32, len(src))
			UnpackQuantized(got, packed, bits, false)
			if v := float64(got[1]); !math.IsNaN(v) && !math.IsInf(v, 0) {
				t.Errorf("%d bits: %v comes back as %v", bits, bad, got[1])
			}
			if bits == 16 && (got[0] != 0.5 || got[2] != -0.25) {
				t.Errorf("16 bits: the neighbours of %v come back as %v", bad, got)
			}
		}
	}
}
