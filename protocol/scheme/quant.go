package scheme

import (
	"fmt"
	"math"
)

// The formats streaming-diloco's pseudo-gradients travel in
// (--outer-bits; Douillard et al. 2025, "Streaming DiLoCo with
// overlapping communication", §2.3: low-precision outer gradients,
// accumulated in float32). A quantised run of values is packed into
// float32 words, so that every transport carries it unchanged as a
// message of QuantWords(n, bits) values: word 0 is the run's scale (a
// float32), the codes follow, packed little end first. Whoever receives
// one dequantises it and adds in float32; no sum is ever taken in the
// narrow format.
//
//   - 32: not quantised (the values themselves travel).
//   - 16: bfloat16, rounded to nearest even; the scale word is 1.
//   - 8: symmetric integers: s = max|x| over the run, code =
//     round(127·x/s) in −127..127, value = code·(s/127). Error at most
//     s/254 (plus float32 rounding).
//   - 4: E3M0-like, a sign and a 3-bit exponent e: e = 0 is zero, e =
//     1..7 is s·2^(e−7) (so s·2^−6 .. s), rounded to the nearest in
//     value. Error at most max(|x|/3, s·2^−7).
//
// Quantisation is deterministic, so every replica that dequantises the
// same words gets the same bits.

// OuterBitsChoices are the values --outer-bits accepts.
var OuterBitsChoices = []int{32, 16, 8, 4}

// validBits reports whether bits is one of OuterBitsChoices.
func validBits(bits int) bool {
	for _, b := range OuterBitsChoices {
		if b == bits {
			return true
		}
	}
	return false
}

// QuantWords is the number of float32 words n values take quantised to
// bits (32: n).
func QuantWords(n, bits int) int {
	if bits >= 32 || bits <= 0 {
		return n
	}
	return 1 + (n*bits+31)/32
}

// PackQuantized packs src quantised to bits into dst, which holds
// QuantWords(len(src), bits) words.
func PackQuantized(dst, src []float32, bits int) {
	if len(dst) != QuantWords(len(src), bits) {
		panic(fmt.Sprintf("scheme: %d values at %d bits take %d words, not %d", len(src), bits, QuantWords(len(src), bits), len(dst)))
	}
	if bits >= 32 {
		copy(dst, src)
		return
	}
	var s float32
	if bits < 16 {
		for _, v := range src {
			s = max(s, abs32(v))
		}
	} else {
		s = 1
	}
	dst[0] = s
	words := dst[1:]
	per := 32 / bits
	for w := range words {
		var u uint32
		for j := range per {
			i := w*per + j
			if i >= len(src) {
				break
			}
			u |= encode(src[i], s, bits) << (uint(j) * uint(bits))
		}
		words[w] = math.Float32frombits(u)
	}
}

// UnpackQuantized unpacks src (QuantWords(len(dst), bits) words written by
// PackQuantized) into dst, or adds the values into dst in float32 when add is
// set.
func UnpackQuantized(dst, src []float32, bits int, add bool) {
	if len(src) != QuantWords(len(dst), bits) {
		panic(fmt.Sprintf("scheme: %d values at %d bits take %d words, not %d", len(dst), bits, QuantWords(len(dst), bits), len(src)))
	}
	if bits >= 32 {
		if add {
			for i, v := range src {
				dst[i] += v
			}
		} else {
			copy(dst, src)
		}
		return
	}
	s := src[0]
	step := s / 127
	per := 32 / bits
	mask := uint32(1)<<uint(bits) - 1
	for i := range dst {
		u := math.Float32bits(src[1+i/per]) >> (uint(i%per) * uint(bits)) & mask
		v := decode(u, s, step, bits)
		if add {
			dst[i] += v
		} else {
			dst[i] = v
		}
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// encode is v's code at bits with scale s.
func encode(v, s float32, bits int) uint32 {
	switch bits {
	case 16:
		b := math.Float32bits(v)
		if v != v { // NaN stays NaN
			return b>>16 | 0x40
		}
		return (b + 0x7fff + (b >> 16 & 1)) >> 16
	case 8:
		if s == 0 {
			return 0
		}
		q := math.Round(float64(v) / float64(s) * 127)
		q = max(-127, min(127, q))
		return uint32(uint8(int8(q)))
	case 4:
		a := float64(abs32(v))
		var sign uint32
		if math.Signbit(float64(v)) {
			sign = 8
		}
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			// A diverged run: every value decodes non-finite, so the
			// divergence shows instead of turning into zeros.
			return sign | 7
		}
		if s == 0 || !(a > 0) {
			return 0
		}
		r := a / float64(s) // in (0, 1]
		if r < 0x1p-6 {
			if r < 0x1p-7 {
				return 0
			}
			return sign | 1
		}
		// Between 2^m and 2^(m+1), the nearer in value.
		_, m := math.Frexp(r) // r = f·2^m, f in [0.5, 1)
		m--                   // r in [2^m, 2^(m+1))
		if r >= 1.5*math.Ldexp(1, m) {
			m++
		}
		e := max(1, min(m+7, 7))
		return sign | uint32(e)
	}
	panic(fmt.Sprintf("scheme: no %d-bit format", bits))
}

// decode is the value of code u at bits with scale s (step = s/127).
func decode(u uint32, s, step float32, bits int) float32 {
	switch bits {
	case 16:
		return math.Float32frombits(u << 16)
	case 8:
		return float32(int8(uint8(u))) * step
	case 4:
		e := int(u & 7)
		if e == 0 {
			return 0
		}
		v := float32(math.Ldexp(float64(s), e-7))
		if u&8 != 0 {
			v = -v
		}
		return v
	}
	panic(fmt.Sprintf("scheme: no %d-bit format", bits))
}
