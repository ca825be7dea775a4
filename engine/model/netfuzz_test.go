package model_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/zoo"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// The built-in models' input image shapes (C, H, W) before cropping.
var zooInputs = map[string][3]int{
	"lenet": {1, 28, 28}, "mlp": {1, 28, 28}, "cifar10_quick": {3, 32, 32},
	"alexnet": {3, 256, 256}, "nin": {3, 32, 32},
	"caffenet": {3, 227, 227}, "googlenet": {3, 224, 224},
}

// forwardable are the models small enough to run a forward and backward
// pass for every mutation; the others are only built.
var forwardable = map[string]bool{"lenet": true, "mlp": true, "cifar10_quick": true}

// numberField matches a "name: integer" field of a prototxt line.
var numberField = regexp.MustCompile(`\b([a-z_]+): (-?[0-9]+)\b`)

// interesting are the values a mutation puts in a numeric field: edges,
// overflows and sizes no machine has.
var interesting = []string{"0", "1", "2", "3", "4", "6", "7", "-1", "-7", "100", "1000000", "2147483647", "2147483648", "4294967295", "2000000000", "9223372036854775807"}

// mutate returns src with one structured change, and its description.
func mutate(src string, r *rand.Rand) (string, string) {
	lines := strings.Split(src, "\n")
	for range 100 {
		i := r.IntN(len(lines))
		line := lines[i]
		switch r.IntN(10) {
		case 0: // drop a line
			if strings.TrimSpace(line) == "" {
				continue
			}
			return strings.Join(append(append([]string(nil), lines[:i]...), lines[i+1:]...), "\n"), fmt.Sprintf("line %d dropped: %q", i+1, line)
		case 1: // duplicate a line
			out := append(append(append([]string(nil), lines[:i+1]...), line), lines[i+1:]...)
			return strings.Join(out, "\n"), fmt.Sprintf("line %d doubled: %q", i+1, line)
		default: // a numeric field gets an interesting value
			m := numberField.FindAllStringSubmatchIndex(line, -1)
			if len(m) == 0 {
				continue
			}
			f := m[r.IntN(len(m))]
			v := interesting[r.IntN(len(interesting))]
			nl := line[:f[4]] + v + line[f[5]:]
			out := append([]string(nil), lines...)
			out[i] = nl
			return strings.Join(out, "\n"), fmt.Sprintf("line %d: %q -> %q", i+1, line, nl)
		}
	}
	return src, "unchanged"
}

// tryNet parses, builds and (for small models) runs one mutated model. A
// returned error is fine; a panic is the bug this fuzzer looks for.
func tryNet(name, src string, shape [3]int, run bool) (err error) {
	def, err := caffedef.ParseNet(name+".prototxt", []byte(src))
	if err != nil {
		return err
	}
	pn, err := def.Phase(layers.Train)
	if err != nil {
		return err
	}
	inputs := map[string]tensor.Shape{}
	for _, dl := range pn.Data {
		if dl.Type == "Input" && len(dl.Tops) == 1 && dl.Tops[0] == "gt" && len(dl.Shapes) == 1 {
			// SSD's ground truth, 1×1×G×8 rows (groundTruth fills them).
			inputs["gt"] = dl.Shapes[0]
			continue
		}
		if dl.Type != "Data" {
			return fmt.Errorf("%s layer", dl.Type)
		}
		if dl.BatchSize < 1 || dl.BatchSize > 1<<20 {
			return fmt.Errorf("batch_size %d (the loader refuses it)", dl.BatchSize)
		}
		c, h, w := shape[0], shape[1], shape[2]
		if cs := dl.Transform.CropSize; cs > 0 {
			if cs > h || cs > w {
				return fmt.Errorf("crop_size %d (the loader refuses it)", cs)
			}
			h, w = cs, cs
		}
		batch := min(dl.BatchSize, 4) // small batches keep the forward passes quick
		if len(dl.Tops) > 0 {
			inputs[dl.Tops[0]] = tensor.Shape{batch, c, h, w}
		}
		if len(dl.Tops) > 1 {
			inputs[dl.Tops[1]] = tensor.Shape{batch}
		}
	}
	net, err := model.Build(pn.Spec, inputs, model.Options{Phase: layers.Train, Threads: 1, Seed: 1})
	if err != nil || !run {
		return err
	}
	// Labels of ten classes, checked against the layers that read them
	// as train's feeds check them.
	uses := net.LabelUses()
	for _, dl := range pn.Data {
		if len(dl.Tops) > 1 {
			if b := net.Input(dl.Tops[1]); b != nil {
				for i := range b.Data {
					b.Data[i] = float32(i % 10)
				}
				if err := model.CheckLabels(b.Data, uses[dl.Tops[1]]); err != nil {
					return err
				}
			}
		}
	}
	if b := net.Input("gt"); b != nil {
		groundTruth(b.Data, inputs["data"][0])
	}
	net.Forward()
	net.Backward()
	return net.Err() // a layer's panic on data it cannot take, as an error
}

// groundTruth fills SSD's ground-truth rows [item_id label instance_id
// xmin ymin xmax ymax difficult] for a batch of batch images: boxes of
// classes 1 and 2 spread over the images, every third difficult; from
// the 17th row on item_id −1, none (as AnnotatedData pads), so that a
// mutated G keeps the matching quick; a row left over (fewer than 8
// values) untouched.
func groundTruth(gt []float32, batch int) {
	for r := range len(gt) / 8 {
		f := float32(r%4) * 0.1
		item := float32(r % max(batch, 1))
		if r >= 16 {
			item = -1
		}
		copy(gt[r*8:], []float32{item, float32(1 + r%2), float32(r), 0.1 + f, 0.15, 0.5 + f, 0.7, float32(min(r%3/2, 1))})
	}
}

// TestMutatedModelsDoNotPanic mutates the built-in models' prototxt (one
// structured change at a time: a numeric field set to an edge or overflow
// value, a line dropped or doubled) and builds each; the small models are
// also run forward and backward. Errors are expected; a panic or a fatal
// out-of-memory is a failure. The count is bounded to keep the suite fast
// (DSGD_NETFUZZ=N runs N).
func TestMutatedModelsDoNotPanic(t *testing.T) {
	tensor.SetMemoryLimit(256 << 20)
	defer tensor.SetMemoryLimit(0)
	n := 120
	if testing.Short() {
		n = 40
	}
	if s := envInt("DSGD_NETFUZZ"); s > 0 {
		n = s
	}
	r := rand.New(rand.NewPCG(11, 11))
	names := zoo.Names()
	errs, start := 0, time.Now()
	for i := range n {
		name := names[i%len(names)]
		src, _, err := zoo.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		shape, ok := zooInputs[name]
		if !ok {
			t.Fatalf("no input shape for built-in model %q", name)
		}
		mutated, what := mutate(string(src), r)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s, %s: panic: %v", name, what, p)
				}
			}()
			if tryNet(name, mutated, shape, forwardable[name]) != nil {
				errs++
			}
		}()
	}
	t.Logf("%d mutations, %d refused with an error, in %v", n, errs, time.Since(start).Round(time.Millisecond))
}

func envInt(name string) int {
	var v int
	fmt.Sscan(strings.TrimSpace(getenv(name)), &v)
	return v
}

var getenv = os.Getenv

// forkNet uses every Caffe fork layer dsgd runs, with a numeric field on
// each line for mutate to change.
const forkNet = `name: "fork"
layer { name: "data" type: "Data" top: "data" top: "label" data_param { source: "x" batch_size: 4 } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 8 kernel_size: 1 } }
layer { name: "bn1" type: "BN" bottom: "conv1" top: "conv1" bn_param { frozen: true eps: 1 slope_filler { type: "constant" value: 1 } } }
layer { name: "relu1" type: "ReLU6" bottom: "conv1" top: "conv1" relu6_param { negative_slope: 0 } }
layer { name: "dw" type: "ConvolutionDepthwise" bottom: "conv1" top: "dw" convolution_param { num_output: 8 kernel_size: 3 pad: 1 stride: 1 } }
layer { name: "dw2" type: "DepthwiseConvolution" bottom: "dw" top: "dw2" convolution_param { num_output: 16 group: 8 kernel_size: 3 pad: 1 } }
layer { name: "shuffle" type: "ShuffleChannel" bottom: "dw2" top: "shuffle" shuffle_channel_param { group: 4 } }
layer { name: "pool" type: "Pooling" bottom: "shuffle" top: "pool" top: "mask" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "unpool" type: "Upsample" bottom: "pool" bottom: "mask" top: "unpool" upsample_param { upsample_h: 8 upsample_w: 8 } }
layer { name: "se_pool" type: "Pooling" bottom: "unpool" top: "se_pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "se" type: "Axpy" bottom: "se_pool" bottom: "unpool" bottom: "shuffle" top: "se" }
layer { name: "norm" type: "Normalize" bottom: "se" top: "norm" norm_param { across_spatial: false channel_shared: false eps: 0 } }
layer { name: "interp" type: "Interp" bottom: "norm" top: "interp" interp_param { shrink_factor: 2 zoom_factor: 3 pad_beg: 0 pad_end: -1 } }
layer { name: "perm" type: "Permute" bottom: "interp" top: "perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "ip" type: "InnerProduct" bottom: "perm" top: "ip" inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
layer { name: "box" type: "InnerProduct" bottom: "perm" top: "box" inner_product_param { num_output: 4 } }
layer { name: "box_target" type: "InnerProduct" bottom: "se_pool" top: "box_target" inner_product_param { num_output: 4 } }
layer { name: "box_loss" type: "SmoothL1Loss" bottom: "box" bottom: "box_target" top: "box_loss" loss_weight: 0.5 smooth_l1_loss_param { sigma: 3 } }
`

// ssdHeads are an SSD net's location and confidence heads on one feature
// map, flattened as SSD's Permute and Flatten make them (ssdNet, mbNet).
const ssdHeads = `layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 8 kernel_size: 3 pad: 1 stride: 2 } }
layer { name: "loc" type: "Convolution" bottom: "conv1" top: "loc" convolution_param { num_output: 16 kernel_size: 1 } }
layer { name: "loc_perm" type: "Permute" bottom: "loc" top: "loc_perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "loc_flat" type: "Flatten" bottom: "loc_perm" top: "loc_flat" flatten_param { axis: 1 } }
layer { name: "conf" type: "Convolution" bottom: "conv1" top: "conf" convolution_param { num_output: 12 kernel_size: 1 } }
layer { name: "conf_perm" type: "Permute" bottom: "conf" top: "conf_perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "conf_flat" type: "Flatten" bottom: "conf_perm" top: "conf_flat" flatten_param { axis: 1 } }
`

// ssdPrior is their PriorBox.
const ssdPrior = `layer { name: "prior" type: "PriorBox" bottom: "conv1" bottom: "data" top: "prior"
  prior_box_param { min_size: 2 max_size: 5 aspect_ratio: 2 flip: true clip: false variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2
  step: 2 offset: 0.5 } }
`

// ssdNet is an SSD detection head (weiliu89/caffe's deploy form) on a
// training net: PriorBox and DetectionOutput with a numeric field on each
// line for mutate to change.
const ssdNet = `name: "ssd"
layer { name: "data" type: "Data" top: "data" top: "label" data_param { source: "x" batch_size: 2 } }
` + ssdHeads + `layer { name: "conf_soft" type: "Sigmoid" bottom: "conf_flat" top: "conf_soft" }
` + ssdPrior + `layer { name: "det" type: "DetectionOutput" bottom: "loc_flat" bottom: "conf_soft" bottom: "prior" top: "det"
  detection_output_param { num_classes: 3 share_location: true background_label_id: 0 nms_param { nms_threshold: 0.45 top_k: 40 eta: 1 }
  code_type: CENTER_SIZE keep_top_k: 10 confidence_threshold: 0.3 } }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// TestMutatedSSDNetDoesNotPanic is TestMutatedModelsDoNotPanic for SSD's
// PriorBox and DetectionOutput: ssdNet mutated, built, and run forward
// and backward. DetectionOutput meets priors of no width (CENTER_SIZE
// and CORNER_SIZE divide by it) only in Forward, where the fork stops;
// that error must name the layer, and no panic may escape.
func TestMutatedSSDNetDoesNotPanic(t *testing.T) {
	mutateNet(t, "ssd", ssdNet, 13, "needs priors of positive width", `layer "det"`)
}

// mbNet is an SSD training head (weiliu89/caffe's train.prototxt form):
// PriorBox and MultiBoxLoss over ground truth from an Input layer, with a
// numeric field on each line for mutate to change.
const mbNet = `name: "multibox"
layer { name: "data" type: "Data" top: "data" top: "label" data_param { source: "x" batch_size: 2 } }
layer { name: "gt" type: "Input" top: "gt" input_param { shape { dim: 1 dim: 1 dim: 3 dim: 8 } } }
` + ssdHeads + `` + ssdPrior + `layer { name: "mbox_loss" type: "MultiBoxLoss" bottom: "loc_flat" bottom: "conf_flat" bottom: "prior" bottom: "gt" top: "mbox_loss"
  propagate_down: true propagate_down: true propagate_down: false propagate_down: false
  multibox_loss_param { loc_loss_type: SMOOTH_L1 conf_loss_type: SOFTMAX loc_weight: 1 num_classes: 3 share_location: true
  match_type: PER_PREDICTION overlap_threshold: 0.5 use_prior_for_matching: true use_difficult_gt: true
  background_label_id: 0
  neg_pos_ratio: 3 neg_overlap: 0.5 code_type: CENTER_SIZE mining_type: MAX_NEGATIVE sample_size: 4 nms_param { nms_threshold: 0.5 top_k: 5 } }
  loss_param { normalization: VALID } }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// TestMutatedMultiBoxNetDoesNotPanic is TestMutatedModelsDoNotPanic for
// SSD's MultiBoxLoss: mbNet mutated, built, and run forward and backward.
// MultiBoxLoss meets ground truth it cannot take (a class the mutated
// num_classes lacks, the background's, an image past the batch) only in
// Forward, where the fork stops; that error must name the layer, and no
// panic may escape.
func TestMutatedMultiBoxNetDoesNotPanic(t *testing.T) {
	mutateNet(t, "multibox", mbNet, 17, "MultiBoxLoss: ground truth row", `layer "mbox_loss"`)
}

// TestMutatedForkNetDoesNotPanic is TestMutatedModelsDoNotPanic for the
// fork layers: forkNet mutated, built, and run forward and backward.
// Upsample meets a mask index outside its top (the pooling that made the
// mask pooled another size) only in Forward, where the fork stops; here
// the layer's panic reaches the caller as the net's error, naming the
// layer, and no panic may escape.
func TestMutatedForkNetDoesNotPanic(t *testing.T) {
	mutateNet(t, "fork", forkNet, 12, "Upsample: mask index", `layer "unpool"`)
}

// mutateNet builds and runs, forward and backward, net (on 3×8×8 inputs)
// and then 200 mutations of it (50 under -short, DSGD_NETFUZZ to set),
// drawn from seed: no panic may escape, and an error saying runErr, which
// a layer meets only in Forward, must name the layer (layerName).
func mutateNet(t *testing.T, name, net string, seed uint64, runErr, layerName string) {
	t.Helper()
	tensor.SetMemoryLimit(256 << 20)
	defer tensor.SetMemoryLimit(0)
	n := 200
	if testing.Short() {
		n = 50
	}
	if s := envInt("DSGD_NETFUZZ"); s > 0 {
		n = s
	}
	if err := tryNet(name, net, [3]int{3, 8, 8}, true); err != nil {
		t.Fatalf("the unmutated net: %v", err)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	errs, ran, start := 0, 0, time.Now()
	for range n {
		mutated, what := mutate(net, r)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", what, p)
				}
			}()
			if err := tryNet(name, mutated, [3]int{3, 8, 8}, true); err != nil {
				errs++
				if strings.Contains(err.Error(), runErr) {
					ran++
					if !strings.Contains(err.Error(), layerName) {
						t.Errorf("%s: the run-time error does not name the layer: %v", what, err)
					}
				}
			}
		}()
	}
	t.Logf("%d mutations, %d refused with an error, %d stopped by %q, in %v", n, errs, ran, runErr, time.Since(start).Round(time.Millisecond))
}
