package exact

import "math"

const (
	// Limbs is the number of float32 digits Encode writes per value.
	Limbs = 4
	// MaxAddends is how many encoded vectors a float32 sum may add before
	// a digit could exceed 2^24 and round: each digit is at most 2^15.
	MaxAddends = 1 << 9
	// MaxTerms bounds the values one integer sum may hold (the atoms of a
	// global batch): each is clipped to 2^50, so 4096 of them stay below
	// 2^62 and Encode's top digit below 2^15.
	MaxTerms = 1 << 12
	// Shift sets the grid: the step is 2^-Shift of a block's largest
	// weight.
	Shift = 36
	// MinExp is the smallest exponent Scale uses, so that a block of zero
	// or tiny weights (a bias initialised to 0) still holds gradients up
	// to 2^(MinExp+50-Shift) = 256.
	MinExp = -6
	// clip is the largest magnitude one rounded value may have.
	clip = 1 << 50
)

// Scale returns the factor that maps a gradient of the block whose
// weights are w onto the integer grid: a power of two, 2^(Shift-e), with
// 2^e the smallest power of two above the largest |w| (and e ≥ MinExp).
// Non-finite weights count as the largest finite ones.
func Scale(w []float32) float64 {
	var m float32
	for _, v := range w {
		if a := abs(v); a > m && a <= math.MaxFloat32 {
			m = a
		}
	}
	_, e := math.Frexp(float64(m)) // m = f·2^e, f in [0.5, 1)
	if m == 0 || e < MinExp {
		e = MinExp
	}
	return math.Ldexp(1, Shift-e)
}

func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// Add rounds each g[i]·s to the nearest integer (ties to even), clips it to
// ±2^50, and adds it to acc[i]. It returns the number of values clipped,
// and the index of the first non-finite value of g, or -1; a non-finite
// value adds nothing.
func Add(acc []int64, g []float32, s float64) (clipped, bad int) {
	bad = -1
	acc = acc[:len(g)]
	for i, v := range g {
		x := math.RoundToEven(float64(v) * s)
		if x >= -clip && x <= clip {
			acc[i] += int64(x)
			continue
		}
		switch {
		case math.IsNaN(x) || math.IsInf(float64(v), 0):
			if bad < 0 {
				bad = i
			}
		case x > 0:
			acc[i] += clip
			clipped++
		default:
			acc[i] -= clip
			clipped++
		}
	}
	return clipped, bad
}

// Encode writes each acc[i] as Limbs signed 16-bit digits,
// dst[Limbs·i+j] = digit j (least significant first), so that
// acc[i] = Σ_j dst[Limbs·i+j]·2^(16j). |acc[i]| must be below 2^62.
func Encode(dst []float32, acc []int64) {
	dst = dst[:Limbs*len(acc)]
	for i, v := range acc {
		d := dst[Limbs*i : Limbs*i+Limbs : Limbs*i+Limbs]
		for j := 0; j < Limbs-1; j++ {
			lo := int64(int16(v)) // balanced digit in [-2^15, 2^15)
			d[j] = float32(lo)
			v = (v - lo) >> 16
		}
		d[Limbs-1] = float32(v)
	}
}

// Sum returns the integer that the digits of one value, as Encode wrote
// them or as a float32 sum of such encodings left them, stand for.
func Sum(d []float32) int64 {
	var v int64
	for j := Limbs - 1; j >= 0; j-- {
		v = v<<16 + int64(d[j])
	}
	return v
}

// Decode turns summed digits back into gradients: dst[i] is the integer
// of src[Limbs·i:Limbs·i+Limbs] divided by s and by k (the number of
// atoms the sum holds, for their mean), rounded to float32. The result
// depends only on the integer, never on how it was summed.
func Decode(dst, src []float32, s float64, k int) {
	src = src[:Limbs*len(dst)]
	f := 1 / s // a power of two: exact
	for i := range dst {
		x := float64(Sum(src[Limbs*i:Limbs*i+Limbs])) * f
		if k != 1 {
			x /= float64(k)
		}
		dst[i] = float32(x)
	}
}
