package simd

// The pooling kernels: one output row of a MAX or AVE pool at a time, over
// the outputs whose windows lie wholly inside the plane's columns (the
// caller takes the clipped ones at the edges). Window element (r, k) of
// output o is src[r·w + k + o·stride], r < rows, k < kw: src starts at the
// first output's window, row-major, in a plane of width w.

// MaxPoolRow writes to dst[o] the first maximum, in row-major order, of
// output o's window, and to mask[o] its index i0 + r·w + k + o·stride
// (i0 is src[0]'s index in the plane). An element replaces the current
// maximum when it is greater, or when the current one is NaN and it is
// not: Caffe's sequential scan (a window of NaN alone names its first
// element). The value is the input at the argmax, bit for bit. stride is
// 1 or 2. It panics if the arguments do not fit.
func MaxPoolRow(dst []float32, mask []int32, src []float32, w, rows, kw, stride int, i0 int32) {
	checkPoolRow("MaxPoolRow", len(dst), len(src), w, rows, kw, stride)
	if len(mask) < len(dst) {
		panic("simd: MaxPoolRow: mask shorter than dst")
	}
	maxPoolRow(dst, mask, src, w, rows, kw, stride, i0)
}

// AvePoolRow writes to dst[o] the sum of output o's window, added in
// row-major order onto +0 in float32, divided by div: Caffe's average
// pooling with the divisor of the window within the padded plane. stride
// is 1 or 2. It panics if the arguments do not fit.
func AvePoolRow(dst []float32, src []float32, w, rows, kw, stride int, div float32) {
	checkPoolRow("AvePoolRow", len(dst), len(src), w, rows, kw, stride)
	avePoolRow(dst, src, w, rows, kw, stride, div)
}

func checkPoolRow(name string, n, nsrc, w, rows, kw, stride int) {
	switch {
	case stride != 1 && stride != 2:
		panic("simd: " + name + ": stride must be 1 or 2")
	case rows < 1 || kw < 1 || w < 1:
		panic("simd: " + name + ": empty window or plane")
	case n > 0 && (rows-1)*w+kw+(n-1)*stride > nsrc:
		panic("simd: " + name + ": src shorter than the windows")
	}
}

// wins says whether v replaces cur as a window's maximum.
func wins(v, cur float32) bool { return v > cur || (cur != cur && v == v) }

// maxPoolRowGo is the portable MaxPoolRow; the amd64 build uses assembly
// for rows of four outputs or more and tests it against this.
func maxPoolRowGo(dst []float32, mask []int32, src []float32, w, rows, kw, stride int, i0 int32) {
	mask = mask[:len(dst)]
	for o := range dst {
		base := o * stride
		best, arg := src[base], base
		for r := range rows {
			for k, v := range src[r*w+base : r*w+base+kw] {
				if wins(v, best) {
					best, arg = v, r*w+base+k
				}
			}
		}
		dst[o], mask[o] = best, i0+int32(arg)
	}
}

// avePoolRowGo is the portable AvePoolRow.
func avePoolRowGo(dst []float32, src []float32, w, rows, kw, stride int, div float32) {
	for o := range dst {
		base := o * stride
		var s float32
		for r := range rows {
			for _, v := range src[r*w+base : r*w+base+kw] {
				s += v
			}
		}
		dst[o] = s / div
	}
}

// AddStrided2 adds v into every other element of dst: dst[2·o] += v[o]
// for o < len(v), bitwise the scalar loop's sums. The elements between
// are read and written back unchanged (+0 is added to them, which keeps
// every value's bits but -0's; dst must hold no -0, which sums that start
// from +0, as pooling's backward, never make), so no other goroutine may
// write dst meanwhile. It panics if dst is shorter than 2·len(v) − 1.
func AddStrided2(dst, v []float32) {
	if len(v) > 0 && len(dst) < 2*len(v)-1 {
		panic("simd: AddStrided2: dst too short")
	}
	addStrided2(dst, v)
}

// addStrided2Go is the portable AddStrided2.
func addStrided2Go(dst, v []float32) {
	for o, x := range v {
		dst[2*o] += x
	}
}
