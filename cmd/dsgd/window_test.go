package main

import (
	"path/filepath"
	"strings"
	"testing"
)

var windowFixtures, _ = filepath.Abs("../../data/testdata/window")

// windowNet is an R-CNN-style fine-tuning net in miniature: WindowData
// layers over data/testdata/window's two images (classes 1, 2, 4 and
// background 0), 10x10 crops with context padding.
const windowNet = `name: "windows"
layer { name: "data" type: "WindowData" top: "data" top: "label" include { phase: TRAIN }
  transform_param { mirror: true crop_size: 10 mean_value: 104 mean_value: 117 mean_value: 123 }
  window_data_param { source: "@DIR/windows.txt" root_folder: "@DIR/" batch_size: 8
    fg_threshold: 0.5 bg_threshold: 0.3 fg_fraction: 0.25 context_pad: 2 crop_mode: "warp" scale: 0.0078125 } }
layer { name: "data" type: "WindowData" top: "data" top: "label" include { phase: TEST }
  transform_param { crop_size: 10 mean_file: "@DIR/mean.binaryproto" }
  window_data_param { source: "@DIR/windows.txt" root_folder: "@DIR/" batch_size: 4 crop_mode: "square" cache_images: true scale: 0.0078125 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
`

// TestWindowDataTrains: a net fed by WindowData layers (window file,
// root_folder, context_pad, warp and square, mean_value and mean_file)
// trains and tests; a window file that is not there is named with the
// layer's position.
func TestWindowDataTrains(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", strings.ReplaceAll(windowNet, "@DIR", windowFixtures))
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\ntest_iter: 2 test_interval: 10 base_lr: 0.01 momentum: 0.9 lr_policy: \"fixed\" max_iter: 20 display: 10 random_seed: 3\n")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if code != 0 || !strings.Contains(out, "iter 20/20") || !strings.Contains(out, "accuracy") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	write(t, dir, "bad.prototxt", strings.ReplaceAll(strings.ReplaceAll(windowNet, "@DIR/windows.txt", "@DIR/none.txt"), "@DIR", windowFixtures))
	code, _, errs = runCmd(t, dir, "time", "--net", "bad.prototxt", "--iters", "1", "--warmup", "0", "--threads", "1")
	if code == 0 || !strings.Contains(errs, "bad.prototxt:2:1") || !strings.Contains(errs, `WindowData layer "data": window file: open `+windowFixtures+"/none.txt") {
		t.Fatalf("exit %d, stderr %q; want the layer's position and the missing window file", code, errs)
	}
}
