package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/cuda"
	"dsgd/training/job"
	"dsgd/training/train"
)

// A train net and a separate test net, as older Caffe solvers name them
// (train_net, test_net), with a layer selected by stage.
const trainOnly = `name: "tr"
layer { name: "d" type: "Data" top: "data" top: "label"
  data_param { source: "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2" batch_size: 8 }
  transform_param { scale: 0.00390625 } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
  inner_product_param { num_output: 16 weight_filler { type: "xavier" } } }
layer { name: "act" type: "ReLU" bottom: "ip1" top: "ip1" include { stage: "relu" } }
layer { name: "act" type: "TanH" bottom: "ip1" top: "ip1" exclude { stage: "relu" } }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" }
`

const testOnly = `name: "te"
layer { name: "d" type: "Data" top: "data" top: "label"
  data_param { source: "synthetic:N=256,C=1,H=8,W=8,classes=4,seed=2" batch_size: 32 }
  transform_param { scale: 0.00390625 } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1" inner_product_param { num_output: 16 } }
layer { name: "act" type: "TanH" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 4 } }
layer { name: "acc" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy" }
`

func TestSolverTrainAndTestNets(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "models/train.prototxt", trainOnly)
	write(t, dir, "models/test.prototxt", testOnly)
	// Paths relative to the working directory, as Caffe resolves them.
	write(t, dir, "models/solver.prototxt", `train_net: "models/train.prototxt"
test_net: "models/test.prototxt" test_net: "models/test.prototxt"
test_iter: 4 test_iter: 2 test_interval: 50 test_initialization: false
lr_policy: "multistep" gamma: 0.5
type: "AdaDelta" momentum: 0.95 delta: 1e-6 base_lr: 1
max_iter: 100 display: 50 average_loss: 10 iter_size: 2
snapshot_after_train: false snapshot_prefix: "out/s"
`)
	code, out, errs := runCmd(t, dir, "train", "--solver", "models/solver.prototxt", "--threads", "1", "--stage", "relu", "--workers", "1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"final test:", "accuracy", "solver AdaDelta", "net1/accuracy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "iter 0 test") {
		t.Errorf("test_initialization: false still tested at iteration 0:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "out/s_iter_100.dsgdsnap")); err == nil {
		t.Error("snapshot_after_train: false still wrote the final snapshot")
	}
}

func TestSolverNetBesideSolver(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "m")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, sub, "net.prototxt", tinyNet)
	write(t, sub, "solver.prototxt", strings.Replace(tinySolver, "max_iter: 150", "max_iter: 2", 1))
	code, out, errs := runCmd(t, dir, "train", "--solver", "m/solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, `net "net.prototxt" is not in the working directory, where Caffe looks; using m/net.prototxt`) {
		t.Errorf("no note about the net's folder on stderr: %q", errs)
	}
}

func TestTimeStage(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", trainOnly)
	for stage, want := range map[string]string{"relu": "ReLU", "": "TanH"} {
		code, out, errs := runCmd(t, dir, "time", "--net", "net.prototxt", "--data", "synthetic:N=64,C=1,H=8,W=8,classes=4", "--stage", stage, "--iters", "1", "--warmup", "0")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, want) {
			t.Errorf("--stage %q: output lacks %s:\n%s", stage, want, out)
		}
	}
}

// TestConsolidatedSolver: one inline net whose TEST data layers are chosen
// by stage, tested twice with different test_state, as Caffe's
// lenet_consolidated_solver does.
func TestConsolidatedSolver(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "solver.prototxt", `net_param {
  name: "c"
  layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
    data_param { source: "synthetic:N=64,C=1,H=4,W=4,classes=2,seed=1" batch_size: 8 } }
  layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST stage: "test-on-train" }
    data_param { source: "synthetic:N=64,C=1,H=4,W=4,classes=2,seed=1" batch_size: 16 } }
  layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST stage: "test-on-test" }
    data_param { source: "synthetic:N=64,C=1,H=4,W=4,classes=2,seed=1" batch_size: 4 } }
  layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
}
test_iter: 3 test_state { stage: "test-on-train" }
test_iter: 2 test_state { stage: "test-on-test" }
test_interval: 10 base_lr: 0.1 lr_policy: "fixed" max_iter: 10
`)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// Without its stage a TEST phase has no data layer and fails to
	// build: both test nets ran, so both stages were applied.
	if !strings.Contains(out, "final test:  loss") || !strings.Contains(out, "net1/loss") {
		t.Errorf("output:\n%s", out)
	}
}

// TestTestIterOverridesEveryTestNet: --test-iter sets the batches of every
// test net of a solver, not the first alone (a solver with two test nets
// of test_iter 25 ran the second net's 25 under --test-iter 1).
func TestTestIterOverridesEveryTestNet(t *testing.T) {
	for _, tc := range []struct {
		flag int
		want []int
	}{
		{0, []int{4, 25, 7}},
		{1, []int{1, 1, 1}},
		{3, []int{3, 3, 3}},
	} {
		cfg := train.Config{TestIter: 4, ExtraTests: []train.TestNet{{Iter: 25}, {Iter: 7}}}
		job.OverrideTestIter(&cfg, tc.flag)
		got := []int{cfg.TestIter, cfg.ExtraTests[0].Iter, cfg.ExtraTests[1].Iter}
		if !slices.Equal(got, tc.want) {
			t.Errorf("--test-iter %d: test_iter of the three nets %v, want %v", tc.flag, got, tc.want)
		}
	}
}

// TestCaffeTimeCommandLine: caffe time's own command line runs as it is:
// -model FILE and -iterations N; -gpu 0 is refused where there is no GPU
// (checkGPUFlag).
func TestCaffeTimeCommandLine(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", trainOnly)
	code, out, errs := runCmd(t, dir, "time", "-model", "net.prototxt", "-iterations", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "average over 3 iterations") {
		t.Errorf("-iterations 3 did not time 3 iterations:\n%s", out)
	}
	code, out, errs = runCmd(t, dir, "time", "-model", "net.prototxt", "-iterations", "3", "-gpu", "0")
	checkGPUFlag(t, "time -gpu 0", code, out, errs)
	if code, _, errs := runCmd(t, dir, "time", "-model", "net.prototxt", "-gpu", "7,x"); code == 0 || !strings.Contains(errs, "--gpu") {
		t.Errorf("-gpu 7,x: exit %d, %q; want a refusal naming --gpu", code, errs)
	}
}

// checkGPUFlag checks a command run with -gpu 0: on a machine without a
// GPU (CI) it fails, saying what is missing and how to go on; on one with
// a GPU it names it and notes that the run is on the CPU.
func checkGPUFlag(t *testing.T, what string, code int, out, errs string) {
	t.Helper()
	if _, err := cuda.Probe(); err != nil {
		if code == 0 || !strings.Contains(errs, "--gpu 0") || !strings.Contains(errs, "without --gpu") {
			t.Errorf("%s without a GPU: exit %d, stderr %q; want a refusal saying what is missing and how to go on", what, code, errs)
		}
		return
	}
	if code != 0 || !strings.Contains(errs, "GPU 0: ") || !strings.Contains(out+errs, "on the GPU") && !strings.Contains(out, "rank 0 on GPU 0") {
		t.Errorf("%s with a GPU: exit %d\n%s\n%s", what, code, out, errs)
	}
}

// TestDiLoCoDefaultInterval: diloco without --interval takes H = 100
// inner steps per outer step (H = 1 put the outer Nesterov momentum on
// the solver's every step, and LeNet diverged within 40 iterations);
// --interval given is kept.
func TestDiLoCoDefaultInterval(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", trainOnly)
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.01 lr_policy: \"fixed\" max_iter: 3 display: 0\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "every 100 iterations"},
		{[]string{"--interval", "7"}, "every 7 iterations"},
	} {
		args := append([]string{"train", "--solver", "solver.prototxt", "--scheme", "diloco", "--workers", "2", "--snapshot-prefix", "none", "--threads", "1"}, tc.args...)
		code, out, errs := runCmd(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", tc.args, code, out, errs)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: header lacks %q:\n%s", tc.args, tc.want, out)
		}
	}
}
