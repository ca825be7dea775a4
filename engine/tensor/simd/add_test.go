package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAddTo(t *testing.T) {
	// addTo (assembly on amd64) must equal the scalar float32 sum bit for
	// bit, touch nothing past len(dst), and cope with every tail length
	// and with special values.
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40}
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 4097} {
		for _, off := range []int{0, 1, 3} { // unaligned starts
			dst := make([]float32, off+n+4)
			src := make([]float32, off+n+4)
			for i := range dst {
				dst[i] = float32(rng.NormFloat64())
				src[i] = float32(rng.NormFloat64() * 1e3)
				if rng.IntN(8) == 0 {
					src[i] = special[rng.IntN(len(special))]
				}
			}
			want := append([]float32(nil), dst...)
			for i := off; i < off+n; i++ {
				want[i] += src[i]
			}
			generic := append([]float32(nil), dst...)
			addGo(generic[off:off+n], src[off:off+n])
			AddTo(dst[off:off+n], src[off:off+n+2]) // a longer src is fine
			for i := range want {
				if math.Float32bits(dst[i]) != math.Float32bits(want[i]) || math.Float32bits(generic[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d off=%d: element %d = %v (generic %v), want %v", n, off, i, dst[i], generic[i], want[i])
				}
			}
		}
	}
}

func BenchmarkAddTo(b *testing.B) {
	for _, kib := range []int{256, 32 << 10} {
		n := kib << 10 / 4
		dst, src := make([]float32, n), make([]float32, n)
		b.Run(fmt.Sprintf("KiB=%d", kib), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for range b.N {
				AddTo(dst, src)
			}
		})
		b.Run(fmt.Sprintf("KiB=%d/generic", kib), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for range b.N {
				addGo(dst, src)
			}
		})
	}
}
