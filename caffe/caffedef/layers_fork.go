package caffedef

import (
	"math"

	"dsgd/engine/layers"
)

// forkTypes lists the layer types of Caffe forks that dsgd runs, decoded by
// decodeFork with the fork's field names and defaults; forkLayers keeps
// the refusal for the rest.
func forkTypes() []string {
	return []string{"Axpy", "BN", "ConvolutionDepthwise", "DepthwiseConvolution", "Interp", "Normalize", "Permute", "ReLU6", "ShuffleChannel", "Upsample"}
}

// decodeFork decodes the type-specific part of a layer whose type is one
// of forkTypes. Each fork's *_param message is read as its caffe.proto
// declares it (named in the layer's config); a bad value is an error
// naming its field and line.
func decodeFork(l *LayerDef, param func(string) *reader) layers.Config {
	switch l.Type {
	case "ConvolutionDepthwise", "DepthwiseConvolution":
		return decodeDepthwise(l.Type, param("convolution_param"))
	case "ReLU6":
		p := param("relu6_param")
		c := &layers.ReLU6Config{NegativeSlope: p.float32("negative_slope", 0)}
		p.finish()
		return c
	case "Axpy":
		// SENet's Axpy has no parameter message; the layer checks its
		// three bottoms when the net is built.
		return &layers.AxpyConfig{}
	case "ShuffleChannel":
		p := param("shuffle_channel_param")
		c := &layers.ShuffleChannelConfig{Group: p.int("group", 1, 1, maxI32)}
		p.finish()
		return c
	case "Permute":
		p := param("permute_param")
		c := &layers.PermuteConfig{}
		for _, f := range p.all("order") {
			v := int(p.intValue(f, 0, maxI32))
			for _, o := range c.Order {
				if o == v && p.ok() {
					p.valueErr(f, "axis %d is given twice", v)
				}
			}
			c.Order = append(c.Order, v)
		}
		p.finish()
		return c
	case "Normalize":
		p := param("norm_param")
		one := defaultFiller()
		one.Value = 1
		c := &layers.NormalizeConfig{
			AcrossSpatial: p.bool("across_spatial", true),
			ChannelShared: p.bool("channel_shared", true),
			ScaleFiller:   filler(p, "scale_filler", one),
		}
		if f := p.one("eps"); f != nil {
			c.Eps = float32(p.floatValue(f, true))
			if c.Eps < 0 && p.ok() {
				p.valueErr(f, "must not be negative, got %g", c.Eps)
			}
		} else {
			c.Eps = 1e-10
		}
		p.finish()
		return c
	case "Interp":
		p := param("interp_param")
		c := &layers.InterpConfig{}
		// PSPNet's proto gives the factors default 1 and the sizes 0, but
		// the layer reads which fields are present: 0 here means absent.
		for _, f := range []struct {
			name string
			dst  *int
		}{{"height", &c.Height}, {"width", &c.Width}, {"zoom_factor", &c.ZoomFactor}, {"shrink_factor", &c.ShrinkFactor}} {
			if fv := p.one(f.name); fv != nil {
				*f.dst = int(p.intValue(fv, 1, maxI32))
			}
		}
		c.PadBeg = p.int("pad_beg", 0, math.MinInt32, 0)
		c.PadEnd = p.int("pad_end", 0, math.MinInt32, 0)
		switch {
		case !p.ok():
		case (c.Height == 0) != (c.Width == 0) && c.ZoomFactor == 0 && c.ShrinkFactor == 0:
			p.d.failf(p.m.Pos, "%s gives one of height and width; give both", p.ctx)
		case c.Height == 0 && c.Width == 0 && c.ZoomFactor == 0 && c.ShrinkFactor == 0:
			p.d.failf(p.m.Pos, "%s needs the output size: zoom_factor, shrink_factor, or height and width", p.ctx)
		}
		if c.Height == 0 || c.Width == 0 {
			// Read only with both (and neither factor alone).
			c.Height, c.Width = 0, 0
		}
		if len(l.Bottom) != 1 && p.ok() {
			p.d.failf(l.Pos, "layer '%s' (Interp) takes 1 bottom, got %d: dsgd follows PSPNet's Interp, which sizes its output from interp_param, not from a second bottom", l.Name, len(l.Bottom))
		}
		p.finish()
		return c
	case "Upsample":
		return decodeUpsample(l, param("upsample_param"))
	case "BN":
		return decodeBN(param("bn_param"))
	}
	panic("config: decodeFork called with unsupported type " + l.Type)
}

// decodeDepthwise decodes the convolution_param of a fork's depthwise
// convolution: Convolution's fields, but num_output and group optional
// (the bottom's channel count when absent, which only the net knows).
func decodeDepthwise(typ string, p *reader) *layers.DepthwiseConvolutionConfig {
	c := &layers.DepthwiseConvolutionConfig{Fork: typ}
	c.Conv.NumOutput = p.int("num_output", 0, 1, maxI32)
	c.Conv.Group = p.int("group", 0, 1, maxI32)
	c.Conv.BiasTerm = p.bool("bias_term", true)
	if !decodeConvWindow(p, &c.Conv) {
		return c
	}
	if nd := c.Conv.ND; (nd == nil && c.Conv.KernelH <= 0 || nd != nil && len(nd.Kernel) == 0 && !nd.KernelHW) && p.ok() {
		p.d.failf(p.m.Pos, "%s needs kernel_size (or kernel_h and kernel_w)", p.ctx)
	}
	c.Conv.WeightFiller = filler(p, "weight_filler", defaultFiller())
	c.Conv.BiasFiller = filler(p, "bias_filler", defaultFiller())
	p.ignore("engine", "dsgd has one engine per layer", "DEFAULT", "CAFFE", "CUDNN")
	p.finish()
	return c
}

// decodeUpsample decodes SegNet's upsample_param: the output size as
// upsample_h and upsample_w, or (deprecated in the fork) as scale, or
// scale_h and scale_w, with pad_out_h and pad_out_w.
func decodeUpsample(l *LayerDef, p *reader) *layers.UpsampleConfig {
	c := &layers.UpsampleConfig{}
	uh, uw := p.one("upsample_h"), p.one("upsample_w")
	scale, sh, sw := p.one("scale"), p.one("scale_h"), p.one("scale_w")
	c.PadOutH, c.PadOutW = p.bool("pad_out_h", false), p.bool("pad_out_w", false)
	switch {
	case !p.ok():
	case (uh == nil) != (uw == nil):
		p.d.failf(p.m.Pos, "%s gives one of upsample_h and upsample_w; give both", p.ctx)
	case uh != nil:
		// The fork reads the size and nothing else.
		c.UpsampleH, c.UpsampleW = int(p.intValue(uh, 2, maxI32)), int(p.intValue(uw, 2, maxI32))
		c.PadOutH, c.PadOutW = false, false
	case (sh == nil) != (sw == nil):
		p.d.failf(p.m.Pos, "%s gives one of scale_h and scale_w; give both", p.ctx)
	case sh != nil && scale != nil:
		p.d.failf(scale.Pos, "%s gives scale and scale_h/scale_w; give one or the other", p.ctx)
	case sh != nil:
		c.ScaleH, c.ScaleW = int(p.intValue(sh, 2, maxI32)), int(p.intValue(sw, 2, maxI32))
	default:
		c.ScaleH = 2
		if scale != nil {
			c.ScaleH = int(p.intValue(scale, 2, maxI32))
		}
		c.ScaleW = c.ScaleH
	}
	if c.UpsampleH == 0 && p.ok() {
		for _, f := range []struct {
			on    bool
			name  string
			scale int
		}{{c.PadOutH, "pad_out_h", c.ScaleH}, {c.PadOutW, "pad_out_w", c.ScaleW}} {
			if f.on && f.scale != 2 && p.ok() {
				p.valueErr(p.m.Get(f.name)[0], "needs scale 2 (the output size is ill-defined otherwise, as the fork says), got %d", f.scale)
			}
		}
	}
	if len(l.Bottom) != 2 && p.ok() {
		p.d.failf(l.Pos, "layer '%s' (Upsample) takes 2 bottoms, the values and the mask of a MAX Pooling, got %d: dsgd follows SegNet's Upsample (max-unpooling); the one-bottom Upsample of darknet2caffe's YOLOv3 ports is another layer", l.Name, len(l.Bottom))
	}
	p.finish()
	return c
}

// decodeBN decodes PSPNet's bn_param (hszhao/PSPNet's caffe.proto). SegNet's
// fork has another layer named BN, with another bn_param; its fields are
// refused naming it.
func decodeBN(p *reader) *layers.PSPNetBNConfig {
	for _, f := range p.m.Fields {
		if name := f.Name; (name == "bn_mode" || name == "scale_filler" || name == "shift_filler") && p.ok() {
			p.d.failf(f.Pos, "%s: %s is a field of SegNet's BN (bn_param { bn_mode scale_filler shift_filler }), which dsgd does not run; "+
				"dsgd runs PSPNet's BN (bn_param { slope_filler bias_filler momentum eps frozen }). "+
				"SegNet's LEARN mode is BatchNorm { use_global_stats: false } followed by Scale { bias_term: true }; its INFERENCE mode is that Scale alone", p.ctx, name)
		}
	}
	c := &layers.PSPNetBNConfig{
		SlopeFiller: filler(p, "slope_filler", defaultFiller()),
		BiasFiller:  filler(p, "bias_filler", defaultFiller()),
		Momentum:    p.float32("momentum", 0.9),
		Frozen:      p.bool("frozen", false),
		Eps:         1e-5,
	}
	if f := p.one("eps"); f != nil {
		c.Eps = float32(p.floatValue(f, true))
		if !(c.Eps > 0) && p.ok() {
			p.valueErr(f, "must be positive, got %g", c.Eps)
		}
	}
	p.ignore("engine", "dsgd has one engine per layer", "DEFAULT", "CAFFE", "CUDNN")
	p.finish()
	return c
}
