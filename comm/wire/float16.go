package wire

import (
	"fmt"
	"math"
)

// F32ToF16 converts f to the nearest IEEE 754 half-precision value, ties to
// even. Magnitudes from 65520 up become infinity; magnitudes below 2^-25
// become (signed) zero; values between become half subnormals. Infinities
// keep their sign; a NaN stays a NaN (quieted, with the top bits of its
// payload kept).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	a := b & 0x7fffffff
	if a-0x38800000 < 0x47800000-0x38800000 {
		// |f| in [2^-14, 65536): a normal half, or infinity after
		// rounding. Rebias the exponent (127 → 15) and drop 13 mantissa
		// bits, rounding to nearest even without a branch; a carry out of
		// the mantissa correctly bumps the exponent.
		x := a - (127-15)<<23
		x = (x + 0xfff + x>>13&1) >> 13
		return uint16(b>>16)&0x8000 | uint16(x)
	}
	return f32ToF16Rare(b)
}

// f32ToF16Rare converts the float32 bits b whose magnitude is not in the
// normal half range: infinities, NaNs, overflow, subnormals and zero.
func f32ToF16Rare(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff && mant != 0:
		return sign | 0x7e00 | uint16(mant>>13)
	case exp >= 127+16:
		return sign | 0x7c00
	}
	// Half subnormal (or zero): the value in units of 2^-24 is
	// full >> shift, with full the 24-bit significand.
	shift := uint32(14 - (exp - 127 + 15))
	if shift > 24 {
		return sign
	}
	full := mant | 0x800000
	h := full >> shift
	rem := full & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// F16ToF32 converts the IEEE 754 half-precision value h to float32,
// exactly: every half, subnormals, infinities and NaNs included, has a
// float32 of the same value.
func F16ToF32(h uint16) float32 {
	if e := h & 0x7c00; e != 0 && e != 0x7c00 {
		// Normal: rebias the exponent (15 → 127), widen the mantissa.
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + (127-15)<<23))
	}
	return f16ToF32Rare(h)
}

// f16ToF32Rare converts the halves that are not normal numbers.
func f16ToF32Rare(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	mant := uint32(h & 0x3ff)
	switch {
	case h&0x7c00 == 0x7c00:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// EncodeF16 writes src into dst as little-endian halves (F32ToF16). dst
// must be exactly 2*len(src) bytes long; otherwise it panics, a programmer
// error.
func EncodeF16(dst []byte, src []float32) {
	if len(dst) != 2*len(src) {
		panic(fmt.Sprintf("wire: EncodeF16 of %d floats into %d bytes", len(src), len(dst)))
	}
	for i, f := range src {
		// F32ToF16's common path, by hand: the function is too large
		// for the compiler to inline.
		b := math.Float32bits(f)
		var h uint16
		if a := b & 0x7fffffff; a-0x38800000 < 0x47800000-0x38800000 {
			x := a - (127-15)<<23
			x = (x + 0xfff + x>>13&1) >> 13
			h = uint16(b>>16)&0x8000 | uint16(x)
		} else if a <= 0x33000000 {
			h = uint16(b>>16) & 0x8000 // |f| <= 2^-25, zero included: ±0
		} else {
			h = f32ToF16Rare(b)
		}
		d := dst[2*i : 2*i+2 : 2*i+2]
		d[0], d[1] = byte(h), byte(h>>8)
	}
}

// DecodeF16 reads little-endian halves from src into dst (F16ToF32). src
// must be exactly 2*len(dst) bytes long; otherwise it panics, a programmer
// error.
func DecodeF16(dst []float32, src []byte) {
	if len(src) != 2*len(dst) {
		panic(fmt.Sprintf("wire: DecodeF16 of %d bytes into %d floats", len(src), len(dst)))
	}
	for i := range dst {
		s := src[2*i : 2*i+2 : 2*i+2]
		h := uint16(s[0]) | uint16(s[1])<<8
		// F16ToF32's common path, by hand.
		if e := h & 0x7c00; e != 0 && e != 0x7c00 {
			dst[i] = math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + (127-15)<<23))
		} else if h&0x7fff == 0 {
			dst[i] = math.Float32frombits(uint32(h) << 16) // ±0
		} else {
			dst[i] = f16ToF32Rare(h)
		}
	}
}
