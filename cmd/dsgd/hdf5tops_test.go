//go:build !purego

package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var hdf5Tops, _ = filepath.Abs("../../data/testdata/hdf5tops")

// TestHDF5Tops: Caffe's HDF5Data reads a dataset per top, any number of
// them, any float values (scripts/hdf5_tops_fixture.py writes them with
// h5py). A linear regression on float targets learns them; a layer with
// three tops (a rank-3 data top, float targets, continuation flags) feeds
// each blob in the shape of its dataset's items.
func TestHDF5Tops(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "reg.txt", filepath.Join(hdf5Tops, "reg.h5")+"\n")
	write(t, dir, "seq.txt", filepath.Join(hdf5Tops, "seq.h5")+"\n")
	write(t, dir, "reg.prototxt", `name: "reg"
layer { name: "d" type: "HDF5Data" top: "x" top: "y" hdf5_data_param { source: "reg.txt" batch_size: 16 } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "ip" inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "y" top: "loss" }
`)
	write(t, dir, "solver.prototxt", `net: "reg.prototxt"
test_iter: 4 test_interval: 1000 base_lr: 0.1 momentum: 0.9 lr_policy: "fixed" max_iter: 200 display: 0 random_seed: 5
`)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--snapshot-prefix", "none", "--threads", "1")
	if code != 0 {
		t.Fatalf("regression: exit %d\n%s\n%s", code, out, errs)
	}
	m := regexp.MustCompile(`iter 0 test:\s+loss ([0-9.]+)`).FindStringSubmatch(out)
	f := regexp.MustCompile(`final test:\s+loss ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil || f == nil {
		t.Fatalf("no test losses in\n%s", out)
	}
	first, _ := strconv.ParseFloat(m[1], 64)
	final, _ := strconv.ParseFloat(f[1], 64)
	if !(first > 0.1 && final < 0.01) {
		t.Errorf("regression on float targets: test loss %v at the start, %v at the end; want it learnt (> 0.1 to < 0.01)", first, final)
	}
	seqNet := `name: "seq"
layer { name: "d" type: "HDF5Data" top: "data" top: "target" top: "cont" hdf5_data_param { source: "seq.txt" batch_size: 4 } }
layer { name: "flat" type: "Reshape" bottom: "data" top: "flat" reshape_param { @SHAPE } }
layer { name: "ip" type: "InnerProduct" bottom: "flat" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "target" top: "loss" }
layer { name: "c" type: "Reshape" bottom: "cont" top: "c" reshape_param { shape { dim: 2 dim: 2 } } }
layer { name: "s" type: "Silence" bottom: "c" }
`
	write(t, dir, "seq.prototxt", strings.Replace(seqNet, "@SHAPE", "shape { dim: 0 dim: -1 }", 1))
	code, out, errs = runCmd(t, dir, "time", "--net", "seq.prototxt", "--iters", "1")
	if code != 0 {
		t.Fatalf("three tops: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"flat             Reshape          [4 12]", "c                Reshape          [2 2]"} {
		if !strings.Contains(out, want) {
			t.Errorf("dsgd time: no %q in\n%s", want, out)
		}
	}
	// The data top is 4x3x4 (the items are 3x4), not 4x12x1x1: a Reshape
	// of its first three axes works only then.
	write(t, dir, "seq2.prototxt", strings.Replace(seqNet, "@SHAPE", "shape { dim: 4 dim: 12 } axis: 0 num_axes: 3", 1))
	code, out, errs = runCmd(t, dir, "time", "--net", "seq2.prototxt", "--iters", "1")
	if code != 0 || !strings.Contains(out, "flat             Reshape          [4 12]") {
		t.Errorf("rank-3 data top: exit %d\n%s\n%s", code, out, errs)
	}
}
