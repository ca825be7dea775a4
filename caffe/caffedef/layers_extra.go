package caffedef

import (
	"dsgd/data"
	"dsgd/engine/layers"
)

// extraTypes lists the layer types decodeExtra decodes: the last of
// BVLC Caffe's layers (issue 22).
func extraTypes() []string {
	return []string{"BatchReindex", "Clip", "Filter", "HDF5Output", "Im2col", "MVN", "Parameter", "SPP", "Swish"}
}

// decodeExtra decodes the type-specific part of a layer whose type is one
// of extraTypes, with Caffe's defaults; a bad value is an error naming its
// field and line.
func decodeExtra(l *LayerDef, param func(string) *reader) layers.Config {
	switch l.Type {
	case "BatchReindex":
		return &layers.BatchReindexConfig{}
	case "Filter":
		return &layers.FilterConfig{}
	case "Clip":
		p := param("clip_param")
		c := &layers.ClipConfig{Min: p.float32("min", 0), Max: p.float32("max", 0)}
		for _, need := range []string{"min", "max"} {
			if !p.has(need) && p.ok() {
				p.d.failf(p.m.Pos, "%s needs %s (a required field in Caffe)", p.ctx, need)
			}
		}
		if c.Min > c.Max && p.ok() {
			p.valueErr(p.m.Get("max")[0], "must not be less than min %g, got %g", c.Min, c.Max)
		}
		p.finish()
		return c
	case "Swish":
		p := param("swish_param")
		c := &layers.SwishConfig{Beta: p.float32("beta", 1)}
		p.finish()
		return c
	case "MVN":
		p := param("mvn_param")
		c := &layers.MVNConfig{
			NormalizeVariance: p.bool("normalize_variance", true),
			AcrossChannels:    p.bool("across_channels", false),
			Eps:               p.float32("eps", 1e-9),
		}
		if f := p.m.Get("eps"); len(f) > 0 && !(c.Eps >= 0) && p.ok() {
			p.valueErr(f[0], "must not be negative, got %g", c.Eps)
		}
		p.finish()
		return c
	case "Parameter":
		p := param("parameter_param")
		c := &layers.ParameterConfig{}
		if m := p.msg("shape"); m != nil {
			sr := p.d.reader(m, "shape in "+p.ctx)
			c.Shape = sr.ints("dim", 0, maxI32)
			sr.finish()
		}
		p.finish()
		return c
	case "SPP":
		p := param("spp_param")
		c := &layers.SPPConfig{PyramidHeight: p.int("pyramid_height", 0, 1, maxI32)}
		if !p.has("pyramid_height") && p.ok() {
			p.d.failf(p.m.Pos, "%s needs pyramid_height", p.ctx)
		}
		if f := p.one("pool"); f != nil && p.ok() {
			if f.Value == "STOCHASTIC" {
				p.d.failf(f.ValuePos, "unsupported value STOCHASTIC for pool in %s: dsgd pools with MAX or AVE", p.ctx)
			}
			c.Method = layers.PoolMethod(max(p.enumValue(f, "MAX", "AVE"), 0))
		}
		p.ignore("engine", "dsgd has one engine per layer", "DEFAULT", "CAFFE", "CUDNN")
		p.finish()
		return c
	case "Im2col":
		p := param("convolution_param")
		var w layers.ConvolutionConfig
		if !decodeConvWindow(p, &w) {
			return &layers.Im2colConfig{}
		}
		c := &layers.Im2colConfig{
			KernelH: w.KernelH, KernelW: w.KernelW, StrideH: w.StrideH, StrideW: w.StrideW,
			PadH: w.PadH, PadW: w.PadW, DilationH: max(w.DilationH, 1), DilationW: max(w.DilationW, 1),
			ND: w.ND,
		}
		if (c.ND == nil && c.KernelH <= 0 || c.ND != nil && len(c.ND.Kernel) == 0 && !c.ND.KernelHW) && p.ok() {
			p.d.failf(p.m.Pos, "%s needs kernel_size (or kernel_h and kernel_w)", p.ctx)
		}
		for _, name := range []string{"num_output", "bias_term", "group", "weight_filler", "bias_filler"} {
			p.ignore(name, "an Im2col layer reads only the window (kernel, stride, pad, dilation)")
		}
		p.ignore("engine", "dsgd has one engine per layer", "DEFAULT", "CAFFE", "CUDNN")
		p.finish()
		return c
	case "HDF5Output":
		p := param("hdf5_output_param")
		c := &layers.HDF5OutputConfig{FileName: p.str("file_name", ""), Write: data.WriteHDF5}
		if c.FileName == "" && p.ok() {
			if f := p.m.Get("file_name"); len(f) > 0 {
				p.valueErr(f[0], "must name a file")
			} else {
				p.d.failf(p.m.Pos, "%s needs file_name", p.ctx)
			}
		}
		p.finish()
		return c
	}
	panic("config: decodeExtra called with unsupported type " + l.Type)
}
