package main

import (
	"strings"
	"testing"
)

// The constructs of the model zoo's files that docs/caffe-nets.md counts
// (NiN's and VGG's V1 files, SqueezeNet's, ResNet's), written small by
// hand: the files themselves are not committed.

// ninStyle is NiN's ImageNet train_val in miniature: V1 layers with
// blobs_lr/weight_decay pairs, `include: { phase: ... }` (a colon before
// the message), a layer named apart from its top ("conv4-1024" writing
// "conv4"), a SOFTMAX_LOSS without a top, global AVE pooling by size.
const ninStyle = `name: "nin_imagenet"
layers {
  top: "data"
  top: "label"
  name: "data"
  type: DATA
  data_param {
    source: "train-lmdb"
    backend: LMDB
    batch_size: 4
  }
  transform_param {
    crop_size: 12
    mirror: true
    scale: 0.00390625
  }
  include: { phase: TRAIN }
}
layers {
  top: "data"
  top: "label"
  name: "data"
  type: DATA
  data_param { source: "val-lmdb" backend: LMDB batch_size: 3 }
  transform_param { crop_size: 12 mirror: false scale: 0.00390625 }
  include: { phase: TEST }
}
layers {
  bottom: "data"
  top: "conv1"
  name: "conv1"
  type: CONVOLUTION
  blobs_lr: 1
  blobs_lr: 2
  weight_decay: 1
  weight_decay: 0
  convolution_param {
    num_output: 6
    kernel_size: 3
    stride: 1
    weight_filler { type: "gaussian" mean: 0 std: 0.05 }
    bias_filler { type: "constant" value: 0 }
  }
}
layers { bottom: "conv1" top: "conv1" name: "relu0" type: RELU }
layers {
  bottom: "conv1" top: "cccp1" name: "cccp1" type: CONVOLUTION
  blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
  convolution_param { num_output: 6 kernel_size: 1 stride: 1 weight_filler { type: "gaussian" mean: 0 std: 0.05 } }
}
layers { bottom: "cccp1" top: "cccp1" name: "relu1" type: RELU }
layers { bottom: "cccp1" top: "pool0" name: "pool0" type: POOLING pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layers { bottom: "pool0" top: "pool0" name: "drop" type: DROPOUT dropout_param { dropout_ratio: 0.5 } }
layers {
  bottom: "pool0" top: "conv4" name: "conv4-1024" type: CONVOLUTION
  blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
  convolution_param { num_output: 5 pad: 1 kernel_size: 3 stride: 1 weight_filler { type: "gaussian" mean: 0 std: 0.05 } }
}
layers { bottom: "conv4" top: "conv4" name: "relu10" type: RELU }
layers { bottom: "conv4" top: "pool4" name: "pool4" type: POOLING pooling_param { pool: AVE kernel_size: 5 stride: 1 } }
layers {
  name: "accuracy"
  type: ACCURACY
  bottom: "pool4"
  bottom: "label"
  top: "accuracy"
  include: { phase: TEST }
}
layers {
  bottom: "pool4"
  bottom: "label"
  name: "loss"
  type: SOFTMAX_LOSS
  include: { phase: TRAIN }
}
`

// squeezeSolver is SqueezeNet's solver in miniature: iter_size, the poly
// policy, average_loss, test_initialization false, solver_mode GPU and
// comments after values.
const squeezeSolver = `test_iter: 2 #not subject to iter_size
test_interval: 1000
base_lr: 0.04
display: 1
max_iter: 3
iter_size: 4 #global batch size = batch_size * iter_size
lr_policy: "poly"
power: 0.5
momentum: 0.9
weight_decay: 0.0002
snapshot: 1000
snapshot_prefix: "train"
solver_mode: GPU
random_seed: 42
net: "train_val.prototxt" #we typically do ` + "`cd SqueezeNet_v1.0; caffe train <args>`" + `
test_initialization: false
average_loss: 40
`

// TestZooTrainValStyles trains the NiN-style V1 net with the
// SqueezeNet-style solver on synthetic data.
func TestZooTrainValStyles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "train_val.prototxt", ninStyle)
	write(t, dir, "solver.prototxt", squeezeSolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1",
		"--snapshot-prefix", "none", "--data", "synthetic:N=16,C=3,H=14,W=14,classes=5")
	if code != 0 || !strings.Contains(out, "iter 3/3") || !strings.Contains(out, "accuracy") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if all := out + errs; !strings.Contains(all, "upgraded from Caffe's V1 net format") {
		t.Errorf("output lacks the V1 note:\n%s\n%s", out, errs)
	}
	checkSolverModeNote(t, out, errs, "solver.prototxt:13:1")
	// poly: base_lr (1 - iter/max_iter)^power = 0.04 (2/3)^0.5 at iteration 2.
	if !strings.Contains(out, "lr 0.03266") {
		t.Errorf("no poly learning rate 0.03266 at iteration 2:\n%s", out)
	}
}

// zooDeployStyles are deploy headers and syntax of the zoo's files:
// VGG-19's V1 header with force_backward between input and input_dim,
// SqueezeNet 1.1's Input layer with ` + "`shape: { dim: ... }`" + `,
// ResNet's tab indentation with top before bottom, SqueezeNet 1.0's
// padded 1x1 conv10 before global pooling.
var zooDeployStyles = map[string]struct{ net, want string }{
	"vgg19": {`name: "VGG_ILSVRC_19_layers"
input: "data"
force_backward: true
input_dim: 2
input_dim: 3
input_dim: 8
input_dim: 8
layers {
  bottom: "data"
  top: "conv1_1"
  name: "conv1_1"
  type: CONVOLUTION
  convolution_param {
    num_output: 4
    pad: 1
    kernel_size: 3
  }
}
layers { bottom: "conv1_1" top: "conv1_1" name: "relu1_1" type: RELU }
layers { bottom: "conv1_1" top: "pool1" name: "pool1" type: POOLING pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layers { bottom: "pool1" top: "fc8" name: "fc8" type: INNER_PRODUCT inner_product_param { num_output: 10 } }
layers { bottom: "fc8" top: "prob" name: "prob" type: SOFTMAX }
`, "[2 4 4 4]"},
	"squeezenet": {`# please cite:
# }

layer {
  name: "data"
  type: "Input"
  top: "data"
  input_param { shape: { dim: 2 dim: 3 dim: 15 dim: 15 } }
}
layer {
	bottom: "data"
	top: "conv1"
	name: "conv1"
	type: "Convolution"
	convolution_param {
		num_output: 4
		kernel_size: 3
		stride: 2
		bias_term: false
	}
}
layer {
	top: "conv1"
	bottom: "conv1"
	name: "conv1_relu"
	type: "ReLU"
}
layer {
  name: "conv10"
  type: "Convolution"
  bottom: "conv1"
  top: "conv10"
  convolution_param {
    num_output: 6
    pad: 1
    kernel_size: 1
  }
}
layer {
  name: "pool10"
  type: "Pooling"
  bottom: "conv10"
  top: "pool10"
  pooling_param {
    pool: AVE
    global_pooling: true
 }
}
layer { name: "prob" type: "Softmax" bottom: "pool10" top: "prob" }`, "[2 6 9 9]"},
}

// TestZooDeployStyles times each deploy style as caffe time would.
func TestZooDeployStyles(t *testing.T) {
	for name, c := range zooDeployStyles {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "deploy.prototxt", c.net)
			code, out, errs := runCmd(t, dir, "time", "-model", "deploy.prototxt", "--iters", "1", "--warmup", "0", "--threads", "1")
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want shape %s in\n%s\n%s", code, c.want, out, errs)
			}
		})
	}
}

// TestSolverWithoutTestNet: a solver without test_iter or test nets gets
// no test net, as in Caffe, so a net whose data layer is TRAIN-only
// trains; asking for tests with --test-iter names the TEST phase's fault.
func TestSolverWithoutTestNet(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", `layer { name: "d" type: "DummyData" top: "data" top: "label" include { phase: TRAIN }
  dummy_data_param { shape { dim: 4 dim: 6 } shape { dim: 4 } data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 3 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`)
	write(t, dir, "solver.prototxt", "net: \"net.prototxt\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\nmax_iter: 3\n")
	args := []string{"train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--snapshot-prefix", "none"}
	if code, out, errs := runCmd(t, dir, args...); code != 0 || !strings.Contains(out, "done: 3 iterations") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs := runCmd(t, dir, append(args, "--test-iter", "1", "--test-interval", "2")...)
	if code == 0 || !strings.Contains(errs, "--test-iter 1: net.prototxt:3:1: layer 'ip' (TEST phase)") {
		t.Fatalf("exit %d, stderr %q; want the TEST phase's fault", code, errs)
	}
}
