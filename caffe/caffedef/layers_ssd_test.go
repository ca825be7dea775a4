package caffedef

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// SSD's inference layers (weiliu89/caffe, branch ssd): PriorBox and
// DetectionOutput read with the fork's caffe.proto fields and defaults,
// its LayerSetUp checks as errors at file:line:column, and a small SSD
// head built from prototxt that runs forward.

func TestSSDDecode(t *testing.T) {
	for _, c := range []struct {
		layer string
		want  layers.Config
	}{
		{`layer { name: "l" type: "PriorBox" bottom: "data" bottom: "data" top: "l" prior_box_param { min_size: 30 } }`,
			&layers.PriorBoxConfig{MinSize: []float32{30}, Flip: true, Offset: 0.5}},
		{`layer { name: "l" type: "PriorBox" bottom: "data" bottom: "data" top: "l" prior_box_param { min_size: 30.0 max_size: 60.0 aspect_ratio: 2 flip: true clip: false variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 step: 8 offset: 0.5 } }`,
			&layers.PriorBoxConfig{MinSize: []float32{30}, MaxSize: []float32{60}, AspectRatio: []float32{2}, Flip: true,
				Variance: []float32{0.1, 0.1, 0.2, 0.2}, StepH: 8, StepW: 8, Offset: 0.5}},
		{`layer { name: "l" type: "PriorBox" bottom: "data" bottom: "data" top: "l" prior_box_param { min_size: 4 min_size: 6 max_size: 5 max_size: 9 aspect_ratio: 3 flip: false clip: true variance: 0.5 img_h: 30 img_w: 20 step_h: 3 step_w: 2.5 offset: 0 } }`,
			&layers.PriorBoxConfig{MinSize: []float32{4, 6}, MaxSize: []float32{5, 9}, AspectRatio: []float32{3}, Clip: true,
				Variance: []float32{0.5}, ImgH: 30, ImgW: 20, StepH: 3, StepW: 2.5}},
		{`layer { name: "l" type: "PriorBox" bottom: "data" bottom: "data" top: "l" prior_box_param { min_size: 4 img_size: 300 } }`,
			&layers.PriorBoxConfig{MinSize: []float32{4}, Flip: true, ImgH: 300, ImgW: 300, Offset: 0.5}},
		{`layer { name: "l" type: "DetectionOutput" bottom: "data" bottom: "data" bottom: "data" top: "l" detection_output_param { num_classes: 21 } }`,
			&layers.DetectionOutputConfig{NumClasses: 21, ShareLocation: true, NMSThreshold: 0.3, Eta: 1, TopK: -1, Code: layers.CodeCorner,
				KeepTopK: -1, ConfidenceThreshold: -math.MaxFloat32}},
		// SSD300 VOC0712's deploy.prototxt, as ssd_pascal.py writes it.
		{`layer { name: "l" type: "DetectionOutput" bottom: "data" bottom: "data" bottom: "data" top: "l" detection_output_param { num_classes: 21 share_location: true background_label_id: 0
  nms_param { nms_threshold: 0.45 top_k: 400 } save_output_param { label_map_file: "data/VOC0712/labelmap_voc.prototxt" }
  code_type: CENTER_SIZE keep_top_k: 200 confidence_threshold: 0.01 } }`,
			&layers.DetectionOutputConfig{NumClasses: 21, ShareLocation: true, NMSThreshold: 0.45, Eta: 1, TopK: 400, Code: layers.CodeCenterSize,
				KeepTopK: 200, ConfidenceThreshold: 0.01}},
		{`layer { name: "l" type: "DetectionOutput" bottom: "data" bottom: "data" bottom: "data" top: "l" detection_output_param { num_classes: 3 share_location: false background_label_id: -1
  nms_param { nms_threshold: 0.5 eta: 0.9 } code_type: CORNER_SIZE variance_encoded_in_target: true visualize: false } }`,
			&layers.DetectionOutputConfig{NumClasses: 3, BackgroundLabelID: -1, NMSThreshold: 0.5, Eta: 0.9, TopK: -1, Code: layers.CodeCornerSize,
				VarianceEncodedInTarget: true, KeepTopK: -1, ConfidenceThreshold: -math.MaxFloat32}},
	} {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		if err != nil {
			t.Errorf("%s: %v", c.layer, err)
			continue
		}
		if got := findLayer(t, mustPhase(t, nd, layers.Train).Spec, "l").Config; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.layer, got, c.want)
		}
	}
}

func TestSSDDecodeErrors(t *testing.T) {
	pb := func(p string) string {
		return `layer { name: "l" type: "PriorBox" bottom: "data" bottom: "data" top: "l" prior_box_param { ` + p + ` } }`
	}
	do := func(p string) string {
		return `layer { name: "l" type: "DetectionOutput" bottom: "data" bottom: "data" bottom: "data" top: "l" detection_output_param { ` + p + ` } }`
	}
	checkDecodeErrors(t, []decodeErrCase{
		{"no min_size", pb(`max_size: 60`), `{ max_size`, "prior_box_param of layer 'l' needs min_size"},
		{"no prior_box_param", `layer { name: "l" type: "PriorBox" bottom: "data" bottom: "data" top: "l" }`, "", "prior_box_param of layer 'l' needs min_size"},
		{"min_size 0", pb(`min_size: 0`), `0 }`, "min_size in prior_box_param of layer 'l': must be positive, got 0"},
		{"aspect_ratio 0", pb(`min_size: 30 aspect_ratio: 0`), `0 }`, "aspect_ratio in prior_box_param of layer 'l': must be positive, got 0"},
		{"aspect_ratio negative", pb(`min_size: 30 aspect_ratio: -2`), `-2`, "aspect_ratio in prior_box_param of layer 'l': must be positive, got -2"},
		{"max_size below min_size", pb(`min_size: 30 max_size: 20`), `20`, "max_size in prior_box_param of layer 'l': must be greater than its min_size 30 (line 2), got 20"},
		{"max_size equal", pb(`min_size: 30 max_size: 30`), `30 }`, "max_size in prior_box_param of layer 'l': must be greater than its min_size 30"},
		{"max_size count", pb(`min_size: 30 min_size: 40 max_size: 60`), `60`, "max_size in prior_box_param of layer 'l': is given 1 times for 2 min_size"},
		{"max_size extra", pb(`min_size: 30 max_size: 60 max_size: 70`), `70`, "max_size in prior_box_param of layer 'l': is given 2 times for 1 min_size"},
		{"variance 2", pb(`min_size: 30 variance: 0.1 variance: 0.2`), `0.1`, "variance in prior_box_param of layer 'l': is given 2 times; give 1 value (for all 4 coordinates) or 4"},
		{"variance 0", pb(`min_size: 30 variance: 0`), `0 }`, "variance in prior_box_param of layer 'l': must be positive, got 0"},
		{"img_size and img_h", pb(`min_size: 30 img_size: 300 img_h: 300 img_w: 300`), `img_size`, "prior_box_param of layer 'l' gives img_size and img_h/img_w; give one or the other"},
		{"img_h alone", pb(`min_size: 30 img_h: 300`), `img_h`, "prior_box_param of layer 'l' gives img_h without img_w; give both"},
		{"img_size 0", pb(`min_size: 30 img_size: 0`), `0 }`, "img_size in prior_box_param of layer 'l': must be at least 1, got 0"},
		{"step_w alone", pb(`min_size: 30 step_w: 8`), `step_w`, "prior_box_param of layer 'l' gives step_w without step_h; give both"},
		{"step negative", pb(`min_size: 30 step: -8`), `-8`, "step in prior_box_param of layer 'l': must be positive, got -8"},
		{"unknown field", pb(`min_size: 30 scale: 2`), `scale`, "unsupported field 'scale' in prior_box_param of layer 'l'"},
		{"priorbox one bottom", `layer { name: "l" type: "PriorBox" bottom: "data" top: "l" prior_box_param { min_size: 30 } }`,
			"", "layer 'l' (PriorBox) takes 2 bottoms, the feature map and the image, got 1"},
		{"no num_classes", do(`share_location: true`), `{ share`, "detection_output_param of layer 'l' needs num_classes"},
		{"num_classes 0", do(`num_classes: 0`), `0 }`, "num_classes in detection_output_param of layer 'l': must be at least 1, got 0"},
		{"code_type", do(`num_classes: 2 code_type: CENTER`), `CENTER`, "code_type in detection_output_param of layer 'l': unknown value CENTER; expected one of CORNER, CENTER_SIZE, CORNER_SIZE"},
		{"nms_threshold", do(`num_classes: 2 nms_param { nms_threshold: -0.1 }`), `-0.1`, "nms_threshold in nms_param of detection_output_param of layer 'l': must not be negative, got -0.1"},
		{"eta 0", do(`num_classes: 2 nms_param { eta: 0 }`), `0 }`, "eta in nms_param of detection_output_param of layer 'l': must be in (0, 1], got 0"},
		{"eta above 1", do(`num_classes: 2 nms_param { eta: 1.5 }`), `1.5`, "eta in nms_param of detection_output_param of layer 'l': must be in (0, 1], got 1.5"},
		{"nms unknown", do(`num_classes: 2 nms_param { threshold: 0.5 }`), `threshold`, "unsupported field 'threshold' in nms_param of detection_output_param of layer 'l'"},
		{"visualize", do(`num_classes: 2 visualize: true`), `true`, "visualize in detection_output_param of layer 'l': dsgd does not draw detections"},
		{"detection two bottoms", `layer { name: "l" type: "DetectionOutput" bottom: "data" bottom: "data" top: "l" detection_output_param { num_classes: 2 } }`,
			"", "layer 'l' (DetectionOutput) takes 3 bottoms, the locations, the confidences and the priors, got 2"},
	})
}

// TestSSDSaveOutputIgnored: a save_output_param, with an output_directory
// (what ssd_pascal.py writes into the deploy nets it makes) or without,
// is a warning at its line saying why; the net is read.
func TestSSDSaveOutputIgnored(t *testing.T) {
	for _, c := range []struct{ param, want string }{
		{`label_map_file: "labelmap_voc.prototxt"`, "it names no output_directory"},
		{`output_directory: "/home/u/data/VOCdevkit/results/VOC2007/SSD_300x300/Main" output_name_prefix: "comp4_det_test_" output_format: "VOC" label_map_file: "labelmap_voc.prototxt" num_test_image: 4952`,
			`dsgd does not write SSD's result files to "/home/u/data/VOCdevkit/results/VOC2007/SSD_300x300/Main"`},
	} {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+`layer { name: "l" type: "DetectionOutput" bottom: "data" bottom: "data" bottom: "data" top: "l"
  detection_output_param { num_classes: 2 save_output_param { `+c.param+` } } }`))
		if err != nil {
			t.Fatal(err)
		}
		if w := strings.Join(nd.Warnings, "\n"); !strings.Contains(w, "f.prototxt:3:") ||
			!strings.Contains(w, "ignoring save_output_param in detection_output_param of layer 'l'") || !strings.Contains(w, c.want) {
			t.Errorf("warnings %q lack save_output_param's, saying %q", w, c.want)
		}
	}
}

// TestSSDNetFiles: SSD-shaped nets from prototxt build and run forward:
// ssd_priorbox.prototxt (SSD300's conv4_3 prior head) and ssd_head.prototxt
// (two feature maps through Permute, Flatten, PriorBox, Concat, Softmax and
// DetectionOutput), whose detections must be well-formed.
func TestSSDNetFiles(t *testing.T) {
	build := func(file string, phase layers.Phase) *model.Net {
		t.Helper()
		nd, err := LoadNet(filepath.Join("testdata", "forks", file))
		if err != nil {
			t.Fatal(err)
		}
		pn, err := nd.Phase(phase)
		if err != nil {
			t.Fatal(err)
		}
		inputs := map[string]tensor.Shape{}
		for i, name := range pn.Spec.Inputs {
			inputs[name] = pn.Data[0].Shapes[i]
		}
		n, err := model.Build(pn.Spec, inputs, model.Options{Phase: phase, Seed: 1, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := build("ssd_priorbox.prototxt", layers.Train)
	n.Forward()
	if got, want := n.Blob("conv4_3_norm_mbox_priorbox").Shape, (tensor.Shape{1, 2, 8 * 8 * 4 * 4}); !got.Equal(want) {
		t.Errorf("ssd_priorbox: the priors are %v, want %v", got, want)
	}

	n = build("ssd_head.prototxt", layers.Test)
	in := n.Input("data")
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range in.Data {
		in.Data[i] = float32(rng.NormFloat64())
	}
	for pass := range 2 {
		if loss := n.Forward(); math.IsNaN(loss) {
			t.Fatalf("pass %d: Forward failed: %v", pass, n.Err())
		}
		out := n.Blob("detection_out")
		if len(out.Shape) != 4 || out.Shape[0] != 1 || out.Shape[1] != 1 || out.Shape[3] != 7 || out.Shape[2] < 1 || out.Shape[2] > 2*20 {
			t.Fatalf("pass %d: detection_out is %v, want 1×1×D×7 with 1 ≤ D ≤ 40", pass, out.Shape)
		}
		rows := out.Data[:out.Shape.Count()]
		if rows[0] == -1 || rows[1] == -1 {
			t.Fatalf("pass %d: no detections (%v): the test's weights should give some", pass, rows[:7])
		}
		prev := []float32{-1, 0, 2}
		for r := range out.Shape[2] {
			row := rows[r*7 : r*7+7]
			img, label, score := row[0], row[1], row[2]
			if img != 0 && img != 1 || label != 1 && label != 2 || !(score > 0.3 && score <= 1) {
				t.Errorf("pass %d: row %d %v: want image 0 or 1, label 1 or 2, score in (0.3, 1]", pass, r, row)
			}
			// By image, then ascending label, then descending score.
			if img < prev[0] || img == prev[0] && (label < prev[1] || label == prev[1] && score > prev[2]) {
				t.Errorf("pass %d: row %d %v is out of order after %v", pass, r, row, prev)
			}
			prev = []float32{img, label, score}
		}
	}
}

// TestSSDDetectionEvaluateDecode: detection_evaluate_param read with the
// fork's defaults, its LayerSetUp checks and the refused rescaling fields
// as errors at their line.
func TestSSDDetectionEvaluateDecode(t *testing.T) {
	de := func(p string) string {
		return `layer { name: "l" type: "DetectionEvaluate" bottom: "data" bottom: "data" top: "l" detection_evaluate_param { ` + p + ` } }`
	}
	for _, c := range []struct {
		layer string
		want  layers.Config
	}{
		{de(`num_classes: 21`), &layers.DetectionEvaluateConfig{NumClasses: 21, OverlapThreshold: 0.5, EvaluateDifficultGT: true}},
		// MobileNet-SSD's and ssd_pascal.py's TEST net.
		{de(`num_classes: 21 background_label_id: 0 overlap_threshold: 0.5 evaluate_difficult_gt: false`),
			&layers.DetectionEvaluateConfig{NumClasses: 21, OverlapThreshold: 0.5}},
		{de(`num_classes: 3 background_label_id: 2 overlap_threshold: 0.3`),
			&layers.DetectionEvaluateConfig{NumClasses: 3, BackgroundLabelID: 2, OverlapThreshold: 0.3, EvaluateDifficultGT: true}},
	} {
		nd, err := ParseNet("f.prototxt", []byte(extraInput+c.layer))
		if err != nil {
			t.Errorf("%s: %v", c.layer, err)
			continue
		}
		if got := findLayer(t, mustPhase(t, nd, layers.Train).Spec, "l").Config; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.layer, got, c.want)
		}
	}
	checkDecodeErrors(t, []decodeErrCase{
		{"no num_classes", de(`overlap_threshold: 0.5`), `{ overlap`, "detection_evaluate_param of layer 'l' needs num_classes"},
		{"num_classes 0", de(`num_classes: 0`), `0 }`, "num_classes in detection_evaluate_param of layer 'l': must be at least 1, got 0"},
		{"background negative", de(`num_classes: 2 background_label_id: -1`), `-1`, "background_label_id in detection_evaluate_param of layer 'l'"},
		{"overlap 0", de(`num_classes: 2 overlap_threshold: 0`), `0 }`, "overlap_threshold in detection_evaluate_param of layer 'l': must be positive"},
		{"name_size_file", de(`num_classes: 2 name_size_file: "test_name_size.txt"`), `name_size_file`, "name_size_file in detection_evaluate_param of layer 'l': dsgd does not rescale the boxes"},
		{"resize_param", de(`num_classes: 2 resize_param { height: 300 width: 300 }`), `resize_param`, "resize_param in detection_evaluate_param of layer 'l': dsgd does not rescale the boxes"},
		{"unknown field", de(`num_classes: 2 iou: 0.5`), `iou`, "unsupported field 'iou' in detection_evaluate_param of layer 'l'"},
		{"one bottom", `layer { name: "l" type: "DetectionEvaluate" bottom: "data" top: "l" detection_evaluate_param { num_classes: 2 } }`,
			"", "layer 'l' (DetectionEvaluate) takes 2 bottoms, DetectionOutput's detections and the ground truth"},
	})
}

// TestSSDDetectionEvaluateNet: DetectionEvaluate from prototxt in a net
// whose detections change in number between passes (its top follows),
// and a background label in the data stops the pass with an error naming
// the layer, not a panic.
func TestSSDDetectionEvaluateNet(t *testing.T) {
	src := `layer { name: "in" type: "Input" top: "det" top: "gt" input_param { shape { dim: 1 dim: 1 dim: 2 dim: 7 } shape { dim: 1 dim: 1 dim: 1 dim: 8 } } }
layer { name: "detection_eval" type: "DetectionEvaluate" bottom: "det" bottom: "gt" top: "detection_eval"
  detection_evaluate_param { num_classes: 3 background_label_id: 0 overlap_threshold: 0.5 evaluate_difficult_gt: false } }`
	nd, err := ParseNet("f.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pn := mustPhase(t, nd, layers.Test)
	inputs := map[string]tensor.Shape{}
	for i, name := range pn.Spec.Inputs {
		inputs[name] = pn.Data[0].Shapes[i]
	}
	n, err := model.Build(pn.Spec, inputs, model.Options{Phase: layers.Test, Seed: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	copy(n.Input("gt").Data, []float32{0, 1, 0, 0.1, 0.1, 0.5, 0.5, 0})
	for _, tc := range []struct {
		name string
		det  []float32
		want []float32
	}{
		{"two detections", []float32{0, 1, 0.9, 0.1, 0.1, 0.5, 0.5, 0, 2, 0.4, 0, 0, 1, 1},
			[]float32{-1, 1, 1, -1, -1, -1, 2, 0, -1, -1, 0, 1, 0.9, 1, 0, 0, 2, 0.4, 0, 1}},
		{"none", []float32{0, -1, -1, -1, -1, -1, -1, 0, -1, -1, -1, -1, -1, -1},
			[]float32{-1, 1, 1, -1, -1, -1, 2, 0, -1, -1}},
	} {
		copy(n.Input("det").Data, tc.det)
		if loss := n.Forward(); math.IsNaN(loss) {
			t.Fatalf("%s: %v", tc.name, n.Err())
		}
		out := n.Blob("detection_eval")
		if got := out.Data[:out.Shape.Count()]; !reflect.DeepEqual(got, tc.want) || !out.Shape.Equal(tensor.Shape{1, 1, len(tc.want) / 5, 5}) {
			t.Errorf("%s: top %v %v, want %v", tc.name, out.Shape, got, tc.want)
		}
	}
	copy(n.Input("det").Data, []float32{0, 0, 0.9, 0.1, 0.1, 0.5, 0.5, 0, -1, -1, -1, -1, -1, -1})
	n.Forward()
	if err := n.Err(); err == nil || !strings.Contains(err.Error(), "detection_eval") || !strings.Contains(err.Error(), "background's label 0") {
		t.Errorf("background detection: error %v, want one naming the layer and the label", err)
	}
}
