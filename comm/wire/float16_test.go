package wire

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// refF16 rounds f to half precision by float64 arithmetic, independently
// of F32ToF16, and returns the rounded value as a float32.
func refF16(f float32) float32 {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return f
	}
	ax := math.Abs(x)
	if ax >= 65520 {
		return float32(math.Copysign(math.Inf(1), x))
	}
	quantum := math.Ldexp(1, -24) // half subnormal spacing
	if ax >= math.Ldexp(1, -14) {
		_, e := math.Frexp(ax) // ax = frac * 2^e, frac in [0.5, 1)
		quantum = math.Ldexp(1, e-1-10)
	}
	return float32(math.Copysign(math.RoundToEven(ax/quantum)*quantum, x))
}

func checkF16(t *testing.T, f float32) {
	t.Helper()
	got := F16ToF32(F32ToF16(f))
	want := refF16(f)
	if math.IsNaN(float64(f)) {
		if !math.IsNaN(float64(got)) || math.Signbit(float64(got)) != math.Signbit(float64(f)) {
			t.Fatalf("NaN %08x -> %v", math.Float32bits(f), got)
		}
		return
	}
	if math.Float32bits(got) != math.Float32bits(want) {
		t.Fatalf("%g (%08x): got %g (%08x), want %g (%08x)", f, math.Float32bits(f), got, math.Float32bits(got), want, math.Float32bits(want))
	}
}

func TestF16AllHalves(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		exp, mant := h>>10&0x1f, h&0x3ff
		if exp == 0x1f && mant != 0 {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("%04x: NaN became %g", h, f)
			}
			if back := F32ToF16(f); back != h|0x200 {
				t.Fatalf("%04x: NaN came back as %04x, want %04x", h, back, h|0x200)
			}
			continue
		}
		// Every half is a float32 exactly: check the value by arithmetic.
		var want float64
		switch exp {
		case 0x1f:
			want = math.Inf(1)
		case 0:
			want = float64(mant) * math.Ldexp(1, -24)
		default:
			want = (1 + float64(mant)/1024) * math.Ldexp(1, int(exp)-15)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("%04x -> %g, want %g", h, f, want)
		}
		if back := F32ToF16(f); back != h {
			t.Fatalf("%04x -> %g -> %04x", h, f, back)
		}
	}
}

// TestF16Rounding checks round-to-nearest-even at every midpoint between
// adjacent halves and one float32 step either side, the only places where
// rounding can go wrong, plus the overflow and underflow thresholds.
func TestF16Rounding(t *testing.T) {
	for i := 0; i < 0x7c00; i++ {
		lo := float64(F16ToF32(uint16(i)))
		hi := float64(F16ToF32(uint16(i + 1))) // 0x7c00 is +Inf
		if math.IsInf(hi, 1) {
			hi = 65536 // where the next half would be
		}
		mid := float32((lo + hi) / 2)
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			checkF16(t, f)
			checkF16(t, -f)
		}
	}
	for _, f := range []float32{65504, 65519.996, 65520, 1e10, float32(math.Inf(1)), 0x1p-25, 0x1.000002p-25, 0x1p-26, 0x1p-149, 0, float32(math.NaN())} {
		checkF16(t, f)
		checkF16(t, -f)
	}
	if got := F32ToF16(65520); got != 0x7c00 {
		t.Errorf("65520 -> %04x, want +Inf", got)
	}
	if got := F32ToF16(0x1p-25); got != 0 {
		t.Errorf("2^-25 -> %04x, want 0 (tie to even)", got)
	}
	if got := F32ToF16(0x1.000002p-25); got != 1 {
		t.Errorf("just above 2^-25 -> %04x, want the smallest subnormal", got)
	}
}

func TestF16Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		checkF16(t, math.Float32frombits(rng.Uint32()))
	}
}

func TestEncodeDecodeF16(t *testing.T) {
	src := []float32{0, 1, -2.5, 65504, 1e-7, 3.14159, float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0x1p-25, 0x1.000002p-25, 1e-30, 70000, float32(math.NaN())}
	b := make([]byte, 2*len(src))
	EncodeF16(b, src)
	if b[2] != 0x00 || b[3] != 0x3c { // 1.0 is 0x3c00, little-endian
		t.Fatalf("1.0 encoded as % x", b[2:4])
	}
	dst := make([]float32, len(src))
	DecodeF16(dst, b)
	for i, f := range src {
		want := F16ToF32(F32ToF16(f))
		if math.Float32bits(dst[i]) != math.Float32bits(want) {
			t.Errorf("%d: %g -> %g, want %g", i, f, dst[i], want)
		}
	}
	for _, fn := range []func(){
		func() { EncodeF16(make([]byte, 3), src[:2]) },
		func() { DecodeF16(make([]float32, 2), make([]byte, 5)) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "wire: ") {
					t.Errorf("recovered %v", r)
				}
			}()
			fn()
		}()
	}
}

func BenchmarkEncodeF16(b *testing.B) {
	src := make([]float32, 1<<20)
	for i := range src {
		src[i] = float32(i) * 0.001
	}
	dst := make([]byte, 2*len(src))
	b.SetBytes(4 * int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		EncodeF16(dst, src)
	}
}

func BenchmarkDecodeF16(b *testing.B) {
	src := make([]byte, 2<<20)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([]float32, len(src)/2)
	b.SetBytes(4 * int64(len(dst)))
	b.ReportAllocs()
	for b.Loop() {
		DecodeF16(dst, src)
	}
}

// TestBulkMatchesScalar checks that EncodeF16 and DecodeF16, which inline
// the common paths by hand, agree bit for bit with F32ToF16 and F16ToF32:
// on every half, and on random floats plus every rounding midpoint.
func TestBulkMatchesScalar(t *testing.T) {
	halves := make([]byte, 2<<16)
	for i := range 1 << 16 {
		halves[2*i], halves[2*i+1] = byte(i), byte(i>>8)
	}
	got := make([]float32, 1<<16)
	DecodeF16(got, halves)
	for i, f := range got {
		if want := F16ToF32(uint16(i)); math.Float32bits(f) != math.Float32bits(want) {
			t.Fatalf("DecodeF16 of %04x: %08x, F16ToF32: %08x", i, math.Float32bits(f), math.Float32bits(want))
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]float32, 0, 1<<20)
	for range 1 << 19 {
		src = append(src, math.Float32frombits(rng.Uint32()))
	}
	for i := 0; i < 0x7c00; i++ {
		mid := (F16ToF32(uint16(i)) + F16ToF32(uint16(i+1))) / 2
		src = append(src, mid, -mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9))
	}
	src = append(src, 0, float32(math.Copysign(0, -1)), 0x1p-25, -0x1p-25, 0x1.000002p-25, 65520, float32(math.Inf(1)))
	enc := make([]byte, 2*len(src))
	EncodeF16(enc, src)
	for i, f := range src {
		if h, want := uint16(enc[2*i])|uint16(enc[2*i+1])<<8, F32ToF16(f); h != want {
			t.Fatalf("EncodeF16 of %08x: %04x, F32ToF16: %04x", math.Float32bits(f), h, want)
		}
	}
}
