package caffedef

import (
	"reflect"
	"strings"
	"testing"

	"dsgd/data"
	"dsgd/engine/layers"
)

// ssdTrainData is the TRAIN data layer ssd_pascal.py writes (SSD300
// VOC0712's train.prototxt); modes is spliced in as the interp_mode
// lines.
func ssdTrainData(modes string) string {
	s := `layer {
  name: "data" type: "AnnotatedData" top: "data" top: "label"
  include { phase: TRAIN }
  transform_param {
    mirror: true
    mean_value: 104 mean_value: 117 mean_value: 123
    resize_param { prob: 1 resize_mode: WARP height: 300 width: 300
      MODES }
    emit_constraint { emit_type: CENTER }
    distort_param { brightness_prob: 0.5 brightness_delta: 32 contrast_prob: 0.5 contrast_lower: 0.5 contrast_upper: 1.5
      hue_prob: 0.5 hue_delta: 18 saturation_prob: 0.5 saturation_lower: 0.5 saturation_upper: 1.5 random_order_prob: 0 }
    expand_param { prob: 0.5 max_expand_ratio: 4 }
  }
  data_param { source: "examples/VOC0712/VOC0712_trainval_lmdb" batch_size: 32 backend: LMDB }
  annotated_data_param {
    batch_sampler { max_sample: 1 max_trials: 1 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.1 } max_sample: 1 max_trials: 50 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { max_jaccard_overlap: 1 } max_sample: 1 max_trials: 50 }
    label_map_file: "data/VOC0712/labelmap_voc.prototxt"
  }
}
layer { name: "f" type: "Flatten" bottom: "data" top: "f" }
`
	return strings.Replace(s, "MODES", modes, 1)
}

// TestAnnotatedDataDecode reads ssd_pascal.py's TRAIN data layer into the
// fork's settings.
func TestAnnotatedDataDecode(t *testing.T) {
	nd, err := ParseNet("train.prototxt", []byte(ssdTrainData("interp_mode: LINEAR interp_mode: AREA interp_mode: NEAREST interp_mode: CUBIC interp_mode: LANCZOS4")))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, nd, layers.Train)
	if len(pn.Data) != 1 {
		t.Fatalf("%d data layers", len(pn.Data))
	}
	dl := pn.Data[0]
	if dl.Type != "AnnotatedData" || dl.Source != "examples/VOC0712/VOC0712_trainval_lmdb" || dl.BatchSize != 32 || dl.Backend != "LMDB" || dl.LabelMapFile != "data/VOC0712/labelmap_voc.prototxt" {
		t.Fatalf("layer %+v", dl)
	}
	want := &data.AnnotatedConfig{
		Name: "data", Mirror: true, MeanValue: []float32{104, 117, 123}, Scale: 1,
		Resize:  &data.ResizeConfig{Height: 300, Width: 300, InterpModes: []data.InterpMode{data.InterpLinear, data.InterpArea, data.InterpNearest, data.InterpCubic, data.InterpLanczos4}},
		Distort: &data.DistortConfig{BrightnessProb: 0.5, BrightnessDelta: 32, ContrastProb: 0.5, ContrastLower: 0.5, ContrastUpper: 1.5, HueProb: 0.5, HueDelta: 18, SaturationProb: 0.5, SaturationLower: 0.5, SaturationUpper: 1.5},
		Expand:  &data.ExpandConfig{Prob: 0.5, MaxRatio: 4},
		Emit:    &data.EmitConstraint{Type: data.EmitCenter},
		Samplers: []data.BatchSampler{
			{MinScale: 1, MaxScale: 1, MinAspect: 1, MaxAspect: 1, MaxSample: 1, HasMaxSample: true, MaxTrials: 1},
			{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxSample: 1, HasMaxSample: true, MaxTrials: 50, MinJaccard: 0.1, HasMinJaccard: true},
			{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxSample: 1, HasMaxSample: true, MaxTrials: 50, MaxJaccard: 1, HasMaxJaccard: true},
		},
	}
	if !reflect.DeepEqual(dl.Annotated, want) {
		t.Fatalf("got  %+v\nwant %+v", dl.Annotated, want)
	}
}

// TestAnnotatedDataRefusals: what dsgd does not run is refused at its
// line, naming the field.
func TestAnnotatedDataRefusals(t *testing.T) {
	layer := func(transform, dataParam, anno string) string {
		return `layer { name: "data" type: "AnnotatedData" top: "data" top: "label"
  transform_param { ` + transform + ` }
  data_param { source: "db" batch_size: 2 ` + dataParam + ` }
  annotated_data_param { ` + anno + ` }
}
`
	}
	warp := `resize_param { height: 8 width: 8 } `
	for _, c := range []struct {
		name, net, want string
	}{
		{"interp_mode typo", ssdTrainData("interp_mode: LINEAR interp_mode: BILINEAR"), "train.prototxt:8:"},
		{"interp_mode names", ssdTrainData("interp_mode: LINEAR interp_mode: BILINEAR"), "unknown value BILINEAR; expected one of LINEAR, AREA, NEAREST, CUBIC, LANCZOS4"},
		{"FIT_SMALL_SIZE", layer(`resize_param { resize_mode: FIT_SMALL_SIZE height: 8 width: 8 }`, "", ""), "FIT_SMALL_SIZE: dsgd's AnnotatedData runs WARP only"},
		{"FIT_LARGE_SIZE_AND_PAD", layer(`resize_param { resize_mode: FIT_LARGE_SIZE_AND_PAD height: 8 width: 8 }`, "", ""), "FIT_LARGE_SIZE_AND_PAD: dsgd's AnnotatedData runs WARP only"},
		{"resize prob", layer(`resize_param { prob: 0.5 height: 8 width: 8 }`, "", ""), "reads resize_param.prob nowhere"},
		{"resize size", layer(`resize_param { height: 8 }`, "", ""), "needs a positive height and width"},
		{"noise", layer(warp+`noise_param { prob: 0.5 }`, "", ""), "unsupported field 'noise_param'"},
		{"mean_file", layer(`mean_file: "m.binaryproto"`, "", ""), "unsupported field 'mean_file'"},
		{"crop_h", layer(`crop_h: 3`, "", ""), "unsupported field 'crop_h'"},
		{"rand_skip", layer(warp, "rand_skip: 3", ""), "unsupported field 'rand_skip'"},
		{"use_original_image", layer(warp, "", `batch_sampler { use_original_image: false }`), "use_original_image: false"},
		{"sampler typo", layer(warp, "", `batch_sampler { sampler { min_scal: 0.3 } }`), "unsupported field 'min_scal' in sampler in batch_sampler"},
		{"emit typo", layer(`emit_constraint { emit_type: CENTRE }`, "", ""), "unknown value CENTRE"},
		{"anno_type", layer(warp, "", `anno_type: MASK`), "unknown value MASK"},
		{"three tops", `layer { name: "data" type: "AnnotatedData" top: "a" top: "b" top: "c" data_param { source: "db" batch_size: 1 } }`, "has 3 tops"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNet("train.prototxt", []byte(c.net))
			if err == nil {
				t.Fatalf("accepted; want an error with %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q; want it to contain %q", err, c.want)
			}
		})
	}
}

// TestAnnotatedDataForkFieldsElsewhere: the fork's transform fields on a
// BVLC Data layer are still refused, saying where dsgd honours them.
func TestAnnotatedDataForkFieldsElsewhere(t *testing.T) {
	_, err := ParseNet("f.prototxt", []byte(`layer { name: "d" type: "Data" top: "d" transform_param { expand_param { prob: 1 } } data_param { source: "db" batch_size: 1 } }`))
	if err == nil || !strings.Contains(err.Error(), "expand_param") || !strings.Contains(err.Error(), "only in SSD's AnnotatedData layer") {
		t.Fatalf("error %v", err)
	}
}
