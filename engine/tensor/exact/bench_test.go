package exact

import (
	"math/rand/v2"
	"testing"
)

const benchN = 431080 // LeNet's parameters

func BenchmarkAdd(b *testing.B) {
	g := gradients(rand.New(rand.NewPCG(1, 2)), benchN)
	acc := make([]int64, benchN)
	s := Scale(g)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		Add(acc, g, s)
	}
}

func BenchmarkEncode(b *testing.B) {
	acc := make([]int64, benchN)
	for i := range acc {
		acc[i] = int64(i) << 30
	}
	dst := make([]float32, Limbs*benchN)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		Encode(dst, acc)
	}
}

func BenchmarkDecode(b *testing.B) {
	acc := make([]int64, benchN)
	for i := range acc {
		acc[i] = int64(i) << 30
	}
	src := make([]float32, Limbs*benchN)
	Encode(src, acc)
	dst := make([]float32, benchN)
	b.SetBytes(4 * benchN)
	for b.Loop() {
		Decode(dst, src, 1<<40, 8)
	}
}
