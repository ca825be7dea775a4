package simd

// SGD applies Caffe's momentum SGD update to every element of w, with v
// its momentum history and g its raw gradient:
//
//	gi := g[i]·scale, plus decay·w[i] when l2 is set
//	v[i] = mom·v[i] + lr·gi
//	w[i] = w[i] − v[i]
//
// each product and sum rounded to float32 on its own (no fused
// multiply-add), bitwise what the scalar loop computes; on amd64 it runs
// four lanes at a time with SSE. It panics if g or v is shorter than w.
func SGD(w, g, v []float32, scale, decay, lr, mom float32, l2 bool) {
	if len(g) < len(w) || len(v) < len(w) {
		panic("simd: SGD: g or v shorter than w")
	}
	sgd(w, g, v, scale, decay, lr, mom, l2)
}

// sgdGo is the portable SGD and the reference the assembly is tested
// against.
func sgdGo(w, g, v []float32, scale, decay, lr, mom float32, l2 bool) {
	g, v = g[:len(w)], v[:len(w)]
	for i, wi := range w {
		gi := float32(g[i] * scale)
		if l2 {
			gi += float32(decay * wi)
		}
		vi := float32(mom*v[i]) + float32(lr*gi)
		v[i] = vi
		w[i] = wi - vi
	}
}
