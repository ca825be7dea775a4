package simd

// SelectScaled writes dst[i] = v[i] where ref[i] > 0, else s·v[i], as the
// bit select (v & m) | (s·v &^ m) on the comparison's mask, so a NaN ref
// selects s·v: ReLU's forward (ref = v = the input) and backward (ref =
// the input or the output, v = the top diff) with Caffe's negative slope s.
// It panics if ref or v is shorter than dst.
func SelectScaled(dst, ref, v []float32, s float32) {
	if len(ref) < len(dst) || len(v) < len(dst) {
		panic("simd: SelectScaled: ref or v shorter than dst")
	}
	selectScaled(dst, ref, v, s)
}

// selectScaledGo is the portable SelectScaled; the amd64 build uses SSE
// assembly and tests it against this.
func selectScaledGo(dst, ref, v []float32, s float32) {
	ref, v = ref[:len(dst)], v[:len(dst)]
	for i, r := range ref {
		x := v[i]
		m := uint32(0)
		if r > 0 {
			m = ^uint32(0)
		}
		dst[i] = f32frombits(f32bits(x)&m | f32bits(s*x)&^m)
	}
}
