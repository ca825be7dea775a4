package layers

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// This file ports Caffe's convolution and deconvolution tests that need
// N-D convolution, a channel axis other than 1, force_nd_im2col or several
// bottom/top pairs (src/caffe/test/test_convolution_layer.cpp and
// test_deconvolution_layer.cpp), with Caffe's shapes, parameters and
// gradient-checker settings. The reference is refConvND, Caffe's
// caffe_conv generalised to any number of spatial axes and any channel
// axis.

// ndCfg is a convolution_param with the repeated fields as given.
func ndCfg(numOutput int, kernel, stride, pad, dila []int) *ConvolutionConfig {
	return &ConvolutionConfig{NumOutput: numOutput, Group: 1, BiasTerm: true,
		ND: &ConvND{Axis: 1, Kernel: kernel, Stride: stride, Pad: pad, Dilation: dila}}
}

// refConvND is a direct float64 convolution of x (shape, channel axis
// axis) by weight (+ bias) with the given per-spatial-axis geometry:
// Caffe's caffe_conv for any number of spatial axes.
func refConvND(x []float32, shape []int, axis int, weight, bias []float32, numOutput, group int, k, s, p, d []int) ([]float32, []int) {
	n := len(shape) - axis - 1
	num, ch, in := prod(shape[:axis]), shape[axis], shape[axis+1:]
	outSp := make([]int, n)
	for i := range n {
		outSp[i] = (in[i]+2*p[i]-(d[i]*(k[i]-1)+1))/s[i] + 1
	}
	outShape := append(append(slices.Clone(shape[:axis]), numOutput), outSp...)
	out := make([]float32, prod(outShape))
	og, kg := numOutput/group, ch/group
	kp, op, ip := prod(k), prod(outSp), prod(in)
	oidx, kidx := make([]int, n), make([]int, n)
	unravel := func(i int, dims, idx []int) {
		for a := len(dims) - 1; a >= 0; a-- {
			idx[a] = i % dims[a]
			i /= dims[a]
		}
	}
	for b := range num {
		for o := range numOutput {
			gi := o / og
			for opos := range op {
				unravel(opos, outSp, oidx)
				var sum float64
				if bias != nil {
					sum = float64(bias[o])
				}
				for c := range kg {
					for kpos := range kp {
						unravel(kpos, k, kidx)
						off, inside := 0, true
						for a := range n {
							xi := oidx[a]*s[a] - p[a] + kidx[a]*d[a]
							if xi < 0 || xi >= in[a] {
								inside = false
								break
							}
							off = off*in[a] + xi
						}
						if inside {
							w := weight[(o*kg+c)*kp+kpos]
							sum += float64(w) * float64(x[(b*ch+gi*kg+c)*ip+off])
						}
					}
				}
				out[(b*numOutput+o)*op+opos] = float32(sum)
			}
		}
	}
	return out, outShape
}

// caffeConvFixture is Caffe's ConvolutionLayerTest fixture: two 2×3×6×4
// bottoms of N(0, 1) noise; pairs says how many of them the test uses.
func caffeConvFixture(r *rand.Rand, pairs int, shape ...int) (bottom, top []*tensor.Blob) {
	if len(shape) == 0 {
		shape = []int{2, 3, 6, 4}
	}
	for i := range pairs {
		bottom = append(bottom, hlBlob(r, "bottom"+string(rune('0'+i)), shape...))
		top = append(top, tensor.NewBlob("top"+string(rune('0'+i))))
	}
	return bottom, top
}

// checkAgainstRef compares every top of a convolution layer with refConvND.
func checkAgainstRef(t *testing.T, l Layer, cfg *ConvolutionConfig, g *ndGeom, bottom, top []*tensor.Blob) {
	t.Helper()
	ps := l.Params()
	var bias []float32
	if cfg.BiasTerm {
		bias = ps[1].Blob.Data
	}
	for i := range bottom {
		want, shape := refConvND(bottom[i].Data, bottom[i].Shape, g.axis, ps[0].Blob.Data, bias, cfg.NumOutput, cfg.Group, g.kernel, g.stride, g.pad, g.dila)
		if !slices.Equal(top[i].Shape, shape) {
			t.Fatalf("top %d shape %v, want %v", i, top[i].Shape, shape)
		}
		l.Forward(bottom, top)
		hlClose(t, top[i].Name, top[i].Data, want, 1e-4)
	}
}

func mustResolve(t *testing.T, cfg *ConvolutionConfig, shape []int) *ndGeom {
	t.Helper()
	g, err := cfg.resolveND("Convolution", shape)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCaffeConvolutionND(t *testing.T) {
	one := []int{1}
	ctxs := []Context{{}, {Threads: 3}}
	forward := func(name string, cfg *ConvolutionConfig, pairs int, shape []int, check func(t *testing.T, l Layer, bottom, top []*tensor.Blob)) {
		t.Run("ConvolutionLayerTest."+name, func(t *testing.T) {
			for _, ctx := range ctxs {
				r := rand.New(rand.NewPCG(7, 8))
				bottom, top := caffeConvFixture(r, pairs, shape...)
				l := newTestLayer(t, cfg, ctx, bottom, top)
				l.Forward(bottom, top)
				if check != nil {
					check(t, l, bottom, top)
				} else {
					checkAgainstRef(t, l, cfg, mustResolve(t, cfg, bottom[0].Shape), bottom, top)
				}
			}
		})
	}
	t.Run("ConvolutionLayerTest.TestSetup", func(t *testing.T) {
		for _, group := range []int{1, 3} {
			cfg := ndCfg(4, []int{3}, []int{2}, nil, nil)
			if group == 3 {
				cfg.NumOutput, cfg.Group = 3, 3
			}
			bottom, top := caffeConvFixture(rand.New(rand.NewPCG(1, 1)), 2)
			newTestLayer(t, cfg, Context{}, bottom, top)
			for _, tb := range top {
				if want := []int{2, cfg.NumOutput, 2, 1}; !slices.Equal(tb.Shape, want) {
					t.Errorf("group %d: %s shape %v, want %v", group, tb.Name, tb.Shape, want)
				}
			}
		}
	})
	// Caffe's TestSimpleConvolution and TestDilatedConvolution run two
	// bottom/top pairs through one layer.
	forward("TestSimpleConvolution", ndCfg(4, []int{3}, []int{2}, nil, nil), 2, nil, nil)
	forward("TestDilatedConvolution", ndCfg(4, []int{3}, nil, nil, []int{2}), 2, []int{2, 3, 8, 7}, nil)
	zeroD := &ConvolutionConfig{NumOutput: 3, Group: 1, BiasTerm: true, ND: &ConvND{Axis: 3}}
	forward("Test0DConvolution", zeroD, 1, nil, func(t *testing.T, l Layer, bottom, top []*tensor.Blob) {
		if want := []int{2, 3, 6, 3}; !slices.Equal(top[0].Shape, want) {
			t.Fatalf("top shape %v, want %v", top[0].Shape, want)
		}
		w, b := l.Params()[0].Blob, l.Params()[1].Blob
		if want := []int{3, 4}; !slices.Equal(w.Shape, want) {
			t.Fatalf("weight shape %v, want %v", w.Shape, want)
		}
		want := make([]float32, top[0].Count())
		for n := range 36 {
			for d := range 3 {
				v := float64(b.Data[d])
				for bd := range 4 {
					v += float64(w.Data[d*4+bd]) * float64(bottom[0].Data[n*4+bd])
				}
				want[n*3+d] = float32(v)
			}
		}
		hlClose(t, "top", top[0].Data, want, 1e-4)
	})
	forward("TestSimple3DConvolution", ndCfg(4, []int{3}, []int{2}, nil, nil), 2, []int{2, 3, 5, 6, 4}, nil)
	forward("TestDilated3DConvolution", ndCfg(4, []int{3}, nil, nil, []int{2}), 2, []int{2, 3, 6, 7, 8}, nil)
	// Without ND, equal H and W fields are Caffe's single values, good
	// for any number of spatial axes.
	forward("SingleValuesWithoutND", &ConvolutionConfig{NumOutput: 4, Group: 1, BiasTerm: true, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
		2, []int{2, 3, 5, 6, 4}, nil)
	forward("Test1x1Convolution", ndCfg(4, one, one, nil, nil), 1, nil, nil)
	grp := ndCfg(3, []int{3}, []int{2}, nil, nil)
	grp.Group = 3
	forward("TestSimpleConvolutionGroup", grp, 1, nil, nil)
	// Beyond Caffe's tests: 1-D and 4-D convolutions, a channel axis
	// other than 1 (the axes before it batch-like), per-axis geometry.
	forward("Simple1DConvolution", ndCfg(4, []int{3}, []int{2}, []int{1}, []int{2}), 2, []int{2, 3, 11}, nil)
	forward("Simple4DConvolution", ndCfg(2, []int{2, 1, 3, 2}, []int{1, 2, 1, 2}, []int{0, 1, 1, 0}, nil), 1, []int{1, 2, 4, 3, 5, 4}, nil)
	ax2 := ndCfg(4, []int{3, 2}, []int{1, 2}, []int{1, 0}, nil)
	ax2.ND.Axis, ax2.Group = 2, 2
	forward("Axis2", ax2, 2, []int{2, 3, 4, 5, 6}, nil)
	axNeg := ndCfg(2, []int{2}, nil, nil, nil)
	axNeg.ND.Axis = -2
	forward("AxisNegative", axNeg, 1, []int{3, 2, 4, 5}, nil)

	grad := func(name string, cfg *ConvolutionConfig, pairs int, shape []int) {
		t.Run("ConvolutionLayerTest."+name, func(t *testing.T) {
			for _, ctx := range ctxs {
				bottom, top := caffeConvFixture(rand.New(rand.NewPCG(5, 6)), pairs, shape...)
				l := newTestLayer(t, cfg, ctx, bottom, top)
				checkGradients(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
			}
		})
	}
	grad("TestGradient", ndCfg(2, []int{3}, []int{2}, nil, nil), 2, nil)
	grad("TestDilatedGradient", ndCfg(2, []int{3}, nil, nil, []int{2}), 1, []int{2, 3, 5, 6})
	grad("TestGradient3D", ndCfg(2, []int{3}, []int{2}, nil, nil), 1, []int{2, 3, 5, 6, 4})
	grad("Test1x1Gradient", ndCfg(2, one, one, nil, nil), 2, nil)
	grpG := ndCfg(3, []int{3}, []int{2}, nil, nil)
	grpG.Group = 3
	grad("TestGradientGroup", grpG, 1, nil)
	grad("Gradient1D", ndCfg(2, []int{3}, []int{2}, []int{1}, []int{2}), 2, []int{2, 3, 9})
	grad("GradientAxis2", ax2, 2, []int{2, 3, 4, 5, 6})
	grad("Gradient3DForceND", func() *ConvolutionConfig {
		c := ndCfg(2, []int{2, 3, 2}, []int{2, 1, 1}, []int{1, 0, 1}, []int{1, 2, 1})
		c.ND.ForceND = true
		return c
	}(), 2, []int{2, 2, 4, 5, 3})
}

// ndAgainst2D is Caffe's TestNDAgainst2D: the same 2-D (de)convolution on
// the 2-D path and with force_nd_im2col gives the same top, bottom diff
// and weight diff. Caffe asks for equality; the 2-D path here may run
// oneDNN or blocked GEMMs that sum in another order, so the check allows
// float32 rounding.
func ndAgainst2D(t *testing.T, deconv bool, channels, numOutput int) {
	const kh, kw = 11, 13
	r := rand.New(rand.NewPCG(11, 12))
	x := hlBlob(r, "x", 15, channels, kh*2, kw*2)
	var weights, topDiff []float32
	var tops, dxs, dws [2][]float32
	for pass, force := range []bool{false, true} {
		cfg := ConvolutionConfig{NumOutput: numOutput, Group: 6, KernelH: kh, KernelW: kw,
			ND: &ConvND{Axis: 1, KernelHW: true, ForceND: force}}
		var c Config = &cfg
		if deconv {
			c = &DeconvolutionConfig{ConvolutionConfig: cfg}
		}
		top := tensor.NewBlob("top")
		bs, ts := []*tensor.Blob{x}, []*tensor.Blob{top}
		l := newTestLayer(t, c, Context{Threads: 2}, bs, ts)
		if _, nd := l.(interface{ Kernel() string }); nd && force != (l.(*convLayer).nd != nil) {
			t.Fatalf("force_nd_im2col %v: layer runs %s", force, l.(*convLayer).Kernel())
		}
		if len(l.Params()) != 1 {
			t.Fatalf("%d params, want 1 (no bias)", len(l.Params()))
		}
		w := l.Params()[0].Blob
		if pass == 0 {
			weights = slices.Clone(w.Data)
			topDiff = make([]float32, top.Count())
			for i := range topDiff {
				topDiff[i] = float32(r.NormFloat64())
			}
		}
		copy(w.Data, weights)
		w.ZeroDiff()
		clear(x.Diff)
		l.Forward(bs, ts)
		copy(top.Diff, topDiff)
		l.Backward(ts, []bool{true}, bs)
		tops[pass], dxs[pass], dws[pass] = slices.Clone(top.Data), slices.Clone(x.Diff), slices.Clone(w.Diff)
	}
	hlClose(t, "top", tops[1], tops[0], 1e-4)
	hlClose(t, "bottom diff", dxs[1], dxs[0], 1e-4)
	hlClose(t, "weight diff", dws[1], dws[0], 1e-4)
}

func TestCaffeConvolutionNDAgainst2D(t *testing.T) {
	t.Run("ConvolutionLayerTest.TestNDAgainst2D", func(t *testing.T) { ndAgainst2D(t, false, 18, 12) })
	t.Run("DeconvolutionLayerTest.TestNDAgainst2D", func(t *testing.T) { ndAgainst2D(t, true, 12, 18) })
}

func TestCaffeDeconvolutionND(t *testing.T) {
	dcfg := func(numOutput int, kernel, stride, pad []int) *DeconvolutionConfig {
		return &DeconvolutionConfig{ConvolutionConfig: *ndCfg(numOutput, kernel, stride, pad, nil)}
	}
	t.Run("DeconvolutionLayerTest.TestSetup", func(t *testing.T) {
		for _, group := range []int{1, 3} {
			cfg := dcfg(4, []int{3}, []int{2}, nil)
			if group == 3 {
				cfg.NumOutput, cfg.Group = 3, 3
			}
			bottom, top := caffeConvFixture(rand.New(rand.NewPCG(1, 1)), 2)
			newTestLayer(t, cfg, Context{}, bottom, top)
			for _, tb := range top {
				if want := []int{2, cfg.NumOutput, 13, 9}; !slices.Equal(tb.Shape, want) {
					t.Errorf("group %d: %s shape %v, want %v", group, tb.Name, tb.Shape, want)
				}
			}
		}
	})
	t.Run("DeconvolutionLayerTest.TestSimpleDeconvolution", func(t *testing.T) {
		for _, force := range []bool{false, true} {
			cfg := dcfg(4, []int{3}, []int{2}, nil)
			cfg.ND.ForceND = force
			bottom, top := caffeConvFixture(rand.New(rand.NewPCG(1, 1)), 2)
			l := newTestLayer(t, cfg, Context{Threads: 2}, bottom, top)
			ps := l.Params()
			for i := range ps[0].Blob.Data {
				ps[0].Blob.Data[i] = 1
			}
			for i := range ps[1].Blob.Data {
				ps[1].Blob.Data[i] = 0.1
			}
			for _, b := range bottom {
				for i := range b.Data {
					b.Data[i] = 1
				}
			}
			l.Forward(bottom, top)
			for _, tb := range top {
				want := make([]float32, tb.Count())
				H, W := tb.Shape[2], tb.Shape[3]
				for i := range want {
					h, w := i/W%H, i%W
					hOver := h%2 == 0 && h > 0 && h < H-1
					wOver := w%2 == 0 && w > 0 && w < W-1
					e := 3.1
					switch {
					case hOver && wOver:
						e += 9
					case hOver || wOver:
						e += 3
					}
					want[i] = float32(e)
				}
				hlClose(t, tb.Name, tb.Data, want, 1e-4)
			}
		}
	})
	grad := func(name string, cfg *DeconvolutionConfig, pairs int, shape []int) {
		t.Run("DeconvolutionLayerTest."+name, func(t *testing.T) {
			for _, ctx := range []Context{{}, {Threads: 3}} {
				bottom, top := caffeConvFixture(rand.New(rand.NewPCG(5, 6)), pairs, shape...)
				l := newTestLayer(t, cfg, ctx, bottom, top)
				checkGradients(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
			}
		})
	}
	grad("TestGradient", dcfg(1, []int{2}, []int{1}, nil), 2, nil)
	grad("TestGradient3D", dcfg(2, []int{2}, []int{2}, []int{1}), 1, []int{2, 3, 2, 3, 2})
	// Beyond Caffe's tests: several pairs through the N-D path, a 1-D
	// deconvolution with groups, and a channel axis other than 1.
	grad("Gradient3DTwoPairs", dcfg(2, []int{2, 3, 2}, []int{2, 1, 2}, []int{1, 0, 0}), 2, []int{2, 3, 2, 3, 2})
	g1 := dcfg(4, []int{3}, []int{2}, []int{1})
	g1.Group = 2
	grad("Gradient1DGroup", g1, 2, []int{2, 4, 5})
	a2 := dcfg(2, []int{2}, []int{2}, nil)
	a2.ND.Axis = 2
	grad("GradientAxis2", a2, 1, []int{2, 2, 3, 3, 2})
}

func TestConvNDErrors(t *testing.T) {
	x5 := func() []*tensor.Blob { return []*tensor.Blob{tensor.NewBlob("x", 2, 3, 4, 5, 6)} }
	tops := func(n int) []*tensor.Blob {
		var ts []*tensor.Blob
		for range n {
			ts = append(ts, tensor.NewBlob("y"))
		}
		return ts
	}
	cases := []struct {
		name   string
		cfg    *ConvolutionConfig
		bottom []*tensor.Blob
		want   string
	}{
		{"kernel count", ndCfg(2, []int{3, 3}, nil, nil, nil), x5(), "kernel_size must be given once, or once per spatial axis (given 2 times"},
		{"stride count", ndCfg(2, []int{3}, []int{1, 1}, nil, nil), x5(), "stride must be given once"},
		{"no kernel", ndCfg(2, nil, nil, nil, nil), x5(), "needs kernel_size"},
		{"axis out of range", func() *ConvolutionConfig { c := ndCfg(2, []int{1}, nil, nil, nil); c.ND.Axis = 5; return c }(), x5(), "axis 5 is out of range"},
		{"axis negative out of range", func() *ConvolutionConfig { c := ndCfg(2, []int{1}, nil, nil, nil); c.ND.Axis = -6; return c }(), x5(), "axis -6 is out of range"},
		{"kernel_h on 3-D", func() *ConvolutionConfig {
			c := ndCfg(2, nil, nil, nil, nil)
			c.KernelH, c.KernelW, c.ND.KernelHW = 3, 3, true
			return c
		}(), x5(), "kernel_h and kernel_w can only be used for 2-D"},
		{"zero kernel", ndCfg(2, []int{0}, nil, nil, nil), x5(), "kernel size must be positive"},
		{"rectangular 2-D config on 5-D", &ConvolutionConfig{NumOutput: 2, Group: 1, KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 1}, x5(), "4-D (NCHW)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, deconv := range []bool{false, true} {
				var c Config = tc.cfg
				if deconv {
					c = &DeconvolutionConfig{ConvolutionConfig: *tc.cfg}
				}
				l, err := c.Build(Context{})
				if err != nil {
					t.Fatal(err)
				}
				hlErrContains(t, l.Setup(tc.bottom, tops(len(tc.bottom))), tc.want)
			}
		})
	}
	t.Run("pairs of different shapes", func(t *testing.T) {
		for _, cfg := range []*ConvolutionConfig{
			ndCfg(2, []int{3}, nil, nil, nil),                                        // N-D path
			{NumOutput: 2, Group: 1, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1}, // 2-D path
		} {
			for _, deconv := range []bool{false, true} {
				var c Config = cfg
				if deconv {
					c = &DeconvolutionConfig{ConvolutionConfig: *cfg}
				}
				l, err := c.Build(Context{})
				if err != nil {
					t.Fatal(err)
				}
				bs := []*tensor.Blob{tensor.NewBlob("a", 2, 3, 6, 6), tensor.NewBlob("b", 2, 3, 6, 5)}
				if err := l.Setup(bs, tops(2)); err != nil {
					t.Fatal(err)
				}
				hlErrContains(t, l.Reshape(bs, tops(2)), `bottom 1 "b" has shape 2x3x6x5 (180), bottom 0 "a" has 2x3x6x6 (216)`)
			}
		}
	})
	t.Run("tops not matching bottoms", func(t *testing.T) {
		l, _ := ndCfg(2, []int{3}, nil, nil, nil).Build(Context{})
		hlErrContains(t, l.Setup(x5(), tops(2)), "as many tops as bottoms")
	})
}

// TestConvTwoPairs2DPath checks several pairs on the plain 2-D path
// (oneDNN or im2col + GEMM with its column cache): each top is its
// bottom's convolution, and the gradients (weights summed over pairs)
// pass Caffe's checker.
func TestConvTwoPairs2DPath(t *testing.T) {
	cfg := &ConvolutionConfig{NumOutput: 4, Group: 1, BiasTerm: true, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}
	for _, ctx := range []Context{{}, {Threads: 3}} {
		bottom, top := caffeConvFixture(rand.New(rand.NewPCG(3, 3)), 2)
		l := newTestLayer(t, cfg, ctx, bottom, top)
		if l.(*convLayer).nd != nil {
			t.Fatal("a 2-D NCHW config runs the N-D path")
		}
		l.Forward(bottom, top)
		checkAgainstRef(t, l, cfg, mustResolve(t, cfg, bottom[0].Shape), bottom, top)
		checkGradients(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
	}
}

// TestTorchConvFixtures compares N-D Convolution and Deconvolution (1-D,
// 3-D, 0-D, channel axis 2, force_nd_im2col, two bottom/top pairs) with
// PyTorch's float64 results on the same inputs and weights
// (testdata/torch_conv.json, made by scripts/torch_conv.py): tops, bottom
// diffs, and weight and bias diffs summed over the pairs.
func TestTorchConvFixtures(t *testing.T) {
	f := struct{ Cases []torchCase }{loadTorchFixture(t, "testdata/torch_conv.json")}
	nd := func(numOutput, group, axis int, bias bool, kernel, stride, pad, dila []int) *ConvolutionConfig {
		return &ConvolutionConfig{NumOutput: numOutput, Group: group, BiasTerm: bias,
			ND: &ConvND{Axis: axis, Kernel: kernel, Stride: stride, Pad: pad, Dilation: dila}}
	}
	de := func(c *ConvolutionConfig) Config { return &DeconvolutionConfig{ConvolutionConfig: *c} }
	force := nd(4, 1, 1, true, []int{3}, []int{2}, []int{1}, nil)
	force.ND.ForceND = true
	cases := map[string]caffeCase{
		"Conv1D":           {cfg: nd(6, 2, 1, true, []int{3}, []int{2}, []int{1}, []int{2})},
		"Conv3D":           {cfg: nd(4, 1, 1, true, []int{3, 2, 2}, []int{2, 1, 2}, []int{1, 0, 1}, []int{1, 2, 1})},
		"Conv3DGroup":      {cfg: nd(3, 3, 1, false, []int{2}, nil, nil, nil)},
		"Conv3DTwoPairs":   {cfg: nd(2, 1, 1, true, []int{2, 3, 2}, nil, []int{0, 1, 0}, nil), tops: 2},
		"Conv2DAxis2":      {cfg: nd(2, 2, 2, true, []int{3, 2}, []int{1, 2}, []int{1, 0}, nil)},
		"Conv2DForceND":    {cfg: force, tops: 2},
		"Conv0DAxis3":      {cfg: nd(3, 1, 3, true, nil, nil, nil, nil)},
		"Deconv3D":         {cfg: de(nd(2, 2, 1, true, []int{2, 3, 2}, []int{2, 1, 2}, []int{1, 0, 0}, []int{1, 1, 2}))},
		"Deconv1DTwoPairs": {cfg: de(nd(3, 1, 1, true, []int{3}, []int{2}, []int{1}, nil)), tops: 2},
		"Deconv2DAxis2":    {cfg: de(nd(2, 1, -3, true, []int{2}, []int{2}, nil, nil))},
	}
	if len(f.Cases) != len(cases) {
		t.Errorf("fixture has %d cases, want %d", len(f.Cases), len(cases))
	}
	for _, tc := range f.Cases {
		c, ok := cases[tc.Name]
		if !ok {
			t.Errorf("fixture %s has no Go case", tc.Name)
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			tc.checkForward(t, l, bottom, top)
			tc.checkBackward(t, l, bottom, top, true)
		})
	}
}

// TestConvTwoPairsOneDNN runs two pairs through a convolution oneDNN takes
// (channels filling its blocks): tops against the reference, gradients
// (summed over the pairs) against finite differences on sampled elements;
// on oneDNN's direct kernels and on its Winograd ones (where it has them).
// The objective is linear in every bottom and param of a convolution, so a
// central difference is exact at any step: Winograd's takes a large one,
// since its forward rounding (1e-5 of an output, against the direct
// kernels' 1e-7) divided by a 1e-2 step swamps the check.
func TestConvTwoPairsOneDNN(t *testing.T) {
	if !dnnlReady() {
		t.Skip("oneDNN is not available in this build")
	}
	defer func(w bool) { dnnlWinograd = w }(dnnlWinograd)
	cfg := &ConvolutionConfig{NumOutput: 16, Group: 1, BiasTerm: true, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	for _, wino := range []bool{false, true} {
		SetWinograd(wino)
		for _, ctx := range []Context{{}, {Threads: 2}} {
			bottom, top := caffeConvFixture(rand.New(rand.NewPCG(4, 4)), 2, 2, 16, 5, 5)
			l := newTestLayer(t, cfg, ctx, bottom, top)
			if !l.(*convLayer).dn.on {
				t.Skipf("oneDNN does not take the geometry: %s", l.(*convLayer).Kernel())
			}
			k := l.(*convLayer).Kernel()
			if !wino && strings.Contains(k, "wino") {
				t.Fatalf("Winograd off, but the convolution runs %s", k)
			}
			step := 1e-2
			if strings.Contains(strings.ToLower(k), "wino") {
				step = 1
			}
			l.Forward(bottom, top)
			checkAgainstRef(t, l, cfg, mustResolve(t, cfg, bottom[0].Shape), bottom, top)
			checkGradients(t, l, bottom, top, gradCheck{Step: step, Threshold: 1e-3, MaxPerBlob: 60, Seed: 1})
		}
	}
}

// TestIm2colNDAgainst2D checks im2colND on 2-D geometries against the 2-D
// im2col and col2im: the same column matrix, and the same image from it
// (padding, stride and dilation on both axes).
func TestIm2colNDAgainst2D(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct{ c, h, w, kh, kw, sh, sw, ph, pw, dh, dw int }{
		{3, 6, 4, 3, 3, 2, 2, 0, 0, 1, 1},
		{2, 7, 9, 3, 2, 1, 3, 1, 2, 2, 1},
		{1, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1},
		{2, 4, 6, 2, 3, 2, 1, 1, 1, 3, 2},
	} {
		g := convGeom{c: tc.c, h: tc.h, w: tc.w, kh: tc.kh, kw: tc.kw, sh: tc.sh, sw: tc.sw, ph: tc.ph, pw: tc.pw, dh: tc.dh, dw: tc.dw}
		eh, ew := g.extent()
		g.oh, g.ow = (g.h+2*g.ph-eh)/g.sh+1, (g.w+2*g.pw-ew)/g.sw+1
		g.initRanges()
		l := &ndConvLayer{g: ndGeom{kernel: []int{tc.kh, tc.kw}, stride: []int{tc.sh, tc.sw}, pad: []int{tc.ph, tc.pw}, dila: []int{tc.dh, tc.dw}},
			imSp: []int{tc.h, tc.w}, colSp: []int{g.oh, g.ow}}
		img := hlBlob(r, "img", tc.c, tc.h, tc.w).Data
		want := make([]float32, g.colRows()*g.colCols())
		got := make([]float32, len(want))
		im2col(want, img, &g, g.colCols())
		l.im2colND(img, got, tc.c, make([]int, 4), true)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: im2colND differs from im2col", tc)
		}
		back2D, backND := make([]float32, len(img)), make([]float32, len(img))
		col2im(back2D, want, &g, g.colCols())
		l.im2colND(backND, want, tc.c, make([]int, 4), false)
		hlClose(t, "col2im", backND, back2D, 1e-6)
	}
}

// TestCaffeSobelConvolution is Caffe's TestSobelConvolution: the 3x3
// Sobel G_x filter (stride 2) equals its separable [1 2 1]ᵀ (kernel_h 3,
// kernel_w 1, stride_h 2) then [-1 0 1] (kernel_h 1, kernel_w 3,
// stride_w 2) convolutions; run on the 2-D path and with force_nd_im2col.
func TestCaffeSobelConvolution(t *testing.T) {
	t.Run("ConvolutionLayerTest.TestSobelConvolution", func(t *testing.T) {
		for _, force := range []bool{false, true} {
			r := rand.New(rand.NewPCG(13, 13))
			x := hlBlob(r, "bottom", 2, 3, 6, 4)
			run := func(kh, kw, sh, sw int, weights []float32, in *tensor.Blob) *tensor.Blob {
				cfg := &ConvolutionConfig{NumOutput: 1, Group: 1, KernelH: kh, KernelW: kw, StrideH: sh, StrideW: sw,
					ND: &ConvND{Axis: 1, KernelHW: true, StrideHW: true, ForceND: force}}
				out := tensor.NewBlob("top")
				bs, ts := []*tensor.Blob{in}, []*tensor.Blob{out}
				l := newTestLayer(t, cfg, Context{}, bs, ts)
				w := l.Params()[0].Blob
				if len(w.Data) != len(weights) {
					t.Fatalf("%dx%d weight has %d values, want %d", kh, kw, len(w.Data), len(weights))
				}
				copy(w.Data, weights)
				l.Forward(bs, ts)
				return out
			}
			var sobel, col []float32
			for range 3 {
				sobel = append(sobel, -1, 0, 1, -2, 0, 2, -1, 0, 1)
				col = append(col, 1, 2, 1)
			}
			full := run(3, 3, 2, 2, sobel, x)
			sep := run(1, 3, 1, 2, []float32{-1, 0, 1}, run(3, 1, 2, 1, col, x))
			if !slices.Equal(full.Shape, sep.Shape) {
				t.Fatalf("force_nd_im2col %v: full %v, separable %v", force, full.Shape, sep.Shape)
			}
			hlClose(t, "sobel", sep.Data, full.Data, 1e-4)
		}
	})
}
