package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// poolSrc is a plane for n outputs of the given window: random values,
// many repeated (ties) and some special (NaN, ±0, ±Inf), sized exactly.
func poolSrc(r *rand.Rand, n, w, rows, kw, stride int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40}
	src := make([]float32, (rows-1)*w+kw+(n-1)*stride)
	for i := range src {
		switch r.IntN(8) {
		case 0:
			src[i] = special[r.IntN(len(special))]
		case 1, 2:
			src[i] = float32(r.IntN(3))
		default:
			src[i] = float32(r.NormFloat64())
		}
	}
	return src
}

func TestPoolRowsMatchScalar(t *testing.T) {
	defer setPoolAVX2(setPoolAVX2(true))
	for _, avx2 := range []bool{true, false} {
		setPoolAVX2(avx2)
		testPoolRows(t)
	}
}

func testPoolRows(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	for range 1000 {
		n := 1 + r.IntN(45)
		stride := 1 + r.IntN(2)
		kw := 1 + r.IntN(5)
		rows := 1 + r.IntN(4)
		w := (n-1)*stride + kw + r.IntN(4)
		i0 := int32(r.IntN(100))
		src := poolSrc(r, n, w, rows, kw, stride)
		got, want := make([]float32, n+1), make([]float32, n+1)
		gm, wm := make([]int32, n+1), make([]int32, n+1)
		MaxPoolRow(got[:n], gm[:n], src, w, rows, kw, stride, i0)
		maxPoolRowGo(want[:n], wm[:n], src, w, rows, kw, stride, i0)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gm[i] != wm[i] {
				t.Fatalf("MaxPoolRow n %d w %d rows %d kw %d stride %d: out %d = %v at %d, want %v at %d",
					n, w, rows, kw, stride, i, got[i], gm[i], want[i], wm[i])
			}
		}
		div := float32(rows*kw + r.IntN(3))
		AvePoolRow(got[:n], src, w, rows, kw, stride, div)
		avePoolRowGo(want[:n], src, w, rows, kw, stride, div)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("AvePoolRow n %d w %d rows %d kw %d stride %d: out %d = %v, want %v",
					n, w, rows, kw, stride, i, got[i], want[i])
			}
		}
	}
}

// The scalar twin against the definition: the first maximum in row-major
// order, NaN never kept over a number.
func TestMaxPoolRowGoIsTheScan(t *testing.T) {
	src := []float32{float32(math.NaN()), 1, 3, 3, float32(math.NaN()), 2, 3, 0}
	dst, mask := make([]float32, 2), make([]int32, 2)
	maxPoolRowGo(dst, mask, src, 4, 2, 2, 2, 10)
	// Output 0: NaN 1 / NaN 2 → 2 at index 5; output 1: 3 3 / 3 0 → the first 3, index 2.
	if dst[0] != 2 || mask[0] != 15 || dst[1] != 3 || mask[1] != 12 {
		t.Fatalf("got %v %v", dst, mask)
	}
}

func TestPoolRowPanics(t *testing.T) {
	for _, f := range []func(){
		func() { MaxPoolRow(make([]float32, 4), make([]int32, 4), make([]float32, 8), 8, 1, 2, 3, 0) },
		func() { MaxPoolRow(make([]float32, 4), make([]int32, 3), make([]float32, 8), 8, 1, 2, 1, 0) },
		func() { AvePoolRow(make([]float32, 4), make([]float32, 8), 8, 1, 3, 2, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

func TestAddStrided2MatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 2))
	special := []float32{0, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40}
	for range 300 {
		n := r.IntN(30)
		dst := make([]float32, max(0, 2*n-1)+r.IntN(3))
		v := make([]float32, n)
		for i := range dst {
			if r.IntN(6) == 0 {
				dst[i] = special[r.IntN(len(special))]
			} else {
				dst[i] = float32(r.NormFloat64())
			}
		}
		for i := range v {
			if r.IntN(6) == 0 {
				v[i] = special[r.IntN(len(special))]
			} else {
				v[i] = float32(r.NormFloat64())
			}
		}
		got, want := append([]float32(nil), dst...), append([]float32(nil), dst...)
		AddStrided2(got, v)
		addStrided2Go(want, v)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d len(dst) %d: dst[%d] = %v, want %v", n, len(dst), i, got[i], want[i])
			}
		}
	}
}
