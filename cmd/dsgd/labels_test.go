//go:build !purego

package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// imagenetLabels writes 1000 PNG images of 32x32 whose one lit pixel is
// the label (0..999, ImageNet's classes) and makes them an LMDB with
// dsgd convert-imageset, keys in list order.
func imagenetLabels(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	var list strings.Builder
	for l := range 1000 {
		g := image.NewGray(image.Rect(0, 0, 32, 32))
		g.Pix[l] = 255
		var buf bytes.Buffer
		if err := png.Encode(&buf, g); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%04d.png", l)
		write(t, filepath.Join(dir, "img"), name, buf.String())
		fmt.Fprintf(&list, "%s %d\n", name, l)
	}
	write(t, dir, "list.txt", list.String())
	code, out, errs := runCmd(t, dir, "convert-imageset", "--list", "list.txt", "--root", "img/", "--gray", "--out", "wide_lmdb")
	if code != 0 {
		t.Fatalf("convert-imageset: exit %d\n%s\n%s", code, out, errs)
	}
	return filepath.Join(dir, "wide_lmdb")
}

const wideNet = `name: "wide"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "@DB" batch_size: 100 backend: LMDB } transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "@DB" batch_size: 100 backend: LMDB } transform_param { scale: 0.00390625 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: @CLASSES weight_filler { type: "constant" } } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// TestThousandClasses: labels past 255 go from a database through the
// streaming Data layer to SoftmaxWithLoss and Accuracy unchanged: a
// softmax regression learns all 1000 classes of ImageNet's label range
// (with labels cut to a byte it could not pass 25 %). A label outside the
// net's classes is refused naming the database and the record.
func TestThousandClasses(t *testing.T) {
	dir := t.TempDir()
	lmdb := imagenetLabels(t, dir)
	net := strings.NewReplacer("@DB", lmdb, "@CLASSES", "1000").Replace(wideNet)
	write(t, dir, "net.prototxt", net)
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\ntest_iter: 10 test_interval: 1000 base_lr: 5 lr_policy: \"fixed\" max_iter: 30 display: 0 random_seed: 1 test_initialization: false\n")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "1000 images 1x32x32, streamed from the database") {
		t.Errorf("header does not say the database is streamed:\n%s", out)
	}
	m := finalTest.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no final test in\n%s", out)
	}
	if acc, _ := strconv.ParseFloat(m[1], 64); acc < 0.99 {
		t.Fatalf("accuracy %s over 1000 classes, want at least 0.99\n%s", m[1], out)
	}

	// 500 classes: the first batch with a label of 500 or more stops
	// the run, naming the record, its key and the layer.
	write(t, dir, "net.prototxt", strings.Replace(net, "num_output: 1000", "num_output: 500", 1))
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	bad := regexp.MustCompile(`data layer "d" \(source ` + regexp.QuoteMeta(lmdb) + `\): record (\d+) \(key "0*(\d+)_0*(\d+)\.png"\): label (\d+) \(item \d+ of the batch\) is not a class index of layer "loss" \(net.prototxt:9:1\), which has 500 classes`).FindStringSubmatch(errs)
	if code != 1 || bad == nil {
		t.Fatalf("exit %d, stderr %q; want the record, key and label at fault\n%s", code, errs, out)
	}
	if l, _ := strconv.Atoi(bad[4]); bad[1] != bad[2] || bad[2] != bad[3] || bad[3] != bad[4] || l < 500 {
		t.Fatalf("the error names record %s, key %s_%s, label %s: want one image's, with a label of 500 or more", bad[1], bad[2], bad[3], bad[4])
	}
}
