package main

import (
	"strings"
	"testing"
)

// TestEmptyDataSource: a DIGITS-style net, whose Data layers leave their
// source empty for the tool to fill, trains with --data; without it,
// train refuses it naming the layer and its line, and --data.
func TestEmptyDataSource(t *testing.T) {
	dir := t.TempDir()
	net := strings.ReplaceAll(tinyNet, `source: "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2" `, `source: "" `)
	net = strings.Replace(net, `source: "" `, "", 1) // the TRAIN layer: no source at all
	if strings.Contains(net, "synthetic") {
		t.Fatalf("the tiny net changed; rewrite this test's edit:\n%s", tinyNet)
	}
	write(t, dir, "net.prototxt", net)
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, "max_iter: 150", "max_iter: 2", 1))
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if want := "net.prototxt:3:14: data_param of layer 'd' needs a source (give one with --data)"; code == 0 || !strings.Contains(errs, want) {
		t.Errorf("without --data: exit %d, want non-zero and %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errs)
	}
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none",
		"--data", "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2")
	if code != 0 || !strings.Contains(out, "done: 2 iterations") {
		t.Errorf("with --data: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
