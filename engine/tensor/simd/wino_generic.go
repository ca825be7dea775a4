//go:build !amd64 || purego

package simd

func winoTransform(k WinoKind, src []float32, sstride int, dst []float32, dstride int, n int) {
	winoXformGo(k, src, sstride, dst, dstride, 0, n)
}

func setWinoAVX2(bool) bool { return false }

func winoGather(k WinoKind, src []float32, off []int32, rowStride int, dst []float32, dstride int) {
	winoGatherGo(k, src, off, rowStride, dst, dstride, 0, len(off))
}
