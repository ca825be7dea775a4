package data

import (
	"math"
)

// planeImage is an 8-bit image in Caffe's layout: C planes of H×W bytes
// (BGR for colour).
type planeImage struct {
	pix     []uint8
	c, h, w int
}

// InterpMode is SSD's ResizeParameter.Interp_mode, numbered as the fork
// numbers it.
type InterpMode int

// The interpolation modes of SSD's resize_param.
const (
	InterpLinear   InterpMode = 1
	InterpArea     InterpMode = 2
	InterpNearest  InterpMode = 3
	InterpCubic    InterpMode = 4
	InterpLanczos4 InterpMode = 5
)

// String is the mode's name in the fork's caffe.proto.
func (m InterpMode) String() string {
	switch m {
	case InterpLinear:
		return "LINEAR"
	case InterpArea:
		return "AREA"
	case InterpNearest:
		return "NEAREST"
	case InterpCubic:
		return "CUBIC"
	case InterpLanczos4:
		return "LANCZOS4"
	}
	return "interp_mode(?)"
}

// Supported says whether dsgd resizes with m as OpenCV does.
func (m InterpMode) Supported() bool { return m >= InterpLinear && m <= InterpLanczos4 }

// resizeCV resizes img to oh×ow as OpenCV's cv::resize does for 8-bit
// images with mode (LINEAR or NEAREST; Supported).
func resizeCV(img planeImage, oh, ow int, mode InterpMode) planeImage {
	if oh == img.h && ow == img.w {
		return planeImage{append([]uint8(nil), img.pix...), img.c, oh, ow}
	}
	switch mode {
	case InterpNearest:
		return resizeNearestCV(img, oh, ow)
	case InterpCubic:
		return resizeKernelCV(img, oh, ow, 4, cubicCoeffs, true)
	case InterpLanczos4:
		return resizeKernelCV(img, oh, ow, 8, lanczos4Coeffs, false)
	case InterpArea:
		return resizeAreaCV(img, oh, ow)
	}
	return resizeLinearCV(img, oh, ow, false)
}

// resizeNearestCV is OpenCV's resizeNN: source index floor(x × in/out),
// in double precision, clamped.
func resizeNearestCV(img planeImage, oh, ow int) planeImage {
	ifx := 1 / (float64(ow) / float64(img.w))
	ify := 1 / (float64(oh) / float64(img.h))
	xs := make([]int, ow)
	for x := range xs {
		xs[x] = min(int(math.Floor(float64(x)*ifx)), img.w-1)
	}
	out := planeImage{make([]uint8, img.c*oh*ow), img.c, oh, ow}
	for c := range img.c {
		for y := range oh {
			sy := min(int(math.Floor(float64(y)*ify)), img.h-1)
			src := img.pix[(c*img.h+sy)*img.w:]
			dst := out.pix[(c*oh+y)*ow:]
			for x, sx := range xs {
				dst[x] = src[sx]
			}
		}
	}
	return out
}

// linearTaps are OpenCV's INTER_LINEAR source indices and 11-bit
// fixed-point weights (INTER_RESIZE_COEF_SCALE 2048) for one axis. Along
// x (clamp) OpenCV moves a tap outside the image onto its edge with weight
// 1; along y it keeps the weights and clamps only the rows it reads. With
// area, the taps are INTER_AREA's where it enlarges: the source pixel
// under the output's left edge, and how far the output's right edge
// reaches into the next one.
func linearTaps(in, out int, clamp, area bool) (idx []int, wt [][2]int32) {
	inv := float64(out) / float64(in)
	scale := 1 / inv
	idx, wt = make([]int, out), make([][2]int32, out)
	for d := range out {
		f := float32((float64(d)+0.5)*scale - 0.5)
		s := int(math.Floor(float64(f)))
		f -= float32(s)
		if area {
			s = int(math.Floor(float64(d) * scale))
			f = float32(float64(d+1) - float64(s+1)*inv)
			if f <= 0 {
				f = 0
			} else {
				f -= float32(math.Floor(float64(f)))
			}
		}
		if clamp && s < 0 {
			s, f = 0, 0
		}
		if clamp && s >= in-1 {
			s, f = in-1, 0
		}
		idx[d] = s
		wt[d] = [2]int32{int32(math.RoundToEven(float64((1 - f) * 2048))), int32(math.RoundToEven(float64(f * 2048)))}
	}
	return idx, wt
}

// cubicCoeffs is OpenCV's interpolateCubic (A = -0.75) in float32, each
// operation rounded as C++ rounds it.
func cubicCoeffs(x float32, c []float32) {
	const A = float32(-0.75)
	x1 := float32(x + 1)
	c[0] = float32(float32(float32(float32(float32(float32(A*x1)-5*A)*x1)+8*A)*x1) - 4*A)
	c[1] = float32(float32(float32(float32(float32(float32(A+2)*x)-(A+3))*x)*x) + 1)
	y := float32(1 - x)
	c[2] = float32(float32(float32(float32(float32(float32(A+2)*y)-(A+3))*y)*y) + 1)
	c[3] = float32(float32(float32(1-c[0])-c[1]) - c[2])
}

// lanczos4Coeffs is OpenCV's interpolateLanczos4: the 8-tap Lanczos
// window from double sines, normalised in float32.
func lanczos4Coeffs(x float32, c []float32) {
	const s45 = 0.70710678118654752440084436210485
	cs := [8][2]float64{{1, 0}, {-s45, -s45}, {0, 1}, {s45, -s45}, {-1, 0}, {s45, s45}, {0, -1}, {-s45, s45}}
	y0 := -(float64(x) + 3) * math.Pi * 0.25
	s0, c0 := math.Sin(y0), math.Cos(y0)
	var sum float32
	for i := range 8 {
		t := float32(x + float32(3-i))
		if math.Abs(float64(t)) >= 1e-6 {
			y := -float64(t) * math.Pi * 0.25
			c[i] = float32((cs[i][0]*s0 + cs[i][1]*c0) / (y * y))
		} else {
			c[i] = 1e30
		}
		sum = float32(sum + c[i])
	}
	sum = float32(1 / sum)
	for i := range 8 {
		c[i] = float32(c[i] * sum)
	}
}

// kernelTaps are OpenCV's taps for a k-tap kernel (CUBIC, LANCZOS4) along
// one axis: the first source index (unclamped; readers clamp each tap to
// the image, as OpenCV's border handling does) and the weights rounded
// to 1/2048.
func kernelTaps(in, out, k int, coeffs func(float32, []float32)) (first []int, wt [][]int32) {
	scale := 1 / (float64(out) / float64(in))
	first, wt = make([]int, out), make([][]int32, out)
	cb := make([]float32, k)
	for d := range out {
		f := float32((float64(d)+0.5)*scale - 0.5)
		s := int(math.Floor(float64(f)))
		f -= float32(s)
		coeffs(f, cb)
		w := make([]int32, k)
		for j, c := range cb {
			w[j] = int32(min(max(math.RoundToEven(float64(float32(c*2048))), -32768), 32767))
		}
		first[d], wt[d] = s-(k/2-1), w
	}
	return first, wt
}

// cvVecLanes is the width of OpenCV's 128-bit vertical-pass vectors in
// 16-bit lanes: the cubic pass computes the first multiple of it of each
// interleaved row in float32, the rest in fixed point.
const cvVecLanes = 8

// resizeKernelCV is OpenCV's cv::resize of 8-bit images with a k-tap
// kernel (INTER_CUBIC, INTER_LANCZOS4): taps clamped to the image, a
// horizontal pass in integers, a vertical one in 22-bit fixed point
// rounded half up; with vec (CUBIC) the vectorised part of each row (its
// interleaved BGR elements up to a multiple of 8) is summed in float32
// from the last tap to the first and rounded half to even, as OpenCV's
// VResizeCubicVec_32s8u does.
func resizeKernelCV(img planeImage, oh, ow, k int, coeffs func(float32, []float32), vec bool) planeImage {
	xf, xw := kernelTaps(img.w, ow, k, coeffs)
	yf, yw := kernelTaps(img.h, oh, k, coeffs)
	clampX := func(i int) int { return min(max(i, 0), img.w-1) }
	clampY := func(i int) int { return min(max(i, 0), img.h-1) }
	vend := 0
	if vec {
		vend = (ow * img.c) / cvVecLanes * cvVecLanes
	}
	out := planeImage{make([]uint8, img.c*oh*ow), img.c, oh, ow}
	// The horizontal pass of every source row, once per channel: each
	// output row reads k of them.
	hrows := make([][]int64, img.h)
	for j := range hrows {
		hrows[j] = make([]int64, ow)
	}
	rows := make([][]int64, k)
	const fscale = float32(1.0 / (2048 * 2048))
	for c := range img.c {
		plane := img.pix[c*img.h*img.w : (c+1)*img.h*img.w]
		for sy, r := range hrows {
			src := plane[sy*img.w : (sy+1)*img.w]
			for x := range ow {
				var v int64
				for t := range k {
					v += int64(src[clampX(xf[x]+t)]) * int64(xw[x][t])
				}
				r[x] = v
			}
		}
		for y := range oh {
			for j := range k {
				rows[j] = hrows[clampY(yf[y]+j)]
			}
			dst := out.pix[(c*oh+y)*ow:]
			b := yw[y]
			for x := range ow {
				if x*img.c+c < vend {
					acc := float32(float32(rows[k-1][x]) * float32(float32(b[k-1])*fscale))
					for j := k - 2; j >= 0; j-- {
						acc = float32(float32(float32(rows[j][x])*float32(float32(b[j])*fscale)) + acc)
					}
					r := math.RoundToEven(float64(acc))
					dst[x] = uint8(min(max(r, 0), 255))
					continue
				}
				var v int64
				for j := range k {
					v += rows[j][x] * int64(b[j])
				}
				dst[x] = uint8(min(max((v+(1<<21))>>22, 0), 255))
			}
		}
	}
	return out
}

// resizeLinearCV is OpenCV's bilinear cv::resize of 8-bit images: weights
// rounded to 1/2048, a horizontal pass in integers, then a vertical one
// whose sum is rounded as OpenCV's vectorised VResizeLinear rounds it
// (each product's high half, then (a+b+2)>>2). area takes INTER_AREA's
// taps for an enlargement (linearTaps).
func resizeLinearCV(img planeImage, oh, ow int, area bool) planeImage {
	xi, xw := linearTaps(img.w, ow, true, area)
	yi, yw := linearTaps(img.h, oh, false, area)
	out := planeImage{make([]uint8, img.c*oh*ow), img.c, oh, ow}
	// The horizontal pass of every source row, once per channel.
	hrows := make([][]int32, img.h)
	for j := range hrows {
		hrows[j] = make([]int32, ow)
	}
	for c := range img.c {
		for sy, r := range hrows {
			src := img.pix[(c*img.h+sy)*img.w : (c*img.h+sy+1)*img.w]
			for x, s := range xi {
				v := int32(src[s]) * xw[x][0]
				if s+1 < img.w {
					v += int32(src[s+1]) * xw[x][1]
				}
				r[x] = v
			}
		}
		for y, sy := range yi {
			row0, row1 := hrows[min(max(sy, 0), img.h-1)], hrows[min(max(sy+1, 0), img.h-1)]
			b0, b1 := yw[y][0], yw[y][1]
			dst := out.pix[(c*oh+y)*ow:]
			for x := range ow {
				v := (((row0[x] >> 4) * b0) >> 16) + (((row1[x] >> 4) * b1) >> 16)
				dst[x] = sat8((v + 2) >> 2)
			}
		}
	}
	return out
}

// areaTap is one entry of OpenCV's computeResizeAreaTab: output d takes
// source s with weight a.
type areaTap struct {
	d, s int
	a    float32
}

// areaTaps is OpenCV's computeResizeAreaTab for one axis shrunk by scale
// (in/out): each output cell's source pixels, the partial ones at its
// edges weighted by how much of them it covers, all over the cell's width.
func areaTaps(in, out int, scale float64) []areaTap {
	var t []areaTap
	for d := range out {
		f1 := float64(d) * scale
		f2 := f1 + scale
		cell := min(scale, float64(in)-f1)
		s1, s2 := int(math.Ceil(f1)), int(math.Floor(f2))
		s2 = min(s2, in-1)
		s1 = min(s1, s2)
		if float64(s1)-f1 > 1e-3 {
			t = append(t, areaTap{d, s1 - 1, float32((float64(s1) - f1) / cell)})
		}
		for s := s1; s < s2; s++ {
			t = append(t, areaTap{d, s, float32(1 / cell)})
		}
		if f2-float64(s2) > 1e-3 {
			t = append(t, areaTap{d, s2, float32(min(f2-float64(s2), 1, cell) / cell)})
		}
	}
	return t
}

// resizeAreaCV is OpenCV's INTER_AREA cv::resize of 8-bit images: an
// integer shrink averages each block (2×2 rounded half up, others through
// a float32 reciprocal, half to even); any other shrink sums the covered
// source pixels with computeResizeAreaTab's weights in float32, row by
// row as ResizeArea_Invoker does; an enlargement along either axis is
// bilinear with INTER_AREA's taps.
func resizeAreaCV(img planeImage, oh, ow int) planeImage {
	sx := 1 / (float64(ow) / float64(img.w))
	sy := 1 / (float64(oh) / float64(img.h))
	if sx < 1 || sy < 1 {
		return resizeLinearCV(img, oh, ow, true)
	}
	out := planeImage{make([]uint8, img.c*oh*ow), img.c, oh, ow}
	ix, iy := int(math.RoundToEven(sx)), int(math.RoundToEven(sy))
	if math.Abs(sx-float64(ix)) < 2.220446049250313e-16 && math.Abs(sy-float64(iy)) < 2.220446049250313e-16 {
		inv := float32(1) / float32(ix*iy)
		for c := range img.c {
			plane := img.pix[c*img.h*img.w : (c+1)*img.h*img.w]
			for y := range oh {
				for x := range ow {
					var sum int32
					for yy := y * iy; yy < (y+1)*iy; yy++ {
						for xx := x * ix; xx < (x+1)*ix; xx++ {
							sum += int32(plane[yy*img.w+xx])
						}
					}
					if ix == 2 && iy == 2 {
						out.pix[(c*oh+y)*ow+x] = uint8((sum + 2) >> 2)
					} else {
						out.pix[(c*oh+y)*ow+x] = satRound(float32(float32(sum) * inv))
					}
				}
			}
		}
		return out
	}
	xt, yt := areaTaps(img.w, ow, sx), areaTaps(img.h, oh, sy)
	sum, buf := make([]float32, ow), make([]float32, ow)
	for c := range img.c {
		plane := img.pix[c*img.h*img.w : (c+1)*img.h*img.w]
		flush := func(y int) {
			dst := out.pix[(c*oh+y)*ow : (c*oh+y+1)*ow]
			for x, v := range sum {
				dst[x] = satRound(v)
			}
		}
		clear(sum)
		prev := yt[0].d
		for _, e := range yt {
			clear(buf)
			row := plane[e.s*img.w : (e.s+1)*img.w]
			for _, t := range xt {
				buf[t.d] = float32(buf[t.d] + float32(float32(row[t.s])*t.a))
			}
			if e.d != prev {
				flush(prev)
				for x := range sum {
					sum[x] = float32(e.a * buf[x])
				}
				prev = e.d
			} else {
				for x := range sum {
					sum[x] = float32(sum[x] + float32(e.a*buf[x]))
				}
			}
		}
		flush(prev)
	}
	return out
}

func sat8(v int32) uint8 {
	return uint8(min(max(v, 0), 255))
}

// satRound is OpenCV's saturate_cast<uchar> of a float: rounded half to
// even, clamped.
func satRound(v float32) uint8 {
	r := math.RoundToEven(float64(v))
	return uint8(min(max(r, 0), 255))
}

// convertTo is OpenCV's Mat::convertTo of 8-bit pixels to 8-bit ones:
// alpha×v + beta in float32, saturated.
func convertTo(p []uint8, alpha, beta float32) {
	for i, v := range p {
		p[i] = satRound(float32(v)*alpha + beta)
	}
}

// hsvShift and the tables are OpenCV's RGB2HSV_b for 8-bit images (hue
// range 180).
const hsvShift = 12

var sdivTable, hdivTable [256]int32

func init() {
	for i := 1; i < 256; i++ {
		sdivTable[i] = int32(math.RoundToEven(float64(255<<hsvShift) / float64(i)))
		hdivTable[i] = int32(math.RoundToEven(float64(180<<hsvShift) / (6 * float64(i))))
	}
}

// bgrToHSV is OpenCV's cvtColor(COLOR_BGR2HSV) of 8-bit BGR planes, in
// place: H in [0, 180), S and V in [0, 255].
func bgrToHSV(img planeImage) {
	n := img.h * img.w
	B, G, R := img.pix[:n], img.pix[n:2*n], img.pix[2*n:3*n]
	const half = 1 << (hsvShift - 1)
	for i := range n {
		b, g, r := int32(B[i]), int32(G[i]), int32(R[i])
		v := max(b, g, r)
		vmin := min(b, g, r)
		diff := v - vmin
		var h int32
		switch {
		case v == r:
			h = g - b
		case v == g:
			h = b - r + 2*diff
		default:
			h = r - g + 4*diff
		}
		s := (diff*sdivTable[v] + half) >> hsvShift
		h = (h*hdivTable[diff] + half) >> hsvShift
		if h < 0 {
			h += 180
		}
		B[i], G[i], R[i] = uint8(h), uint8(s), uint8(v)
	}
}

// hsvBlock is the pixels of a row OpenCV's 8-bit HSV2BGR converts at a
// time in its vector path: four vectors of 8 floats (AVX2, which OpenCV
// dispatches to where the CPU has it; an SSE-only OpenCV converts 16).
const hsvBlock = 32

// hsvToBGR is OpenCV's cvtColor(COLOR_HSV2BGR) of 8-bit HSV planes (hue
// range 180), in place, row by row as OpenCV converts them: the row's
// whole blocks of hsvBlock pixels through its vector path (sector from
// truncation, each channel truncated), the rest through its scalar one
// (each channel rounded).
func hsvToBGR(img planeImage) {
	n := img.h * img.w
	H, S, V := img.pix[:n], img.pix[n:2*n], img.pix[2*n:3*n]
	vecEnd := img.w / hsvBlock * hsvBlock
	for i := range n {
		b, g, r := hsvPixel(H[i], S[i], V[i], i%img.w < vecEnd)
		H[i], S[i], V[i] = b, g, r
	}
}

// hsvPixel is one pixel of OpenCV's HSV2RGB_b: vector (HSV2RGB_simd, then
// v_trunc) or scalar (HSV2RGB_native, then saturate_cast).
func hsvPixel(hb, sb, vb uint8, vector bool) (b, g, r uint8) {
	const hscale = float32(6.0 / 180)
	const inv255 = float32(1) / float32(255)
	h := float32(hb)
	s := float32(float32(sb) * inv255)
	v := float32(float32(vb) * inv255)
	var tab [4]float32
	var sector int
	if vector {
		h = float32(h * hscale)
		pre := float32(math.Trunc(float64(h)))
		h = float32(h - pre)
		tab = [4]float32{v, float32(v * float32(1-s)), float32(v * float32(1-float32(s*h))), float32(v * float32(1-float32(s*float32(1-h))))}
		sec := float32(math.Trunc(float64(float32(pre * float32(float32(1)/float32(6))))))
		sector = int(float32(pre - float32(sec*6)))
	} else {
		if s == 0 {
			c := satRound(float32(v * 255))
			return c, c, c
		}
		h = float32(math.Mod(float64(float32(h*hscale)), 6))
		sector = int(math.Floor(float64(h)))
		h = float32(h - float32(sector))
		if uint(sector) >= 6 {
			sector, h = 0, 0
		}
		tab = [4]float32{v, float32(v * float32(1-s)), float32(v * float32(1-float32(s*h))), float32(v * float32(1-float32(s*float32(1-h))))}
	}
	idx := [6][3]int{{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}}[min(max(sector, 0), 5)]
	out := [3]float32{tab[idx[0]], tab[idx[1]], tab[idx[2]]}
	var q [3]uint8
	for k, x := range out {
		x = float32(x * 255)
		if vector {
			q[k] = uint8(min(max(math.Trunc(float64(x)), 0), 255))
		} else {
			q[k] = satRound(x)
		}
	}
	return q[0], q[1], q[2]
}

// cropImage is the fork's CropImage of an image by a normalised box: the
// box clipped, scaled to pixels, its corner and size truncated.
func cropImage(img planeImage, b BBox) planeImage {
	c := b.clip()
	x0, y0 := c.XMin*float32(img.w), c.YMin*float32(img.h)
	x1, y1 := c.XMax*float32(img.w), c.YMax*float32(img.h)
	wOff, hOff := int(x0), int(y0)
	w, h := int(x1-x0), int(y1-y0)
	return cropPixels(img, hOff, wOff, h, w)
}

// expandImage is the fork's ExpandImage of an image by ratio at offset
// (hOff, wOff): a canvas of int(h×ratio) × int(w×ratio) filled with the
// mean values (zero without), the image copied at the offset. It returns
// the canvas and the image's box in the canvas's frame, as the fork's
// expand_bbox (relative to the original image).
func expandImage(img planeImage, ratio float32, hOff, wOff float32, fill []float32) (planeImage, BBox) {
	h := int(float32(img.h) * ratio)
	w := int(float32(img.w) * ratio)
	box := BBox{
		XMin: -wOff / float32(img.w), YMin: -hOff / float32(img.h),
		XMax: (float32(w) - wOff) / float32(img.w), YMax: (float32(h) - hOff) / float32(img.h),
	}
	out := planeImage{make([]uint8, img.c*h*w), img.c, h, w}
	for ch := range img.c {
		if ch < len(fill) {
			v := satRound(fill[ch])
			p := out.pix[ch*h*w : (ch+1)*h*w]
			for i := range p {
				p[i] = v
			}
		}
		for y := range img.h {
			dst := out.pix[(ch*h+int(hOff)+y)*w+int(wOff):]
			copy(dst[:img.w], img.pix[(ch*img.h+y)*img.w:(ch*img.h+y+1)*img.w])
		}
	}
	return out, box
}
