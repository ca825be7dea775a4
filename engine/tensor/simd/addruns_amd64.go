//go:build amd64 && !purego

package simd

import "unsafe"

// addRunsSSE adds rows runs of 4·n4 floats, the runs dstep and sstep
// floats apart, from src into dst (ADDPS: four single-precision adds,
// bitwise the scalar loop's). The caller guarantees rows, n4 > 0 and
// that every run lies inside its slice.
//
//go:noescape
func addRunsSSE(dst, src *float32, rows, n4, dstep, sstep int)

func addRuns(dst, src []float32, rows, n, dstep, sstep int) {
	if n%4 != 0 {
		addRunsGo(dst, src, rows, n, dstep, sstep)
		return
	}
	addRunsSSE(unsafe.SliceData(dst), unsafe.SliceData(src), rows, n/4, dstep, sstep)
}
