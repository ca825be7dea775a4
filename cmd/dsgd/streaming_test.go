package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// balancedNet is the tiny net's data through four InnerProduct layers of
// 1024 weights each and a classifier of 256 (10 parameter blocks with
// the biases), so that P fragments of it hold about 1/P of the weights
// each.
const balancedNet = `name: "balanced"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2" batch_size: 16 }
  transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2" batch_size: 32 }
  transform_param { scale: 0.00390625 } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
  inner_product_param { num_output: 16 weight_filler { type: "xavier" } } }
layer { name: "r1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 64 weight_filler { type: "xavier" } } }
layer { name: "r2" type: "ReLU" bottom: "ip2" top: "ip2" }
layer { name: "ip3" type: "InnerProduct" bottom: "ip2" top: "ip3"
  inner_product_param { num_output: 16 weight_filler { type: "xavier" } } }
layer { name: "r3" type: "ReLU" bottom: "ip3" top: "ip3" }
layer { name: "ip4" type: "InnerProduct" bottom: "ip3" top: "ip4"
  inner_product_param { num_output: 64 weight_filler { type: "xavier" } } }
layer { name: "r4" type: "ReLU" bottom: "ip4" top: "ip4" }
layer { name: "ip5" type: "InnerProduct" bottom: "ip4" top: "ip5"
  inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip5" bottom: "label" top: "loss" }
layer { name: "acc" type: "Accuracy" bottom: "ip5" bottom: "label" top: "accuracy" include { phase: TEST } }
`

var (
	finalLossRE = regexp.MustCompile(`final test:\s+loss ([0-9.]+)`)
	peakRE      = regexp.MustCompile(`peak ([0-9]+) bytes per step per worker \(diloco: ([0-9]+)\)`)
	measuredRE  = regexp.MustCompile(`peak step \(rank 0, measured\): sent ([0-9]+) bytes`)
)

// TestStreamingDiLoCoTrains: streaming-diloco with 2 to 4 fragments, with
// and without overlap and at 32 and 4 bits, trains the balanced net to a
// final test loss close to diloco's at the same images, ends with equal
// replicas, and its header reports fragments, offsets, overlap, bits and
// a peak of about 1/P of diloco's bytes per step.
func TestStreamingDiLoCoTrains(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", balancedNet)
	// base_lr 0.1 leaves this deeper net's ReLUs dead.
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, "base_lr: 0.1", "base_lr: 0.01", 1))
	common := []string{"train", "--solver", "solver.prototxt", "--workers", "4", "--iters", "72", "--interval", "12", "--threads", "1",
		"--snapshot-prefix", "none", "--test-interval", "0", "--display", "0"}
	train := func(args ...string) (loss float64, out string) {
		t.Helper()
		code, out, errs := runCmd(t, dir, append(append([]string(nil), common...), args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
		m := finalLossRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%v: no final test loss in\n%s", args, out)
		}
		loss, _ = strconv.ParseFloat(m[1], 64)
		if !strings.Contains(out, "replicas identical at the end: true") {
			t.Errorf("%v: the replicas differ at the end:\n%s", args, out)
		}
		return loss, out
	}
	want, dout := train("--scheme", "diloco")
	dm := peakRE.FindStringSubmatch(dout)
	if dm == nil || dm[1] != dm[2] {
		t.Fatalf("diloco's header gives no peak bytes per step equal to its own: %v\n%s", dm, dout)
	}
	tests := []struct {
		p, tau, bits int
		header       string
	}{
		{2, 0, 32, "2 fragments (weights 2128+2388), offsets 6,0 mod H=12, overlap 0 (replace), 32-bit"},
		{3, 1, 32, "3 fragments (weights 2064+1104+1348), offsets 4,8,0 mod H=12, overlap 1 (mix 0.5), 32-bit"},
		{4, 0, 4, "4 fragments (weights 1040+1088+1040+1348), offsets 3,6,9,0 mod H=12, overlap 0 (replace), 4-bit"},
		{4, 2, 8, "overlap 2 (mix 0.5), 8-bit"},
	}
	for _, tc := range tests {
		args := []string{"--scheme", "streaming-diloco", "--fragments", strconv.Itoa(tc.p), "--overlap", strconv.Itoa(tc.tau), "--outer-bits", strconv.Itoa(tc.bits)}
		loss, out := train(args...)
		if !strings.Contains(out, tc.header) {
			t.Errorf("%v: header lacks %q:\n%s", args, tc.header, out)
		}
		// Untrained, the loss is ln 4 = 1.386.
		if d := loss - want; d > 0.1+0.5*want || d < -(0.1+0.5*want) || loss > 0.5 {
			t.Errorf("%v: final test loss %g, diloco's %g", args, loss, want)
		}
		m := peakRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%v: no peak bytes in the header:\n%s", args, out)
		}
		if m[2] != dm[1] {
			t.Errorf("%v: header gives diloco's peak as %s, diloco's own header %s", args, m[2], dm[1])
		}
		peak, _ := strconv.ParseFloat(m[1], 64)
		full, _ := strconv.ParseFloat(dm[1], 64)
		// 1/P of diloco's, times bits/32: the largest fragment here
		// holds up to 1.4/P of the weights, and a quantised message
		// carries a scale word.
		ideal := full / float64(tc.p) * float64(tc.bits) / 32
		if peak < 0.95*ideal || peak > 1.6*ideal {
			t.Errorf("%v: peak %g bytes per step, diloco's %g: not about 1/%d of it at %d bits (%g)", args, peak, full, tc.p, tc.bits, ideal)
		}
		t.Logf("P=%d tau=%d bits=%d: loss %.4f (diloco %.4f), peak %g bytes/step (diloco %g)", tc.p, tc.tau, tc.bits, loss, want, peak, full)
	}
}

// TestStreamingDiLoCoRefused: bad settings are refused naming the flag.
func TestStreamingDiLoCoRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", balancedNet)
	write(t, dir, "solver.prototxt", tinySolver)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--scheme", "streaming-diloco", "--fragments", "0"}, "--fragments must be at least 1"},
		{[]string{"--scheme", "streaming-diloco", "--fragments", "11", "--interval", "22"}, "--fragments 11 is more than the net's 10 parameter blocks"},
		{[]string{"--scheme", "streaming-diloco", "--fragments", "4", "--interval", "6"}, "--interval 6 is not a multiple of --fragments 4"},
		{[]string{"--scheme", "streaming-diloco", "--fragments", "2", "--interval", "6", "--overlap", "3"}, "--overlap 3"},
		{[]string{"--scheme", "streaming-diloco", "--outer-bits", "2"}, "--outer-bits must be one of [32 16 8 4], got 2"},
		{[]string{"--scheme", "streaming-diloco", "--mix", "2"}, "--mix must be in [0,1]"},
		{[]string{"--scheme", "diloco", "--fragments", "2"}, "--fragments: only --scheme streaming-diloco"},
		{[]string{"--scheme", "streaming-diloco", "--outer-bits", "4", "--compress", "fp16", "--transport", "tcp"}, "--outer-bits 4 with --compress fp16"},
	}
	for _, tc := range tests {
		args := append([]string{"train", "--solver", "solver.prototxt", "--workers", "2", "--iters", "4", "--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0"}, tc.args...)
		code, out, errs := runCmd(t, dir, args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, want a refusal naming %q:\n%s\n%s", tc.args, code, tc.want, out, errs)
		}
	}
}

// TestSimulateStreamingDiLoCo: dsgd simulate runs streaming-diloco beside
// diloco with the fragment flags (which only it takes), checks the
// fragments against the model's layers, and refuses them without it.
func TestSimulateStreamingDiLoCo(t *testing.T) {
	dir := t.TempDir()
	base := []string{"simulate", "--params", "100000", "--compute-ms", "10", "--workers", "4", "--interval", "8", "--iters", "16"}
	code, out, errs := runCmd(t, dir, append(base, "--layers", "8", "--scheme", "diloco,streaming-diloco", "--fragments", "4", "--outer-bits", "4", "--overlap", "1")...)
	if code != 0 || !strings.Contains(out, "streaming-diloco") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--layers", "2", "--scheme", "streaming-diloco", "--fragments", "4"}, "--fragments 4 is more than the net's 2 parameter blocks"},
		{[]string{"--layers", "8", "--scheme", "diloco", "--fragments", "4"}, "--fragments: only --scheme streaming-diloco"},
		{[]string{"--layers", "8", "--scheme", "streaming-diloco", "--fragments", "4", "--overlap", "2"}, "--overlap 2"},
	} {
		code, out, errs := runCmd(t, dir, append(base, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, want a refusal naming %q\n%s\n%s", tc.args, code, tc.want, out, errs)
		}
	}
}

// TestCompareStreamingDiLoCo: compare passes the fragment flags to
// streaming-diloco only, so diloco runs beside it instead of refusing
// them.
func TestCompareStreamingDiLoCo(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", balancedNet)
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, "base_lr: 0.1", "base_lr: 0.01", 1))
	code, out, errs := runCmd(t, dir, "compare", "--solver", "solver.prototxt", "--schemes", "diloco,streaming-diloco", "--workers", "2",
		"--iters", "24", "--interval", "4", "--fragments", "2", "--outer-bits", "8", "--time-budget", "20s", "--threads", "1", "--plot", "none", "--test-interval", "12", "--logs", "logs")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s\n%s", code, out, errs)
	}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && (f[0] == "diloco" || f[0] == "streaming-diloco") && f[1] == "2" && f[2] == "24" {
			rows++
		}
	}
	if rows != 2 {
		t.Errorf("%d table rows of 24 iterations, want diloco's and streaming-diloco's:\n%s", rows, out)
	}
	if b, err := os.ReadFile(dir + "/logs/streaming-diloco.log"); err != nil || !strings.Contains(string(b), "2 fragments") {
		t.Errorf("streaming-diloco's log lacks its 2 fragments (%v)", err)
	}
}

// TestStreamingDiLoCoOverTCP: over TCP between worker processes, 3 of
// them (an odd ring, where two neighbours both send first), with 4-bit
// pseudo-gradients and an overlap, the quantised ring of sends and
// receives completes, the net trains, and the bytes rank 0 sent in its
// busiest step are the header's peak.
func TestStreamingDiLoCoOverTCP(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", balancedNet)
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, "base_lr: 0.1", "base_lr: 0.01", 1))
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--shm", "off", "--workers", "3", "--scheme", "streaming-diloco",
		"--interval", "12", "--fragments", "4", "--overlap", "1", "--outer-bits", "4", "--iters", "72", "--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	m := finalLossRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no final test loss:\n%s", out)
	}
	if loss, _ := strconv.ParseFloat(m[1], 64); loss > 0.5 {
		t.Errorf("final test loss %g: it did not train (untrained: 1.386)", loss)
	}
	// Every pair over TCP: rank 0's busiest step is its share of the
	// largest fragment's ring, which the header gives for the busiest
	// rank.
	hm, mm := peakRE.FindStringSubmatch(out), measuredRE.FindStringSubmatch(out)
	if hm == nil || mm == nil {
		t.Fatalf("no peak in the header or no measured peak:\n%s", out)
	}
	header, _ := strconv.ParseFloat(hm[1], 64)
	measured, _ := strconv.ParseFloat(mm[1], 64)
	if measured > header || measured < 0.9*header {
		t.Errorf("measured peak %g bytes per step, the header's %g", measured, header)
	}
	for _, want := range []string{"3 worker(s) over tcp", "4-bit pseudo-gradients"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
