package caffedef

import (
	"math"

	"dsgd/caffe/prototxt"
	"dsgd/data"
)

// decodeAnnotatedData decodes SSD's AnnotatedData layer (weiliu89/caffe,
// branch ssd): data_param (source, batch_size, backend), its
// transform_param with the fork's resize_param, distort_param,
// expand_param and emit_constraint, and annotated_data_param (the batch
// samplers, label_map_file, anno_type) into dl.Annotated. What dsgd does
// not run is refused naming the field.
func decodeAnnotatedData(r *reader, l *LayerDef, dl *DataLayer) {
	if len(l.Top) < 1 || len(l.Top) > 2 {
		r.d.failf(l.Pos, "AnnotatedData layer '%s' has %d tops; it needs 1 or 2 (data, label)", l.Name, len(l.Top))
		return
	}
	a := &data.AnnotatedConfig{Name: l.Name, Scale: 1}
	dl.Annotated = a
	decodeAnnoTransform(r, dl, a)
	decodeDataParam(r, l, dl, func(dr *reader) {
		dr.unsupported("rand_skip", "dsgd's AnnotatedData reads its database from the first record, as the fork's DataReader does; remove it")
	})
	if am := r.msg("annotated_data_param"); am != nil {
		ar := r.d.reader(am, "annotated_data_param of "+r.ctx)
		for _, bm := range ar.msgs("batch_sampler") {
			a.Samplers = append(a.Samplers, decodeBatchSampler(r.d, bm, "batch_sampler in "+ar.ctx))
		}
		// The fork stores label_map_file and reads it nowhere in the layer
		// (its label rows carry the records' group_label as they are).
		dl.LabelMapFile = ar.str("label_map_file", "")
		if f := ar.one("anno_type"); f != nil {
			a.AnnoType = ar.enumValue(f, "BBOX") == 0
		}
		ar.finish()
	}
}

// decodeBatchSampler decodes one BatchSampler with the fork's defaults
// (scale and aspect ratio 1, max_trials 100, use_original_image true).
func decodeBatchSampler(d *decoder, m *prototxt.Message, ctx string) data.BatchSampler {
	br := d.reader(m, ctx)
	b := data.BatchSampler{MinScale: 1, MaxScale: 1, MinAspect: 1, MaxAspect: 1, MaxTrials: 100}
	if !br.bool("use_original_image", true) && br.ok() {
		// The fork's GenerateBatchSamples skips such a sampler.
		d.failf(m.Pos, "%s: use_original_image: false makes the fork skip this sampler (it samples only from the original image); remove the sampler", ctx)
	}
	if sm := br.msg("sampler"); sm != nil {
		sr := d.reader(sm, "sampler in "+ctx)
		b.MinScale = sr.float32("min_scale", 1)
		b.MaxScale = sr.float32("max_scale", 1)
		b.MinAspect = sr.float32("min_aspect_ratio", 1)
		b.MaxAspect = sr.float32("max_aspect_ratio", 1)
		sr.finish()
	}
	if cm := br.msg("sample_constraint"); cm != nil {
		cr := d.reader(cm, "sample_constraint in "+ctx)
		for _, c := range []struct {
			name string
			v    *float32
			has  *bool
		}{
			{"min_jaccard_overlap", &b.MinJaccard, &b.HasMinJaccard}, {"max_jaccard_overlap", &b.MaxJaccard, &b.HasMaxJaccard},
			{"min_sample_coverage", &b.MinSampleCov, &b.HasMinSampleCov}, {"max_sample_coverage", &b.MaxSampleCov, &b.HasMaxSampleCov},
			{"min_object_coverage", &b.MinObjectCov, &b.HasMinObjectCov}, {"max_object_coverage", &b.MaxObjectCov, &b.HasMaxObjectCov},
		} {
			*c.has = cr.has(c.name)
			*c.v = cr.float32(c.name, 0)
		}
		cr.finish()
	}
	if br.has("max_sample") {
		b.HasMaxSample = true
		b.MaxSample = br.int("max_sample", 0, 0, math.MaxInt32)
	}
	b.MaxTrials = br.int("max_trials", 100, 0, math.MaxInt32)
	br.finish()
	return b
}

// decodeAnnoTransform decodes an AnnotatedData layer's transform_param:
// BVLC's fields and the fork's.
func decodeAnnoTransform(r *reader, dl *DataLayer, a *data.AnnotatedConfig) {
	m := r.msg("transform_param")
	if m == nil {
		return
	}
	tr := r.d.reader(m, "transform_param of "+r.ctx)
	if f := tr.one("scale"); f != nil {
		a.Scale = float32(tr.floatValue(f, true))
		if a.Scale == 0 && tr.ok() {
			tr.valueErr(f, "must not be 0")
		}
	}
	a.MeanValue = tr.float32s("mean_value")
	tr.unsupported("mean_file", "dsgd's AnnotatedData subtracts mean_value only (its images change size before the resize, where a mean image does not fit); give mean_value per channel")
	a.CropSize = tr.int("crop_size", 0, 0, math.MaxInt32)
	for _, name := range []string{"crop_h", "crop_w"} {
		tr.unsupported(name, "dsgd's AnnotatedData crops squares (crop_size); use crop_size")
	}
	a.Mirror = tr.bool("mirror", false)
	if tr.bool("force_color", false) {
		dl.Channels = 3
	}
	if tr.bool("force_gray", false) {
		if dl.Channels == 3 && tr.ok() {
			r.d.failf(m.Pos, "transform_param of %s sets both force_color and force_gray", r.ctx)
		}
		dl.Channels = 1
	}
	a.Channels = dl.Channels
	tr.unsupported("noise_param", "dsgd does not run the fork's noise transforms (histogram equalisation, blur, JPEG, ...); remove it")
	if rm := tr.msg("resize_param"); rm != nil {
		a.Resize = decodeResize(r.d, rm, "resize_param in "+tr.ctx)
	}
	if dm := tr.msg("distort_param"); dm != nil {
		dr := r.d.reader(dm, "distort_param in "+tr.ctx)
		a.Distort = &data.DistortConfig{
			BrightnessProb: dr.float32("brightness_prob", 0), BrightnessDelta: dr.float32("brightness_delta", 0),
			ContrastProb: dr.float32("contrast_prob", 0), ContrastLower: dr.float32("contrast_lower", 0), ContrastUpper: dr.float32("contrast_upper", 0),
			HueProb: dr.float32("hue_prob", 0), HueDelta: dr.float32("hue_delta", 0),
			SaturationProb: dr.float32("saturation_prob", 0), SaturationLower: dr.float32("saturation_lower", 0), SaturationUpper: dr.float32("saturation_upper", 0),
			RandomOrderProb: dr.float32("random_order_prob", 0),
		}
		dr.finish()
	}
	if em := tr.msg("expand_param"); em != nil {
		er := r.d.reader(em, "expand_param in "+tr.ctx)
		a.Expand = &data.ExpandConfig{Prob: er.float32("prob", 1), MaxRatio: er.float32("max_expand_ratio", 1)}
		er.finish()
	}
	if cm := tr.msg("emit_constraint"); cm != nil {
		cr := r.d.reader(cm, "emit_constraint in "+tr.ctx)
		e := &data.EmitConstraint{Type: data.EmitType(max(0, cr.enum("emit_type", 0, "CENTER", "MIN_OVERLAP")))}
		e.Overlap = cr.float32("emit_overlap", 0)
		a.Emit = e
		cr.finish()
	}
	tr.finish()
}

// decodeResize decodes resize_param: WARP with its interp modes (all five
// of the fork's); the modes that keep the aspect ratio are refused.
func decodeResize(d *decoder, m *prototxt.Message, ctx string) *data.ResizeConfig {
	rr := d.reader(m, ctx)
	rc := &data.ResizeConfig{}
	if f := rr.one("prob"); f != nil {
		if p := rr.floatValue(f, true); p != 1 && rr.ok() {
			rr.valueErr(f, "is %g: the fork reads resize_param.prob nowhere and always resizes; set 1 or remove it", p)
		}
	}
	if f := rr.one("resize_mode"); f != nil {
		switch rr.enumValue(f, "WARP", "FIT_SMALL_SIZE", "FIT_LARGE_SIZE_AND_PAD") {
		case 1:
			rr.valueErr(f, "FIT_SMALL_SIZE: dsgd's AnnotatedData runs WARP only (FIT_SMALL_SIZE gives each image its own size, batch 1 in the fork); use WARP")
		case 2:
			rr.valueErr(f, "FIT_LARGE_SIZE_AND_PAD: dsgd's AnnotatedData runs WARP only, not yet the padded aspect-keeping resize; use WARP")
		}
	}
	rc.Height = rr.int("height", 0, 0, math.MaxInt32)
	rc.Width = rr.int("width", 0, 0, math.MaxInt32)
	for _, f := range rr.all("interp_mode") {
		if i := rr.enumValue(f, "LINEAR", "AREA", "NEAREST", "CUBIC", "LANCZOS4"); i >= 0 {
			rc.InterpModes = append(rc.InterpModes, data.InterpMode(i+1))
		}
	}
	const warp = "the fork reads it only in FIT_SMALL_SIZE and FIT_LARGE_SIZE_AND_PAD modes, not in WARP"
	for _, name := range []string{"height_scale", "width_scale", "pad_value"} {
		rr.ignore(name, warp)
	}
	rr.ignore("pad_mode", warp, "CONSTANT", "MIRRORED", "REPEAT_NEAREST")
	if (rc.Height == 0 || rc.Width == 0) && rr.ok() {
		d.failf(m.Pos, "%s needs a positive height and width (the fork checks both > 0)", ctx)
	}
	rr.finish()
	return rc
}
