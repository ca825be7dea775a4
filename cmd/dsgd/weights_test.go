//go:build !purego

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"dsgd/caffe/caffemodel"
)

// TestWeightsList: --weights a,b copies each file in turn, as caffe train
// --weights a,b: a later file's layer overwrites an earlier one's.
func TestWeightsList(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fx")
	copyTree(t, caffeFixtures, fx)
	write(t, dir, "net.prototxt", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"))
	write(t, dir, "solver.prototxt", logregSolver)
	py := filepath.Join(fx, "model.caffemodel")
	n, err := caffemodel.Read(py)
	if err != nil {
		t.Fatal(err)
	}
	// ip scores class 0 highest for every image: accuracy 0.25 (the
	// fixture's test labels are balanced over 4 classes).
	for i := range n.Layers {
		if n.Layers[i].Name == "ip" {
			n.Layers[i].Blobs[0].Data = make([]float32, len(n.Layers[i].Blobs[0].Data))
			n.Layers[i].Blobs[1].Data = []float32{1, 0, 0, 0}
		}
	}
	zero := filepath.Join(dir, "class0.caffemodel")
	if err := caffemodel.Write(zero, n); err != nil {
		t.Fatal(err)
	}
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
	first := regexp.MustCompile(`iter 0 test:\s+accuracy ([0-9.]+)`)
	for _, c := range []struct {
		files []string
		acc   string
	}{
		{[]string{py, zero}, "0.2500"},
		{[]string{zero, py}, fmt.Sprintf("%.4f", meta.Acc)},
	} {
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1",
			"--iters", "1", "--snapshot-prefix", "none", "--weights", strings.Join(c.files, ","))
		m := first.FindStringSubmatch(out)
		if code != 0 || m == nil || m[1] != c.acc {
			t.Fatalf("--weights %v: exit %d, first test %v, want accuracy %s\n%s\n%s", c.files, code, m, c.acc, out, errs)
		}
		for _, f := range c.files {
			if !strings.Contains(out, "weights "+f+": copied ip") {
				t.Errorf("--weights %v: no copy line for %s in\n%s", c.files, f, out)
			}
		}
	}
}

const torchNet = `name: "torchnet"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "@TEST" batch_size: 50 backend: LMDB } transform_param { scale: 0.00390625 } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 6 kernel_size: 3 } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// TestTorchScoredCaffemodel: `dsgd test` on a convolutional net's
// .caffemodel (written by Python's protobuf, see
// scripts/caffe_torch_net.py) gives the accuracy and loss PyTorch
// computes in float64 with the same weights on the same 200 images.
func TestTorchScoredCaffemodel(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fx")
	copyTree(t, caffeFixtures, fx)
	write(t, dir, "net.prototxt", strings.Replace(torchNet, "@TEST", fx+"/test_lmdb", 1))
	var want struct{ Accuracy, Loss float64 }
	b, err := os.ReadFile("../../caffe/caffemodel/testdata/torchnet.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	w, err := filepath.Abs("../../caffe/caffemodel/testdata/torchnet.caffemodel")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, dir, "test", "--model", "net.prototxt", "--weights", w, "--iterations", "4", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// The fixture's smallest top-2 score margin is 1.3e-2, far above
	// float32 rounding: the accuracy must be PyTorch's exactly.
	t.Logf("dsgd test: accuracy %v loss %v; PyTorch float64: %v %v", number(t, out, "accuracy"), number(t, out, "loss"), want.Accuracy, want.Loss)
	if acc := number(t, out, "accuracy"); math.Abs(acc-want.Accuracy) > 1e-9 {
		t.Errorf("accuracy %v, PyTorch's %v", acc, want.Accuracy)
	}
	if loss := number(t, out, "loss"); math.Abs(loss-want.Loss) > 1e-4*want.Loss {
		t.Errorf("loss %v, PyTorch's %v", loss, want.Loss)
	}
}
