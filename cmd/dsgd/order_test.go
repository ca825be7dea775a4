package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"dsgd/checkpoint"
)

const fashionNet = `name: "fashion"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "fashion-mnist" batch_size: 64 }
  transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "fashion-mnist" batch_size: 100 }
  transform_param { scale: 0.00390625 } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
  inner_product_param { num_output: 32 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
`

const fashionSolver = `net: "net.prototxt"
base_lr: 0.05 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed"
max_iter: 30 display: 0 snapshot: 15 test_iter: 1
`

// TestGlobalBatchIndependentOfWorkers: the data-order contract. On
// Fashion-MNIST (its first 2,048 images, fashionSubset), sync-tree with 4
// workers of batch 16 reaches seq's weights with batch 64 to float
// tolerance (every iteration's global batch is the same images), and a
// snapshot taken with 4 workers resumed with 2 workers of batch 32
// continues the same trajectory.
func TestGlobalBatchIndependentOfWorkers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", fashionSubset(t, dir))
	write(t, dir, "solver.prototxt", fashionSolver)
	run := func(prefix string, args ...string) []float32 {
		t.Helper()
		base := []string{"train", "--solver", "solver.prototxt", "--threads", "1", "--test-interval", "0", "--snapshot-prefix", prefix}
		code, out, errs := runCmd(t, dir, append(base, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
		st, err := checkpoint.Read(filepath.Join(dir, prefix+"_iter_30.dsgdsnap"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Params
	}
	seq := run("seq", "--scheme", "seq", "--batch", "64")
	tree := run("tree", "--scheme", "sync-tree", "--workers", "4", "--batch", "16")
	// Resumed from tree's snapshot at iteration 15 with 2 workers.
	if err := os.Rename(filepath.Join(dir, "tree_iter_15.dsgdsnap"), filepath.Join(dir, "half.dsgdsnap")); err != nil {
		t.Fatal(err)
	}
	resumed := run("resumed", "--scheme", "sync-tree", "--workers", "2", "--batch", "32", "--resume", "half.dsgdsnap")
	for _, c := range []struct {
		name string
		got  []float32
	}{{"sync-tree 4x16", tree}, {"resumed 2x32", resumed}} {
		worst := 0.0
		for i := range seq {
			d := math.Abs(float64(c.got[i]-seq[i])) / (1e-3 + math.Abs(float64(seq[i])))
			worst = max(worst, d)
		}
		t.Logf("%s vs seq 64: worst relative difference %.2g", c.name, worst)
		if worst > 1e-3 {
			t.Errorf("%s ends %.2g (relative) away from seq with the same global batch", c.name, worst)
		}
	}
	// The test can fail: a different global batch gives other weights.
	other := run("other", "--scheme", "seq", "--batch", "32")
	far := 0.0
	for i := range seq {
		far = max(far, math.Abs(float64(other[i]-seq[i])))
	}
	if far < 1e-3 {
		t.Fatalf("batch 32 and batch 64 gave the same weights (%.2g apart)", far)
	}
}
