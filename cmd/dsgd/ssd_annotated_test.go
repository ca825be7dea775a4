//go:build !purego

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ssdAnnotatedData is a TRAIN AnnotatedData layer over the fork's
// database data/testdata/annotated/anno_lmdb (3 images, classes 1, 2 and
// 4), resized to the 16×16 input of caffedef's ssd_train.prototxt; @AUG
// is replaced by the augmentation (none, or ssd_pascal.py's).
const ssdAnnotatedData = `layer { name: "data" type: "AnnotatedData" top: "data" top: "label" include { phase: TRAIN }
  transform_param { mean_value: 104 mean_value: 117 mean_value: 123 scale: 0.01
    resize_param { prob: 1 resize_mode: WARP height: 16 width: 16 interp_mode: LINEAR } @AUG }
  data_param { source: "@DB" batch_size: 3 backend: LMDB }
  annotated_data_param { @SAMPLERS } }`

// ssdDetectionTest is the TEST phase of ssd_pascal.py's train net, for
// ssd_train.prototxt made for 5 classes: AnnotatedData resizing only, the
// confidences through Softmax, DetectionOutput and DetectionEvaluate with
// ssd_pascal.py's settings.
// ssdDetectionTestData (its data layer) goes after the TRAIN one.
const ssdDetectionTestData = `
layer { name: "data" type: "AnnotatedData" top: "data" top: "label" include { phase: TEST }
  transform_param { mean_value: 104 mean_value: 117 mean_value: 123 scale: 0.01
    resize_param { prob: 1 resize_mode: WARP height: 16 width: 16 interp_mode: LINEAR } }
  data_param { source: "@DB" batch_size: 3 backend: LMDB } }`

const ssdDetectionTest = `
layer { name: "mbox_conf_reshape" type: "Reshape" bottom: "mbox_conf" top: "mbox_conf_reshape" include { phase: TEST }
  reshape_param { shape { dim: 0 dim: -1 dim: 5 } } }
layer { name: "mbox_conf_softmax" type: "Softmax" bottom: "mbox_conf_reshape" top: "mbox_conf_softmax" include { phase: TEST } softmax_param { axis: 2 } }
layer { name: "mbox_conf_flatten" type: "Flatten" bottom: "mbox_conf_softmax" top: "mbox_conf_flatten" include { phase: TEST } flatten_param { axis: 1 } }
layer { name: "detection_out" type: "DetectionOutput" bottom: "mbox_loc" bottom: "mbox_conf_flatten" bottom: "mbox_priorbox" top: "detection_out" include { phase: TEST }
  detection_output_param { num_classes: 5 share_location: true background_label_id: 0 nms_param { nms_threshold: 0.45 top_k: 400 }
    code_type: CENTER_SIZE keep_top_k: 200 confidence_threshold: 0.01 } }
layer { name: "detection_eval" type: "DetectionEvaluate" bottom: "detection_out" bottom: "label" top: "detection_eval" include { phase: TEST }
  detection_evaluate_param { num_classes: 5 background_label_id: 0 overlap_threshold: 0.5 evaluate_difficult_gt: false } }
`

// ssdPascalAug and ssdPascalSamplers are ssd_pascal.py's TRAIN
// augmentation and two of its samplers.
const (
	ssdPascalAug = `mirror: true emit_constraint { emit_type: CENTER }
    distort_param { brightness_prob: 0.5 brightness_delta: 32 contrast_prob: 0.5 contrast_lower: 0.5 contrast_upper: 1.5
      hue_prob: 0.5 hue_delta: 18 saturation_prob: 0.5 saturation_lower: 0.5 saturation_upper: 1.5 random_order_prob: 0 }
    expand_param { prob: 0.5 max_expand_ratio: 4 }`
	ssdPascalSamplers = `batch_sampler { max_sample: 1 max_trials: 1 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.5 } max_sample: 1 max_trials: 50 }`
)

// TestSSDAnnotatedTrains trains SSD end to end on the fork's formats:
// AnnotatedData reading AnnotatedDatum records, the heads, PriorBox and
// MultiBoxLoss of caffedef's ssd_train.prototxt (made for 5 classes).
// Without augmentation the loss over the three images falls and the
// TEST phase (ssdDetectionTest), under ssd_pascal.py's solver settings
// eval_type "detection" and ap_version "11point", reports an mAP in
// [0, 1] that rises; with ssd_pascal.py's augmentation it trains to the
// end, on one worker and on two.
func TestSSDAnnotatedTrains(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "caffe", "caffedef", "testdata", "forks", "ssd_train.prototxt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dbDir := copyAnnoLMDB(t, dir)
	input := regexp.MustCompile(`(?m)^layer \{ name: "data" type: "Input".*$`)
	if !input.Match(src) {
		t.Fatal("ssd_train.prototxt has no Input data layer to replace")
	}
	net := func(aug, samplers string, test bool) string {
		l := strings.NewReplacer("@DB", dbDir, "@AUG", aug, "@SAMPLERS", samplers).Replace(ssdAnnotatedData)
		if test {
			l += strings.ReplaceAll(ssdDetectionTestData, "@DB", dbDir)
		}
		n := input.ReplaceAllLiteralString(string(src), l)
		// Five classes (the database's labels reach 4): 4 and 6 priors a
		// place on the two maps.
		return strings.NewReplacer("num_output: 12", "num_output: 20", "num_output: 18", "num_output: 30", "num_classes: 3", "num_classes: 5").Replace(n)
	}
	write(t, dir, "plain.prototxt", net("", "", true)+ssdDetectionTest)
	write(t, dir, "pascal.prototxt", net(ssdPascalAug, ssdPascalSamplers, false))
	solver := "base_lr: 0.01 momentum: 0.9 lr_policy: \"fixed\" max_iter: 150 display: 10 random_seed: 1\n"
	write(t, dir, "plain_solver.prototxt", "net: \"plain.prototxt\"\n"+solver+
		"test_iter: 1 test_interval: 50 test_initialization: true eval_type: \"detection\" ap_version: \"11point\"\n")
	write(t, dir, "pascal_solver.prototxt", "net: \"pascal.prototxt\"\n"+solver)

	code, out, errs := runCmd(t, dir, "train", "--solver", "plain_solver.prototxt", "--threads", "1", "--snapshot-prefix", "none", "--metrics", "m.csv", "--log", "caffe.log")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var losses []float64
	for _, m := range regexp.MustCompile(`(?m)^iter\s+\d+/150\s+loss\s+([0-9.eE+-]+)`).FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, v)
	}
	t.Logf("losses %v", losses)
	var maps []float64
	for _, m := range regexp.MustCompile(`(?m)^iter \d+ test:.*detection_eval\s+([0-9.eE+-]+)`).FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		maps = append(maps, v)
	}
	t.Logf("mAPs %v", maps)
	if len(maps) < 3 || slices.ContainsFunc(maps, func(v float64) bool { return !(v >= 0 && v <= 1) }) || !(maps[len(maps)-1] > maps[0]) {
		t.Fatalf("eval_type detection: want at least 3 test passes' detection_eval in [0, 1], rising; got %v\n%s", maps, out)
	}
	// The mAP reaches the metrics file's column and the Caffe-style log.
	for file, want := range map[string]string{
		"m.csv":     "test_detection_eval",
		"caffe.log": "]     Test net output #0: detection_eval = 0.4",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", file, want, b)
		}
	}
	if len(losses) < 10 || !(losses[len(losses)-1] < 0.5*losses[0]) {
		t.Fatalf("MultiBoxLoss over AnnotatedData did not fall by half in 150 iterations: %v\n%s", losses, out)
	}
	for _, workers := range []string{"1", "2"} {
		code, out, errs := runCmd(t, dir, "train", "--solver", "pascal_solver.prototxt", "--threads", "1", "--workers", workers, "--iters", "30", "--snapshot-prefix", "none")
		if code != 0 || !strings.Contains(out, "iter 30/30") || strings.Contains(out, "NaN") {
			t.Fatalf("ssd_pascal.py's augmentation, %s workers: exit %d\n%s\n%s", workers, code, out, errs)
		}
	}
}
