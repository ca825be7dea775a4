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

// TestSSDTrainHDF5: `dsgd train` trains a small SSD net from prototxt
// (caffedef's testdata/forks/ssd_train.prototxt, its Input layer replaced
// by an HDF5Data layer reading scripts/ssd_hdf5_fixture.py's four images
// and their ground-truth rows, one image a batch, one without ground
// truth) with SGD and momentum: the test loss over the four images falls
// to below half its start.
func TestSSDTrainHDF5(t *testing.T) {
	src, err := os.ReadFile("../../caffe/caffedef/testdata/forks/ssd_train.prototxt")
	if err != nil {
		t.Fatal(err)
	}
	net := string(src)
	input := regexp.MustCompile(`(?m)^layer \{ name: "data" type: "Input".*$`)
	if !input.MatchString(net) {
		t.Fatal("ssd_train.prototxt has no Input layer to replace")
	}
	net = input.ReplaceAllString(net, `layer { name: "data" type: "HDF5Data" top: "data" top: "label" hdf5_data_param { source: "ssd.txt" batch_size: 1 } }`)
	// The loss in both phases, for the test passes.
	net = strings.Replace(net, "include { phase: TRAIN } ", "", 1)
	dir := t.TempDir()
	write(t, dir, "ssd.txt", filepath.Join(hdf5Tops, "ssd.h5")+"\n")
	write(t, dir, "ssd.prototxt", net)
	write(t, dir, "solver.prototxt", `net: "ssd.prototxt"
test_iter: 4 test_interval: 1000 base_lr: 0.002 momentum: 0.9 lr_policy: "fixed" max_iter: 120 display: 0 random_seed: 3
`)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--snapshot-prefix", "none", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	m := regexp.MustCompile(`iter 0 test:\s+mbox_loss ([0-9.]+)`).FindStringSubmatch(out)
	f := regexp.MustCompile(`final test:\s+mbox_loss ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil || f == nil {
		t.Fatalf("no test losses in\n%s", out)
	}
	first, _ := strconv.ParseFloat(m[1], 64)
	final, _ := strconv.ParseFloat(f[1], 64)
	t.Logf("test loss %v -> %v", first, final)
	if !(final < first/2) {
		t.Errorf("test loss %v at the start, %v at the end: want it at least halved", first, final)
	}
}
