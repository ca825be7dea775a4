//go:build !purego

package main

import (
	"os"
	"path/filepath"
	"regexp"
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
// Without augmentation the loss over the three images falls; with
// ssd_pascal.py's it trains to the end, on one worker and on two.
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
	net := func(aug, samplers string) string {
		l := strings.NewReplacer("@DB", dbDir, "@AUG", aug, "@SAMPLERS", samplers).Replace(ssdAnnotatedData)
		n := input.ReplaceAllLiteralString(string(src), l)
		// Five classes (the database's labels reach 4): 4 and 6 priors a
		// place on the two maps.
		return strings.NewReplacer("num_output: 12", "num_output: 20", "num_output: 18", "num_output: 30", "num_classes: 3", "num_classes: 5").Replace(n)
	}
	write(t, dir, "plain.prototxt", net("", ""))
	write(t, dir, "pascal.prototxt", net(ssdPascalAug, ssdPascalSamplers))
	solver := "base_lr: 0.01 momentum: 0.9 lr_policy: \"fixed\" max_iter: 150 display: 10 random_seed: 1\n"
	write(t, dir, "plain_solver.prototxt", "net: \"plain.prototxt\"\n"+solver)
	write(t, dir, "pascal_solver.prototxt", "net: \"pascal.prototxt\"\n"+solver)

	code, out, errs := runCmd(t, dir, "train", "--solver", "plain_solver.prototxt", "--threads", "1", "--snapshot-prefix", "none")
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
