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
	mb := int64(math.Float64bits(magic))
	one := func(i int) {
		x := float64(g[i]) * s
		if !inRange(x) {
			c, b := addSlow(&acc[i], x)
			clipped += c
			if b && bad < 0 {
				bad = i
			}
			return
		}
		acc[i] += int64(math.Float64bits(x+magic)) - mb
	}
	i := 0
	// Four at a time, independent chains for the out-of-order core; a
	// group with a value out of range goes one by one.
	for ; i+4 <= len(g); i += 4 {
		x0, x1, x2, x3 := float64(g[i])*s, float64(g[i+1])*s, float64(g[i+2])*s, float64(g[i+3])*s
		if !(inRange(x0) && inRange(x1) && inRange(x2) && inRange(x3)) {
			for j := i; j < i+4; j++ {
				one(j)
			}
			continue
		}
		a := acc[i : i+4 : i+4]
		// |x| <= 2^50: adding 1.5·2^52 rounds x to an integer (ties to
		// even, the FPU's rounding) held in the low mantissa bits.
		a[0] += int64(math.Float64bits(x0+magic)) - mb
		a[1] += int64(math.Float64bits(x1+magic)) - mb
		a[2] += int64(math.Float64bits(x2+magic)) - mb
		a[3] += int64(math.Float64bits(x3+magic)) - mb
	}
	for ; i < len(g); i++ {
		one(i)
	}
	return clipped, bad
}

// inRange reports whether x is a number of magnitude at most 2^50 (false
// for NaN).
func inRange(x float64) bool { return x >= -clip && x <= clip }

// magic is 1.5·2^52: x+magic has the unit in its last place, for |x| < 2^51.
const magic = 0x1.8p52

// addSlow adds a value beyond the clip bound: ±2^50, or nothing for a
// non-finite one (reported).
func addSlow(acc *int64, x float64) (clipped int, bad bool) {
	switch {
	case x != x || math.IsInf(x, 0):
		return 0, true
	case x > 0:
		*acc += clip
	default:
		*acc -= clip
	}
	return 1, false
}

// Encode writes each acc[i] as Limbs signed 16-bit digits,
// dst[Limbs·i+j] = digit j (least significant first), so that
// acc[i] = Σ_j dst[Limbs·i+j]·2^(16j). |acc[i]| must be below 2^62.
func Encode(dst []float32, acc []int64) {
	dst = dst[:Limbs*len(acc)]
	i := 0
	for ; i+2 <= len(acc); i += 2 {
		encodeTwo(dst[Limbs*i:Limbs*i+2*Limbs:Limbs*i+2*Limbs], acc[i], acc[i+1])
	}
	if i < len(acc) {
		d := dst[Limbs*i : Limbs*i+Limbs : Limbs*i+Limbs]
		v := acc[i]
		d0 := int64(int16(v)) // balanced digits in [-2^15, 2^15)
		v = (v - d0) >> 16
		d1 := int64(int16(v))
		v = (v - d1) >> 16
		d2 := int64(int16(v))
		v = (v - d2) >> 16
		d[0], d[1], d[2], d[3] = float32(d0), float32(d1), float32(d2), float32(v)
	}
}

// encodeTwo is Encode of two values, interleaved for the out-of-order
// core.
func encodeTwo(d []float32, v, u int64) {
	d = d[: 2*Limbs : 2*Limbs]
	v0, u0 := int64(int16(v)), int64(int16(u))
	v, u = (v-v0)>>16, (u-u0)>>16
	v1, u1 := int64(int16(v)), int64(int16(u))
	v, u = (v-v1)>>16, (u-u1)>>16
	v2, u2 := int64(int16(v)), int64(int16(u))
	v, u = (v-v2)>>16, (u-u2)>>16
	d[0], d[1], d[2], d[3] = float32(v0), float32(v1), float32(v2), float32(v)
	d[4], d[5], d[6], d[7] = float32(u0), float32(u1), float32(u2), float32(u)
}

// Sum returns the integer that the digits of one value, as Encode wrote
// them or as a float32 sum of such encodings left them, stand for.
func Sum(d []float32) int64 {
	d = d[:Limbs:Limbs]
	return ((int64(d[3])<<16+int64(d[2]))<<16+int64(d[1]))<<16 + int64(d[0])
}

// Mean writes into dst the mean of k atoms whose integer sums are acc, on
// the grid of scale s: dst[i] = acc[i]/(s·k) rounded to float32. It gives
// the bits Decode gives for Encode(acc) (see Decode), without the digits:
// a run whose sum never leaves the rank (one worker) skips encoding.
func Mean(dst []float32, acc []int64, s float64, k int) {
	acc = acc[:len(dst)]
	f := 1 / (s * float64(k))
	for i, v := range acc {
		dst[i] = float32(float64(v) * f)
	}
}

// Decode turns summed digits back into gradients: dst[i] is the integer
// of src[Limbs·i:Limbs·i+Limbs] divided by s·k (k the number of atoms the
// sum holds, for their mean), rounded to float32. The result depends only
// on the integer, never on how its digits were summed: the two halves
// d3·2^16+d2 and d1·2^16+d0 are exact in float64 (below 2^41), and
// adding them once rounds the exact integer to the nearest float64, as
// float64(Sum) does.
func Decode(dst, src []float32, s float64, k int) {
	src = src[:Limbs*len(dst)]
	f := 1 / (s * float64(k))
	one := func(d []float32) float32 {
		d = d[:Limbs:Limbs]
		hi := float64(d[3])*0x1p16 + float64(d[2])
		lo := float64(d[1])*0x1p16 + float64(d[0])
		return float32((hi*0x1p32 + lo) * f)
	}
	i := 0
	for ; i+2 <= len(dst); i += 2 {
		d := src[Limbs*i : Limbs*i+2*Limbs : Limbs*i+2*Limbs]
		hi0 := float64(d[3])*0x1p16 + float64(d[2])
		lo0 := float64(d[1])*0x1p16 + float64(d[0])
		hi1 := float64(d[7])*0x1p16 + float64(d[6])
		lo1 := float64(d[5])*0x1p16 + float64(d[4])
		dst[i] = float32((hi0*0x1p32 + lo0) * f)
		dst[i+1] = float32((hi1*0x1p32 + lo1) * f)
	}
	for ; i < len(dst); i++ {
		dst[i] = one(src[Limbs*i:])
	}
}
