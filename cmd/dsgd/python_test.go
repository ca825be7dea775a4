package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"dsgd/caffe/caffemodel"
	"dsgd/engine/pylayer/pytest"
)

// needPython readies Python for a test of Python layers, or skips it
// (pytest.Need).
func needPython(t *testing.T) { pytest.Need(t, filepath.Join("testdata", "python")) }

// pyDataNet is a net whose TRAIN data come from a Python data layer (no
// bottoms, its tops filled in forward, as FCN's), with a Python layer
// holding a learned blob.
const pyDataNet = `name: "pydata"
layer { name: "data" type: "Python" top: "data" top: "label"
  python_param { module: "dsgd_pydata" layer: "BlobsDataLayer" param_str: '{"batch": 12, "dim": 9, "seed": 3}' } }
layer { name: "scale" type: "Python" bottom: "data" top: "scaled"
  python_param { module: "dsgd_pydata" layer: "LearnedScale" } }
layer { name: "ip" type: "InnerProduct" bottom: "scaled" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// TestPythonDataLayerTrains: dsgd train runs a net fed by a Python data
// layer, its loss falls, the Python layer's blob is learned by SGD and
// saved in the .caffemodel snapshot as that layer's blob, and the run
// resumes from the snapshot; two workers of a synchronous scheme call
// their Python layers at once.
func TestPythonDataLayerTrains(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	write(t, dir, "net.prototxt", pyDataNet)
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.5 lr_policy: \"fixed\" max_iter: 30 display: 10\nsnapshot: 30 snapshot_prefix: \"out/pydata\" snapshot_format: BINARYPROTO\n")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1")
	if code != 0 || !strings.Contains(out, "iter 30/30") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	m := regexp.MustCompile(`iter 10/30\s+loss ([0-9.]+)(?s:.*)iter 30/30\s+loss ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no losses in\n%s", out)
	}
	l10, _ := strconv.ParseFloat(m[1], 64)
	l30, _ := strconv.ParseFloat(m[2], 64)
	if l30 >= l10 {
		t.Fatalf("loss %s at 10, %s at 30: want it falling on separable classes\n%s", m[1], m[2], out)
	}
	// The batch is the Python data layer's tops' first axis (12 a
	// worker), as a Data layer's batch_size is: 360 images in 30
	// iterations.
	if !strings.Contains(out, "done: 30 iterations") || regexp.MustCompile(`\s0 img/s`).MatchString(out) {
		t.Errorf("images per second not counted from the Python data layer's batch:\n%s", out)
	}
	cm, err := caffemodel.Read(filepath.Join(dir, "out/pydata_iter_30.caffemodel"))
	if err != nil {
		t.Fatal(err)
	}
	var scale *caffemodel.Layer
	for i := range cm.Layers {
		if cm.Layers[i].Name == "scale" {
			scale = &cm.Layers[i]
		}
	}
	if scale == nil || scale.Type != "Python" || len(scale.Blobs) != 1 || len(scale.Blobs[0].Data) != 1 {
		t.Fatalf("snapshot's layer scale: %+v; want a Python layer with one blob of one value", scale)
	}
	if w := scale.Blobs[0].Data[0]; w == 0.5 {
		t.Fatalf("the Python layer's blob is still its setup value 0.5: not learned")
	}
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1",
		"--iters", "32", "--snapshot-prefix", "none", "--resume", "out/pydata_iter_30.solverstate")
	if code != 0 || !strings.Contains(out, "(from 30)") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	for _, scheme := range []string{"sync-ring", "sync-ps"} {
		t.Run(scheme, func(t *testing.T) {
			code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "2",
				"--scheme", scheme, "--iters", "10", "--snapshot-prefix", "none")
			if code != 0 || !strings.Contains(out, "iter 10/10") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}

// TestPythonTrainLayerNotRunByTest: as caffe test builds the TEST net
// alone, dsgd test --solver scores a .caffemodel on the TEST net without
// running the TRAIN net's Python data layer (FCN's, which reads its data
// set); dsgd train runs it, and a module that cannot be imported is an
// error naming the layer, its line, the module.class and the exception.
func TestPythonTrainLayerNotRunByTest(t *testing.T) {
	needPython(t)
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
	if code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--snapshot-format", "caffe"); code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	write(t, dir, "net.prototxt", `name: "fcn"
layer { name: "data" type: "Python" top: "data" top: "label" include { phase: TRAIN }
  python_param { module: "voc_layers_not_here" layer: "SBDDSegDataLayer" } }
`+rest)
	code, out, errs := runCmd(t, dir, "test", "--solver", "solver.prototxt", "--weights", "out/fcn_iter_2.caffemodel", "--test-iter", "2", "--threads", "1")
	if code != 0 || !strings.Contains(out, "2 batches of the test split") || !strings.Contains(errs, "the TRAIN net's Python layers (data) are not run") {
		t.Errorf("test --solver: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1")
	want := `layer "data" (net.prototxt:2:1): pylayer: voc_layers_not_here.SBDDSegDataLayer: importing module 'voc_layers_not_here': ModuleNotFoundError`
	if code == 0 || !strings.Contains(errs, want) {
		t.Errorf("train: exit %d, stderr %q\nwant %q", code, errs, want)
	}
}

// TestPythonLayerFailsInTraining: a Python exception in a data layer's
// forward stops dsgd train with an error naming the layer, its line, the
// module.class.method and the exception with its file:line; no crash.
func TestPythonLayerFailsInTraining(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	write(t, dir, "net.prototxt", strings.Replace(pyDataNet, `layer: "BlobsDataLayer"`, `layer: "FailsOnThird"`, 1))
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.5 lr_policy: \"fixed\" max_iter: 10 display: 1\n")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	for _, want := range []string{`layer "data" (net.prototxt:2:1)`, "forward", "dsgd_pydata.FailsOnThird.forward: OSError: cannot read batch 3", "dsgd_pydata.py:"} {
		if code == 0 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s\n%s", code, want, out, errs)
		}
	}
}

// TestPythonDataLayerReshapes: a Python data layer whose tops change
// shape every batch (FCN's, one image of its own size a batch) trains:
// the layers after it reshape to each batch, as Caffe's Forward reshapes
// (a Python probe after the convolution checks its size each batch).
func TestPythonDataLayerReshapes(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	write(t, dir, "net.prototxt", `name: "varying"
layer { name: "data" type: "Python" top: "data" top: "label" python_param { module: "dsgd_pydata" layer: "VaryingSizeData" } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 pad: 1 weight_filler { type: "xavier" } } }
layer { name: "probe" type: "Python" bottom: "conv" top: "probed" python_param { module: "dsgd_pydata" layer: "ShapeProbe" } }
layer { name: "pool" type: "Pooling" bottom: "probed" top: "pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`)
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.1 lr_policy: \"fixed\" max_iter: 9 display: 3\n")
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if code != 0 || !strings.Contains(out, "iter 9/9") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
