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

//go:noescape
func mulAddYMM(n int, x, y float32, acc *[12 * 8]float32)

//go:noescape
func mulAddXMM(n int, x, y float32, acc *[12 * 4]float32)

var (
	zmm = Kernel{Name: "AVX-512 ZMM", Op: "FMA", Lanes: 16, Accumulators: 24, run: func(n int, x, y float32, acc []float32) {
		fmaZMM(n, x, y, (*[24 * 16]float32)(unsafe.Pointer(&acc[0])))
	}}
	ymm = Kernel{Name: "AVX2 YMM", Op: "FMA", Lanes: 8, Accumulators: 12, run: func(n int, x, y float32, acc []float32) {
		fmaYMM(n, x, y, (*[12 * 8]float32)(unsafe.Pointer(&acc[0])))
	}}
	avxYMM = Kernel{Name: "AVX YMM mul+add", Op: "VMULPS+VADDPS", Lanes: 8, Accumulators: 12, run: func(n int, x, y float32, acc []float32) {
		mulAddYMM(n, x, y, (*[12 * 8]float32)(unsafe.Pointer(&acc[0])))
	}}
	sseXMM = Kernel{Name: "SSE XMM mul+add", Op: "MULPS+ADDPS", Lanes: 4, Accumulators: 12, run: func(n int, x, y float32, acc []float32) {
		mulAddXMM(n, x, y, (*[12 * 4]float32)(unsafe.Pointer(&acc[0])))
	}}
)

// kernelFor is the kernel of a level: ZMM FMA for the AVX-512 levels, YMM
// FMA for AVX2 (and AVX2_VNNI), YMM multiply and add for AVX, XMM
// multiply and add for SSE4.1.
func kernelFor(l ISA) (Kernel, bool) {
	switch {
	case l >= AVX512Core:
		return zmm, true
	case l >= AVX2:
		return ymm, true
	case l == AVX:
		return avxYMM, true
	case l == SSE41:
		return sseXMM, true
	}
	return Kernel{}, false
}

// Kernels lists the peak kernels this CPU can run, widest first.
func Kernels() []Kernel {
	var ks []Kernel
	for _, l := range []ISA{AVX512Core, AVX2, AVX, SSE41} {
		if Supports(l) {
			k, _ := kernelFor(l)
			ks = append(ks, k)
		}
	}
	return ks
}

// KernelAt is the kernel that measures the peak at level l on this CPU:
// that of the highest level at most l the CPU supports (EffectiveISA).
// Below SSE4.1 it returns ErrNoKernel with the reason.
func KernelAt(l ISA) (Kernel, error) {
	if k, ok := kernelFor(EffectiveISA(l)); ok {
		return k, nil
	}
	return Kernel{}, fmt.Errorf("%w at %s: %v", ErrNoKernel, l, belowFloor(features()))
}
