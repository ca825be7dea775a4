package layers

import (
	"unsafe"

	"dsgd/engine/tensor/simd"
)

// convGeom is the geometry of a 2-D convolution (or pooling) window sliding
// over one image: channels c of h×w pixels, a kh×kw kernel moved by
// (sh, sw) over the image padded by (ph, pw) zeros, giving oh×ow outputs.
// A dilated kernel (dh, dw > 1) reads every dh-th row and dw-th column:
// kernel tap (ki, kj) reads the pixel ki·dh, kj·dw from the window's
// corner; 0 means 1.
type convGeom struct {
	c, h, w int
	kh, kw  int
	sh, sw  int
	ph, pw  int
	oh, ow  int
	dh, dw  int

	// For each kernel row ki, the outputs [ys[2ki], ys[2ki+1]) whose input
	// row lies inside the image; xs likewise for kernel columns. Set by
	// initRanges, so im2col divides nothing per row.
	ys, xs []int
}

// initRanges computes ys and xs for the current geometry, reusing their
// storage.
func (g *convGeom) initRanges() {
	if cap(g.ys) < 2*g.kh {
		g.ys = make([]int, 2*g.kh)
	}
	if cap(g.xs) < 2*g.kw {
		g.xs = make([]int, 2*g.kw)
	}
	g.ys, g.xs = g.ys[:2*g.kh], g.xs[:2*g.kw]
	dh, dw := g.dilation()
	for k := range g.kh {
		g.ys[2*k], g.ys[2*k+1] = outRange(k*dh, g.h, g.sh, g.ph, g.oh)
	}
	for k := range g.kw {
		g.xs[2*k], g.xs[2*k+1] = outRange(k*dw, g.w, g.sw, g.pw, g.ow)
	}
}

// dilation is (dh, dw) with 0 read as 1.
func (g *convGeom) dilation() (dh, dw int) { return max(g.dh, 1), max(g.dw, 1) }

// extent is the size of the dilated kernel, (k−1)·d + 1, on each axis.
func (g *convGeom) extent() (eh, ew int) {
	dh, dw := g.dilation()
	return (g.kh-1)*dh + 1, (g.kw-1)*dw + 1
}

// colRows is the number of rows of the column matrix: one per (channel,
// kernel row, kernel column).
func (g *convGeom) colRows() int { return g.c * g.kh * g.kw }

// colCols is the number of columns of the column matrix: one per output
// pixel.
func (g *convGeom) colCols() int { return g.oh * g.ow }

// outRange returns the outputs [lo, hi) along one axis whose input
// coordinate o·stride − pad + k lies inside [0, size): the part of a column
// row that reads real pixels rather than padding.
func outRange(k, size, stride, pad, out int) (lo, hi int) {
	if d := pad - k; d > 0 {
		lo = (d + stride - 1) / stride
	}
	last := size - 1 + pad - k // largest o·stride allowed
	if last < 0 {
		return 0, 0
	}
	hi = min(last/stride+1, out)
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

// im2col writes the patches of img (c×h×w) into col, a
// (c·kh·kw)×(oh·ow) row-major matrix with leading dimension ld ≥ oh·ow:
// row (ci·kh+ki)·kw+kj, column oy·ow+ox holds
// img[ci][oy·sh−ph+ki·dh][ox·sw−pw+kj·dw], or 0 in the padding. It overwrites
// every element of those rows' first oh·ow columns. g must have had
// initRanges called since its geometry last changed.
func im2col(col, img []float32, g *convGeom, ld int) {
	ow, ohw := g.ow, g.oh*g.ow
	w, hw := g.w, g.h*g.w
	col = col[:(g.colRows()-1)*ld+ohw]
	img = img[:g.c*hw]
	ys, xs := g.ys[:2*g.kh], g.xs[:2*g.kw]
	dh, dw := g.dilation()
	r := 0
	for ci := 0; ci < g.c; ci++ {
		plane := img[ci*hw : (ci+1)*hw]
		for ki := 0; ki < g.kh; ki++ {
			yLo, yHi := ys[2*ki], ys[2*ki+1]
			for kj := 0; kj < g.kw; kj++ {
				xLo, xHi := xs[2*kj], xs[2*kj+1]
				row := col[r*ld : r*ld+ohw]
				r++
				clear(row[:yLo*ow])
				clear(row[yHi*ow:])
				n := xHi - xLo
				if n <= 0 || yLo >= yHi {
					clear(row[yLo*ow : max(yHi, yLo)*ow])
					continue
				}
				if xLo > 0 || xHi < ow {
					for oy := yLo; oy < yHi; oy++ {
						d := row[oy*ow : (oy+1)*ow]
						clear(d[:xLo])
						clear(d[xHi:])
					}
				}
				// Source of output (oy, xLo); each output row moves sh rows down.
				so := (yLo*g.sh-g.ph+ki*dh)*w + xLo*g.sw - g.pw + kj*dw
				step := g.sh * w
				if g.sw == 1 {
					copyRuns(row[yLo*ow+xLo:], plane[so:], yHi-yLo, n, ow, step)
					continue
				}
				span := (n-1)*g.sw + 1
				for do := yLo*ow + xLo; do < yHi*ow; do += ow {
					d, s := row[do:do+n], plane[so:so+span]
					for i := range d {
						d[i] = s[i*g.sw]
					}
					so += step
				}
			}
		}
	}
}

// col2im is the adjoint of im2col: it overwrites img (c×h×w) with the sum,
// over every column-matrix entry (leading dimension ld), of that entry
// added to the pixel it was copied from. Entries that fall in the padding
// are dropped.
func col2im(img, col []float32, g *convGeom, ld int) {
	ow, ohw := g.ow, g.oh*g.ow
	w, hw := g.w, g.h*g.w
	col = col[:(g.colRows()-1)*ld+ohw]
	img = img[:g.c*hw]
	ys, xs := g.ys[:2*g.kh], g.xs[:2*g.kw]
	dh, dw := g.dilation()
	clear(img)
	r := 0
	for ci := 0; ci < g.c; ci++ {
		plane := img[ci*hw : (ci+1)*hw]
		for ki := 0; ki < g.kh; ki++ {
			yLo, yHi := ys[2*ki], ys[2*ki+1]
			for kj := 0; kj < g.kw; kj++ {
				xLo, xHi := xs[2*kj], xs[2*kj+1]
				row := col[r*ld : r*ld+ohw]
				r++
				n := xHi - xLo
				if n <= 0 || yLo >= yHi {
					continue
				}
				so := (yLo*g.sh-g.ph+ki*dh)*w + xLo*g.sw - g.pw + kj*dw
				step := g.sh * w
				if g.sw == 1 {
					simd.AddRuns(plane[so:], row[yLo*ow+xLo:], yHi-yLo, n, step, ow)
					continue
				}
				span := (n-1)*g.sw + 1
				for do := yLo*ow + xLo; do < yHi*ow; do += ow {
					d, s := plane[so:so+span], row[do:do+n]
					for i, v := range s {
						d[i*g.sw] += v
					}
					so += step
				}
			}
		}
	}
}

// copyRuns copies rows runs of n floats from src to dst, the runs dstep
// apart in dst and sstep apart in src.
//
// im2col's runs are short (8 floats for LeNet's conv2), where calling
// memmove per run, looping over a variable length, or even the compiler's
// code for a bounds-checked fixed-size copy cost several times the copy
// itself. So the 8-float case moves two 16-byte vectors per run through
// unsafe pointers, and other runs of up to 64 floats whose length is a
// multiple of 4 (24 for LeNet's conv1) move 16-byte vectors in a loop,
// which costs less than a memmove call per run. Safety: the two reslices
// below bounds-check the last run, and every pointer formed is
// base + r·step + j for r < rows and j < n (j + 4 ≤ n for a vector), which
// the reslices cover.
func copyRuns(dst, src []float32, rows, n, dstep, sstep int) {
	if rows <= 0 || n <= 0 {
		return
	}
	if dstep < 0 || sstep < 0 {
		panic("layers: copyRuns: negative step")
	}
	dst = dst[:(rows-1)*dstep+n]
	src = src[:(rows-1)*sstep+n]
	switch {
	case n == 8:
		d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
		for r := 0; r < rows; r++ {
			dp, sp := unsafe.Add(d, 4*r*dstep), unsafe.Add(s, 4*r*sstep)
			*(*[4]float32)(dp) = *(*[4]float32)(sp)
			*(*[4]float32)(unsafe.Add(dp, 16)) = *(*[4]float32)(unsafe.Add(sp, 16))
		}
	case n%4 == 0 && n <= 64:
		d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
		for r := 0; r < rows; r++ {
			dp, sp := unsafe.Add(d, 4*r*dstep), unsafe.Add(s, 4*r*sstep)
			for j := 0; j < 4*n; j += 16 {
				*(*[4]float32)(unsafe.Add(dp, j)) = *(*[4]float32)(unsafe.Add(sp, j))
			}
		}
	case n >= 16:
		for r := 0; r < rows; r++ {
			copy(dst[r*dstep:r*dstep+n], src[r*sstep:])
		}
	default:
		for r := 0; r < rows; r++ {
			d, s := dst[r*dstep:r*dstep+n], src[r*sstep:r*sstep+n]
			for i := range d {
				d[i] = s[i]
			}
		}
	}
}
