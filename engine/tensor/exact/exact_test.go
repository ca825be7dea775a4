package exact

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gradients returns n values spread over many magnitudes, as a layer's
// gradient is.
func gradients(r *rand.Rand, n int) []float32 {
	g := make([]float32, n)
	for i := range g {
		g[i] = float32(r.NormFloat64() * math.Pow(10, -float64(r.IntN(8))))
	}
	return g
}

// TestPartitionIndependent sums the same atoms' gradients split over
// 1..8 workers, each worker's partial sum encoded and the encodings added
// in float32 in a random order, and expects the decoded result bit for
// bit equal to the one-worker sum, which a plain float32 sum is not.
func TestPartitionIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const atoms, n = 24, 1000
	w := gradients(r, n)
	s := Scale(w)
	g := make([][]float32, atoms)
	for a := range g {
		g[a] = gradients(r, n)
	}
	sum := func(workers int) []float32 {
		per := atoms / workers
		total := make([]float32, Limbs*n)
		for _, wk := range r.Perm(workers) {
			acc := make([]int64, n)
			for _, a := range r.Perm(per) {
				if c, bad := Add(acc, g[wk*per+a], s); c != 0 || bad >= 0 {
					t.Fatalf("clipped %d, bad %d", c, bad)
				}
			}
			enc := make([]float32, Limbs*n)
			Encode(enc, acc)
			for i := range total {
				total[i] += enc[i]
			}
		}
		out := make([]float32, n)
		Decode(out, total, s, atoms)
		return out
	}
	want := sum(1)
	for _, workers := range []int{2, 3, 4, 6, 8, 12, 24} {
		got := sum(workers)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d workers: value %d is %g, one worker %g", workers, i, got[i], want[i])
			}
		}
	}
	// The exact mean is close to the float64 mean.
	for i := range want {
		var m float64
		for a := range g {
			m += float64(g[a][i])
		}
		m /= atoms
		if d := math.Abs(float64(want[i]) - m); d > 1e-6*math.Abs(m)+2/s {
			t.Fatalf("value %d: exact mean %g, float64 mean %g", i, want[i], m)
		}
	}
}

// TestEncodeRoundTrip checks Encode and Sum over the whole range,
// including MaxAddends encodings summed in float32.
func TestEncodeRoundTrip(t *testing.T) {
	cases := []int64{0, 1, -1, 1 << 15, -(1 << 15), 1<<16 - 1, 1<<50 + 12345, -(1 << 50), 1<<62 - 1, -(1<<62 - 1), 0x123456789abcd}
	for _, v := range cases {
		d := make([]float32, Limbs)
		Encode(d, []int64{v})
		if got := Sum(d); got != v {
			t.Errorf("%d encodes to %v, which sums to %d", v, d, got)
		}
		for _, x := range d {
			if math.Abs(float64(x)) > 1<<15 {
				t.Errorf("%d: digit %g above 2^15", v, x)
			}
		}
	}
	// MaxAddends vectors of the largest per-vector sum (2^62 / MaxAddends
	// each keeps the total in range) add exactly in float32.
	v := int64(1)<<62/MaxAddends - 1
	d := make([]float32, Limbs)
	Encode(d, []int64{v})
	tot := make([]float32, Limbs)
	for range MaxAddends {
		for j := range tot {
			tot[j] += d[j]
		}
	}
	if got, want := Sum(tot), v*MaxAddends; got != want {
		t.Fatalf("%d addends: %d, want %d", MaxAddends, got, want)
	}
}

func TestAddClipsAndFlags(t *testing.T) {
	acc := make([]int64, 5)
	s := Scale([]float32{1})
	big := float32(math.Ldexp(1, 50-Shift+3)) // 8 times the bound
	c, bad := Add(acc, []float32{big, -big, 1, float32(math.NaN()), float32(math.Inf(1))}, s)
	if c != 2 || bad != 3 {
		t.Fatalf("clipped %d (want 2), bad %d (want 3)", c, bad)
	}
	if acc[0] != clip || acc[1] != -clip || acc[2] != int64(s) || acc[3] != 0 || acc[4] != 0 {
		t.Fatalf("acc %v", acc)
	}
}

func TestScale(t *testing.T) {
	cases := []struct {
		w    []float32
		want int // log2 of the scale
	}{
		{[]float32{0, 0}, Shift - MinExp},
		{[]float32{0.75, -0.1}, Shift},    // 0.75 = 0.75·2^0
		{[]float32{-1}, Shift - 1},        // 1 = 0.5·2^1
		{[]float32{3e-5}, Shift - MinExp}, // tiny: the floor
		{[]float32{100, float32(math.Inf(1))}, Shift - 7},
	}
	for _, c := range cases {
		if got := Scale(c.w); got != math.Ldexp(1, c.want) {
			t.Errorf("Scale(%v) = 2^%g, want 2^%d", c.w, math.Log2(got), c.want)
		}
	}
}

// FuzzDecode feeds arbitrary digits to Decode: it must not panic, and
// digits that Encode wrote must decode to what was encoded.
func FuzzDecode(f *testing.F) {
	f.Add(int64(12345), float32(1), float32(2), float32(3), float32(4))
	f.Fuzz(func(t *testing.T, v int64, a, b, c, d float32) {
		out := make([]float32, 1)
		Decode(out, []float32{a, b, c, d}, 1<<20, 3)
		v %= 1 << 62
		enc := make([]float32, Limbs)
		Encode(enc, []int64{v})
		if Sum(enc) != v {
			t.Fatalf("%d round-trips to %d", v, Sum(enc))
		}
	})
}

// TestDecodeRoundsTheInteger: Decode's float halves give float64(Sum),
// the integer correctly rounded, for digit vectors as float32 sums of
// encodings leave them (unnormalised, up to 2^24 each).
func TestDecodeRoundsTheInteger(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		d := make([]float32, Limbs)
		for j := range d {
			d[j] = float32(r.IntN(1<<25) - 1<<24)
		}
		d[3] = float32(r.IntN(1<<15) - 1<<14) // keep the integer below 2^63
		out := make([]float32, 1)
		Decode(out, d, 1<<20, 3)
		want := float32(float64(Sum(d)) * (1 / (float64(1<<20) * 3)))
		if math.Float32bits(out[0]) != math.Float32bits(want) {
			t.Fatalf("digits %v: Decode %g, float64(Sum) %g", d, out[0], want)
		}
	}
}

// TestMeanIsDecodeOfEncode: Mean gives Decode's bits for Encode's digits,
// on random sums of every magnitude up to the bound, on values that round
// to float64 at a tie, and at the extremes.
func TestMeanIsDecodeOfEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	var acc []int64
	for e := 0; e <= 62; e++ {
		for range 64 {
			v := rng.Int64N(1 << e)
			if rng.IntN(2) == 0 {
				v = -v
			}
			acc = append(acc, v)
		}
	}
	// Ties at float64's precision: 2^53+1 and 2^60+2^7 sit halfway.
	acc = append(acc, 1<<53+1, -(1<<53 + 1), 1<<60+1<<7, 1<<60+3<<7, 1<<62-1, -(1<<62 - 1), 0)
	for _, k := range []int{1, 3, 8, 4096} {
		for _, s := range []float64{1 << 36, 1 << 42, 0x1p30} {
			want := make([]float32, len(acc))
			dig := make([]float32, Limbs*len(acc))
			Encode(dig, acc)
			Decode(want, dig, s, k)
			got := make([]float32, len(acc))
			Mean(got, acc, s, k)
			for i := range acc {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("k %d, s %g, sum %d: Mean %v, Decode %v", k, s, acc[i], got[i], want[i])
				}
			}
		}
	}
}
