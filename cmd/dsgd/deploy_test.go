package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A VGG-style deploy net in Caffe's V1 format, with the legacy input
// header: what the model zoo's VGG files look like, at a test's size.
const v1Deploy = `name: "VGG_mini"
input: "data"
input_dim: 10
input_dim: 3
input_dim: 16
input_dim: 16
layers { bottom: "data" top: "conv1_1" name: "conv1_1" type: CONVOLUTION
  convolution_param { num_output: 4 pad: 1 kernel_size: 3 } }
layers { bottom: "conv1_1" top: "conv1_1" name: "relu1_1" type: RELU }
layers { bottom: "conv1_1" top: "pool1" name: "pool1" type: POOLING
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layers { bottom: "pool1" top: "fc6" name: "fc6" type: INNER_PRODUCT inner_product_param { num_output: 10 } }
layers { bottom: "fc6" top: "fc6" name: "drop6" type: DROPOUT dropout_param { dropout_ratio: 0.5 } }
layers { bottom: "fc6" top: "prob" name: "prob" type: SOFTMAX }
`

// A deploy net with an Input layer and a layer of the newer kinds.
const inputDeploy = `name: "in"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 4 dim: 2 dim: 6 dim: 6 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 3 kernel_size: 3 dilation: 2 pad: 2 } }
layer { type: "PReLU" bottom: "conv" top: "conv" }
layer { name: "up" type: "Deconvolution" bottom: "conv" top: "up"
  convolution_param { num_output: 3 kernel_size: 4 stride: 2 pad: 1 group: 3 bias_term: false weight_filler { type: "bilinear" } } }
`

func TestTimeDeployNet(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "v1.prototxt", v1Deploy)
	write(t, dir, "in.prototxt", inputDeploy)
	code, out, errs := runCmd(t, dir, "time", "-model", "v1.prototxt", "--iters", "2", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"conv1_1", "[10 4 16 16]", "prob", "forward-backward:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "solver") {
		t.Errorf("a net without a solver reports one:\n%s", out)
	}
	if !strings.Contains(errs, "upgraded from Caffe's V1 net format") {
		t.Errorf("no upgrade note on stderr: %q", errs)
	}
	code, out, errs = runCmd(t, dir, "time", "--net", "in.prototxt", "--iters", "1", "--warmup", "0", "--batch", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"PReLU@5", "[2 3 6 6]", "up", "[2 3 12 12]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Training still needs a solver.
	code, _, errs = runCmd(t, dir, "train", "--model", "in.prototxt")
	if code == 0 || !strings.Contains(errs, "needs --solver") {
		t.Errorf("train --model FILE: exit %d, %q", code, errs)
	}
}

func TestUpgradeCommand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "v1.prototxt", v1Deploy)
	code, out, errs := runCmd(t, dir, "upgrade", "v1.prototxt", "v2.prototxt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "6 V1 'layers' became 'layer'") || !strings.Contains(out, "Input layer") {
		t.Errorf("output %q", out)
	}
	v2, err := os.ReadFile(filepath.Join(dir, "v2.prototxt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(v2), "layers {") || !strings.Contains(string(v2), `type: "Input"`) {
		t.Errorf("upgraded file:\n%s", v2)
	}
	code, _, errs = runCmd(t, dir, "time", "-model", "v2.prototxt", "--iters", "1", "--warmup", "0")
	if code != 0 || errs != "" {
		t.Errorf("time on the upgraded file: exit %d, stderr %q", code, errs)
	}
	for _, args := range [][]string{{"upgrade", "v1.prototxt"}, {"upgrade", "missing.prototxt", "x.prototxt"}} {
		if code, _, errs := runCmd(t, dir, args...); code == 0 || errs == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
		}
	}
}

// Deploy nets in the styles of the model zoo's ResNet, SqueezeNet and FCN
// (the last's score head: a bilinear Deconvolution and a Crop), at a
// test's size.
const zooStyle = `name: "zoo"
input: "data"
input_shape { dim: 2 dim: 3 dim: 32 dim: 32 }
layer { bottom: "data" top: "conv1" name: "conv1" type: "Convolution"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 stride: 2 bias_term: false } }
layer { bottom: "conv1" top: "conv1" name: "bn_conv1" type: "BatchNorm" batch_norm_param { use_global_stats: true } }
layer { bottom: "conv1" top: "conv1" name: "scale_conv1" type: "Scale" scale_param { bias_term: true } }
layer { bottom: "conv1" top: "conv1" name: "conv1_relu" type: "ReLU" }
layer { bottom: "conv1" top: "res2a" name: "res2a_branch2a" type: "Convolution"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false } }
layer { bottom: "conv1" bottom: "res2a" top: "res2a_sum" name: "res2a" type: "Eltwise" }
layer { name: "fire2/squeeze1x1" type: "Convolution" bottom: "res2a_sum" top: "fire2/squeeze1x1"
  convolution_param { num_output: 4 kernel_size: 1 weight_filler { type: "xavier" } } }
layer { name: "fire2/expand1x1" type: "Convolution" bottom: "fire2/squeeze1x1" top: "fire2/expand1x1"
  convolution_param { num_output: 8 kernel_size: 1 } }
layer { name: "fire2/expand3x3" type: "Convolution" bottom: "fire2/squeeze1x1" top: "fire2/expand3x3"
  convolution_param { num_output: 8 pad: 1 kernel_size: 3 } }
layer { name: "fire2/concat" type: "Concat" bottom: "fire2/expand1x1" bottom: "fire2/expand3x3" top: "fire2/concat" }
layer { name: "drop9" type: "Dropout" bottom: "fire2/concat" top: "fire2/concat" dropout_param { dropout_ratio: 0.5 } }
layer { name: "score" type: "Convolution" bottom: "fire2/concat" top: "score" convolution_param { num_output: 5 kernel_size: 1 } }
layer { name: "upscore" type: "Deconvolution" bottom: "score" top: "upscore" param { lr_mult: 0 }
  convolution_param { num_output: 5 bias_term: false kernel_size: 4 stride: 2 group: 5 weight_filler { type: "bilinear" } } }
layer { name: "crop" type: "Crop" bottom: "upscore" bottom: "data" top: "crop" crop_param { axis: 2 offset: 1 } }
layer { name: "pool" type: "Pooling" bottom: "score" top: "pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "prob" type: "Softmax" bottom: "pool" top: "prob" }
`

func TestTimeZooStyleNet(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "zoo.prototxt", zooStyle)
	code, out, errs := runCmd(t, dir, "time", "-model", "zoo.prototxt", "--iters", "1", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"res2a", "fire2/concat", "[2 16 16 16]", "upscore", "[2 5 34 34]", "crop", "[2 5 32 32]", "[2 5 1 1]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
