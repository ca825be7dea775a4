//go:build !amd64 || purego

package simd

func addRuns(dst, src []float32, rows, n, dstep, sstep int) {
	addRunsGo(dst, src, rows, n, dstep, sstep)
}
