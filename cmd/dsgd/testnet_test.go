package main

import (
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"dsgd/caffe/caffemodel"
)

// number returns the value printed after name in out (a "name value"
// line of dsgd test), or fails.
func number(t *testing.T, out, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", name, out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTestNetWithoutSolver: `dsgd test --model NET --weights W.caffemodel
// --iterations N`, as caffe test, scores the TEST phase of the net file
// alone: the same accuracy and loss as testing through the solver, and on
// a deploy net (an Input layer, no loss) the outputs the weights give.
func TestTestNetWithoutSolver(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "40", "--workers", "1", "--snapshot-format", "caffe")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	const w = "out/tiny_iter_40.caffemodel"
	code, viaSolver, errs := runCmd(t, dir, "test", "--solver", "solver.prototxt", "--threads", "1", "--weights", w, "--test-iter", "4")
	if code != 0 {
		t.Fatalf("test --solver: exit %d\n%s\n%s", code, viaSolver, errs)
	}
	code, alone, errs := runCmd(t, dir, "test", "--model", "net.prototxt", "--threads", "1", "--weights", w, "--iterations", "4")
	if code != 0 {
		t.Fatalf("test --model: exit %d\n%s\n%s", code, alone, errs)
	}
	if !strings.Contains(alone, "TEST phase, 4 iterations") || !strings.Contains(errs, "copied ip1, ip2") {
		t.Errorf("output:\n%s\nstderr:\n%s", alone, errs)
	}
	for _, name := range []string{"accuracy", "loss"} {
		a, b := number(t, viaSolver, name), number(t, alone, name)
		if math.Abs(a-b) > 1e-4 {
			t.Errorf("%s: %v through the solver, %v from the net alone", name, a, b)
		}
	}
	if number(t, alone, "accuracy") < 0.5 {
		t.Errorf("accuracy %v after 40 iterations: the weights were not loaded", number(t, alone, "accuracy"))
	}

	// A deploy net: zeros in, so ip2 = W2 relu(b1) + b2 for each of the
	// 2 images; the printed mean is the mean of that over the 4 classes.
	write(t, dir, "deploy.prototxt", `name: "tiny-deploy"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 1 dim: 8 dim: 8 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1" inner_product_param { num_output: 16 } }
layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 4 } }
`)
	code, out, errs = runCmd(t, dir, "test", "--model", "deploy.prototxt", "--threads", "1", "--weights", w, "--iterations", "3")
	if code != 0 {
		t.Fatalf("test deploy: exit %d\n%s\n%s", code, out, errs)
	}
	cm, err := caffemodel.Read(filepath.Join(dir, w))
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]caffemodel.Blob{}
	for _, l := range cm.Layers {
		blobs[l.Name] = l.Blobs
	}
	w2, b1, b2 := blobs["ip2"][0].Data, blobs["ip1"][1].Data, blobs["ip2"][1].Data
	var want float64
	for o := range 4 {
		v := float64(b2[o])
		for i := range 16 {
			v += float64(w2[o*16+i]) * math.Max(0, float64(b1[i]))
		}
		want += v / 4
	}
	if got := number(t, out, "ip2 [2 4] (mean)"); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
		t.Errorf("deploy net: ip2 mean %v, want %v\n%s", got, want, out)
	}
	if strings.Contains(out, "loss") {
		t.Errorf("a net without a loss printed one:\n%s", out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"test", "--model", "net.prototxt"}, 2, "--weights FILE is required"},
		{[]string{"test", "--model", "net.prototxt", "--weights", "out/x.dsgdsnap"}, 1, "a net file alone is tested with a .caffemodel"},
		{[]string{"test", "--model", "net.prototxt", "--weights", "missing.caffemodel"}, 1, "missing.caffemodel"},
		{[]string{"test", "--model", "nope.prototxt", "--weights", w}, 1, "nope.prototxt"},
		{[]string{"test", "--model", "net.prototxt", "--weights", w, "--iterations", "-1"}, 2, "must not be negative"},
	} {
		code, _, errs := runCmd(t, dir, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestOnePhaseOfANetFile: a net file run without a solver is built in the
// phase its command runs, as caffe time (TRAIN) and caffe test (TEST)
// build one: a TEST phase that needs a stage (mnist_autoencoder's data
// layers) does not stop dsgd time, and dsgd test names its error.
func TestOnePhaseOfANetFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "staged.prototxt", `name: "staged"
layer { name: "d" type: "DummyData" top: "data" top: "label" include { phase: TRAIN }
  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 } } }
layer { name: "d" type: "DummyData" top: "data" top: "label" include { phase: TEST stage: "test-on-test" }
  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`)
	code, out, errs := runCmd(t, dir, "time", "--model", "staged.prototxt", "--iters", "1", "--warmup", "0", "--threads", "1")
	if code != 0 {
		t.Fatalf("time: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCmd(t, dir, "test", "--model", "staged.prototxt", "--weights", "w.caffemodel", "--threads", "1")
	if code != 1 || !strings.Contains(errs, "staged.prototxt:6:1: layer 'ip' (TEST phase): bottom 'data' is not produced") {
		t.Errorf("test: exit %d, stderr %q", code, errs)
	}
}

// TestTestNeedsNoTrainData: dsgd test, as caffe test, needs nothing of
// the TRAIN phase's data. A train_val net whose TRAIN data come from a
// layer dsgd does not know (a fork's, HED's; FCN's Python data layer was
// the example before dsgd ran Python layers) is read as Caffe reads it,
// which filters a net before it looks a type up: dsgd test builds and
// scores its TEST net, dsgd train refuses it naming the layer, its line
// and its type.
// dsgd test --solver tests a Caffe model on the TEST net alone then, and
// refuses a dsgd snapshot (of the TRAIN net) with the TRAIN net's error.
// And dsgd test --solver runs with a TRAIN data layer without a source.
func TestTestNeedsNoTrainData(t *testing.T) {
	const rest = `layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=8,C=1,H=2,W=2,classes=4" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`
	dir := t.TempDir()
	write(t, dir, "net.prototxt", `name: "fcn"
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "synthetic:N=8,C=1,H=2,W=2,classes=4" batch_size: 4 } }
`+rest)
	write(t, dir, "solver.prototxt", `net: "net.prototxt" base_lr: 0.1 lr_policy: "fixed" max_iter: 2 snapshot_prefix: "out/fcn"`)
	var code int
	var out, errs string
	for _, format := range []string{"caffe", "dsgd"} {
		code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--snapshot-format", format)
		if code != 0 {
			t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
		}
	}
	write(t, dir, "net.prototxt", `name: "fcn"
layer { name: "data" type: "ImageLabelmapData" top: "data" top: "label" include { phase: TRAIN }
  image_data_param { source: "train_pair.lst" batch_size: 1 } }
`+rest)
	code, out, errs = runCmd(t, dir, "test", "--model", "net.prototxt", "--weights", "out/fcn_iter_2.caffemodel", "--iterations", "2", "--threads", "1")
	if code != 0 || !strings.Contains(out, "TEST phase, 2 iterations") {
		t.Errorf("test: exit %d\n%s\n%s", code, out, errs)
	}
	// Through the solver, a Caffe model is tested on the TEST net alone.
	code, out, errs = runCmd(t, dir, "test", "--solver", "solver.prototxt", "--weights", "out/fcn_iter_2.caffemodel", "--test-iter", "2", "--threads", "1")
	if code != 0 || !strings.Contains(out, "2 batches of the test split") || !strings.Contains(out, "loss") {
		t.Errorf("test --solver: exit %d\n%s\n%s", code, out, errs)
	}
	want := `net.prototxt:2:1: layer 'data' (TRAIN phase) has unknown type 'ImageLabelmapData'`
	// A dsgd snapshot is of the TRAIN net.
	code, _, errs = runCmd(t, dir, "test", "--solver", "solver.prototxt", "--weights", "out/fcn_iter_2.dsgdsnap", "--threads", "1")
	if code == 0 || !strings.Contains(errs, want) || !strings.Contains(errs, "--weights out/fcn_iter_2.dsgdsnap is a snapshot of the TRAIN net") {
		t.Errorf("test --solver, snapshot: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1")
	if code == 0 || !strings.Contains(errs, want) {
		t.Errorf("train: exit %d, stderr %q\nwant %q", code, errs, want)
	}
	write(t, dir, "net.prototxt", `name: "fcn"
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN } data_param { batch_size: 4 } }
`+rest)
	code, out, errs = runCmd(t, dir, "test", "--solver", "solver.prototxt", "--weights", "out/fcn_iter_2.caffemodel", "--test-iter", "2", "--threads", "1")
	if code != 0 || !strings.Contains(out, "2 batches of the test split") {
		t.Errorf("test --solver: exit %d\n%s\n%s", code, out, errs)
	}
}
