package layers

import (
	"testing"

	"dsgd/engine/tensor"
)

// caffeConvRef is Caffe's caffe_conv reference (test_convolution_layer.cpp):
// a direct 2-D convolution with stride, pad, dilation and groups.
func caffeConvRef(x *tensor.Blob, c *ConvolutionConfig, weight, bias []float32) []float32 {
	n, ch, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	dh, dw := max(c.DilationH, 1), max(c.DilationW, 1)
	oh := (h+2*c.PadH-(dh*(c.KernelH-1)+1))/c.StrideH + 1
	ow := (w+2*c.PadW-(dw*(c.KernelW-1)+1))/c.StrideW + 1
	g := max(c.Group, 1)
	cg, mg := ch/g, c.NumOutput/g
	out := make([]float32, n*c.NumOutput*oh*ow)
	for in := range n {
		for o := range c.NumOutput {
			gi := o / mg
			for y := range oh {
				for xx := range ow {
					var s float64
					for k := range cg {
						for p := range c.KernelH {
							for q := range c.KernelW {
								iy, ix := y*c.StrideH-c.PadH+p*dh, xx*c.StrideW-c.PadW+q*dw
								if iy < 0 || iy >= h || ix < 0 || ix >= w {
									continue
								}
								s += float64(x.Data[((in*ch+gi*cg+k)*h+iy)*w+ix]) *
									float64(weight[((o*cg+k)*c.KernelH+p)*c.KernelW+q])
							}
						}
					}
					if bias != nil {
						s += float64(bias[o])
					}
					out[((in*c.NumOutput+o)*oh+y)*ow+xx] = float32(s)
				}
			}
		}
	}
	return out
}

// TestCaffePortConvolution2D ports the 2-D, single-bottom tests of Caffe's
// test_convolution_layer.cpp. (The two-bottom, N-D and Sobel tests, and
// test_deconvolution_layer.cpp's, are in caffe_conv_test.go.)
func TestCaffePortConvolution2D(t *testing.T) {
	gauss := Filler{Type: FillGaussian, Std: 1}
	bias01 := Filler{Type: FillConstant, Value: 0.1}
	forward := func(t *testing.T, cfg *ConvolutionConfig, shape ...int) {
		r := caffeRand()
		bottom := []*tensor.Blob{caffeGaussian(r, 0, 1, shape...)}
		top := cpTops(1)
		l := caffeLayer(t, cfg, Train, bottom, top)
		l.Forward(bottom, top)
		var b []float32
		if cfg.BiasTerm {
			b = l.Params()[1].Blob.Data
		}
		cpNear(t, "top", top[0].Data, caffeConvRef(bottom[0], cfg, l.Params()[0].Blob.Data, b), 1e-4)
	}
	gradient := func(t *testing.T, cfg *ConvolutionConfig, shape ...int) {
		r := caffeRand()
		bottom := []*tensor.Blob{caffeGaussian(r, 0, 1, shape...)}
		top := cpTops(1)
		l := caffeLayer(t, cfg, Train, bottom, top)
		caffeGrad(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-3})
	}
	t.Run("ConvolutionLayerTest.Test1x1Convolution", func(t *testing.T) {
		forward(t, &ConvolutionConfig{NumOutput: 4, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1,
			Group: 1, BiasTerm: true, WeightFiller: gauss, BiasFiller: bias01}, 2, 3, 6, 4)
	})
	t.Run("ConvolutionLayerTest.TestSimpleConvolutionGroup", func(t *testing.T) {
		forward(t, &ConvolutionConfig{NumOutput: 3, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2,
			Group: 3, BiasTerm: true, WeightFiller: gauss, BiasFiller: bias01}, 2, 3, 6, 4)
	})
	t.Run("ConvolutionLayerTest.TestDilatedGradient", func(t *testing.T) {
		gradient(t, &ConvolutionConfig{NumOutput: 2, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1,
			DilationH: 2, DilationW: 2, Group: 1, BiasTerm: true, WeightFiller: gauss, BiasFiller: gauss}, 2, 3, 5, 6)
	})
	t.Run("ConvolutionLayerTest.TestGradientGroup", func(t *testing.T) {
		gradient(t, &ConvolutionConfig{NumOutput: 3, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2,
			Group: 3, BiasTerm: true, WeightFiller: gauss, BiasFiller: gauss}, 2, 3, 6, 4)
	})
}
