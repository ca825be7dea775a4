package simd

// The normalisation kernels: the per-channel reductions and element-wise
// passes of BatchNorm and Scale over one contiguous plane of a channel.
//
// Each reduction sums in 16 float32 lanes (element i into lane i mod 16),
// folds the lanes in a fixed tree, (l_k + l_4+k) + (l_8+k + l_12+k) for k <
// 4, then (a_0 + a_2) + (a_1 + a_3), and adds the elements past the last
// full 16 one by one. The element-wise kernels round each product and sum
// to float32 on its own (no fused multiply-add). The SSE assembly does
// exactly these operations in this order, so both builds give the same
// bits, and a reduction's result does not depend on how a caller splits
// channels across threads.

// Sum returns Σ x[i].
func Sum(x []float32) float32 { return sum(x) }

// SumSqDev returns Σ (x[i] − mu)².
func SumSqDev(x []float32, mu float32) float32 { return sumSqDev(x, mu) }

// SumDot returns Σ x[i] and Σ x[i]·y[i]. It panics if y is shorter than x.
func SumDot(x, y []float32) (sx, sxy float32) {
	if len(y) < len(x) {
		panic("simd: SumDot: y shorter than x")
	}
	return sumDot(x, y)
}

// Normalize writes dst[i] = (x[i] − mu)·inv and, when dst2 is not nil,
// the same value to dst2[i]. dst may be x. It panics if x or a non-nil
// dst2 is shorter than dst.
func Normalize(dst, dst2, x []float32, mu, inv float32) {
	if len(x) < len(dst) || (dst2 != nil && len(dst2) < len(dst)) {
		panic("simd: Normalize: x or dst2 shorter than dst")
	}
	if dst2 == nil {
		normalize(dst, x, mu, inv)
		return
	}
	normalize2(dst, dst2, x, mu, inv)
}

// Affine writes dst[i] = x[i]·a + b. dst may be x. It panics if x is
// shorter than dst.
func Affine(dst, x []float32, a, b float32) {
	if len(x) < len(dst) {
		panic("simd: Affine: x shorter than dst")
	}
	affine(dst, x, a, b)
}

// NormBackward writes dx[i] = ((dy[i] − a) − b·y[i])·inv: BatchNorm's
// input gradient from the output gradient dy and the normalised output y,
// with a and b the channel's means of dy and dy·y and inv its 1/std. dx
// may be dy. It panics if dy or y is shorter than dx.
func NormBackward(dx, dy, y []float32, a, b, inv float32) {
	if len(dy) < len(dx) || len(y) < len(dx) {
		panic("simd: NormBackward: dy or y shorter than dx")
	}
	normBackward(dx, dy, y, a, b, inv)
}

// fold16 folds 16 lanes in the fixed tree the assembly uses.
func fold16(l *[16]float32) float32 {
	var a [4]float32
	for k := range 4 {
		a[k] = (l[k] + l[4+k]) + (l[8+k] + l[12+k])
	}
	return (a[0] + a[2]) + (a[1] + a[3])
}

// sumGo is the portable Sum and the reference the assembly is tested
// against; the other *Go functions likewise.
func sumGo(x []float32) float32 {
	var l [16]float32
	n := len(x) &^ 15
	for i := 0; i < n; i += 16 {
		for k := range 16 {
			l[k] += x[i+k]
		}
	}
	s := fold16(&l)
	for _, v := range x[n:] {
		s += v
	}
	return s
}

func sumSqDevGo(x []float32, mu float32) float32 {
	var l [16]float32
	n := len(x) &^ 15
	for i := 0; i < n; i += 16 {
		for k := range 16 {
			d := x[i+k] - mu
			l[k] += float32(d * d)
		}
	}
	s := fold16(&l)
	for _, v := range x[n:] {
		d := v - mu
		s += float32(d * d)
	}
	return s
}

func sumDotGo(x, y []float32) (float32, float32) {
	var l, m [16]float32
	y = y[:len(x)]
	n := len(x) &^ 15
	for i := 0; i < n; i += 16 {
		for k := range 16 {
			l[k] += x[i+k]
			m[k] += float32(x[i+k] * y[i+k])
		}
	}
	s, p := fold16(&l), fold16(&m)
	for i := n; i < len(x); i++ {
		s += x[i]
		p += float32(x[i] * y[i])
	}
	return s, p
}

func normalizeGo(dst, x []float32, mu, inv float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = float32(v-mu) * inv
	}
}

func normalize2Go(dst, dst2, x []float32, mu, inv float32) {
	x, dst2 = x[:len(dst)], dst2[:len(dst)]
	for i, v := range x {
		r := float32(v-mu) * inv
		dst[i], dst2[i] = r, r
	}
}

func affineGo(dst, x []float32, a, b float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = float32(v*a) + b
	}
}

func normBackwardGo(dx, dy, y []float32, a, b, inv float32) {
	dy, y = dy[:len(dx)], y[:len(dx)]
	for i, v := range dy {
		dx[i] = float32(float32(v-a)-float32(b*y[i])) * inv
	}
}
