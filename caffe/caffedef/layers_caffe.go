package caffedef

import (
	"math"

	"dsgd/data"
	"dsgd/engine/layers"
)

// This file decodes the layer types added for real Caffe model files
// (V1 nets, deploy nets, the model zoo): their *_param messages with
// Caffe's defaults.

// moreTypes lists the compute layer types of this file, sorted.
func moreTypes() []string {
	return append([]string{
		"AbsVal", "ArgMax", "BNLL", "Bias", "ContrastiveLoss", "Crop", "Deconvolution",
		"ELU", "Embed", "EuclideanLoss", "Exp", "HingeLoss", "InfogainLoss", "LSTM",
		"LSTMUnit", "Log", "MultinomialLogisticLoss", "PReLU", "Power", "RNN", "Reduction", "Reshape",
		"Python", "SigmoidCrossEntropyLoss", "Silence", "Slice", "Split", "Threshold", "Tile",
	}, append(extraTypes(), forkTypes()...)...)
}

// isLossType reports whether a layer type is a Caffe loss layer: its first
// top carries loss weight 1 by default, and Caffe gives it a top when the
// file names none.
func isLossType(t string) bool {
	switch t {
	case "SoftmaxWithLoss", "EuclideanLoss", "SigmoidCrossEntropyLoss", "ContrastiveLoss",
		"HingeLoss", "InfogainLoss", "MultinomialLogisticLoss", "MultiBoxLoss":
		return true
	}
	return false
}

// lossParam decodes loss_param: ignore_label and the normalization (or the
// legacy normalize), def when neither is given.
func lossParam(param func(string) *reader, def layers.LossNormalization) (ignore *int, norm layers.LossNormalization) {
	lp := param("loss_param")
	if f := lp.one("ignore_label"); f != nil {
		v := int(lp.intValue(f, math.MinInt32, maxI32))
		ignore = &v
	}
	norm = lossNorm(lp, def)
	lp.finish()
	return ignore, norm
}

// lossNorm consumes loss_param's normalization (or the legacy normalize:
// true VALID, false BATCH_SIZE); def when neither is given.
func lossNorm(lp *reader, def layers.LossNormalization) layers.LossNormalization {
	norm := def
	switch n, legacy := lp.one("normalization"), lp.one("normalize"); {
	case n != nil:
		norm = layers.LossNormalization(max(lp.enumValue(n, "VALID", "BATCH_SIZE", "FULL", "NONE"), 0))
	case legacy != nil:
		norm = layers.NormBatchSize
		if lp.boolValue(legacy) {
			norm = layers.NormValid
		}
	}
	return norm
}

// decodeMore decodes the type-specific part of a layer whose type is one
// of moreTypes.
func decodeMore(r *reader, l *LayerDef, param func(string) *reader) layers.Config {
	none := func(name string, c layers.Config) layers.Config {
		p := param(name)
		p.finish()
		return c
	}
	switch l.Type {
	case "LSTM", "RNN", "LSTMUnit":
		return decodeRecurrent(l, param)
	case "Python":
		return decodePython(l, param)
	case "BatchReindex", "Clip", "Filter", "HDF5Output", "Im2col", "MVN", "Parameter", "SPP", "Swish":
		return decodeExtra(l, param)
	case "Axpy", "BN", "ConvolutionDepthwise", "DepthwiseConvolution", "DetectionEvaluate", "DetectionOutput", "Interp", "MultiBoxLoss", "Normalize", "Permute", "PriorBox", "PSROIPooling", "ReLU6", "ROIPooling", "SeLu", "ShuffleChannel", "SmoothL1Loss", "Upsample":
		return decodeFork(l, param)
	case "AbsVal":
		return &layers.AbsValConfig{}
	case "BNLL":
		return &layers.BNLLConfig{}
	case "Split":
		return &layers.SplitConfig{}
	case "Silence":
		return &layers.SilenceConfig{}
	case "EuclideanLoss":
		return none("loss_param", &layers.EuclideanLossConfig{})
	case "MultinomialLogisticLoss":
		return none("loss_param", &layers.MultinomialLogisticLossConfig{})
	case "ELU":
		p := param("elu_param")
		c := &layers.ELUConfig{Alpha: p.float32("alpha", 1)}
		p.finish()
		return c
	case "Power":
		p := param("power_param")
		c := &layers.PowerConfig{Power: p.float32("power", 1), Scale: p.float32("scale", 1), Shift: p.float32("shift", 0)}
		p.finish()
		return c
	case "Exp", "Log":
		name := "exp_param"
		if l.Type == "Log" {
			name = "log_param"
		}
		p := param(name)
		base, scale, shift := p.float32("base", -1), p.float32("scale", 1), p.float32("shift", 0)
		if f := p.m.Get("base"); len(f) > 0 && base != -1 && base <= 0 && p.ok() {
			p.valueErr(f[0], "must be positive, or -1 for e; got %g", base)
		}
		p.finish()
		if l.Type == "Log" {
			return &layers.LogConfig{Base: base, Scale: scale, Shift: shift}
		}
		return &layers.ExpConfig{Base: base, Scale: scale, Shift: shift}
	case "Threshold":
		p := param("threshold_param")
		c := &layers.ThresholdConfig{Threshold: p.float32("threshold", 0)}
		p.finish()
		return c
	case "PReLU":
		p := param("prelu_param")
		def := defaultFiller()
		def.Value = 0.25
		c := &layers.PReLUConfig{Filler: filler(p, "filler", def), ChannelShared: p.bool("channel_shared", false)}
		p.finish()
		return c
	case "Slice":
		p := param("slice_param")
		c := &layers.SliceConfig{Axis: 1}
		axis, dim := p.one("axis"), p.one("slice_dim")
		switch {
		case axis != nil && dim != nil:
			p.d.failf(dim.Pos, "%s gives both axis and slice_dim; give axis only", p.ctx)
		case axis != nil:
			c.Axis = int(p.intValue(axis, math.MinInt32, maxI32))
		case dim != nil:
			c.Axis = int(p.intValue(dim, 0, maxI32))
		}
		c.SlicePoints = p.ints("slice_point", 1, maxI32)
		if n := len(c.SlicePoints); n > 0 && n != len(l.Top)-1 && p.ok() {
			p.d.failf(p.m.Get("slice_point")[0].Pos, "%s has %d slice_point for %d tops; give one fewer than the tops", p.ctx, n, len(l.Top))
		}
		p.finish()
		return c
	case "Reshape":
		p := param("reshape_param")
		c := &layers.ReshapeConfig{NumAxes: -1}
		if m := p.msg("shape"); m != nil {
			sr := p.d.reader(m, "shape in "+p.ctx)
			c.Shape = sr.ints("dim", -1, maxI32)
			sr.finish()
		}
		c.Axis = p.int("axis", 0, math.MinInt32, maxI32)
		c.NumAxes = p.int("num_axes", -1, -1, maxI32)
		p.finish()
		return c
	case "Crop":
		p := param("crop_param")
		c := &layers.CropConfig{Axis: p.int("axis", 2, math.MinInt32, maxI32), Offset: p.ints("offset", 0, maxI32)}
		p.finish()
		return c
	case "Tile":
		p := param("tile_param")
		c := &layers.TileConfig{Axis: p.int("axis", 1, math.MinInt32, maxI32), Tiles: p.int("tiles", 0, 1, maxI32)}
		if !p.has("tiles") && p.ok() {
			p.d.failf(p.m.Pos, "%s needs tiles", p.ctx)
		}
		p.finish()
		return c
	case "Reduction":
		p := param("reduction_param")
		c := &layers.ReductionConfig{
			Operation: layers.ReductionOp(1 + p.enum("operation", 0, "SUM", "ASUM", "SUMSQ", "MEAN")),
			Axis:      p.int("axis", 0, math.MinInt32, maxI32),
			Coeff:     p.float32("coeff", 1),
		}
		p.finish()
		return c
	case "ArgMax":
		p := param("argmax_param")
		c := &layers.ArgMaxConfig{OutMaxVal: p.bool("out_max_val", false), TopK: p.int("top_k", 1, 1, maxI32)}
		if f := p.one("axis"); f != nil {
			v := int(p.intValue(f, math.MinInt32, maxI32))
			c.Axis = &v
		}
		p.finish()
		return c
	case "Bias":
		p := param("bias_param")
		c := &layers.BiasConfig{
			Axis:    p.int("axis", 1, math.MinInt32, maxI32),
			NumAxes: p.int("num_axes", 1, -1, maxI32),
			Filler:  filler(p, "filler", defaultFiller()),
		}
		p.finish()
		return c
	case "Embed":
		p := param("embed_param")
		c := &layers.EmbedConfig{
			NumOutput: p.int("num_output", 0, 1, maxI32),
			InputDim:  p.int("input_dim", 0, 1, maxI32),
			BiasTerm:  p.bool("bias_term", true),
		}
		for _, need := range []string{"num_output", "input_dim"} {
			if !p.has(need) && p.ok() {
				p.d.failf(p.m.Pos, "%s needs %s", p.ctx, need)
			}
		}
		c.WeightFiller = filler(p, "weight_filler", defaultFiller())
		c.BiasFiller = filler(p, "bias_filler", defaultFiller())
		p.finish()
		return c
	case "Deconvolution":
		return &layers.DeconvolutionConfig{ConvolutionConfig: *decodeConv(param("convolution_param"))}
	case "SigmoidCrossEntropyLoss":
		c := &layers.SigmoidCrossEntropyLossConfig{}
		c.IgnoreLabel, c.Normalization = lossParam(param, layers.NormBatchSize)
		return c
	case "ContrastiveLoss":
		p := param("contrastive_loss_param")
		c := &layers.ContrastiveLossConfig{Margin: p.float32("margin", 1), LegacyVersion: p.bool("legacy_version", false)}
		p.finish()
		return c
	case "HingeLoss":
		p := param("hinge_loss_param")
		c := &layers.HingeLossConfig{Norm: layers.HingeNorm(1 + p.enum("norm", 0, "L1", "L2"))}
		p.finish()
		return c
	case "InfogainLoss":
		p := param("infogain_loss_param")
		c := &layers.InfogainLossConfig{Axis: p.int("axis", 1, math.MinInt32, maxI32)}
		if f := p.one("source"); f != nil && p.ok() {
			src := p.strValue(f)
			if len(l.Bottom) >= 3 {
				p.d.failf(f.Pos, "%s gives a source, but the layer's third bottom is the infogain matrix; give one or the other", p.ctx)
			} else if b, err := data.ReadBlobProto(src); err != nil {
				p.d.failf(f.ValuePos, "source in %s: %v", p.ctx, err)
			} else {
				c.H = b.Data
			}
		} else if len(l.Bottom) < 3 && p.ok() {
			p.d.failf(l.Pos, "%s needs the infogain matrix: infogain_loss_param { source: FILE.binaryproto } or a third bottom", r.ctx)
		}
		p.finish()
		c.IgnoreLabel, c.Normalization = lossParam(param, layers.NormValid)
		return c
	}
	panic("config: decodeMore called with unsupported type " + l.Type)
}

// decodeConv decodes a convolution_param (Convolution and Deconvolution).
func decodeConv(p *reader) *layers.ConvolutionConfig {
	c := &layers.ConvolutionConfig{
		NumOutput: p.int("num_output", 0, 1, maxI32),
		Group:     p.int("group", 1, 1, maxI32),
		BiasTerm:  p.bool("bias_term", true),
	}
	if p.ok() && !p.has("num_output") {
		p.d.failf(p.m.Pos, "%s needs num_output", p.ctx)
	}
	if p.ok() && c.NumOutput%c.Group != 0 {
		p.d.failf(p.m.Pos, "%s: num_output %d is not a multiple of group %d", p.ctx, c.NumOutput, c.Group)
	}
	if !decodeConvWindow(p, c) {
		return c
	}
	c.WeightFiller = filler(p, "weight_filler", defaultFiller())
	c.BiasFiller = filler(p, "bias_filler", defaultFiller())
	p.ignore("engine", "dsgd has one engine per layer", "DEFAULT", "CAFFE", "CUDNN")
	p.finish()
	return c
}

// decodeConvWindow decodes a convolution_param's window into c: kernel,
// stride, pad and dilation (one value, one per spatial axis, or the _h/_w
// pairs), axis and force_nd_im2col, as Convolution, Deconvolution and
// Im2col read them. It reports whether the fields were valid.
func decodeConvWindow(p *reader, c *layers.ConvolutionConfig) bool {
	// Caffe reads the repeated fields against the bottom's spatial axes
	// (those after axis), which only the net knows: keep them as given
	// for the layer to resolve at Setup, and fill the H/W fields where
	// they name a 2-D geometry.
	nd := &layers.ConvND{Axis: 1}
	c.ND = nd
	type rep struct {
		base, h, w string
		lo         int64
		vals       *[]int
		hw         *bool
	}
	reps := []rep{
		{"kernel_size", "kernel_h", "kernel_w", 1, &nd.Kernel, &nd.KernelHW},
		{"stride", "stride_h", "stride_w", 1, &nd.Stride, &nd.StrideHW},
		{"pad", "pad_h", "pad_w", 0, &nd.Pad, &nd.PadHW},
		{"dilation", "", "", 1, &nd.Dilation, nil},
	}
	// axes is the spatial-axis count some field fixed (given more than
	// once, or as _h/_w), and what fixed it.
	axes, by := 0, ""
	for _, r := range reps {
		fs := p.all(r.base)
		for _, f := range fs {
			*r.vals = append(*r.vals, int(p.intValue(f, r.lo, maxI32)))
		}
		n, pos := len(fs), p.m.Pos
		if n > 0 {
			pos = fs[n-1].Pos
		}
		if r.hw != nil && (p.has(r.h) || p.has(r.w)) {
			*r.hw, n = true, 2
			f := p.one(r.h)
			if f == nil {
				f = p.one(r.w)
			}
			if pos = f.Pos; len(fs) > 0 && p.ok() {
				p.d.failf(pos, "%s gives both %s and %s/%s; give one or the other", p.ctx, r.base, r.h, r.w)
			}
		}
		if n > 1 && axes == 0 {
			axes, by = n, r.base
		} else if n > 1 && n != axes && p.ok() {
			p.d.failf(pos, "%s gives %s for %d spatial axes but %s for %d; each is given once or once per spatial axis",
				p.ctx, by, axes, r.base, n)
		}
	}
	if !p.ok() {
		return false
	}
	if len(nd.Kernel) <= 2 && (len(nd.Kernel) > 0 || nd.KernelHW) {
		c.KernelH, c.KernelW = hw(p, "kernel_size", "kernel_h", "kernel_w", true, -1, 1)
	}
	if len(nd.Stride) <= 2 {
		c.StrideH, c.StrideW = hw(p, "stride", "stride_h", "stride_w", true, 1, 1)
	}
	if len(nd.Pad) <= 2 {
		c.PadH, c.PadW = hw(p, "pad", "pad_h", "pad_w", true, 0, 0)
	}
	switch ds := nd.Dilation; len(ds) {
	case 2:
		c.DilationH, c.DilationW = ds[0], ds[1]
	case 1:
		c.DilationH, c.DilationW = ds[0], ds[0]
	}
	nd.Axis = p.int("axis", 1, math.MinInt32, maxI32)
	nd.ForceND = p.bool("force_nd_im2col", false)
	// Single values on axis 1 mean the same for any number of spatial
	// axes: the H/W fields say it all.
	if nd.Axis == 1 && !nd.ForceND && len(nd.Kernel) == 1 && len(nd.Stride) <= 1 && len(nd.Pad) <= 1 &&
		len(nd.Dilation) <= 1 && !nd.KernelHW && !nd.StrideHW && !nd.PadHW {
		c.ND = nil
	}
	return p.ok()
}
