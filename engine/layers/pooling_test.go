package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

func TestPooledSize(t *testing.T) {
	tests := []struct {
		size, kernel, stride, pad, want int
	}{
		{24, 2, 2, 0, 12},  // LeNet pool1
		{8, 2, 2, 0, 4},    // LeNet pool2
		{5, 2, 2, 0, 3},    // ceil(3/2)+1: the last window hangs over the edge
		{6, 3, 2, 0, 3},    // ceil(3/2)+1
		{7, 3, 2, 0, 3},    // 4/2+1, exact
		{32, 3, 2, 0, 16},  // CIFAR-10: ceil(29/2)+1
		{55, 3, 2, 0, 27},  // AlexNet pool1
		{112, 3, 2, 0, 56}, // ceil(109/2)+1
		{4, 3, 2, 1, 3},    // ceil(3/2)+1; last start (3−1)·2 = 4 < 4+1: kept
		{6, 2, 2, 1, 4},    // ceil(6/2)+1; 3·2 = 6 < 6+1: kept
		{5, 2, 2, 1, 3},    // ceil(5/2)+1 = 4; 3·2 = 6 ≥ 5+1: dropped
		{10, 3, 3, 2, 4},   // ceil(11/3)+1 = 5; 4·3 = 12 ≥ 10+2: dropped
		{3, 3, 3, 1, 2},    // ceil(2/3)+1 = 2; 1·3 = 3 < 3+1: kept
		{112, 3, 2, 1, 57}, // ceil(111/2)+1; 56·2 = 112 < 113: kept
		{1, 1, 1, 0, 1},    // identity
		{7, 7, 1, 0, 1},    // window = image
		{2, 3, 2, 0, 1},    // ceil(−1/2) = 0: one window, larger than the image
		{2, 3, 1, 0, 0},    // ceil(−1/1)+1 = 0: no window
	}
	// Caffe's own expression, in floating point.
	caffe := func(size, kernel, stride, pad int) int {
		p := int(math.Ceil(float64(size+2*pad-kernel)/float64(stride))) + 1
		if pad > 0 && (p-1)*stride >= size+pad {
			p--
		}
		return p
	}
	for _, tc := range tests {
		got := pooledSize(tc.size, tc.kernel, tc.stride, tc.pad)
		if got != tc.want {
			t.Errorf("pooledSize(size %d, kernel %d, stride %d, pad %d) = %d, want %d",
				tc.size, tc.kernel, tc.stride, tc.pad, got, tc.want)
		}
		if c := caffe(tc.size, tc.kernel, tc.stride, tc.pad); c != tc.want {
			t.Errorf("table row %+v disagrees with Caffe's formula (%d)", tc, c)
		}
	}
	// And exhaustively over small sizes.
	for size := 1; size <= 12; size++ {
		for k := 1; k <= 5; k++ {
			for s := 1; s <= 4; s++ {
				for p := 0; p < k; p++ {
					if got, want := pooledSize(size, k, s, p), caffe(size, k, s, p); got != want {
						t.Errorf("pooledSize(%d, %d, %d, %d) = %d, Caffe %d", size, k, s, p, got, want)
					}
				}
			}
		}
	}
}

// refPool is a direct Caffe pooling: MAX keeps the first maximum in
// row-major order (and its index), AVE divides by the window clipped to the
// padded image.
func refPool(x *tensor.Blob, c *PoolingConfig) (out []float32, mask []int32, oh, ow int) {
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	kh, kw, sh, sw, ph, pw := c.KernelH, c.KernelW, c.StrideH, c.StrideW, c.PadH, c.PadW
	if c.GlobalPooling {
		kh, kw, sh, sw, ph, pw = h, w, 1, 1, 0, 0
	}
	oh = pooledSize(h, kh, sh, ph)
	ow = pooledSize(w, kw, sw, pw)
	out = make([]float32, n*ch*oh*ow)
	mask = make([]int32, len(out))
	for p := 0; p < n*ch; p++ {
		plane := x.Data[p*h*w : (p+1)*h*w]
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				hs, ws := oy*sh-ph, ox*sw-pw
				he, we := min(hs+kh, h+ph), min(ws+kw, w+pw)
				size := (he - hs) * (we - ws)
				hs, ws = max(hs, 0), max(ws, 0)
				he, we = min(he, h), min(we, w)
				o := (p*oh+oy)*ow + ox
				if c.Method == PoolMax {
					best, arg := float32(-math.MaxFloat32), int32(-1)
					for y := hs; y < he; y++ {
						for x := ws; x < we; x++ {
							if v := plane[y*w+x]; v > best {
								best, arg = v, int32(y*w+x)
							}
						}
					}
					out[o], mask[o] = best, arg
					continue
				}
				var s float64
				for y := hs; y < he; y++ {
					for x := ws; x < we; x++ {
						s += float64(plane[y*w+x])
					}
				}
				out[o] = float32(s / float64(size))
			}
		}
	}
	return out, mask, oh, ow
}

type poolCase struct {
	name       string
	cfg        PoolingConfig
	n, c, h, w int
}

func poolCases() []poolCase {
	p := func(m PoolMethod, kh, kw, sh, sw, ph, pw int) PoolingConfig {
		return PoolingConfig{Method: m, KernelH: kh, KernelW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw}
	}
	return []poolCase{
		{"max_2x2_s2", p(PoolMax, 2, 2, 2, 2, 0, 0), 2, 3, 6, 8},
		{"max_2x2_s2_odd", p(PoolMax, 2, 2, 2, 2, 0, 0), 2, 2, 5, 7},
		{"max_3x3_s2", p(PoolMax, 3, 3, 2, 2, 0, 0), 2, 2, 7, 6},
		{"max_3x3_s2_pad1", p(PoolMax, 3, 3, 2, 2, 1, 1), 2, 2, 6, 5},
		{"max_rect", p(PoolMax, 3, 2, 1, 2, 1, 0), 1, 2, 5, 6},
		{"max_overlap_s1", p(PoolMax, 3, 3, 1, 1, 0, 0), 1, 2, 5, 5},
		{"ave_2x2_s2", p(PoolAve, 2, 2, 2, 2, 0, 0), 2, 3, 6, 8},
		{"ave_3x3_s2_pad1", p(PoolAve, 3, 3, 2, 2, 1, 1), 2, 2, 7, 6},
		{"ave_rect_pad", p(PoolAve, 3, 2, 2, 1, 2, 1), 1, 2, 5, 6},
		{"ave_3x3_s3_pad1_ceil", p(PoolAve, 3, 3, 3, 3, 1, 1), 2, 1, 5, 7},
		{"max_global", PoolingConfig{Method: PoolMax, GlobalPooling: true}, 2, 3, 4, 5},
		{"ave_global", PoolingConfig{Method: PoolAve, GlobalPooling: true, StrideH: 1, StrideW: 1}, 2, 3, 4, 5},
	}
}

// distinctBlob fills a blob with a shuffled ramp of values 0.1 apart, so
// MAX pooling has no ties and a finite-difference step of 1e-2 never
// changes an argmax.
func distinctBlob(r *rand.Rand, shape ...int) *tensor.Blob {
	b := tensor.NewBlob("x", shape...)
	for i, j := range r.Perm(len(b.Data)) {
		b.Data[i] = float32(j)*0.1 - float32(len(b.Data))*0.05
	}
	return b
}

func TestPoolForwardMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	cases := poolCases()
	for i := 0; i < 12; i++ {
		kh, kw := 1+r.IntN(4), 1+r.IntN(4)
		m := PoolMax
		if i%2 == 1 {
			m = PoolAve
		}
		cases = append(cases, poolCase{
			name: fmt.Sprintf("random%d", i),
			cfg: PoolingConfig{Method: m, KernelH: kh, KernelW: kw, StrideH: 1 + r.IntN(3), StrideW: 1 + r.IntN(3),
				PadH: r.IntN(kh), PadW: r.IntN(kw)},
			n: 1 + r.IntN(3), c: 1 + r.IntN(3), h: kh + r.IntN(7), w: kw + r.IntN(7),
		})
	}
	for _, tc := range cases {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads%d", tc.name, threads), func(t *testing.T) {
				bottom := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
				if tc.cfg.Method == PoolMax {
					// Plant ties: a constant first plane, and a second plane
					// of two levels, where the first maximum must win.
					for i := range tc.h * tc.w {
						bottom.Data[i] = 0.5
						if tc.n*tc.c > 1 {
							bottom.Data[tc.h*tc.w+i] = float32(i % 2)
						}
					}
				}
				top := tensor.NewBlob("y")
				l := newTestLayer(t, &tc.cfg, Context{Threads: threads}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
				l.(*poolLayer).workPerThread = 1
				l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
				want, mask, oh, ow := refPool(bottom, &tc.cfg)
				if !top.Shape.Equal(tensor.Shape{tc.n, tc.c, oh, ow}) {
					t.Fatalf("top shape %v, want %v", top.Shape, []int{tc.n, tc.c, oh, ow})
				}
				hlClose(t, "top", top.Data, want, 1e-6)
				if tc.cfg.Method == PoolMax {
					// Each top diff must reach its window's first maximum
					// (the ties planted above decide it), whichever engine
					// keeps the argmaxes.
					for i := range top.Diff {
						top.Diff[i] = float32(i + 1)
					}
					l.Backward([]*tensor.Blob{top}, []bool{true}, []*tensor.Blob{bottom})
					wantDiff := make([]float32, bottom.Count())
					for i, m := range mask {
						wantDiff[i/(oh*ow)*tc.h*tc.w+int(m)] += top.Diff[i]
					}
					hlClose(t, "bottom diff (routed to the argmax)", bottom.Diff, wantDiff, 0)
				}
			})
		}
	}
}

func TestPoolGradients(t *testing.T) {
	for _, tc := range poolCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(33, 34))
			bottom := distinctBlob(r, tc.n, tc.c, tc.h, tc.w)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l := newTestLayer(t, &tc.cfg, Context{Threads: 2}, bs, ts)
			l.(*poolLayer).workPerThread = 1
			checkGradients(t, l, bs, ts, gradCheck{Seed: 6})
		})
	}
}

func TestPoolThreadsAgree(t *testing.T) {
	for _, tc := range poolCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(35, 36))
			bottom := hlBlob(r, "x", 5, tc.c, tc.h, tc.w)
			var tops, diffs [][]float32
			for _, threads := range []int{1, 3} {
				top := tensor.NewBlob("y")
				l := newTestLayer(t, &tc.cfg, Context{Threads: threads}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
				l.(*poolLayer).workPerThread = 1
				l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
				fillGaussianDiff(top, rand.New(rand.NewPCG(1, 1)))
				l.Backward([]*tensor.Blob{top}, []bool{true}, []*tensor.Blob{bottom})
				tops = append(tops, append([]float32(nil), top.Data...))
				diffs = append(diffs, append([]float32(nil), bottom.Diff...))
			}
			hlClose(t, "top", tops[1], tops[0], 0)
			hlClose(t, "bottom diff", diffs[1], diffs[0], 0)
		})
	}
}

func TestPoolBackwardOverwritesAndSkips(t *testing.T) {
	for _, tc := range poolCases()[:8] {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(37, 38))
			bottom := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
			top := tensor.NewBlob("y")
			bs, ts := []*tensor.Blob{bottom}, []*tensor.Blob{top}
			l := newTestLayer(t, &tc.cfg, Context{Threads: 2}, bs, ts)
			l.Forward(bs, ts)
			fillGaussianDiff(top, r)
			l.Backward(ts, []bool{true}, bs)
			first := append([]float32(nil), bottom.Diff...)
			for i := range bottom.Diff {
				bottom.Diff[i] = 7
			}
			l.Backward(ts, []bool{true}, bs)
			hlClose(t, "bottom diff over garbage", bottom.Diff, first, 0)
			for i := range bottom.Diff {
				bottom.Diff[i] = 7
			}
			l.Backward(ts, []bool{false}, bs)
			for i, v := range bottom.Diff {
				if v != 7 {
					t.Fatalf("bottom diff[%d] = %v with propagateDown false, want untouched 7", i, v)
				}
			}
		})
	}
}

func TestPoolBuildErrors(t *testing.T) {
	ok := PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	tests := []struct {
		name string
		mod  func(*PoolingConfig)
		want string
	}{
		{"method", func(c *PoolingConfig) { c.Method = 7 }, "method"},
		{"kernel", func(c *PoolingConfig) { c.KernelW = 0 }, "kernel"},
		{"stride", func(c *PoolingConfig) { c.StrideH = 0 }, "stride"},
		{"pad_negative", func(c *PoolingConfig) { c.PadH = -1 }, "pad"},
		{"pad_ge_kernel", func(c *PoolingConfig) { c.PadW = 3 }, "smaller than kernel"},
		{"global_with_kernel", func(c *PoolingConfig) { c.GlobalPooling = true; c.PadH, c.PadW = 0, 0 }, "global_pooling"},
		{"global_with_pad", func(c *PoolingConfig) { *c = PoolingConfig{GlobalPooling: true, PadH: 1} }, "global_pooling"},
		{"global_with_stride", func(c *PoolingConfig) { *c = PoolingConfig{GlobalPooling: true, StrideW: 2} }, "global_pooling"},
	}
	if _, err := ok.Build(Context{}); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			_, err := c.Build(Context{})
			hlErrContains(t, err, tc.want)
		})
	}
}

func TestPoolSetupErrors(t *testing.T) {
	cfg := &PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1}
	build := func() Layer {
		l, err := cfg.Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	hlErrContains(t, build().Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3, 4)}, []*tensor.Blob{tensor.NewBlob("y")}), "4-D")
	hlErrContains(t, build().Setup([]*tensor.Blob{tensor.NewBlob("x", 2, 3, 4, 4)}, []*tensor.Blob{tensor.NewBlob("y"), tensor.NewBlob("mask"), tensor.NewBlob("z")}), "one top, or two with MAX")
	l := build()
	b, top := []*tensor.Blob{tensor.NewBlob("x", 2, 3, 2, 4)}, []*tensor.Blob{tensor.NewBlob("y")}
	if err := l.Setup(b, top); err != nil {
		t.Fatal(err)
	}
	hlErrContains(t, l.Reshape(b, top), "does not fit")
	// Kernel 1, stride 3 over 12 rows: ceil(11/3)+1 = 5 windows, the last
	// starting at row 12, past the input.
	// MAX has no element to take there (AVE keeps Caffe's -0).
	cfg = &PoolingConfig{Method: PoolMax, KernelH: 1, KernelW: 2, StrideH: 3, StrideW: 1}
	l = build()
	b = []*tensor.Blob{tensor.NewBlob("x", 1, 1, 12, 5)}
	if err := l.Setup(b, top); err != nil {
		t.Fatal(err)
	}
	hlErrContains(t, l.Reshape(b, top), "past its edge")
	cfg.Method = PoolAve
	l = build()
	if err := l.Setup(b, top); err != nil {
		t.Fatal(err)
	}
	if err := l.Reshape(b, top); err != nil {
		t.Fatal(err)
	}
}

func TestPoolNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	for _, tc := range poolCases() {
		b := hlBlob(r, "x", tc.n, tc.c, tc.h, tc.w)
		top := tensor.NewBlob("y")
		l := newTestLayer(t, &tc.cfg, Context{Threads: 1}, []*tensor.Blob{b}, []*tensor.Blob{top})
		hlAllocs(t, l, []*tensor.Blob{b}, []*tensor.Blob{top}, []bool{true})
	}
}

// refMax2x2 is the plain scan the tiled 2×2 MAX path must match bit for
// bit: per window, the first maximum of each row, then the top row's
// unless the bottom row's is greater (comparisons with NaN are false).
func refMax2x2(x []float32, planes, h, w int) ([]float32, []int32) {
	oh, ow := h/2, w/2
	out, mask := make([]float32, planes*oh*ow), make([]int32, planes*oh*ow)
	for p := 0; p < planes; p++ {
		pl := x[p*h*w : (p+1)*h*w]
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				i0 := 2*oy*w + 2*ox
				if pl[i0+1] > pl[i0] {
					i0++
				}
				i1 := (2*oy+1)*w + 2*ox
				if pl[i1+1] > pl[i1] {
					i1++
				}
				i := i0
				if pl[i1] > pl[i0] {
					i = i1
				}
				o := (p*oh+oy)*ow + ox
				out[o], mask[o] = pl[i], int32(i)
			}
		}
	}
	return out, mask
}

func TestMaxPool2x2MatchesScan(t *testing.T) {
	// The Go kernel's own test: oneDNN has no tiled path to check.
	defer func(off bool) { dnnlOff = off }(dnnlOff)
	dnnlOff = true
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	levels := []float32{-1, 0, float32(math.Copysign(0, -1)), 1, 2, nan, inf, -inf}
	r := rand.New(rand.NewPCG(41, 42))
	cfg := &PoolingConfig{Method: PoolMax, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}
	for _, sh := range [][4]int{{2, 3, 24, 24}, {3, 5, 8, 8}, {1, 1, 2, 2}, {2, 2, 4, 10}} {
		for _, threads := range []int{1, 2} {
			n, c, h, w := sh[0], sh[1], sh[2], sh[3]
			bottom := tensor.NewBlob("x", n, c, h, w)
			for i := range bottom.Data {
				if i%3 == 0 {
					bottom.Data[i] = levels[r.IntN(len(levels))]
				} else {
					bottom.Data[i] = float32(r.NormFloat64())
				}
			}
			top := tensor.NewBlob("y")
			pool := tensor.NewPool(threads)
			l := newTestLayer(t, cfg, Context{Threads: threads, Pool: pool}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
			l.(*poolLayer).workPerThread = 1
			if !l.(*poolLayer).tiled2x2() {
				t.Fatalf("%v: not on the tiled 2x2 path", sh)
			}
			l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
			want, wantMask := refMax2x2(bottom.Data, n*c, h, w)
			got, gotMask := top.Data, l.(*poolLayer).mask
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gotMask[i] != wantMask[i] {
					t.Fatalf("%v threads %d: output %d = %v at %d, want %v at %d",
						sh, threads, i, got[i], gotMask[i], want[i], wantMask[i])
				}
			}
			pool.Close()
		}
	}
}

// BenchmarkPool times MAX and AVE pooling forward and backward on the
// benchmark nets' geometries (cifar10_quick's pool1 and pool2, CaffeNet's
// pool1, GoogLeNet's pool1 and an inception 3x3/1 pool) on the kernels a
// run would pick; run it with ONEDNN_MAX_CPU_ISA=AVX2 too, and with
// -tags purego for the Go loops alone.
func BenchmarkPool(b *testing.B) {
	cases := []struct {
		name  string
		cfg   PoolingConfig
		shape []int
	}{
		{"cifar_pool1_max3s2", PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, []int{100, 32, 32, 32}},
		{"cifar_pool2_ave3s2", PoolingConfig{Method: PoolAve, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, []int{100, 32, 16, 16}},
		{"caffenet_pool1_max3s2", PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, []int{8, 96, 55, 55}},
		{"googlenet_pool1_max3s2", PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, []int{8, 64, 112, 112}},
		{"googlenet_3a_max3s1p1", PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, []int{8, 192, 28, 28}},
	}
	defer func(off, rowsOff bool) { dnnlOff, poolRowsOff = off, rowsOff }(dnnlOff, poolRowsOff)
	for _, tc := range cases {
		// auto: what a run picks; rows: the Go side on the simd row
		// kernels; loops: the Go loops alone.
		for _, v := range []struct {
			name           string
			dnOff, rowsOff bool
		}{{"auto", false, false}, {"rows", true, false}, {"loops", true, true}} {
			dnnlOff, poolRowsOff = v.dnOff, v.rowsOff
			benchLayer(b, tc.name+"/"+v.name, &tc.cfg, Context{Threads: 1}, tc.shape, 0, false)
		}
	}
}

// TestMaxPoolW3MatchesScan holds the 3-wide MAX kernel to Caffe's scan
// (the first element, replaced by each later one that is greater) bit for
// bit, value and argmax, on windows clipped and not, with ties, ±0, ±Inf
// and NaN planted: oneDNN is off, so the Go kernels run.
func TestMaxPoolW3MatchesScan(t *testing.T) {
	defer func(off bool) { dnnlOff = off }(dnnlOff)
	dnnlOff = true
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	levels := []float32{-1, 0, float32(math.Copysign(0, -1)), 1, 2, nan, inf, -inf}
	r := rand.New(rand.NewPCG(43, 44))
	for _, tc := range []struct {
		kh, s, p int
		shape    [4]int
	}{
		{3, 2, 0, [4]int{2, 3, 32, 32}}, // cifar10_quick's pool1: the last column clipped
		{3, 2, 0, [4]int{1, 4, 13, 13}}, // CaffeNet's pool5: every window inside
		{3, 1, 1, [4]int{2, 2, 9, 9}},   // GoogLeNet's inception pools
		{2, 1, 0, [4]int{1, 3, 6, 7}},
		{4, 3, 1, [4]int{1, 2, 11, 10}},
		{1, 2, 0, [4]int{1, 1, 5, 9}},
	} {
		for _, threads := range []int{1, 2} {
			n, c, h, w := tc.shape[0], tc.shape[1], tc.shape[2], tc.shape[3]
			cfg := &PoolingConfig{Method: PoolMax, KernelH: tc.kh, KernelW: 3, StrideH: tc.s, StrideW: tc.s, PadH: min(tc.p, tc.kh-1), PadW: tc.p}
			bottom := tensor.NewBlob("x", n, c, h, w)
			for i := range bottom.Data {
				if i%3 == 0 {
					bottom.Data[i] = levels[r.IntN(len(levels))]
				} else {
					bottom.Data[i] = float32(r.IntN(5)) // ties
				}
			}
			top := tensor.NewBlob("y")
			pool := tensor.NewPool(threads)
			l := newTestLayer(t, cfg, Context{Threads: threads, Pool: pool}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
			pl := l.(*poolLayer)
			pl.workPerThread = 1
			l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
			g := &pl.geom
			for p := range n * c {
				plane := bottom.Data[p*h*w : (p+1)*h*w]
				for oy := range g.oh {
					for ox := range g.ow {
						o := (p*g.oh+oy)*g.ow + ox
						want, wantArg := refScanMax(plane, w, int(pl.ys[oy]), int(pl.ye[oy]), int(pl.xs[ox]), int(pl.xe[ox]))
						if math.Float32bits(top.Data[o]) != math.Float32bits(want) || pl.mask[o] != wantArg {
							t.Fatalf("kernel %dx3 stride %d pad %d %v threads %d: output %d = %v at %d, want %v at %d",
								tc.kh, tc.s, tc.p, tc.shape, threads, o, top.Data[o], pl.mask[o], want, wantArg)
						}
					}
				}
			}
			pool.Close()
		}
	}
}

// refScanMax is Caffe's scan of one window, written out plainly: the
// first element that no later one exceeds, NaN never taken over a number.
func refScanMax(x []float32, w, y0, y1, x0, x1 int) (float32, int32) {
	arg := -1
	for y := y0; y < y1; y++ {
		for xx := x0; xx < x1; xx++ {
			i := y*w + xx
			v := x[i]
			switch {
			case arg < 0:
				arg = i
			case math.IsNaN(float64(x[arg])) && !math.IsNaN(float64(v)):
				arg = i
			case v > x[arg]:
				arg = i
			}
		}
	}
	return x[arg], int32(arg)
}

// TestPoolRowsMatchLoops holds the simd row kernels (maxForwardRows,
// aveForwardRows) to the Go loops bit for bit, forward (value and argmax)
// and backward, on random geometries: odd sizes, padding, Caffe's ceil
// rule and round_mode FLOOR, strides 1 and 2 along W (and 3, which stays
// on the loops), with ties, ±0, ±Inf and NaN planted. oneDNN is off.
func TestPoolRowsMatchLoops(t *testing.T) {
	defer func(off, rowsOff bool) { dnnlOff, poolRowsOff = off, rowsOff }(dnnlOff, poolRowsOff)
	dnnlOff = true
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	levels := []float32{-1, 0, float32(math.Copysign(0, -1)), 1, 2, nan, inf, -inf}
	r := rand.New(rand.NewPCG(20, 20))
	type tcase struct {
		cfg        PoolingConfig
		n, c, h, w int
	}
	cases := []tcase{
		{PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, 2, 3, 32, 32},
		{PoolingConfig{Method: PoolAve, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, 2, 3, 16, 16},
		{PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, 1, 4, 28, 28},
		{PoolingConfig{Method: PoolAve, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, 1, 4, 14, 14},
		{PoolingConfig{Method: PoolMax, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, 1, 2, 55, 55},
	}
	for range 80 {
		kh, kw := 1+r.IntN(5), 1+r.IntN(5)
		m := PoolMax
		if r.IntN(2) == 1 {
			m = PoolAve
		}
		cases = append(cases, tcase{
			cfg: PoolingConfig{Method: m, KernelH: kh, KernelW: kw, StrideH: 1 + r.IntN(3), StrideW: 1 + r.IntN(3),
				PadH: r.IntN(kh), PadW: r.IntN(kw), RoundFloor: r.IntN(4) == 0},
			n: 1 + r.IntN(2), c: 1 + r.IntN(3), h: kh + r.IntN(12), w: kw + r.IntN(20),
		})
	}
	rowsSeen, skipped := 0, 0
	for _, tc := range cases {
		// A stride larger than the kernel can leave the ceil rule's last
		// window wholly past the plane without padding: Reshape refuses
		// it for MAX (TestPoolSetupErrors); AVE keeps Caffe's -0 there.
		if g := tc.cfg; g.Method == PoolMax && pooledWindowsEmpty(tc.h, g.KernelH, g.StrideH, g.PadH, g.RoundFloor) ||
			pooledWindowsEmpty(tc.w, g.KernelW, g.StrideW, g.PadW, g.RoundFloor) {
			skipped++
			continue
		}
		bottom := tensor.NewBlob("x", tc.n, tc.c, tc.h, tc.w)
		for i := range bottom.Data {
			switch r.IntN(4) {
			case 0:
				bottom.Data[i] = levels[r.IntN(len(levels))]
			case 1:
				bottom.Data[i] = float32(r.IntN(3)) // ties
			default:
				bottom.Data[i] = float32(r.NormFloat64())
			}
		}
		var outs, masks, diffs [2][]float32
		var rows [2]bool
		var topDiff []float32
		for k, off := range []bool{true, false} {
			poolRowsOff = off
			top := tensor.NewBlob("y")
			l := newTestLayer(t, &tc.cfg, Context{Threads: 1 + k}, []*tensor.Blob{bottom}, []*tensor.Blob{top})
			pl := l.(*poolLayer)
			pl.workPerThread = 1
			rows[k] = pl.rows
			l.Forward([]*tensor.Blob{bottom}, []*tensor.Blob{top})
			if topDiff == nil {
				topDiff = make([]float32, len(top.Diff))
				for i := range topDiff {
					topDiff[i] = float32(r.NormFloat64())
				}
			}
			copy(top.Diff, topDiff)
			l.Backward([]*tensor.Blob{top}, []bool{true}, []*tensor.Blob{bottom})
			outs[k] = append([]float32(nil), top.Data...)
			for _, m := range pl.mask {
				masks[k] = append(masks[k], float32(m))
			}
			diffs[k] = append([]float32(nil), bottom.Diff...)
		}
		if rows[0] {
			t.Fatal("poolRowsOff did not turn the row kernels off")
		}
		if rows[1] {
			rowsSeen++
		}
		name := fmt.Sprintf("%+v on %dx%dx%dx%d (rows %v)", tc.cfg, tc.n, tc.c, tc.h, tc.w, rows[1])
		for i := range outs[0] {
			if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
				t.Fatalf("%s: top %d = %v, the loops %v", name, i, outs[1][i], outs[0][i])
			}
		}
		for i := range masks[0] {
			if masks[0][i] != masks[1][i] {
				t.Fatalf("%s: argmax %d = %v, the loops %v", name, i, masks[1][i], masks[0][i])
			}
		}
		for i := range diffs[0] {
			if math.Float32bits(diffs[0][i]) != math.Float32bits(diffs[1][i]) {
				t.Fatalf("%s: bottom diff %d = %v, the loops %v", name, i, diffs[0][i], diffs[1][i])
			}
		}
	}
	t.Logf("%d of %d geometries ran the row kernels (%d skipped)", rowsSeen, len(cases)-skipped, skipped)
	if rowsSeen < (len(cases)-skipped)/3 {
		t.Fatalf("only %d of %d cases ran the row kernels", rowsSeen, len(cases)-skipped)
	}
}

// pooledWindowsEmpty says some window along an axis holds no element.
func pooledWindowsEmpty(size, kernel, stride, pad int, floor bool) bool {
	out := pooledSizeRound(size, kernel, stride, pad, floor)
	s, e, _ := poolWindows(nil, nil, nil, out, size, kernel, stride, pad)
	for i := range s {
		if s[i] >= e[i] {
			return true
		}
	}
	return false
}
