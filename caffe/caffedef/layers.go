package caffedef

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"dsgd/caffe/prototxt"
	"dsgd/engine/layers"
)

// computeTypes lists the compute layer types dsgd supports, sorted.
func computeTypes() []string {
	t := append([]string{
		"Accuracy", "BatchNorm", "Concat", "Convolution", "Dropout", "Eltwise",
		"Flatten", "InnerProduct", "LRN", "Pooling", "ReLU", "Scale", "Sigmoid",
		"Softmax", "SoftmaxWithLoss", "TanH",
	}, moreTypes()...)
	slices.Sort(t)
	return t
}

// supportedTypes lists every layer type, data layers included.
func supportedTypes() string {
	return "Data, ImageData, HDF5Data, DummyData, Input, MemoryData, " + strings.Join(computeTypes(), ", ")
}

const maxI32 = math.MaxInt32

// decodeCompute decodes the type-specific part of a compute layer whose
// type is one of computeTypes.
func decodeCompute(r *reader, l *LayerDef) layers.Config {
	// param opens the layer's *_param message; a missing one reads as
	// empty, so every default applies.
	param := func(name string) *reader {
		m := r.msg(name)
		if m == nil {
			m = &prototxt.Message{Pos: l.Pos}
		}
		return r.d.reader(m, name+" of "+r.ctx)
	}
	const engine = "dsgd has one engine per layer"
	engines := []string{"DEFAULT", "CAFFE", "CUDNN"}
	switch l.Type {
	case "Convolution":
		return decodeConv(param("convolution_param"))
	case "Pooling":
		p := param("pooling_param")
		c := &layers.PoolingConfig{GlobalPooling: p.bool("global_pooling", false)}
		if f := p.one("pool"); f != nil && p.ok() {
			c.Method = layers.PoolMethod(max(p.enumValue(f, "MAX", "AVE", "STOCHASTIC"), 0))
		}
		hasKernel := p.has("kernel_size") || p.has("kernel_h") || p.has("kernel_w")
		switch {
		case c.GlobalPooling && hasKernel:
			p.d.failf(p.m.Pos, "%s: with global_pooling the kernel size must not be given", p.ctx)
		case c.GlobalPooling:
			c.StrideH, c.StrideW = hw(p, "stride", "stride_h", "stride_w", false, 1, 1)
			c.PadH, c.PadW = hw(p, "pad", "pad_h", "pad_w", false, 0, 0)
			if (c.StrideH != 1 || c.StrideW != 1 || c.PadH != 0 || c.PadW != 0) && p.ok() {
				p.d.failf(p.m.Pos, "%s: global_pooling needs stride 1 and pad 0", p.ctx)
			}
		default:
			c.KernelH, c.KernelW = hw(p, "kernel_size", "kernel_h", "kernel_w", false, -1, 1)
			c.StrideH, c.StrideW = hw(p, "stride", "stride_h", "stride_w", false, 1, 1)
			c.PadH, c.PadW = hw(p, "pad", "pad_h", "pad_w", false, 0, 0)
			switch {
			case !p.ok():
			case (c.PadH != 0 || c.PadW != 0) && c.Method == layers.PoolStochastic:
				p.d.failf(p.m.Pos, "%s: STOCHASTIC pooling takes no pad (Caffe pads only MAX and AVE), got %dx%d",
					p.ctx, c.PadH, c.PadW)
			case c.PadH >= c.KernelH || c.PadW >= c.KernelW:
				p.d.failf(p.m.Pos, "%s: pad %dx%d must be smaller than the kernel %dx%d",
					p.ctx, c.PadH, c.PadW, c.KernelH, c.KernelW)
			}
		}
		c.RoundFloor = p.enum("round_mode", 0, "CEIL", "FLOOR") == 1
		if f := p.one("ceil_mode"); f != nil && p.ok() {
			// Not BVLC's: forks (DenseNet-Caffe's, Caffe for Windows')
			// spell round_mode as a bool; read it, saying so.
			switch v := p.boolValue(f); {
			case !p.ok():
			case p.has("round_mode"):
				p.d.failf(f.Pos, "%s gives both round_mode and ceil_mode (a Caffe fork's spelling of it); give one", p.ctx)
			default:
				c.RoundFloor = !v
				mode := "CEIL"
				if !v {
					mode = "FLOOR"
				}
				p.d.warnings = append(p.d.warnings, warning{f.Pos, fmt.Sprintf("%s: ceil_mode in %s is a Caffe fork's field, which BVLC Caffe refuses; read as round_mode: %s", f.Pos, p.ctx, mode)})
			}
		}
		if len(l.Top) == 2 && c.Method != layers.PoolMax && p.ok() {
			p.d.failf(l.Pos, "layer '%s' has 2 tops; only MAX pooling has a second (the argmax mask)", l.Name)
		}
		p.ignore("engine", engine, engines...)
		p.finish()
		return c
	case "InnerProduct":
		p := param("inner_product_param")
		c := &layers.InnerProductConfig{
			NumOutput: p.int("num_output", 0, 1, maxI32),
			BiasTerm:  p.bool("bias_term", true),
			Axis:      p.int("axis", 1, math.MinInt32, maxI32),
			Transpose: p.bool("transpose", false),
		}
		if p.ok() && !p.has("num_output") {
			p.d.failf(p.m.Pos, "%s needs num_output", p.ctx)
		}
		c.WeightFiller = filler(p, "weight_filler", defaultFiller())
		c.BiasFiller = filler(p, "bias_filler", defaultFiller())
		p.finish()
		return c
	case "ReLU":
		p := param("relu_param")
		c := &layers.ReLUConfig{NegativeSlope: p.float32("negative_slope", 0)}
		p.ignore("engine", engine, engines...)
		p.finish()
		return c
	case "Sigmoid":
		p := param("sigmoid_param")
		p.ignore("engine", engine, engines...)
		p.finish()
		return &layers.SigmoidConfig{}
	case "TanH":
		p := param("tanh_param")
		p.ignore("engine", engine, engines...)
		p.finish()
		return &layers.TanHConfig{}
	case "Dropout":
		p := param("dropout_param")
		c := &layers.DropoutConfig{Ratio: 0.5}
		if f := p.one("dropout_ratio"); f != nil {
			c.Ratio = float32(p.floatValue(f, true))
			if (c.Ratio < 0 || c.Ratio >= 1) && p.ok() {
				p.valueErr(f, "must be in [0, 1), got %s", f.Value)
			}
		}
		p.finish()
		return c
	case "LRN":
		p := param("lrn_param")
		c := &layers.LRNConfig{
			Alpha:      p.float32("alpha", 1),
			Beta:       p.float32("beta", 0.75),
			K:          p.float32("k", 1),
			NormRegion: layers.LRNRegion(p.enum("norm_region", 0, "ACROSS_CHANNELS", "WITHIN_CHANNEL")),
		}
		c.LocalSize = 5
		if f := p.one("local_size"); f != nil {
			c.LocalSize = int(p.intValue(f, 1, maxI32))
			if c.LocalSize%2 == 0 && p.ok() {
				p.valueErr(f, "must be odd, got %d", c.LocalSize)
			}
		}
		p.ignore("engine", engine, engines...)
		p.finish()
		return c
	case "Concat":
		p := param("concat_param")
		c := &layers.ConcatConfig{Axis: 1}
		axis, dim := p.one("axis"), p.one("concat_dim")
		switch {
		case axis != nil && dim != nil:
			p.d.failf(dim.Pos, "%s gives both axis and concat_dim; give axis only", p.ctx)
		case axis != nil:
			c.Axis = int(p.intValue(axis, math.MinInt32, maxI32))
		case dim != nil:
			c.Axis = int(p.intValue(dim, 0, maxI32))
		}
		p.finish()
		return c
	case "Eltwise":
		p := param("eltwise_param")
		c := &layers.EltwiseConfig{
			Operation: layers.EltwiseOp(p.enum("operation", int(layers.EltwiseSum), "PROD", "SUM", "MAX")),
			Coeff:     p.float32s("coeff"),
		}
		// Caffe's checks: one coeff per bottom whatever the operation, and
		// none with PROD; MAX takes them and ignores them.
		if len(c.Coeff) > 0 && p.ok() {
			pos := p.m.Get("coeff")[0].Pos
			switch {
			case c.Operation == layers.EltwiseProd:
				p.d.failf(pos, "%s: coeff applies to operation SUM only", p.ctx)
			case len(c.Coeff) != len(l.Bottom):
				p.d.failf(pos, "%s has %d coeff for %d bottoms; give one per bottom",
					p.ctx, len(c.Coeff), len(l.Bottom))
			case c.Operation == layers.EltwiseMax:
				p.d.warnings = append(p.d.warnings, warning{pos, fmt.Sprintf("%s: ignoring coeff in %s: operation MAX does not use it (nor does Caffe)", pos, p.ctx)})
				c.Coeff = nil
			}
		}
		c.UnstableProdGrad = !p.bool("stable_prod_grad", true)
		p.finish()
		return c
	case "Flatten":
		p := param("flatten_param")
		c := &layers.FlattenConfig{
			Axis:    p.int("axis", 1, math.MinInt32, maxI32),
			EndAxis: p.int("end_axis", -1, math.MinInt32, maxI32),
		}
		p.finish()
		return c
	case "BatchNorm":
		p := param("batch_norm_param")
		c := &layers.BatchNormConfig{}
		if f := p.one("use_global_stats"); f != nil {
			v := p.boolValue(f)
			c.UseGlobalStats = &v
		}
		c.MovingAverageFraction = p.float32("moving_average_fraction", 0.999)
		c.Eps = p.float32("eps", 1e-5)
		if c.Eps <= 0 && p.ok() {
			p.d.failf(p.m.Get("eps")[0].ValuePos, "eps in %s: must be > 0", p.ctx)
		}
		p.finish()
		return c
	case "Scale":
		p := param("scale_param")
		c := &layers.ScaleConfig{
			Axis:     p.int("axis", 1, math.MinInt32, maxI32),
			NumAxes:  p.int("num_axes", 1, -1, maxI32),
			BiasTerm: p.bool("bias_term", false),
		}
		one := defaultFiller()
		one.Value = 1
		c.Filler = filler(p, "filler", one)
		c.BiasFiller = filler(p, "bias_filler", defaultFiller())
		p.finish()
		return c
	case "Softmax":
		p := param("softmax_param")
		c := &layers.SoftmaxConfig{Axis: p.int("axis", 1, math.MinInt32, maxI32)}
		p.ignore("engine", engine, engines...)
		p.finish()
		return c
	case "SoftmaxWithLoss":
		p := param("softmax_param")
		c := &layers.SoftmaxWithLossConfig{Axis: p.int("axis", 1, math.MinInt32, maxI32)}
		p.ignore("engine", engine, engines...)
		p.finish()
		lp := param("loss_param")
		if f := lp.one("ignore_label"); f != nil {
			v := int(lp.intValue(f, math.MinInt32, maxI32))
			c.IgnoreLabel = &v
		}
		norm := lp.one("normalization")
		normalize := lp.one("normalize")
		switch {
		case norm != nil:
			c.Normalization = layers.LossNormalization(max(lp.enumValue(norm, "VALID", "BATCH_SIZE", "FULL", "NONE"), 0))
		case normalize != nil:
			// Caffe's legacy normalize: true means VALID, false BATCH_SIZE;
			// normalization wins when both are given.
			if !lp.boolValue(normalize) {
				c.Normalization = layers.NormBatchSize
			}
		}
		lp.finish()
		return c
	case "Accuracy":
		p := param("accuracy_param")
		c := &layers.AccuracyConfig{
			TopK: p.int("top_k", 1, 1, maxI32),
			Axis: p.int("axis", 1, math.MinInt32, maxI32),
		}
		if f := p.one("ignore_label"); f != nil {
			v := int(p.intValue(f, math.MinInt32, maxI32))
			c.IgnoreLabel = &v
		}
		p.finish()
		return c
	}
	return decodeMore(r, l, param)
}

// hw decodes a 2-D size given either as base (repeated when repeated: one
// value for both, or h then w) or as its _h/_w pair. def < 0 means the size
// is required; lo is the smallest allowed value.
func hw(p *reader, base, hName, wName string, repeated bool, def, lo int) (h, w int) {
	var vals []*prototxt.Field
	if repeated {
		vals = p.all(base)
	} else if f := p.one(base); f != nil {
		vals = []*prototxt.Field{f}
	}
	fh, fw := p.one(hName), p.one(wName)
	if !p.ok() {
		return 0, 0
	}
	switch {
	case len(vals) > 0 && (fh != nil || fw != nil):
		f := fh
		if f == nil {
			f = fw
		}
		p.d.failf(f.Pos, "%s gives both %s and %s/%s; give one or the other", p.ctx, base, hName, wName)
		return 0, 0
	case len(vals) > 2:
		p.d.failf(vals[2].Pos, "unsupported field '%s' in %s: dsgd supports 2-D only, got %d values", base, p.ctx, len(vals))
		return 0, 0
	case len(vals) == 2:
		return int(p.intValue(vals[0], int64(lo), maxI32)), int(p.intValue(vals[1], int64(lo), maxI32))
	case len(vals) == 1:
		v := int(p.intValue(vals[0], int64(lo), maxI32))
		return v, v
	case fh != nil || fw != nil:
		if def < 0 && (fh == nil || fw == nil) {
			p.d.failf(p.m.Pos, "%s needs both %s and %s", p.ctx, hName, wName)
			return 0, 0
		}
		h, w = def, def
		if fh != nil {
			h = int(p.intValue(fh, int64(lo), maxI32))
		}
		if fw != nil {
			w = int(p.intValue(fw, int64(lo), maxI32))
		}
		return h, w
	case def < 0:
		p.d.failf(p.m.Pos, "%s needs %s (or %s and %s)", p.ctx, base, hName, wName)
		return 0, 0
	}
	return def, def
}

// defaultFiller is Caffe's FillerParameter with nothing set: constant 0.
func defaultFiller() layers.Filler {
	return layers.Filler{Type: layers.FillConstant, Max: 1, Std: 1}
}

// filler decodes the optional filler message name; def when absent.
func filler(p *reader, name string, def layers.Filler) layers.Filler {
	m := p.msg(name)
	if m == nil {
		return def
	}
	r := p.d.reader(m, name+" of "+p.ctx)
	f := defaultFiller()
	types := []layers.FillerType{layers.FillConstant, layers.FillGaussian, layers.FillUniform, layers.FillXavier, layers.FillMSRA, layers.FillBilinear, layers.FillPositiveUnitball}
	if tf := r.one("type"); tf != nil {
		t := layers.FillerType(r.strValue(tf))
		known := false
		for _, k := range types {
			known = known || k == t
		}
		if !known && r.ok() {
			r.d.failf(tf.ValuePos, "unsupported filler type %q in %s; dsgd supports constant, gaussian, uniform, xavier, msra, bilinear, positive_unitball", t, r.ctx)
		}
		f.Type = t
	}
	f.Value = r.float32("value", 0)
	f.Min = r.float32("min", 0)
	f.Max = r.float32("max", 1)
	f.Mean = r.float32("mean", 0)
	f.Std = r.float32("std", 1)
	f.VarianceNorm = layers.VarianceNorm(r.enum("variance_norm", 0, "FAN_IN", "FAN_OUT", "AVERAGE"))
	if sf := r.one("sparse"); sf != nil {
		v := r.intValue(sf, -1, maxI32)
		switch {
		case !r.ok() || v == -1:
		case f.Type != layers.FillGaussian:
			r.d.failf(sf.Pos, "unsupported field 'sparse' in %s: Caffe's sparse applies to the gaussian filler only", r.ctx)
		case v == 0:
			r.d.failf(sf.ValuePos, "sparse in %s: 0 would zero every weight; give -1 (dense) or a positive count", r.ctx)
		default:
			f.Sparse = int(v)
		}
	}
	if r.ok() {
		switch {
		case f.Type == layers.FillUniform && f.Min > f.Max:
			r.d.failf(m.Pos, "%s: uniform min %g is greater than max %g", r.ctx, f.Min, f.Max)
		case f.Type == layers.FillGaussian && f.Std < 0:
			r.d.failf(m.Pos, "%s: gaussian std %g is negative", r.ctx, f.Std)
		}
	}
	r.finish()
	return f
}
