package layers

import (
	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// dsgd's own Winograd convolution, F(m×m, 3×3) with m = 2 or 4, for 3×3
// stride-1 convolutions (pad 0 or 1, no dilation, one group), used where
// oneDNN has no Winograd kernel (below AVX-512: conv_wino.go's rule).
//
// The output is cut into m×m tiles; tile t of image n reads the
// (m+2)×(m+2) input patch at (ty·m − pad, tx·m − pad), zeros outside the
// image. With α = m+2, per chunk of tiles:
//
//	V[ξ][c][t] = (Bᵀ d_{c,t} B)[ξ]      input transform, per channel and tile
//	M[ξ]       = U[ξ] · V[ξ]            α² SGEMMs [K×C]·[C×tiles] (tensor.Gemm)
//	y_{k,t}    = Aᵀ M[·][k][t] A + b_k  inverse transform, per output channel and tile
//
// where U[ξ][k][c] = (G g_{k,c} Gᵀ)[ξ] is the transformed kernel. The
// transforms are engine/tensor/simd's WinoTransform (AVX2 assembly where
// the CPU has it, Go loops giving the same bits elsewhere). The backward data pass is the same with the
// kernel rotated by 180° and its channels swapped, on dy padded by 2−pad.
//
// Chunks of tiles have a size fixed by the geometry (winoChunk), not by
// the thread count, and each output element is computed by one chunk in
// one fixed order, so results are the same bits at any thread count.

// winoShape is one Winograd convolution: c input channels of h×w, k output
// channels of oh×ow, padding pad, output tiles m×m.
type winoShape struct {
	m, c, h, w, k, oh, ow, pad int
	th, tw                     int // tiles down and across an image
	chunk                      int // tiles per chunk (the last may have fewer)
}

// alpha is the side of a transformed tile, m+2.
func (s *winoShape) alpha() int { return s.m + 2 }

// winoChunkFloats bounds a chunk's transformed input and output (α²·(C+K)
// floats per tile), so that they stay in the core's cache between the
// transforms and the GEMMs; winoMinChunk keeps the GEMMs wide enough.
var winoChunkFloats = 1 << 18

const (
	winoMinChunk = 16
	winoMaxChunk = 256
)

func newWinoShape(m, c, h, w, k, pad int) winoShape {
	s := winoShape{m: m, c: c, h: h, w: w, k: k, pad: pad, oh: h + 2*pad - 2, ow: w + 2*pad - 2}
	s.th, s.tw = (s.oh+m-1)/m, (s.ow+m-1)/m
	a := s.alpha()
	// A multiple of 8, the AVX2 transforms' lanes.
	s.chunk = max(winoMinChunk, min(winoMaxChunk, winoChunkFloats/(a*a*(c+k)))) &^ 7
	return s
}

// chunks is the number of tile chunks for n images.
func (s *winoShape) chunks(n int) int {
	t := n * s.th * s.tw
	return (t + s.chunk - 1) / s.chunk
}

// winoBuf is a worker's scratch: a chunk's transformed input and products,
// one channel's gathered patches (or one output channel's tiles), and the
// chunk's tile origins.
type winoBuf struct {
	v, p, d []float32
	ker     []float32 // winoKernel's scratch
	line    []float32 // winoInput's zero-padded input row
	img, y0 []int32   // per tile of the chunk: image, top row
	x0      []int32   // left column
}

func (b *winoBuf) fit(s *winoShape) {
	a2 := s.alpha() * s.alpha()
	b.v = fitBuf(b.v, a2*s.c*s.chunk)
	b.p = fitBuf(b.p, a2*s.k*s.chunk)
	b.d = fitBuf(b.d, a2*s.chunk)
	b.line = fitBuf(b.line, s.m*s.chunk+2)
	if len(b.img) < s.chunk {
		b.img, b.y0, b.x0 = make([]int32, s.chunk), make([]int32, s.chunk), make([]int32, s.chunk)
	}
}

// winoRun computes chunks [lo, hi) of the convolution of in (n images of
// s.c×s.h×s.w) with transformed kernel u (α²×K×C) plus bias (nil: none)
// into out (n images of s.k×s.oh×s.ow), with scratch buf.
func winoRun(s *winoShape, n int, in, u, bias, out []float32, buf *winoBuf, lo, hi int) {
	buf.fit(s)
	total := n * s.th * s.tw
	a := s.alpha()
	a2 := a * a
	tpi := s.th * s.tw
	for ch := lo; ch < hi; ch++ {
		t0 := ch * s.chunk
		nt := min(s.chunk, total-t0)
		for j := 0; j < nt; j++ {
			img, r := (t0+j)/tpi, (t0+j)%tpi
			buf.img[j], buf.y0[j], buf.x0[j] = int32(img), int32(r/s.tw*s.m), int32(r%s.tw*s.m)
		}
		v, p := buf.v[:a2*s.c*nt], buf.p[:a2*s.k*nt]
		winoInput(s, in, buf, nt, v)
		for x := 0; x < a2; x++ {
			tensor.Gemm(false, false, s.k, nt, s.c, 1, u[x*s.k*s.c:], s.c, v[x*s.c*nt:], nt, 0, p[x*s.k*nt:], nt)
		}
		winoOutput(s, p, bias, buf, nt, out)
	}
}

// winoInput gathers, channel by channel, the input patches of the chunk's
// nt tiles (buf's origins) and transforms them into v (α²×C×nt). Tiles
// come in runs along a tile row: each of a run's α input rows is copied,
// zero-padded, into a line, from which element (i, q) of every tile of the
// run is a stride-m read.
func winoInput(s *winoShape, in []float32, buf *winoBuf, nt int, v []float32) {
	a, m := s.alpha(), s.m
	plane := s.h * s.w
	d := buf.d[:a*a*nt]
	kind := simd.WinoIn4
	if m == 2 {
		kind = simd.WinoIn2
	}
	for c := 0; c < s.c; c++ {
		for j := 0; j < nt; {
			img, y0, x0 := int(buf.img[j]), int(buf.y0[j])-s.pad, int(buf.x0[j])
			n := min(nt-j, s.tw-x0/m) // tiles in this run
			x0 -= s.pad
			width := m*(n-1) + a
			src := in[(img*s.c+c)*plane : (img*s.c+c+1)*plane]
			for i := 0; i < a; i++ {
				line := buf.line[:width]
				y := y0 + i
				if y < 0 || y >= s.h {
					clear(line)
				} else {
					row := src[y*s.w : (y+1)*s.w]
					lo, hi := max(0, x0), min(s.w, x0+width)
					clear(line[:lo-x0])
					copy(line[lo-x0:], row[lo:hi])
					clear(line[hi-x0:])
				}
				for q := 0; q < a; q++ {
					dst := d[(i*a+q)*nt+j : (i*a+q)*nt+j+n]
					ln := line[q : q+m*(n-1)+1]
					for jj := range dst {
						dst[jj] = ln[m*jj]
					}
				}
			}
			j += n
		}
		simd.WinoTransform(kind, d, nt, v[c*nt:], s.c*nt, nt)
	}
}

// winoOutput inverse-transforms, output channel by channel, the products p
// (α²×K×nt) of the chunk's tiles, adds bias and writes the tiles' pixels
// that lie inside the output, a run of tiles along a tile row at a time.
func winoOutput(s *winoShape, p, bias []float32, buf *winoBuf, nt int, out []float32) {
	plane := s.oh * s.ow
	m := s.m
	y := buf.d[:m*m*nt]
	kind := simd.WinoOut4
	if m == 2 {
		kind = simd.WinoOut2
	}
	for k := 0; k < s.k; k++ {
		var b float32
		if bias != nil {
			b = bias[k]
		}
		simd.WinoTransform(kind, p[k*nt:], s.k*nt, y, nt, nt)
		for j := 0; j < nt; {
			img, y0, x0 := int(buf.img[j]), int(buf.y0[j]), int(buf.x0[j])
			n := min(nt-j, s.tw-x0/m)
			dst := out[(img*s.k+k)*plane : (img*s.k+k+1)*plane]
			rows := min(m, s.oh-y0)
			for i := 0; i < rows; i++ {
				row := dst[(y0+i)*s.ow : (y0+i+1)*s.ow]
				for q := 0; q < m; q++ {
					// Tiles jj of the run whose column q lies inside.
					cnt := min(n, (s.ow-x0-q+m-1)/m)
					if cnt <= 0 {
						continue
					}
					src := y[(i*m+q)*nt+j : (i*m+q)*nt+j+cnt]
					o := row[x0+q : x0+q+m*(cnt-1)+1]
					for jj, x := range src {
						o[m*jj] = x + b
					}
				}
			}
			j += n
		}
	}
}

// winoKernel writes the transformed kernel for rows [lo, hi) of u
// (α²×rows×cols): u[ξ][r][q] = (G g Gᵀ)[ξ] with g the 3×3 kernel of
// weight (K×C×3×3) at k = r, c = q, or, with back, the kernel at k = q,
// c = r rotated by 180° (the backward data pass's). scratch holds
// (9+α²)·cols floats (fitted here).
func winoKernel(m int, weight []float32, k, c int, back bool, u []float32, lo, hi int, scratch *[]float32) {
	a := m + 2
	kind := simd.WinoKer4
	if m == 2 {
		kind = simd.WinoKer2
	}
	rows, cols := k, c
	if back {
		rows, cols = c, k
	}
	*scratch = fitBuf(*scratch, (9+a*a)*cols)
	g, row := (*scratch)[:9*cols], (*scratch)[9*cols:]
	for r := lo; r < hi; r++ {
		// Gather row r's kernels with their 9 taps a row apart, then
		// transform them all, and copy the α² rows of cols out: storing
		// straight to u's α² rows, a power of two apart, would thrash
		// the cache's sets.
		for q := 0; q < cols; q++ {
			if back {
				src := weight[(q*c+r)*9 : (q*c+r)*9+9]
				for e := range 9 {
					g[e*cols+q] = src[8-e] // rotated by 180°
				}
			} else {
				src := weight[(r*c+q)*9 : (r*c+q)*9+9]
				for e := range 9 {
					g[e*cols+q] = src[e]
				}
			}
		}
		simd.WinoTransform(kind, g, cols, row, cols, cols)
		for x := 0; x < a*a; x++ {
			copy(u[(x*rows+r)*cols:(x*rows+r+1)*cols], row[x*cols:])
		}
	}
}
