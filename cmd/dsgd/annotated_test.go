//go:build !purego

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// annotatedNet is SSD's data side in miniature: AnnotatedData layers over
// data/testdata/annotated/anno_lmdb (PNG AnnotatedDatums written with the
// fork's messages by scripts/ssd_annotated_fixture.py), the TRAIN one
// with ssd_pascal.py's augmentation (distort, expand, its seven samplers,
// emit_constraint CENTER, mirror, WARP with its five interp modes), the TEST
// one resizing only. The label rows (1x1xGx8, G changing every batch) are
// summed into an output, as MultiBoxLoss would read them.
const annotatedNet = `name: "ssd_data"
layer { name: "data" type: "AnnotatedData" top: "data" top: "label" include { phase: TRAIN }
  transform_param { mirror: true mean_value: 104 mean_value: 117 mean_value: 123 scale: 0.01
    resize_param { prob: 1 resize_mode: WARP height: 20 width: 20 interp_mode: LINEAR interp_mode: AREA interp_mode: NEAREST interp_mode: CUBIC interp_mode: LANCZOS4 }
    emit_constraint { emit_type: CENTER }
    distort_param { brightness_prob: 0.5 brightness_delta: 32 contrast_prob: 0.5 contrast_lower: 0.5 contrast_upper: 1.5
      hue_prob: 0.5 hue_delta: 18 saturation_prob: 0.5 saturation_lower: 0.5 saturation_upper: 1.5 random_order_prob: 0 }
    expand_param { prob: 0.5 max_expand_ratio: 4 } }
  data_param { source: "@DB" batch_size: 4 backend: LMDB }
  annotated_data_param {
    batch_sampler { max_sample: 1 max_trials: 1 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.1 } max_sample: 1 max_trials: 50 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.3 } max_sample: 1 max_trials: 50 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.5 } max_sample: 1 max_trials: 50 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.7 } max_sample: 1 max_trials: 50 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { min_jaccard_overlap: 0.9 } max_sample: 1 max_trials: 50 }
    batch_sampler { sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } sample_constraint { max_jaccard_overlap: 1 } max_sample: 1 max_trials: 50 }
    label_map_file: "labelmap_voc.prototxt" } }
layer { name: "data" type: "AnnotatedData" top: "data" top: "label" include { phase: TEST }
  transform_param { mean_value: 104 mean_value: 117 mean_value: 123 scale: 0.01
    resize_param { prob: 1 resize_mode: WARP height: 20 width: 20 interp_mode: LINEAR } }
  data_param { source: "@DB" batch_size: 2 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "Reduction" bottom: "ip" top: "loss" reduction_param { operation: SUMSQ coeff: 0.001 } loss_weight: 1 }
layer { name: "rows" type: "Reduction" bottom: "label" top: "rows" reduction_param { operation: SUM } }
`

// TestAnnotatedDataTrains: a net fed by AnnotatedData layers reads the
// fork's database end to end, trains with ssd_pascal.py's augmentation and
// tests, on one worker and on two.
func TestAnnotatedDataTrains(t *testing.T) {
	dir := t.TempDir()
	dbDir := copyAnnoLMDB(t, dir)
	write(t, dir, "net.prototxt", strings.ReplaceAll(annotatedNet, "@DB", dbDir))
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\ntest_iter: 2 test_interval: 10 base_lr: 0.001 momentum: 0.9 lr_policy: \"fixed\" max_iter: 20 display: 10 random_seed: 3\n")
	for _, workers := range []string{"1", "2"} {
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", workers, "--snapshot-prefix", "none")
		if code != 0 || !strings.Contains(out, "iter 20/20") || !strings.Contains(out, "rows") {
			t.Fatalf("%s workers: exit %d\n%s\n%s", workers, code, out, errs)
		}
	}
	write(t, dir, "bad.prototxt", strings.ReplaceAll(strings.ReplaceAll(annotatedNet, "@DB", dbDir), "resize_mode: WARP height: 20", "resize_mode: FIT_SMALL_SIZE height: 20"))
	code, _, errs := runCmd(t, dir, "time", "--net", "bad.prototxt", "--iters", "1", "--warmup", "0", "--threads", "1")
	if code == 0 || !strings.Contains(errs, "bad.prototxt:4:") || !strings.Contains(errs, "FIT_SMALL_SIZE: dsgd's AnnotatedData runs WARP only") {
		t.Fatalf("exit %d, stderr %q; want resize_mode FIT_SMALL_SIZE refused at its line", code, errs)
	}
}

// copyAnnoLMDB copies the fork's AnnotatedDatum database
// data/testdata/annotated/anno_lmdb (scripts/ssd_annotated_fixture.py)
// into dir and returns its path there.
func copyAnnoLMDB(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "data", "testdata", "annotated", "anno_lmdb", "data.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	dbDir := filepath.Join(dir, "anno_lmdb")
	if err := os.Mkdir(dbDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dbDir, "data.mdb", string(src))
	return dbDir
}
