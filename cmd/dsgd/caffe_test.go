//go:build !purego

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"dsgd/caffe/caffemodel"
	"dsgd/data"
)

// The fixtures of data/testdata/caffe hold the same images as IDX files
// and as databases and HDF5 files written by Python (see
// scripts/caffe_fixtures.py), and a .caffemodel Python wrote with its
// numpy test accuracy.
var caffeFixtures, _ = filepath.Abs("../../data/testdata/caffe")

// logregNet is a softmax regression over the fixtures' 1x12x12 images;
// TRAIN and TEST read SRC_train and SRC_test through LAYER.
const logregNet = `name: "logreg"
layer { name: "d" type: "@LAYER" top: "data" top: "label" include { phase: TRAIN }
  @PARAM { source: "@TRAIN" batch_size: 20 @BACKEND } @TRANSFORM }
layer { name: "d" type: "@LAYER" top: "data" top: "label" include { phase: TEST }
  @PARAM { source: "@TEST" batch_size: 50 @BACKEND } @TRANSFORM }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

const logregSolver = `net: "net.prototxt"
test_iter: 4 test_interval: 1000 base_lr: 0.1 momentum: 0.9 lr_policy: "fixed"
max_iter: 60 display: 0 random_seed: 5 snapshot_prefix: "out/logreg"
`

func logreg(layer, train, test, backend string) string {
	r := strings.NewReplacer("@LAYER", layer, "@TRAIN", train, "@TEST", test)
	s := r.Replace(logregNet)
	param, transform := "data_param", "transform_param { scale: 0.00390625 }"
	switch layer {
	case "HDF5Data":
		param, transform = "hdf5_data_param", ""
	case "ImageData":
		param = "image_data_param"
		backend = "is_color: false root_folder: \"" + backend + "\""
		return strings.NewReplacer("@PARAM", param, "@TRANSFORM", transform, "@BACKEND", backend).Replace(s)
	}
	if backend != "" {
		backend = "backend: " + backend
	}
	return strings.NewReplacer("@PARAM", param, "@TRANSFORM", transform, "@BACKEND", backend).Replace(s)
}

// copyTree copies a fixture directory (databases get lock files when
// opened).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			copyTree(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var finalTest = regexp.MustCompile(`final test:\s+accuracy ([0-9.]+)\s+loss ([0-9.]+)`)

// TestCaffeSourcesTrainAlike: the same images from IDX files, from
// Python-written LMDB and LevelDB databases (raw, and float_data) and from
// Python-written HDF5
// train to the same accuracy and loss, to the last digit printed.
func TestCaffeSourcesTrainAlike(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, caffeFixtures, filepath.Join(dir, "fx"))
	fx := filepath.Join(dir, "fx")
	write(t, dir, "train_h5.txt", filepath.Join(fx, "train.h5")+"\n")
	write(t, dir, "test_h5.txt", filepath.Join(fx, "test.h5")+"\n")
	write(t, dir, "solver.prototxt", logregSolver)
	imageList(t, fx, dir, data.Train, "train_list.txt")
	imageList(t, fx, dir, data.Test, "test_list.txt")
	nets := []struct{ name, net string }{
		{"idx", logreg("Data", fx+"/idx", fx+"/idx", "")},
		{"lmdb", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB")},
		{"leveldb", logreg("Data", fx+"/train_leveldb", fx+"/test_leveldb", "")},
		// float_data = pixels / 256, fed without a scale.
		{"float lmdb", strings.ReplaceAll(logreg("Data", fx+"/train_float_lmdb", fx+"/test_float_lmdb", "LMDB"), "transform_param { scale: 0.00390625 }", "")},
		{"hdf5", logreg("HDF5Data", "train_h5.txt", "test_h5.txt", "")},
		{"imagedata", logreg("ImageData", "train_list.txt", "test_list.txt", dir+"/png/")},
	}
	var want []string
	for _, n := range nets {
		write(t, dir, "net.prototxt", n.net)
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", n.name, code, out, errs)
		}
		m := finalTest.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no final test in\n%s", n.name, out)
		}
		if acc, _ := strconv.ParseFloat(m[1], 64); acc < 0.5 {
			t.Errorf("%s: accuracy %s; the net did not learn", n.name, m[1])
		}
		t.Logf("%s: accuracy %s loss %s", n.name, m[1], m[2])
		if want == nil {
			want = m
			continue
		}
		if m[1] != want[1] || m[2] != want[2] {
			t.Errorf("%s: accuracy %s loss %s; IDX gave accuracy %s loss %s", n.name, m[1], m[2], want[1], want[2])
		}
	}
}

// TestCaffeModelWeights: dsgd test on the .caffemodel Python wrote gives
// the accuracy numpy computed with its weights; a Caffe-format snapshot
// tests as the run's final test did, resumes, and fine-tunes; a model of
// another net is refused naming its layers.
func TestCaffeModelWeights(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, caffeFixtures, filepath.Join(dir, "fx"))
	fx := filepath.Join(dir, "fx")
	write(t, dir, "net.prototxt", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"))
	write(t, dir, "solver.prototxt", logregSolver)
	var meta struct {
		Acc float64 `json:"test_accuracy"`
	}
	b, err := os.ReadFile(filepath.Join(fx, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	args := []string{"--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1"}
	code, out, errs := runCmd(t, dir, append([]string{"test", "--weights", filepath.Join(fx, "model.caffemodel")}, args...)...)
	if code != 0 {
		t.Fatalf("test: exit %d\n%s\n%s", code, out, errs)
	}
	m := regexp.MustCompile(`accuracy\s+([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no accuracy in %s", out)
	}
	// 200 test images: numpy's float64 and our float32 may differ on an
	// image whose two best scores tie to within rounding, not more.
	if acc, _ := strconv.ParseFloat(m[1], 64); math.Abs(acc-meta.Acc) > 0.0051 {
		t.Errorf("dsgd test on Python's model: accuracy %s, numpy computed %.4f", m[1], meta.Acc)
	}
	if !strings.Contains(errs, "copied ip; ignored unused_fc") {
		t.Errorf("no copy report on stderr: %q", errs)
	}

	// Caffe-format snapshots: test, resume, fine-tune.
	code, out, errs = runCmd(t, dir, append([]string{"train", "--workers", "1", "--snapshot-format", "caffe"}, args...)...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	final := finalTest.FindStringSubmatch(out)
	for _, f := range []string{"out/logreg_iter_60.caffemodel", "out/logreg_iter_60.solverstate"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("snapshot file: %v\n%s", err, out)
		}
	}
	code, out, errs = runCmd(t, dir, append([]string{"test", "--weights", "out/logreg_iter_60.caffemodel"}, args...)...)
	if code != 0 || final == nil || !strings.Contains(out, "accuracy   "+final[1]) || !strings.Contains(out, "loss       "+final[2]) {
		t.Fatalf("test on the caffe snapshot: exit %d\n%s\n%s\nthe run's final test: %v", code, out, errs, final)
	}
	code, out, errs = runCmd(t, dir, append([]string{"train", "--workers", "1", "--iters", "80", "--snapshot-prefix", "none", "--resume", "out/logreg_iter_60.solverstate"}, args...)...)
	if code != 0 || !strings.Contains(out, "(from 60)") {
		t.Fatalf("resume from .solverstate: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCmd(t, dir, append([]string{"train", "--workers", "1", "--iters", "1", "--snapshot-prefix", "none", "--weights", filepath.Join(fx, "model.caffemodel")}, args...)...)
	if code != 0 || !strings.Contains(out, "copied ip; ignored unused_fc") {
		t.Fatalf("fine-tune from Python's model: exit %d\n%s\n%s", code, out, errs)
	}

	// A model of another net, and a layer whose shape changed.
	write(t, dir, "other.prototxt", strings.Replace(logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"), `name: "ip"`, `name: "fc"`, 1))
	write(t, dir, "wide.prototxt", strings.Replace(logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"), "num_output: 4", "num_output: 5", 1))
	for _, c := range []struct{ net, want string }{
		{"other.prototxt", "matches no layer of this net: the file has weights for ip, unused_fc; the net has parameters in fc"},
		{"wide.prototxt", `layer "ip" blob 0 has shape 1x1x4x144 in the file but 5x144 in the net`},
	} {
		code, _, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--net", c.net, "--threads", "1", "--workers", "1", "--weights", filepath.Join(fx, "model.caffemodel"))
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", c.net, code, errs, c.want)
		}
	}
}

// imageList writes a split of the IDX fixture as PNG files under dir/png
// and a Caffe list file naming them.
func imageList(t *testing.T, fx, dir string, split data.Split, list string) {
	t.Helper()
	names := map[data.Split][2]string{data.Train: {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}, data.Test: {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}}[split]
	ds, err := data.ReadIDXFiles(filepath.Join(fx, "idx", names[0]), filepath.Join(fx, "idx", names[1]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "png"), 0o755); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := range ds.N {
		g := image.NewGray(image.Rect(0, 0, ds.W, ds.H))
		copy(g.Pix, ds.Image(i))
		var buf bytes.Buffer
		if err := png.Encode(&buf, g); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s_%04d.png", split, i)
		write(t, filepath.Join(dir, "png"), name, buf.String())
		fmt.Fprintf(&sb, "%s %d\n", name, ds.Labels[i])
	}
	write(t, dir, list, sb.String())
}

// TestDummyDataTrains: a net fed by DummyData runs.
func TestDummyDataTrains(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", `name: "dummy"
layer { name: "d" type: "DummyData" top: "data" top: "label"
  dummy_data_param { shape { dim: 8 dim: 6 } shape { dim: 8 }
    data_filler { type: "gaussian" std: 0.01 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`)
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 1 lr_policy: \"fixed\" max_iter: 30 display: 10\n")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if code != 0 || !strings.Contains(out, "iter 30/30") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// Every label is 1: the loss falls.
	m := regexp.MustCompile(`iter 10/30\s+loss ([0-9.]+)(?s:.*)iter 30/30\s+loss ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no losses in\n%s", out)
	}
	l10, _ := strconv.ParseFloat(m[1], 64)
	l30, _ := strconv.ParseFloat(m[2], 64)
	if l30 >= l10 {
		t.Fatalf("loss %s at 10, %s at 30: want it falling on constant labels\n%s", m[1], m[2], out)
	}
}

// TestLabelOutOfRange: labels past a loss layer's classes are refused
// before training or timing, naming the data layer, its source and the
// layer (dsgd time panicked in the loss layer on GilLevi's
// AgeGenderDeepLearning gender_net_definitions/train_val_test_fold_is_0.prototxt,
// 2 classes, with --data synthetic of 256 classes).
func TestLabelOutOfRange(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", strings.Replace(logreg("Data", caffeFixtures+"/idx", caffeFixtures+"/idx", ""), "num_output: 4", "num_output: 3", 1))
	write(t, dir, "solver.prototxt", logregSolver)
	for _, args := range [][]string{
		{"train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none"},
		{"time", "--net", "net.prototxt", "--threads", "1", "--iters", "1", "--warmup", "0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, errs := runCmd(t, dir, args...)
			want := `data layer "d" (source ` + caffeFixtures + `/idx): labels up to 3 but layer "loss" (SoftmaxWithLoss) scores 3 classes in "ip"`
			if code != 1 || !strings.Contains(errs, want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, errs, want)
			}
		})
	}
}

// TestCaffeSnapshotAdam: an Adam snapshot holds Caffe's 2N history blobs
// (every first moment, then every second) and resumes.
func TestCaffeSnapshotAdam(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", logreg("Data", caffeFixtures+"/idx", caffeFixtures+"/idx", ""))
	write(t, dir, "solver.prototxt", strings.Replace(logregSolver, `lr_policy: "fixed"`, `lr_policy: "fixed" type: "Adam" snapshot_format: BINARYPROTO`, 1))
	args := []string{"--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1"}
	code, out, errs := runCmd(t, dir, append([]string{"train", "--iters", "10"}, args...)...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	st, err := caffemodel.ReadState(filepath.Join(dir, "out/logreg_iter_10.solverstate"))
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for _, h := range st.History {
		shapes = append(shapes, fmt.Sprint(h.Shape))
	}
	if st.Iter != 10 || strings.Join(shapes, " ") != "[4 144] [4] [4 144] [4]" {
		t.Fatalf("solverstate iter %d, history shapes %v", st.Iter, shapes)
	}
	code, out, errs = runCmd(t, dir, append([]string{"train", "--iters", "12", "--snapshot-prefix", "none", "--resume", "out/logreg_iter_10.solverstate"}, args...)...)
	if code != 0 || !strings.Contains(out, "(from 10)") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	// Caffe's spelling, as caffe train -solver S -snapshot X.solverstate,
	// resumes the same, with a note.
	code, out, errs = runCmd(t, dir, append([]string{"train", "-iters", "12", "-snapshot-prefix", "none", "-snapshot", "out/logreg_iter_10.solverstate"}, args...)...)
	if code != 0 || !strings.Contains(out, "(from 10)") || !strings.Contains(errs, "Caffe's spelling of --resume") {
		t.Fatalf("-snapshot: exit %d\n%s\n%s", code, out, errs)
	}
	// -gpu 0: refused where there is no GPU, as Caffe built without CUDA
	// refuses it; noted where there is one (the run is on the CPU).
	code, out, errs = runCmd(t, dir, append([]string{"train", "-iters", "12", "-snapshot-prefix", "none", "-gpu", "0"}, args...)...)
	checkGPUFlag(t, "train -gpu 0", code, out, errs)
	code, out, errs = runCmd(t, dir, append([]string{"train", "--snapshot", "out/logreg_iter_10.solverstate", "--resume", "out/logreg_iter_10.solverstate"}, args...)...)
	if code != 2 || !strings.Contains(errs, "give one") {
		t.Fatalf("--snapshot with --resume: exit %d\n%s\n%s", code, out, errs)
	}
}
