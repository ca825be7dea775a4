//go:build !purego

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"dsgd/caffemodel"
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
