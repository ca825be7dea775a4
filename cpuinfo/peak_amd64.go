//go:build amd64 && !purego

package cpuinfo

import (
	"fmt"
	"unsafe"
)

//go:noescape
func fmaZMM(n int, x, y float32, acc *[24 * 16]float32)

//go:noescape
func fmaYMM(n int, x, y float32, acc *[12 * 8]float32)

var (
	zmm = Kernel{Name: "AVX-512 ZMM", Lanes: 16, Accumulators: 24, run: func(n int, x, y float32, acc []float32) {
		fmaZMM(n, x, y, (*[24 * 16]float32)(unsafe.Pointer(&acc[0])))
	}}
	ymm = Kernel{Name: "AVX2 YMM", Lanes: 8, Accumulators: 12, run: func(n int, x, y float32, acc []float32) {
		fmaYMM(n, x, y, (*[12 * 8]float32)(unsafe.Pointer(&acc[0])))
	}}
)

// Kernels lists the peak kernels this CPU can run, widest first.
func Kernels() []Kernel {
	f := Detect()
	var ks []Kernel
	if f.AVX512F {
		ks = append(ks, zmm)
	}
	if f.AVX2 && f.FMA {
		ks = append(ks, ymm)
	}
	return ks
}

// BestKernel is the widest kernel the CPU can run: AVX-512 ZMM where it
// has avx512f, else AVX2 YMM; ErrNoKernel (with the reason) where it has
// neither.
func BestKernel() (Kernel, error) {
	if ks := Kernels(); len(ks) > 0 {
		return ks[0], nil
	}
	return Kernel{}, fmt.Errorf("%w: this CPU has neither avx512f nor avx2 with fma (it has: %v)", ErrNoKernel, Detect())
}
