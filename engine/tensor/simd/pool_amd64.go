//go:build amd64 && !purego

package simd

// The pooling kernels in SSE2 assembly (pool_amd64.s), four outputs at a
// time; they need n ≥ 4 (the last group overlaps the one before it).
// Arguments are checked by the exported wrappers.

//go:noescape
func maxPoolRowSSE(dst *float32, mask *int32, src *float32, n, w, rows, kw, stride int, i0 int32, lanes *[4]int32)

//go:noescape
func avePoolRowSSE(dst *float32, src *float32, n, w, rows, kw, stride int, div float32)

// The AVX2 kernels (pool_avx2_amd64.s), two groups of eight outputs at a
// time; they need n ≥ 8.

//go:noescape
func maxPoolRowAVX2(dst *float32, mask *int32, src *float32, n, w, rows, kw, stride int, i0 int32, lanes *[8]int32)

//go:noescape
func avePoolRowAVX2(dst *float32, src *float32, n, w, rows, kw, stride int, div float32)

// poolLanes and poolLanes8 are the column offsets of four and eight
// outputs, by stride.
var (
	poolLanes  = [3][4]int32{{}, {0, 1, 2, 3}, {0, 2, 4, 6}}
	poolLanes8 = [3][8]int32{{}, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 2, 4, 6, 8, 10, 12, 14}}
)

// poolAVX2 says the AVX2 kernels run (the CPU has AVX2); tests turn it off
// to check the SSE2 ones.
var poolAVX2 = hasAVX2

func maxPoolRow(dst []float32, mask []int32, src []float32, w, rows, kw, stride int, i0 int32) {
	if poolAVX2 && len(dst) >= 8 {
		maxPoolRowAVX2(&dst[0], &mask[0], &src[0], len(dst), w, rows, kw, stride, i0, &poolLanes8[stride])
		return
	}
	if len(dst) < 4 {
		maxPoolRowGo(dst, mask, src, w, rows, kw, stride, i0)
		return
	}
	maxPoolRowSSE(&dst[0], &mask[0], &src[0], len(dst), w, rows, kw, stride, i0, &poolLanes[stride])
}

func avePoolRow(dst []float32, src []float32, w, rows, kw, stride int, div float32) {
	if poolAVX2 && len(dst) >= 8 {
		avePoolRowAVX2(&dst[0], &src[0], len(dst), w, rows, kw, stride, div)
		return
	}
	if len(dst) < 4 {
		avePoolRowGo(dst, src, w, rows, kw, stride, div)
		return
	}
	avePoolRowSSE(&dst[0], &src[0], len(dst), w, rows, kw, stride, div)
}

// setPoolAVX2 turns the AVX2 kernels on (where the CPU has AVX2) or off,
// returning the previous setting; for tests.
func setPoolAVX2(on bool) bool {
	old := poolAVX2
	poolAVX2 = on && hasAVX2
	return old
}

// PoolImpl names the implementation of MaxPoolRow and AvePoolRow on this
// CPU in this build.
func PoolImpl() string {
	if poolAVX2 {
		return "AVX2 assembly"
	}
	return "SSE2 assembly"
}

//go:noescape
func addStrided2SSE(dst, v *float32, groups int)

func addStrided2(dst, v []float32) {
	// Four of v per group, eight of dst: the groups whose eight fit.
	g := min(len(v), len(dst)/2) / 4
	if g > 0 {
		addStrided2SSE(&dst[0], &v[0], g)
	}
	addStrided2Go(dst[8*g:], v[4*g:])
}
