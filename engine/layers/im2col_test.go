package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"dsgd/engine/tensor/simd"
)

// randGeom returns a random convolution geometry whose kernel fits the
// padded image.
func randGeom(r *rand.Rand) convGeom {
	g := convGeom{c: 1 + r.IntN(3), kh: 1 + r.IntN(5), kw: 1 + r.IntN(5), sh: 1 + r.IntN(3), sw: 1 + r.IntN(3)}
	if r.IntN(2) == 0 { // half the geometries dilated
		g.dh, g.dw = 1+r.IntN(3), 1+r.IntN(3)
	}
	eh, ew := g.extent()
	g.ph, g.pw = r.IntN(eh+1), r.IntN(ew+1)
	g.h = max(1, eh-2*g.ph+r.IntN(9))
	g.w = max(1, ew-2*g.pw+r.IntN(9))
	g.oh = (g.h+2*g.ph-eh)/g.sh + 1
	g.ow = (g.w+2*g.pw-ew)/g.sw + 1
	g.initRanges()
	return g
}

// guarded returns a slice of n elements inside a NaN-filled buffer, and a
// check that the guards around it are intact.
func guarded(n int) ([]float32, func(t *testing.T, what string)) {
	const pad = 17
	buf := make([]float32, n+2*pad)
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	check := func(t *testing.T, what string) {
		t.Helper()
		for i, v := range buf {
			if (i < pad || i >= pad+n) && !math.IsNaN(float64(v)) {
				t.Fatalf("%s wrote outside its slice (guard %d)", what, i)
			}
		}
	}
	return buf[pad : pad+n : pad+n], check
}

// TestIm2colDefinition checks im2col against its definition, entry by
// entry, and that it writes exactly its rows' first oh·ow columns.
func TestIm2colDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for it := 0; it < 300; it++ {
		g := randGeom(r)
		ohw := g.oh * g.ow
		ld := ohw + r.IntN(3)*ohw // blocks of up to three images
		img, imgOK := guarded(g.c * g.h * g.w)
		for i := range img {
			img[i] = float32(r.NormFloat64())
		}
		col, colOK := guarded((g.colRows()-1)*ld + ohw)
		im2col(col, img, &g, ld)
		imgOK(t, "im2col (img)")
		colOK(t, "im2col (col)")
		for ci := 0; ci < g.c; ci++ {
			for ki := 0; ki < g.kh; ki++ {
				for kj := 0; kj < g.kw; kj++ {
					row := (ci*g.kh+ki)*g.kw + kj
					for oy := 0; oy < g.oh; oy++ {
						for ox := 0; ox < g.ow; ox++ {
							dh, dw := g.dilation()
							iy, ix := oy*g.sh-g.ph+ki*dh, ox*g.sw-g.pw+kj*dw
							var want float32
							if iy >= 0 && iy < g.h && ix >= 0 && ix < g.w {
								want = img[(ci*g.h+iy)*g.w+ix]
							}
							if got := col[row*ld+oy*g.ow+ox]; got != want {
								t.Fatalf("%+v ld %d: col[%d][%d,%d] = %v, want %v", g, ld, row, oy, ox, got, want)
							}
						}
					}
					// Columns past oh·ow belong to other images: untouched.
					if row < g.colRows()-1 {
						for j := ohw; j < ld; j++ {
							if !math.IsNaN(float64(col[row*ld+j])) {
								t.Fatalf("%+v ld %d: im2col wrote col[%d][%d], past the image's columns", g, ld, row, j)
							}
						}
					}
				}
			}
		}
	}
}

// TestCol2imAdjoint checks ⟨im2col(x), y⟩ = ⟨x, col2im(y)⟩, which pins
// col2im down completely given im2col, and that col2im overwrites.
func TestCol2imAdjoint(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for it := 0; it < 300; it++ {
		g := randGeom(r)
		ohw := g.oh * g.ow
		ld := ohw + r.IntN(3)*ohw
		n := (g.colRows()-1)*ld + ohw
		x := make([]float32, g.c*g.h*g.w)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y, yOK := guarded(n)
		for i := range y {
			if i%ld < ohw {
				y[i] = float32(r.NormFloat64())
			}
		}
		cx := make([]float32, n)
		im2col(cx, x, &g, ld)
		back, backOK := guarded(len(x))
		for i := range back {
			back[i] = 1e6 // col2im must overwrite, not add
		}
		col2im(back, y, &g, ld)
		yOK(t, "col2im (col)")
		backOK(t, "col2im (img)")
		var lhs, rhs float64
		for i := range cx {
			if i%ld < ohw {
				lhs += float64(cx[i]) * float64(y[i])
			}
		}
		for i := range x {
			rhs += float64(x[i]) * float64(back[i])
		}
		if math.Abs(lhs-rhs) > 1e-4*math.Max(1, math.Abs(lhs)) {
			t.Fatalf("%+v ld %d: <im2col x, y> = %v but <x, col2im y> = %v", g, ld, lhs, rhs)
		}
	}
}

func TestCopyAddRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	for _, n := range []int{1, 3, 4, 7, 8, 9, 12, 15, 16, 24, 40, 64, 68} {
		for _, rows := range []int{1, 2, 5} {
			dstep, sstep := n+r.IntN(4), n+r.IntN(5)
			src, srcOK := guarded((rows-1)*sstep + n)
			for i := range src {
				src[i] = float32(r.NormFloat64())
			}
			dst, dstOK := guarded((rows-1)*dstep + n)
			base := make([]float32, len(dst))
			for i := range dst {
				base[i] = float32(r.NormFloat64())
				dst[i] = base[i]
			}
			copyRuns(dst, src, rows, n, dstep, sstep)
			srcOK(t, "copyRuns (src)")
			dstOK(t, "copyRuns (dst)")
			for i := range dst {
				want := base[i]
				if rr, j := i/dstep, i%dstep; j < n {
					want = src[rr*sstep+j]
				}
				if dst[i] != want {
					t.Fatalf("copyRuns n %d rows %d: dst[%d] = %v, want %v", n, rows, i, dst[i], want)
				}
			}
			copy(dst, base)
			simd.AddRuns(dst, src, rows, n, dstep, sstep)
			dstOK(t, "simd.AddRuns (dst)")
			for i := range dst {
				want := base[i]
				if rr, j := i/dstep, i%dstep; j < n {
					want += src[rr*sstep+j]
				}
				if dst[i] != want {
					t.Fatalf("addRuns n %d rows %d: dst[%d] = %v, want %v", n, rows, i, dst[i], want)
				}
			}
		}
	}
}

// cpuTime is the process's user+system CPU time, for benchmarks on a
// shared machine where wall time is noisy.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ns/op metric measured from start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkIm2col(b *testing.B) {
	for _, g := range []convGeom{
		{c: 1, h: 28, w: 28, kh: 5, kw: 5, sh: 1, sw: 1, oh: 24, ow: 24},
		{c: 20, h: 12, w: 12, kh: 5, kw: 5, sh: 1, sw: 1, oh: 8, ow: 8},
		{c: 32, h: 16, w: 16, kh: 3, kw: 3, sh: 2, sw: 2, ph: 1, pw: 1, oh: 8, ow: 8},
	} {
		g.initRanges()
		img := make([]float32, g.c*g.h*g.w)
		col := make([]float32, g.colRows()*g.colCols())
		name := fmt.Sprintf("c%d_%dx%d_k%d_s%d", g.c, g.h, g.w, g.kh, g.sh)
		b.Run(name+"/im2col", func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				im2col(col, img, &g, g.colCols())
			}
			reportCPU(b, start)
		})
		b.Run(name+"/col2im", func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				col2im(img, col, &g, g.colCols())
			}
			reportCPU(b, start)
		})
	}
}
