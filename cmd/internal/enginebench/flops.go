package enginebench

import (
	"slices"

	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// layerFlops counts the floating-point operations of one Convolution or
// InnerProduct layer (0, 0 for any other type) from its output shape top
// and its weight shape w: two per multiply-add. Forward is one product;
// backward is the weight gradient's product and, when dataGrad, the input
// gradient's, each as large as forward's.
//
// A convolution's output element is a dot product over its group's
// inputs and the kernel window: w is [out, in/group, kh, kw], so
// top.Count() x w.CountFrom(1) multiply-adds. An inner product's output
// element is a dot product over the K inputs: w is [out, K] (or [K, out]
// transposed), so top.Count() x w.Count() / out.
func layerFlops(typ string, top, w tensor.Shape, dataGrad bool) (fwd, bwd float64) {
	if len(top) == 0 || len(w) == 0 {
		return 0, 0
	}
	var macs float64
	switch typ {
	case "Convolution", "ConvolutionDepthwise", "DepthwiseConvolution":
		macs = float64(top.Count()) * float64(w.CountFrom(1))
	case "InnerProduct":
		out := top[len(top)-1]
		if out == 0 {
			return 0, 0
		}
		macs = float64(top.Count()) * float64(w.Count()) / float64(out)
	default:
		return 0, 0
	}
	fwd = 2 * macs
	bwd = 2 * macs
	if dataGrad {
		bwd += 2 * macs
	}
	return fwd, bwd
}

// iterFlops counts the FLOPs of one forward+backward pass of net, built
// from spec, with layerFlops: a layer's weights are its first parameter
// block, a layer that runs no Backward counts forward only, and a layer
// whose bottom is one of the net's inputs (the data) computes no input
// gradient, as model.Net's backward plan decides.
func iterFlops(spec model.Spec, net *model.Net) float64 {
	bottoms := map[string][]string{}
	for _, l := range spec.Layers {
		bottoms[l.Name] = l.Bottom
	}
	weights := map[string]tensor.Shape{}
	for _, b := range net.Blocks() {
		if _, ok := weights[b.Layer]; !ok {
			weights[b.Layer] = b.Shape
		}
	}
	var total float64
	for _, li := range net.Layers() {
		if len(li.Tops) == 0 {
			continue
		}
		bs := bottoms[li.Name]
		dataGrad := len(bs) > 0 && !slices.Contains(spec.Inputs, bs[0])
		fwd, bwd := layerFlops(li.Type, li.Tops[0], weights[li.Name], dataGrad)
		total += fwd
		if li.Backprop {
			total += bwd
		}
	}
	return total
}
