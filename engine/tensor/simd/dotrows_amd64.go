//go:build amd64 && !purego

package simd

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// dotRows4x3AVX2 is DotRows4x3 in AVX2 with FMA (dotrows_amd64.s): dy0–dy3
// are the four gradient rows, x0–x2 the taps' windows; vecs = ow/8, and
// skip the bytes from the end of one x row's window to the next's
// ((wp−ow)·4). The caller guarantees rows, vecs > 0 and the bounds.
//
//go:noescape
func dotRows4x3AVX2(acc *[96]float32, dy0, dy1, dy2, dy3, x0, x1, x2 *float32, rows, vecs, skip int)

// DotRowsFused says DotRows4x3 runs fused multiply-adds in AVX2 assembly
// (the CPU has AVX2 and FMA); where it does not, its Go loop runs, and
// callers that want speed choose another kernel.
var DotRowsFused = hasAVX2 && cpu.X86.HasFMA

func dotRows4x3(acc *[96]float32, dy *[4][]float32, x []float32, off *[3]int, rows, ow, wp int) {
	if !DotRowsFused {
		dotRows4x3Go(acc, dy, x, off, rows, ow, wp)
		return
	}
	xs := unsafe.SliceData(x)
	dotRows4x3AVX2(acc, unsafe.SliceData(dy[0]), unsafe.SliceData(dy[1]), unsafe.SliceData(dy[2]), unsafe.SliceData(dy[3]),
		(*float32)(unsafe.Add(unsafe.Pointer(xs), off[0]*4)), (*float32)(unsafe.Add(unsafe.Pointer(xs), off[1]*4)),
		(*float32)(unsafe.Add(unsafe.Pointer(xs), off[2]*4)), rows, ow/8, (wp-ow)*4)
}

// convTaps4x3AVX2 is ConvTaps4x3 in AVX2 with FMA (dotrows_amd64.s): out
// is the block's first output, pstride the bytes between channels' planes;
// w the first channel's taps, wstride the bytes between channels' rows;
// x0–x2 the vectors' first windows; bias nil or four floats. The caller
// guarantees taps > 0 and the bounds.
//
//go:noescape
func convTaps4x3AVX2(out *float32, pstride int, w *float32, wstride int, x0, x1, x2 *float32, off *int, taps int, bias *float32)

func convTaps4x3(out []float32, plane int, w, x []float32, xo *[3]int, off []int, bias []float32) {
	if !DotRowsFused {
		convTaps4x3Go(out, plane, w, x, xo, off, bias)
		return
	}
	var b *float32
	if bias != nil {
		b = unsafe.SliceData(bias)
	}
	xs := unsafe.Pointer(unsafe.SliceData(x))
	convTaps4x3AVX2(unsafe.SliceData(out), plane*4, unsafe.SliceData(w), len(off)*4,
		(*float32)(unsafe.Add(xs, xo[0]*4)), (*float32)(unsafe.Add(xs, xo[1]*4)), (*float32)(unsafe.Add(xs, xo[2]*4)),
		unsafe.SliceData(off), len(off), b)
}
