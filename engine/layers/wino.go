package layers

import (
	"dsgd/engine/tensor"
	"dsgd/engine/tensor/simd"
)

// dsgd's own Winograd convolution, F(m×m, 3×3) with m = 2 or 4, for 3×3
// stride-1 convolutions (pad 0 or 1, no dilation, any groups), used where
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
// kernel rotated by 180° and its channels swapped, on dy padded by 2−pad;
// the weights pass (winoWts*, below) sums the products of the transformed
// input and output gradient over the tiles and transforms back by Gᵀ·G.
//
// Chunks of tiles have a size fixed by the geometry (winoChunk), not by
// the thread count, and each output element is computed by one chunk in
// one fixed order, so results are the same bits at any thread count.

// winoShape is one Winograd convolution: c input channels of h×w, k output
// channels of oh×ow, padding pad, output tiles m×m, in g groups (Caffe's
// group: output channels [i·k/g, (i+1)·k/g) see input channels
// [i·c/g, (i+1)·c/g) only).
type winoShape struct {
	m, c, h, w, k, oh, ow, pad int
	g                          int // groups
	th, tw                     int // tiles down and across an image
	chunk                      int // tiles per chunk (the last may have fewer)
}

// alpha is the side of a transformed tile, m+2.
func (s *winoShape) alpha() int { return s.m + 2 }

// winoChunkFloats bounds a chunk's transformed input and products
// (α²·(C+K) floats per tile); winoMinChunk and winoMaxChunk bound its
// tiles. Measured on ResNet-18's 3×3 layers at batch 16, one thread, under
// the AVX2 cap (BenchmarkWinogradTimes, ms of the 36 GEMMs for budgets of
// 256 Ki / 1 Mi / 4 Mi floats): 64 channels 56×56 20.7 / 19.2 / 14.7,
// 128 at 28×28 17.7 / 14.9 / 13.9, 256 at 14×14 32.8 / 21.9 / 19.3, 512
// at 7×7 38.7 / 32.7 / 21.6: wide GEMMs matter more than the cache. On
// CaffeNet's conv3–conv5 (13×13, batch 32, 384 to 640 channels in and out,
// conv4 and conv5 in two groups: dsgd time, one thread, AVX2 cap,
// alternating processes), 8 Mi floats took the three layers' forward and
// backward from 471–496 ms to 424–429 against 2 Mi, and ResNet-18's
// iteration from 1,374–1,399 to 1,349–1,360 ms; with it the chunk is
// mostly winoMaxChunk or half the batch's tiles.
var winoChunkFloats = 1 << 23

const (
	winoMinChunk = 16
	winoMaxChunk = 256
)

// newWinoShape is the Winograd F(m×m, 3×3) convolution of n images of c
// channels h×w, padded by pad, to k channels, in one group (withGroups
// for more). Its chunk of tiles, a
// multiple of 8 (the AVX2 transforms' lanes), depends on the geometry and
// n only, never on the thread count; it is at most half the batch's tiles
// (rounded up), so that two threads share the work.
func newWinoShape(m, n, c, h, w, k, pad int) winoShape {
	s := winoShape{m: m, c: c, h: h, w: w, k: k, pad: pad, oh: h + 2*pad - 2, ow: w + 2*pad - 2, g: 1}
	s.th, s.tw = (s.oh+m-1)/m, (s.ow+m-1)/m
	a := s.alpha()
	half := (n*s.th*s.tw + 1) / 2
	s.chunk = max(winoMinChunk, min(winoMaxChunk, winoChunkFloats/(a*a*(c+k)), (half+7)&^7)) &^ 7
	return s
}

// withGroups is s in g groups (g divides s.c and s.k). The transforms are
// per channel either way; only the GEMMs (a block per group) and the
// kernel's layout (K×C/g per ξ) change, and the chunk, sized for the
// transformed input and products, stays.
func (s winoShape) withGroups(g int) winoShape {
	s.g = g
	return s
}

// cg and kg are a group's input and output channels.
func (s *winoShape) cg() int { return s.c / s.g }
func (s *winoShape) kg() int { return s.k / s.g }

// chunks is the number of tile chunks for n images.
func (s *winoShape) chunks(n int) int {
	t := n * s.th * s.tw
	return (t + s.chunk - 1) / s.chunk
}

// winoBuf is a worker's scratch: a chunk's transformed input and products,
// one output channel's inverse-transformed tiles, and the chunk's tile
// origins.
type winoBuf struct {
	v, p, d []float32
	ker     []float32 // winoKernel's scratch
	img, y0 []int32   // per tile of the chunk: image, top row
	x0      []int32   // left column
	off     []int32   // the tile's patch in the padded input (channel 0)
	offDy   []int32   // weights pass: the tile's output gradient in the padded dy (channel 0)
}

func (b *winoBuf) fit(s *winoShape) {
	a2 := s.alpha() * s.alpha()
	b.v = fitBuf(b.v, a2*s.c*s.chunk)
	b.p = fitBuf(b.p, a2*s.k*s.chunk)
	b.d = fitBuf(b.d, s.m*s.m*s.chunk)
	if len(b.img) < s.chunk {
		b.img, b.y0, b.x0, b.off = make([]int32, s.chunk), make([]int32, s.chunk), make([]int32, s.chunk), make([]int32, s.chunk)
		b.offDy = make([]int32, s.chunk)
	}
}

// winoRun computes chunks [lo, hi) of the convolution of the n images of
// s.c×s.h×s.w in padded (winoPad) with transformed kernel u (α²×K×C/g) plus bias (nil: none)
// into out (n images of s.k×s.oh×s.ow), with scratch buf.
func winoRun(s *winoShape, n int, padded, u, bias, out []float32, buf *winoBuf, lo, hi int) {
	buf.fit(s)
	a2 := s.alpha() * s.alpha()
	for ch := lo; ch < hi; ch++ {
		nt := winoTiles(s, n, ch, buf)
		winoInput(s, padded, buf, nt, 0, s.c)
		winoGemm(s, u, buf, nt, 0, a2)
		winoOutput(s, bias, buf, buf.d, nt, out, 0, s.k)
	}
}

// winoTiles fills buf's tile origins and offsets in the padded input for
// chunk ch of shape s over n images (buf fitted to s), and returns the
// chunk's tiles.
func winoTiles(s *winoShape, n, ch int, buf *winoBuf) int {
	total := n * s.th * s.tw
	t0 := ch * s.chunk
	nt := min(s.chunk, total-t0)
	tpi := s.th * s.tw
	hp, wp := s.padded()
	for j := 0; j < nt; j++ {
		img, r := (t0+j)/tpi, (t0+j)%tpi
		buf.img[j], buf.y0[j], buf.x0[j] = int32(img), int32(r/s.tw*s.m), int32(r%s.tw*s.m)
		buf.off[j] = int32(img*s.c*hp*wp) + buf.y0[j]*int32(wp) + buf.x0[j]
	}
	return nt
}

// winoInput transforms channels [lo, hi) of the input patches of the
// chunk's nt tiles into buf.v (α²×C×nt), reading them in place from the
// padded input (winoPad) at buf.off.
func winoInput(s *winoShape, padded []float32, buf *winoBuf, nt, lo, hi int) {
	kind := simd.WinoIn4
	if s.m == 2 {
		kind = simd.WinoIn2
	}
	hp, wp := s.padded()
	v := buf.v[:s.alpha()*s.alpha()*s.c*nt]
	for c := lo; c < hi; c++ {
		simd.WinoGather(kind, padded[c*hp*wp:], buf.off[:nt], wp, v[c*nt:], s.c*nt)
	}
}

// winoGemm runs the GEMMs ξ in [lo, hi) of the chunk's nt tiles:
// buf.p[ξ] (K×nt) = u[ξ] (K×C) · buf.v[ξ] (C×nt), block by block in g
// groups: group i's K/g rows of buf.p[ξ] are its K/g×C/g rows of u[ξ]
// times its C/g rows of buf.v[ξ].
func winoGemm(s *winoShape, u []float32, buf *winoBuf, nt, lo, hi int) {
	cg, kg := s.cg(), s.kg()
	for x := lo; x < hi; x++ {
		for i := range s.g {
			tensor.Gemm(false, false, kg, nt, cg, 1, u[(x*s.k+i*kg)*cg:], cg, buf.v[(x*s.c+i*cg)*nt:], nt, 0, buf.p[(x*s.k+i*kg)*nt:], nt)
		}
	}
}

// padded is the size of an input plane padded for the tiles: pad rows
// and columns before, enough zeros after for the last tiles' patches.
func (s *winoShape) padded() (hp, wp int) { return s.th*s.m + 2, s.tw*s.m + 2 }

// winoPad copies planes [lo, hi) of in (n·C planes of h×w) into padded
// (planes of s.padded()), the image at (pad, pad) and zeros around it,
// writing every element of those planes.
func winoPad(s *winoShape, in, padded []float32, lo, hi int) {
	hp, wp := s.padded()
	padPlanes(in, padded, s.h, s.w, hp, wp, s.pad, s.pad, lo, hi)
}

// padPlanes copies planes [lo, hi) of in (planes of h×w) into out (planes
// of hp×wp), each image at (ph, pw) with zeros around it, writing every
// element of those planes.
func padPlanes(in, out []float32, h, w, hp, wp, ph, pw, lo, hi int) {
	for pl := lo; pl < hi; pl++ {
		src := in[pl*h*w : (pl+1)*h*w]
		dst := out[pl*hp*wp : (pl+1)*hp*wp]
		clear(dst[:ph*wp])
		for y := range h {
			row := dst[(y+ph)*wp : (y+ph+1)*wp]
			clear(row[:pw])
			copy(row[pw:], src[y*w:(y+1)*w])
			clear(row[pw+w:])
		}
		clear(dst[(h+ph)*wp:])
	}
}

// winoOutput inverse-transforms output channels [lo, hi) of the products
// buf.p (α²×K×nt) of the chunk's tiles (their origins in buf), adds bias
// and writes the tiles' pixels that lie inside the output, a run of tiles
// along a tile row at a time; d is scratch of m²·nt floats (the worker's
// own, when the threads split a chunk's channels).
func winoOutput(s *winoShape, bias []float32, buf *winoBuf, d []float32, nt int, out []float32, lo, hi int) {
	plane := s.oh * s.ow
	m := s.m
	y := d[:m*m*nt]
	p := buf.p
	kind := simd.WinoOut4
	if m == 2 {
		kind = simd.WinoOut2
	}
	for k := lo; k < hi; k++ {
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
// weight (K×C/groups×3×3) at k = r, c = q, or, with back, the kernel at
// c = r and k = q of r's group, rotated by 180° (the backward data
// pass's). rows, cols are K, C/groups, or with back C, K/groups. scratch
// holds 9·cols floats (fitted here).
func winoKernel(m int, weight []float32, k, c, groups int, back bool, u []float32, lo, hi int, scratch *[]float32) {
	kind := simd.WinoKer4
	if m == 2 {
		kind = simd.WinoKer2
	}
	cg, kg := c/groups, k/groups
	rows, cols := k, cg
	if back {
		rows, cols = c, kg
	}
	*scratch = fitBuf(*scratch, 9*cols)
	g := (*scratch)[:9*cols]
	for r := lo; r < hi; r++ {
		// Gather row r's kernels with their 9 taps a row apart, then
		// transform them all straight into u's α² rows (measured on 512×512
		// channels: 11 ms, against 17 through a row buffer and a copy).
		for q := 0; q < cols; q++ {
			if back {
				o := ((r/cg*kg+q)*cg + r%cg) * 9 // k = q of r's group, c = r
				src := weight[o : o+9]
				for e := range 9 {
					g[e*cols+q] = src[8-e] // rotated by 180°
				}
			} else {
				src := weight[(r*cg+q)*9 : (r*cg+q)*9+9]
				for e := range 9 {
					g[e*cols+q] = src[e]
				}
			}
		}
		simd.WinoTransform(kind, g, cols, u[r*cols:], rows*cols, cols)
	}
}

// The weights pass. With y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A per tile, the
// gradient of a 3×3 kernel is
//
//	dW_{k,c} = Gᵀ [ Σ_t (A dy_{k,t} Aᵀ) ⊙ V_{c,t} ] G
//
// so per chunk of tiles: V as in the forward (winoInput's gathers), the
// output gradient's 4×4 tiles transformed by A (WinoDy4, gathered in place
// from dy padded as the data pass pads it), and α² SGEMMs
// S[ξ] += Ŷ[ξ]·V[ξ]ᵀ ([K×tiles]·[tiles×C]) accumulated over the chunks in
// order; then Gᵀ S G back to 3×3 per (k, c) (WinoKerT4). The threads split
// each chunk's transforms by channel and its GEMMs by ξ, so every S[ξ] is
// summed over the same chunks in the same order at any thread count: the
// same bits.

// winoWtsChunk is the weights pass's chunk of tiles for the forward shape
// s of n images: the budget winoChunkFloats for a chunk's transformed input
// and output gradient, at most winoWtsMaxChunk tiles, a multiple of 8. Not
// capped at half the tiles: the threads split the chunk, not the chunks.
func winoWtsChunk(s winoShape, n int) winoShape {
	a := s.alpha()
	total := n * s.th * s.tw
	s.chunk = max(winoMinChunk, min(winoWtsMaxChunk, winoChunkFloats/(a*a*(s.c+s.k)), (total+7)&^7)) &^ 7
	return s
}

// winoWtsMaxChunk bounds the weights pass's chunk (see winoWtsChunk).
var winoWtsMaxChunk = 1024

// winoWtsTiles fills buf's tile origins and offsets for chunk ch of the
// weights pass on forward shape s (its chunk from winoWtsChunk) over n
// images, with dy padded for the data pass's shape sb; it returns the
// chunk's tiles.
func winoWtsTiles(s, sb *winoShape, n, ch int, buf *winoBuf) int {
	buf.fit(s)
	nt := winoTiles(s, n, ch, buf)
	hb, wb := sb.padded()
	for j := 0; j < nt; j++ {
		buf.offDy[j] = buf.img[j]*int32(s.k*hb*wb) + (buf.y0[j]+int32(sb.pad))*int32(wb) + buf.x0[j] + int32(sb.pad)
	}
	return nt
}

// winoWtsIn transforms channels [lo, hi) of the chunk's nt tiles, the C
// input channels then the K output-gradient ones: V into buf.v
// (α²×C×nt) from padX (winoPad of the input on s), Ŷ into buf.p
// (α²×K×nt) from padDy (winoPad of dy on sb).
func winoWtsIn(s, sb *winoShape, padX, padDy []float32, buf *winoBuf, nt, lo, hi int) {
	in, dy := simd.WinoIn4, simd.WinoDy4
	if s.m == 2 {
		in, dy = simd.WinoIn2, simd.WinoDy2
	}
	hp, wp := s.padded()
	hb, wb := sb.padded()
	for q := lo; q < hi; q++ {
		if q < s.c {
			simd.WinoGather(in, padX[q*hp*wp:], buf.off[:nt], wp, buf.v[q*nt:], s.c*nt)
		} else {
			k := q - s.c
			simd.WinoGather(dy, padDy[k*hb*wb:], buf.offDy[:nt], wb, buf.p[k*nt:], s.k*nt)
		}
	}
}

// winoWtsGemm runs the GEMMs ξ in [lo, hi) of the chunk's nt tiles:
// sum[ξ] (K×C/g) = Ŷ[ξ]·V[ξ]ᵀ, added to sum[ξ] unless first, block by
// block in g groups (group i's K/g rows of Ŷ[ξ] and C/g rows of V[ξ]).
func winoWtsGemm(s *winoShape, buf *winoBuf, nt int, sum []float32, first bool, lo, hi int) {
	var beta float32 = 1
	if first {
		beta = 0
	}
	cg, kg := s.cg(), s.kg()
	for x := lo; x < hi; x++ {
		for i := range s.g {
			tensor.Gemm(false, true, kg, cg, nt, 1, buf.p[(x*s.k+i*kg)*nt:], nt, buf.v[(x*s.c+i*cg)*nt:], nt, beta, sum[(x*s.k+i*kg)*cg:], cg)
		}
	}
}

// winoWtsOut adds Gᵀ sum[·][k][c] G to the K×C/g×3×3 weight gradient dw
// for output channels k in [lo, hi); scratch holds 9·C/g floats (fitted
// here).
func winoWtsOut(s *winoShape, sum, dw []float32, lo, hi int, scratch *[]float32) {
	kind := simd.WinoKerT4
	if s.m == 2 {
		kind = simd.WinoKerT2
	}
	c := s.cg()
	*scratch = fitBuf(*scratch, 9*c)
	g := (*scratch)[:9*c]
	for k := lo; k < hi; k++ {
		simd.WinoTransform(kind, sum[k*c:], s.k*c, g, c, c)
		d := dw[k*c*9 : (k+1)*c*9]
		for q := 0; q < c; q++ {
			for e := range 9 {
				d[q*9+e] += g[e*c+q]
			}
		}
	}
}

// planeBiasGrad adds to db[k], for k in [lo, hi), the sum of dy's channel k
// (n images of K planes of plane floats), image by image in order.
func planeBiasGrad(dy, db []float32, n, k, plane, lo, hi int) {
	for q := lo; q < hi; q++ {
		var b float32
		for i := 0; i < n; i++ {
			b += simd.Sum(dy[(i*k+q)*plane : (i*k+q+1)*plane])
		}
		db[q] += b
	}
}
