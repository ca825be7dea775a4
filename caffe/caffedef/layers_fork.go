package caffedef

import (
	"fmt"
	"math"

	"dsgd/caffe/prototxt"
	"dsgd/engine/layers"
)

// forkTypes lists the layer types of Caffe forks that dsgd runs, decoded by
// decodeFork with the fork's field names and defaults; forkLayers keeps
// the refusal for the rest.
func forkTypes() []string {
	return []string{"Axpy", "BN", "ConvolutionDepthwise", "DepthwiseConvolution", "DetectionEvaluate", "DetectionOutput", "Interp", "MultiBoxLoss", "Normalize", "Permute", "PriorBox", "PSROIPooling", "ReLU6", "ROIPooling", "SeLu", "ShuffleChannel", "SmoothL1Loss", "Upsample"}
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
	case "PriorBox":
		return decodePriorBox(l, param("prior_box_param"))
	case "DetectionOutput":
		return decodeDetectionOutput(l, param("detection_output_param"))
	case "DetectionEvaluate":
		return decodeDetectionEvaluate(l, param("detection_evaluate_param"))
	case "MultiBoxLoss":
		return decodeMultiBoxLoss(l, param("multibox_loss_param"), param("loss_param"))
	case "ROIPooling":
		return decodeROIPooling(l, param("roi_pooling_param"))
	case "PSROIPooling":
		return decodePSROIPooling(l, param("psroi_pooling_param"))
	case "SmoothL1Loss":
		return decodeSmoothL1Loss(l, param("smooth_l1_loss_param"))
	case "SeLu":
		// HolmesShuan's SNN reimplementation: selu_param { lambda = 1,
		// alpha = 2 }, float defaults 1.050700987 and 1.67326324.
		p := param("selu_param")
		c := &layers.SeLuConfig{Lambda: p.float32("lambda", 1.050700987), Alpha: p.float32("alpha", 1.67326324)}
		p.finish()
		return c
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

// decodePriorBox decodes SSD's prior_box_param (weiliu89/caffe, branch
// ssd), with the checks of the fork's LayerSetUp as errors at the field.
func decodePriorBox(l *LayerDef, p *reader) *layers.PriorBoxConfig {
	c := &layers.PriorBoxConfig{Flip: p.bool("flip", true), Clip: p.bool("clip", false)}
	positive := func(f *prototxt.Field) float32 {
		v := float32(p.floatValue(f, true))
		if !(v > 0) && p.ok() {
			p.valueErr(f, "must be positive, got %g", v)
		}
		return v
	}
	mins, maxs := p.all("min_size"), p.all("max_size")
	if len(mins) == 0 && p.ok() {
		p.d.failf(p.m.Pos, "%s needs min_size (the prior boxes' size in pixels)", p.ctx)
	}
	for _, f := range mins {
		v := positive(f)
		if !(v < 1<<31) && p.ok() {
			p.valueErr(f, "must be below 2^31 (the fork reads it into an int), got %g", v)
		}
		c.MinSize = append(c.MinSize, v)
	}
	for i, f := range maxs {
		v := positive(f)
		switch {
		case !p.ok():
		case i >= len(c.MinSize):
			p.valueErr(f, "is given %d times for %d min_size; give one per min_size or none", len(maxs), len(mins))
		case !(v > c.MinSize[i]):
			p.valueErr(f, "must be greater than its min_size %g (line %d), got %g", c.MinSize[i], mins[i].Pos.Line, v)
		case !(v < 1<<31):
			p.valueErr(f, "must be below 2^31 (the fork reads it into an int), got %g", v)
		}
		c.MaxSize = append(c.MaxSize, v)
	}
	if len(maxs) > 0 && len(maxs) < len(mins) && p.ok() {
		p.valueErr(maxs[0], "is given %d times for %d min_size; give one per min_size or none", len(maxs), len(mins))
	}
	for _, f := range p.all("aspect_ratio") {
		v := positive(f)
		if math.IsInf(float64(v), 0) && p.ok() {
			p.valueErr(f, "must be finite, got %g", v)
		}
		c.AspectRatio = append(c.AspectRatio, v)
	}
	vars := p.all("variance")
	if len(vars) != 0 && len(vars) != 1 && len(vars) != 4 && p.ok() {
		p.valueErr(vars[0], "is given %d times; give 1 value (for all 4 coordinates) or 4", len(vars))
	}
	for _, f := range vars {
		c.Variance = append(c.Variance, positive(f))
	}
	// Either a size or h and w, both positive: the fork's checks.
	pair := func(one, h, w string, integer bool) (float64, float64) {
		fs, fh, fw := p.one(one), p.one(h), p.one(w)
		val := func(f *prototxt.Field) float64 {
			if integer {
				return float64(p.intValue(f, 1, maxI32))
			}
			return float64(positive(f))
		}
		switch {
		case !p.ok():
		case fs != nil && (fh != nil || fw != nil):
			p.d.failf(fs.Pos, "%s gives %s and %s/%s; give one or the other", p.ctx, one, h, w)
		case fs != nil:
			v := val(fs)
			return v, v
		case fh != nil && fw == nil:
			p.d.failf(fh.Pos, "%s gives %s without %s; give both", p.ctx, h, w)
		case fw != nil && fh == nil:
			p.d.failf(fw.Pos, "%s gives %s without %s; give both", p.ctx, w, h)
		case fh != nil:
			return val(fh), val(fw)
		}
		return 0, 0
	}
	ih, iw := pair("img_size", "img_h", "img_w", true)
	c.ImgH, c.ImgW = int(ih), int(iw)
	sh, sw := pair("step", "step_h", "step_w", false)
	c.StepH, c.StepW = float32(sh), float32(sw)
	c.Offset = 0.5
	if f := p.one("offset"); f != nil {
		c.Offset = float32(p.floatValue(f, true))
		if (math.IsNaN(float64(c.Offset)) || math.IsInf(float64(c.Offset), 0)) && p.ok() {
			p.valueErr(f, "must be finite, got %g", c.Offset)
		}
	}
	if len(l.Bottom) != 2 && p.ok() {
		p.d.failf(l.Pos, "layer '%s' (PriorBox) takes 2 bottoms, the feature map and the image, got %d", l.Name, len(l.Bottom))
	}
	p.finish()
	return c
}

// decodeDetectionOutput decodes SSD's detection_output_param (weiliu89/
// caffe, branch ssd). Writing the detections to files (save_output_param)
// is ignored with a warning; drawing them (visualize) is refused.
func decodeDetectionOutput(l *LayerDef, p *reader) *layers.DetectionOutputConfig {
	c := &layers.DetectionOutputConfig{
		ShareLocation:           p.bool("share_location", true),
		BackgroundLabelID:       p.int("background_label_id", 0, math.MinInt32, maxI32),
		Code:                    layers.BBoxCode(p.enum("code_type", 0, "CORNER", "CENTER_SIZE", "CORNER_SIZE") + 1),
		VarianceEncodedInTarget: p.bool("variance_encoded_in_target", false),
		KeepTopK:                p.int("keep_top_k", -1, math.MinInt32, maxI32),
		ConfidenceThreshold:     -math.MaxFloat32,
		NMSThreshold:            0.3,
		Eta:                     1,
		TopK:                    -1,
	}
	if f := p.one("num_classes"); f != nil {
		c.NumClasses = int(p.intValue(f, 1, maxI32))
	} else if p.ok() {
		p.d.failf(p.m.Pos, "%s needs num_classes (the classes, background included)", p.ctx)
	}
	if f := p.one("confidence_threshold"); f != nil {
		c.ConfidenceThreshold = float32(p.floatValue(f, true))
		if math.IsNaN(float64(c.ConfidenceThreshold)) && p.ok() {
			p.valueErr(f, "must be a number, got NaN")
		}
	}
	if m := p.msg("nms_param"); m != nil {
		n := p.d.reader(m, "nms_param of "+p.ctx)
		if f := n.one("nms_threshold"); f != nil {
			c.NMSThreshold = float32(n.floatValue(f, true))
			if !(c.NMSThreshold >= 0) && n.ok() {
				n.valueErr(f, "must not be negative, got %g", c.NMSThreshold)
			}
		}
		if f := n.one("top_k"); f != nil {
			c.TopK = int(n.intValue(f, math.MinInt32, maxI32))
		}
		if f := n.one("eta"); f != nil {
			c.Eta = float32(n.floatValue(f, true))
			if !(c.Eta > 0 && c.Eta <= 1) && n.ok() {
				n.valueErr(f, "must be in (0, 1], got %g", c.Eta)
			}
		}
		n.finish()
	}
	if m := p.msg("save_output_param"); m != nil {
		// ssd_pascal.py writes one, with an output_directory, into every
		// deploy net it makes: the net runs, the files are not written.
		s := p.d.reader(m, "save_output_param of "+p.ctx)
		dir := ""
		if f := s.one("output_directory"); f != nil && s.ok() {
			dir = s.strValue(f)
		}
		for _, name := range []string{"output_name_prefix", "output_format", "label_map_file", "name_size_file", "num_test_image", "resize_param"} {
			s.all(name) // read, and ignored with the message below
		}
		s.finish()
		why := "it names no output_directory, so the fork saves nothing either"
		if dir != "" {
			why = fmt.Sprintf("dsgd does not write SSD's result files to %q (the fork's VOC or COCO evaluation output); the detections are the layer's top, 1×1×D×7 rows [image label score xmin ymin xmax ymax]", dir)
		}
		p.d.warnings = append(p.d.warnings, warning{m.Pos, fmt.Sprintf("%s: ignoring save_output_param in %s: %s", m.Pos, p.ctx, why)})
	}
	if f := p.one("visualize"); f != nil && p.boolValue(f) && p.ok() {
		p.valueErr(f, "dsgd does not draw detections (the fork shows them in an OpenCV window): remove it")
	}
	p.ignore("visualize_threshold", "read only with visualize")
	p.ignore("save_file", "read only with visualize")
	if len(l.Bottom) != 3 && p.ok() {
		p.d.failf(l.Pos, "layer '%s' (DetectionOutput) takes 3 bottoms, the locations, the confidences and the priors, got %d", l.Name, len(l.Bottom))
	}
	p.finish()
	return c
}

// decodeDetectionEvaluate decodes SSD's detection_evaluate_param
// (weiliu89/caffe, branch ssd): num_classes (required),
// background_label_id (0), overlap_threshold (0.5, positive) and
// evaluate_difficult_gt (true). name_size_file and resize_param, which
// rescale the boxes to each original image's pixels before matching, are
// refused: dsgd matches the normalized boxes, as the fork does without
// them.
func decodeDetectionEvaluate(l *LayerDef, p *reader) *layers.DetectionEvaluateConfig {
	c := &layers.DetectionEvaluateConfig{
		NumClasses:          p.required("num_classes", "the classes, background included", 1, maxI32),
		BackgroundLabelID:   p.int("background_label_id", 0, 0, maxI32),
		OverlapThreshold:    0.5,
		EvaluateDifficultGT: p.bool("evaluate_difficult_gt", true),
	}
	if f := p.one("overlap_threshold"); f != nil {
		c.OverlapThreshold = float32(p.floatValue(f, true))
		if !(c.OverlapThreshold > 0) && p.ok() {
			p.valueErr(f, "must be positive (the least Jaccard overlap of a true positive), got %g", c.OverlapThreshold)
		}
	}
	for _, name := range []string{"name_size_file", "resize_param"} {
		if f := p.one(name); f != nil && p.ok() {
			p.d.failf(f.Pos, "%s in %s: dsgd does not rescale the boxes to the original images' sizes before matching them (the fork's OutputBBox with the name_size_file's sizes); it evaluates the normalized boxes, as the fork does without name_size_file: remove it", name, p.ctx)
		}
	}
	if len(l.Bottom) != 2 && p.ok() {
		p.d.failf(l.Pos, "layer '%s' (DetectionEvaluate) takes 2 bottoms, DetectionOutput's detections and the ground truth (AnnotatedData's label), got %d", l.Name, len(l.Bottom))
	}
	p.finish()
	return c
}

// required consumes an integer field that must be given, in [lo, hi];
// absent, it is an error saying what the field is.
func (r *reader) required(name, what string, lo, hi int) int {
	f := r.one(name)
	if f == nil {
		if r.ok() {
			r.d.failf(r.m.Pos, "%s needs %s (%s)", r.ctx, name, what)
		}
		return 0
	}
	return int(r.intValue(f, int64(lo), int64(hi)))
}

// spatialScale consumes a region layer's spatial_scale: positive and
// finite; def when absent.
func (r *reader) spatialScale(def float32) float32 {
	f := r.one("spatial_scale")
	if f == nil {
		return def
	}
	v := float32(r.floatValue(f, true))
	if !(v > 0) && r.ok() {
		r.valueErr(f, "must be positive (the feature map's size over the image's), got %g", v)
	}
	return v
}

// regionBottoms checks a region layer's two bottoms, the features and the
// regions.
func regionBottoms(r *reader, l *LayerDef) {
	if len(l.Bottom) != 2 && r.ok() {
		r.d.failf(l.Pos, "layer '%s' (%s) takes 2 bottoms, the features and the regions (R×5 rows [batch_index x1 y1 x2 y2]), got %d", l.Name, l.Type, len(l.Bottom))
	}
}

// decodeROIPooling decodes Fast R-CNN's roi_pooling_param
// (rbgirshick/caffe-fast-rcnn's caffe.proto, LayerParameter field
// 8266711): pooled_h = 1 and pooled_w = 2 (uint32, default 0, which the
// fork's LayerSetUp refuses, so they are required here) and spatial_scale
// = 3 (default 1).
func decodeROIPooling(l *LayerDef, p *reader) *layers.ROIPoolingConfig {
	c := &layers.ROIPoolingConfig{
		PooledH: p.required("pooled_h", "the output's height per region", 1, maxI32),
		PooledW: p.required("pooled_w", "the output's width per region", 1, maxI32),
	}
	c.SpatialScale = p.spatialScale(1)
	regionBottoms(p, l)
	p.finish()
	return c
}

// decodePSROIPooling decodes R-FCN's psroi_pooling_param
// (daijifeng001/caffe-rfcn's caffe.proto): spatial_scale = 1, output_dim =
// 2 and group_size = 3, all required there; the channel count
// output_dim·group_size² is checked against the score maps when the net is
// built.
func decodePSROIPooling(l *LayerDef, p *reader) *layers.PSROIPoolingConfig {
	c := &layers.PSROIPoolingConfig{}
	if !p.has("spatial_scale") && p.ok() {
		p.d.failf(p.m.Pos, "%s needs spatial_scale (the score maps' size over the image's; R-FCN's proto requires it)", p.ctx)
	}
	c.SpatialScale = p.spatialScale(0)
	c.OutputDim = p.required("output_dim", "the top's channels", 1, maxI32)
	c.GroupSize = p.required("group_size", "k, the bins per side", 1, 1<<15)
	if c.OutputDim > 0 && c.GroupSize > 0 && int64(c.OutputDim)*int64(c.GroupSize)*int64(c.GroupSize) > maxI32 && p.ok() {
		p.valueErr(p.m.Get("output_dim")[0], "output_dim·group_size² = %d·%d² overflows the channel count", c.OutputDim, c.GroupSize)
	}
	regionBottoms(p, l)
	p.finish()
	return c
}

// decodeSmoothL1Loss decodes Faster R-CNN's smooth_l1_loss_param
// (rbgirshick/caffe-fast-rcnn's faster-rcnn branch, LayerParameter field
// 8266712): sigma = 1 (float, default 1). The fork keeps σ² in a float,
// so σ² must neither overflow nor vanish there. The layer takes 2 to 4
// bottoms: predictions, targets, and the inside and outside weights (the
// faster-rcnn branch's 4, or the fast-rcnn branch's 3, inside weights
// only); their shapes are checked when the net is built.
func decodeSmoothL1Loss(l *LayerDef, p *reader) *layers.SmoothL1LossConfig {
	c := &layers.SmoothL1LossConfig{Sigma: 1}
	if f := p.one("sigma"); f != nil {
		c.Sigma = float32(p.floatValue(f, true))
		if s2 := float64(c.Sigma) * float64(c.Sigma); !(c.Sigma > 0) && p.ok() {
			p.valueErr(f, "must be positive (the quadratic part ends at |d| = 1/sigma²), got %g", c.Sigma)
		} else if (float32(s2) < 0x1p-126 || s2 > math.MaxFloat32) && p.ok() {
			p.valueErr(f, "sigma² = %.3g is outside the float32 range the fork keeps it in", s2)
		}
	}
	if (len(l.Bottom) < 2 || len(l.Bottom) > 4) && p.ok() {
		p.d.failf(l.Pos, "layer '%s' (SmoothL1Loss) takes 2 to 4 bottoms, the predictions, the targets and optionally the inside and the outside weights, got %d", l.Name, len(l.Bottom))
	}
	p.finish()
	return c
}

// decodeMultiBoxLoss decodes SSD's multibox_loss_param (weiliu89/caffe,
// branch ssd, LayerParameter field 201) with the fork's defaults, and the
// layer's loss_param normalization (VALID by default; the legacy
// normalize: false is BATCH_SIZE). num_classes is required, as the fork's
// LayerSetUp requires it. The deprecated do_neg_mining must agree with
// mining_type (the fork CHECKs it); nms_param's eta is not used by the
// fork's mining NMS. A propagate_down false on the location predictions
// or the confidences leaves that loss out of the top, as in the fork.
func decodeMultiBoxLoss(l *LayerDef, p, lp *reader) *layers.MultiBoxLossConfig {
	c := &layers.MultiBoxLossConfig{
		LocLoss:                 layers.MultiBoxLocLoss(p.enum("loc_loss_type", 1, "L2", "SMOOTH_L1")),
		ConfLoss:                layers.MultiBoxConfLoss(p.enum("conf_loss_type", 0, "SOFTMAX", "LOGISTIC")),
		LocWeight:               p.float32("loc_weight", 1),
		ShareLocation:           p.bool("share_location", true),
		Match:                   layers.MultiBoxMatch(p.enum("match_type", 1, "BIPARTITE", "PER_PREDICTION")),
		OverlapThreshold:        p.float32("overlap_threshold", 0.5),
		UsePriorForMatching:     p.bool("use_prior_for_matching", true),
		BackgroundLabelID:       p.int("background_label_id", 0, 0, maxI32),
		UseDifficultGT:          p.bool("use_difficult_gt", true),
		NegPosRatio:             p.float32("neg_pos_ratio", 3),
		NegOverlap:              p.float32("neg_overlap", 0.5),
		Code:                    layers.BBoxCode(p.enum("code_type", 0, "CORNER", "CENTER_SIZE", "CORNER_SIZE") + 1),
		EncodeVarianceInTarget:  p.bool("encode_variance_in_target", false),
		MapObjectToAgnostic:     p.bool("map_object_to_agnostic", false),
		IgnoreCrossBoundaryBBox: p.bool("ignore_cross_boundary_bbox", false),
		BPInside:                p.bool("bp_inside", false),
		Mining:                  layers.MultiBoxMining(p.enum("mining_type", 1, "NONE", "MAX_NEGATIVE", "HARD_EXAMPLE")),
		SampleSize:              p.int("sample_size", 64, math.MinInt32, maxI32),
		UsePriorForNMS:          p.bool("use_prior_for_nms", false),
	}
	if f := p.one("num_classes"); f != nil {
		c.NumClasses = int(p.intValue(f, 1, maxI32))
	} else if p.ok() {
		p.d.failf(p.m.Pos, "%s needs num_classes (the classes, background included)", p.ctx)
	}
	if f := p.one("do_neg_mining"); f != nil && p.ok() {
		if v := p.boolValue(f); v != (c.Mining != layers.MineNone) && p.ok() {
			p.valueErr(f, "%v contradicts mining_type %v (the fork stops there); it is deprecated: give mining_type alone", v, c.Mining)
		}
		p.d.warnings = append(p.d.warnings, warning{f.Pos, fmt.Sprintf("%s: do_neg_mining in %s is deprecated (the fork warns too): mining_type says it", f.Pos, p.ctx)})
	}
	if m := p.msg("nms_param"); m != nil {
		n := p.d.reader(m, "nms_param of "+p.ctx)
		c.HasNMS, c.NMSThreshold = true, 0.3
		if f := n.one("nms_threshold"); f != nil {
			c.NMSThreshold = float32(n.floatValue(f, true))
		}
		// top_k has no default in the fork's proto: 0, which keeps no
		// candidate, so nothing is mined.
		if f := n.one("top_k"); f != nil {
			c.NMSTopK = int(n.intValue(f, math.MinInt32, maxI32))
		} else if c.NMSThreshold > 0 && c.Mining != layers.MineNone && n.ok() {
			p.d.warnings = append(p.d.warnings, warning{m.Pos, fmt.Sprintf("%s: nms_param of %s has no top_k: the fork reads 0 and mines no example; give top_k (-1: all)", m.Pos, p.ctx)})
		}
		n.ignore("eta", "the fork's mining NMS (ApplyNMS) has no adaptive threshold")
		n.finish()
	}
	c.Normalization = lossNorm(lp, layers.NormValid)
	if f := lp.one("ignore_label"); f != nil && lp.ok() {
		lp.valueErr(f, "MultiBoxLoss reads no ignore_label (the fork's matching decides which priors count): remove it")
	}
	lp.finish()
	if pd := l.Compute.PropagateDown; len(pd) == 4 {
		c.NoLocLoss, c.NoConfLoss = !pd[0], !pd[1]
	}
	if len(l.Bottom) != 4 && p.ok() {
		p.d.failf(l.Pos, "layer '%s' (MultiBoxLoss) takes 4 bottoms, the locations, the confidences, the priors and the ground truth, got %d", l.Name, len(l.Bottom))
	}
	p.finish()
	return c
}
