package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWinoTransform checks every kind on lane counts around the AVX2
// block of eight: the kernel in use (AVX2 where the CPU has it) gives the
// same bits as the Go loops (any NaN for a NaN), and both agree with M X Mᵀ in float64 to
// float32 rounding. Special values (±0, ±Inf, NaN) are among the inputs.
func TestWinoTransform(t *testing.T) {
	defer setWinoAVX2(setWinoAVX2(true))
	r := rand.New(rand.NewPCG(3, 4))
	for k := range WinoKind(len(winoMats)) {
		rows, a := WinoSize(k)
		for _, n := range []int{1, 7, 8, 9, 16, 23, 64} {
			ss, ds := n+3, n+5
			src := make([]float32, a*a*ss)
			for i := range src {
				src[i] = float32(r.NormFloat64())
			}
			if n >= 9 {
				src[(a+1)*ss+8] = float32(math.Copysign(0, -1))
				src[2*ss+3] = float32(math.Inf(1))
				src[ss+5] = float32(math.NaN())
			}
			got, want := make([]float32, rows*rows*ds), make([]float32, rows*rows*ds)
			setWinoAVX2(true)
			WinoTransform(k, src, ss, got, ds, n)
			setWinoAVX2(false)
			WinoTransform(k, src, ss, want, ds, n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("kind %d, n %d: element %d: %v, Go loops %v", k, n, i, got[i], want[i])
				}
			}
			m := winoMats[k].m
			for l := 0; l < n; l++ {
				for i := 0; i < rows; i++ {
					for x := 0; x < rows; x++ {
						var s, mag float64
						for p := 0; p < a; p++ {
							for q := 0; q < a; q++ {
								v := float64(m[i*a+p]) * float64(src[(p*a+q)*ss+l]) * float64(m[x*a+q])
								s += v
								mag += math.Abs(v)
							}
						}
						g := float64(got[(i*rows+x)*ds+l])
						if math.IsNaN(s) || math.IsInf(s, 0) || math.IsNaN(mag) {
							continue
						}
						if math.Abs(g-s) > 2e-6*mag {
							t.Fatalf("kind %d, n %d, lane %d, [%d][%d] = %v, want %v", k, n, l, i, x, g, s)
						}
					}
				}
			}
		}
	}
}

// TestWinoGather checks WinoGather against gathering the tiles and
// calling WinoTransform, bit for bit, with the AVX2 kernels on (where the
// CPU has them) and off, on lane counts around the block of eight and
// overlapping tiles read from one padded plane.
func TestWinoGather(t *testing.T) {
	defer setWinoAVX2(setWinoAVX2(true))
	r := rand.New(rand.NewPCG(5, 6))
	const stride = 30
	src := make([]float32, stride*20)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	for _, k := range []WinoKind{WinoIn4, WinoIn2, WinoDy4, WinoDy2} {
		rows, a := WinoSize(k)
		for _, n := range []int{1, 8, 13, 24} {
			off := make([]int32, n)
			tiles := make([]float32, a*a*n)
			for l := range off {
				off[l] = int32(r.IntN(20-a)*stride + r.IntN(stride-a))
				for p := 0; p < a*a; p++ {
					tiles[p*n+l] = src[int(off[l])+p/a*stride+p%a]
				}
			}
			want := make([]float32, rows*rows*n)
			WinoTransform(k, tiles, n, want, n, n)
			for _, avx2 := range []bool{true, false} {
				setWinoAVX2(avx2)
				got := make([]float32, rows*rows*n)
				WinoGather(k, src, off, stride, got, n)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("kind %d, n %d, AVX2 %v: element %d: %v, want %v", k, n, avx2, i, got[i], want[i])
					}
				}
			}
			setWinoAVX2(true)
		}
	}
}
