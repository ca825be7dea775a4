//go:build !purego

package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/caffemodel"
)

// tiedNet is the logreg net with its InnerProduct split into two layers
// that share their weight and bias by param name (as Caffe's siamese
// example shares them), summed.
func tiedNet(fx string) string {
	return strings.Replace(logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"),
		`layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }`,
		`layer { name: "ip_a" type: "InnerProduct" bottom: "data" top: "a" param { name: "w" } param { name: "b" lr_mult: 2 }
  inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "ip_b" type: "InnerProduct" bottom: "data" top: "b" param { name: "w" } param { name: "b" lr_mult: 2 }
  inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "ip" type: "Eltwise" bottom: "a" bottom: "b" top: "ip" }`, 1)
}

// TestSharedParamsSnapshots: a net whose layers share parameters trains,
// snapshots in both of Caffe's formats as Caffe writes them (every layer
// with its blobs in a .caffemodel; each shared blob once, in its owner's
// group, in a .caffemodel.h5), tests from either with the run's own
// accuracy, and resumes from the .solverstate.h5.
func TestSharedParamsSnapshots(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fx")
	copyTree(t, caffeFixtures, fx)
	net := tiedNet(fx)
	if !strings.Contains(net, "ip_b") {
		t.Fatal("the net was not rewritten")
	}
	write(t, dir, "net.prototxt", net)
	write(t, dir, "solver.prototxt", strings.Replace(logregSolver, "max_iter: 60", "max_iter: 20 snapshot_format: HDF5", 1))
	args := []string{"--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1"}
	code, out, errs := runCmd(t, dir, append([]string{"train", "--workers", "1"}, args...)...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	final := finalTest.FindStringSubmatch(out)
	h5, err := caffemodel.ReadHDF5(filepath.Join(dir, "out/logreg_iter_20.caffemodel.h5"))
	if err != nil {
		t.Fatalf("the solver's snapshot_format HDF5: %v\n%s", err, out)
	}
	var got []string
	for _, l := range h5.Layers {
		got = append(got, l.Name+":"+strings.Repeat("b", len(l.Blobs)))
	}
	if !slices.Equal(got, []string{"ip:", "ip_a:bb", "ip_b:", "loss:"}) {
		t.Fatalf("HDF5 model layers %v", got)
	}
	code, out, errs = runCmd(t, dir, append([]string{"train", "--workers", "1", "--snapshot-format", "caffe"}, args...)...)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
	}
	pb, err := caffemodel.Read(filepath.Join(dir, "out/logreg_iter_20.caffemodel"))
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]caffemodel.Blob{}
	for _, l := range pb.Layers {
		blobs[l.Name] = l.Blobs
	}
	a, b := blobs["ip_a"], blobs["ip_b"]
	if len(a) != 2 || len(b) != 2 || !slices.Equal(a[0].Data, b[0].Data) || !slices.Equal(a[1].Data, b[1].Data) || !slices.Equal(a[0].Data, h5.Layers[1].Blobs[0].Data) {
		t.Fatalf(".caffemodel: ip_a %d blobs, ip_b %d blobs; shared blobs not written in full in both, or differ from the HDF5 snapshot's", len(a), len(b))
	}
	for _, w := range []string{"out/logreg_iter_20.caffemodel.h5", "out/logreg_iter_20.caffemodel"} {
		code, out, errs := runCmd(t, dir, append([]string{"test", "--weights", w}, args...)...)
		if code != 0 || final == nil || !strings.Contains(out, "accuracy   "+final[1]) || !strings.Contains(errs, "copied ip_a") {
			t.Fatalf("test on %s: exit %d\n%s\n%s\nthe run's final test: %v", w, code, out, errs, final)
		}
		code, out, errs = runCmd(t, dir, "test", "--model", "net.prototxt", "--weights", w, "--iterations", "4", "--threads", "1")
		if code != 0 || !strings.Contains(out, "accuracy") {
			t.Fatalf("test --model on %s: exit %d\n%s\n%s", w, code, out, errs)
		}
	}
	code, out, errs = runCmd(t, dir, append([]string{"train", "--workers", "1", "--iters", "24", "--snapshot-prefix", "none", "--resume", "out/logreg_iter_20.solverstate.h5"}, args...)...)
	if code != 0 || !strings.Contains(out, "(from 20)") {
		t.Fatalf("resume from .solverstate.h5: exit %d\n%s\n%s", code, out, errs)
	}
}
