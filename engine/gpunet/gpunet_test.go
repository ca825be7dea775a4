package gpunet_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/zoo"
	"dsgd/engine/cuda"
	"dsgd/engine/cuda/cudatest"
	"dsgd/engine/gpunet"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// testNet is a prototxt's TRAIN (or TEST) net at a small batch, its data
// layers' tops as inputs.
type testNet struct {
	name, src string
	chw       [3]int
	batch     int
	classes   int
}

func zooNet(t testing.TB, name string, chw [3]int, batch, classes int) testNet {
	src, _, err := zoo.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return testNet{name, string(src), chw, batch, classes}
}

func resnet18(t testing.TB, batch int) testNet {
	src, err := os.ReadFile("../../bench/resnet18.prototxt")
	if err != nil {
		t.Fatal(err)
	}
	return testNet{"resnet18", string(src), [3]int{3, 224, 224}, batch, 1000}
}

// build builds tn for phase with seed, its inputs filled from r (the
// same values for the same r state).
func (tn testNet) build(t testing.TB, phase layers.Phase, seed uint64, r *rand.Rand) *model.Net {
	return tn.buildThreads(t, phase, seed, r, 2)
}

func (tn testNet) buildThreads(t testing.TB, phase layers.Phase, seed uint64, r *rand.Rand, threads int) *model.Net {
	t.Helper()
	def, err := caffedef.ParseNet(tn.name+".prototxt", []byte(tn.src))
	if err != nil {
		t.Fatal(err)
	}
	pn, err := def.Phase(phase)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]tensor.Shape{}
	for _, dl := range pn.Data {
		c, h, w := tn.chw[0], tn.chw[1], tn.chw[2]
		if cs := dl.Transform.CropSize; cs > 0 {
			h, w = cs, cs
		}
		inputs[dl.Tops[0]] = tensor.Shape{tn.batch, c, h, w}
		if len(dl.Tops) > 1 {
			inputs[dl.Tops[1]] = tensor.Shape{tn.batch}
		}
	}
	net, err := model.Build(pn.Spec, inputs, model.Options{Phase: phase, Threads: threads, Seed: seed, Unfused: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, dl := range pn.Data {
		d := net.Input(dl.Tops[0]).Data
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
		if len(dl.Tops) > 1 {
			l := net.Input(dl.Tops[1]).Data
			for i := range l {
				l[i] = float32(r.IntN(tn.classes))
			}
		}
	}
	return net
}

func norm(a []float32) float64 {
	var n float64
	for _, v := range a {
		n += float64(v) * float64(v)
	}
	return math.Sqrt(n)
}

func diff(a, b []float32) []float32 {
	d := make([]float32, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// relErr is ‖a − b‖ / ‖b‖ (‖a − b‖ when b is 0), in float64.
func relErr(a, b []float32) float64 {
	var d, n float64
	for i := range a {
		x := float64(a[i]) - float64(b[i])
		d += x * x
		n += float64(b[i]) * float64(b[i])
	}
	if n == 0 {
		return math.Sqrt(d)
	}
	return math.Sqrt(d / n)
}

// deepTol bounds ‖gpu − cpu‖/‖cpu‖ for each gradient block of a published
// net at its random initial weights. Both engines sum float32 in their own
// orders, and a deep net's backward pass at random weights amplifies that
// rounding where a gradient's terms nearly cancel (through BatchNorm's
// and LRN's backward passes): on CaffeNet, GoogLeNet and ResNet-18 two
// CPU engines (oneDNN's kernels and dsgd's own) differ by up to 7e-3,
// the GPU and the CPU by up to 1.8e-2 (H100, 2026-11-27), the same in
// every block of a net. A wrong index or a missed term moves a block by
// O(1). Each layer's exactness is checked on a small net instead
// (TestGradientsFiniteDifference: 1e-4 against the CPU).
const deepTol = 5e-2

// TestNetsAgree runs the published nets on the GPU and on the CPU from the
// same weights and inputs, two iterations apart by a weight change, and
// compares the loss, the outputs, every gradient block and BatchNorm's
// stored statistics: the loss and outputs within 1e-4, the gradients
// within deepTol. Dropout runs on the CPU on both sides here, so the masks are the
// same (TestDropout checks the GPU's).
func TestNetsAgree(t *testing.T) {
	g := cudatest.Open(t)
	nets := []testNet{
		zooNet(t, "lenet", [3]int{1, 28, 28}, 16, 10),
		zooNet(t, "cifar10_quick", [3]int{3, 32, 32}, 16, 10),
		zooNet(t, "caffenet", [3]int{3, 227, 227}, 4, 1000),
		zooNet(t, "googlenet", [3]int{3, 224, 224}, 2, 1000),
		resnet18(t, 4),
	}
	for _, tn := range nets {
		tol := deepTol
		for _, phase := range []layers.Phase{layers.Train, layers.Test} {
			if tn.name == "resnet18" && phase == layers.Test {
				continue // its prototxt has no TEST data layer
			}
			t.Run(tn.name+"/"+phase.String(), func(t *testing.T) {
				cpu := tn.build(t, phase, 7, rand.New(rand.NewPCG(1, 2)))
				gnet := tn.build(t, phase, 7, rand.New(rand.NewPCG(1, 2)))
				ex, err := gpunet.New(g, gnet, gpunet.Options{CPU: []string{"Dropout"}})
				if err != nil {
					t.Fatal(err)
				}
				defer ex.Close()
				t.Logf("on the CPU: %v", ex.Fallback)
				for _, f := range ex.Fallback {
					if !strings.Contains(f, "Loss") && !strings.Contains(f, "Accuracy") && !strings.Contains(f, "Dropout") && !strings.Contains(f, "Softmax") {
						t.Errorf("%s runs on the CPU", f)
					}
				}
				r := rand.New(rand.NewPCG(3, 4))
				for it := range 2 {
					if it == 1 {
						// A solver's step: the weights change on the host.
						p, q := cpu.Params(), gnet.Params()
						for i := range p {
							p[i] += 0.01 * float32(r.NormFloat64()) * p[i]
							q[i] = p[i]
						}
					}
					lc, lg := cpu.Forward(), gnet.Forward()
					if err := gnet.Err(); err != nil {
						t.Fatal(err)
					}
					if e := math.Abs(lc-lg) / max(math.Abs(lc), 1e-6); e > 1e-4 || math.IsNaN(lg) {
						t.Errorf("iteration %d: loss %v on the GPU, %v on the CPU", it, lg, lc)
					}
					for i, o := range cpu.Outputs() {
						if e := relErr(gnet.Outputs()[i].Data, o.Data); e > 1e-4 {
							t.Errorf("iteration %d: output %s off by %.3g", it, o.Name, e)
						}
					}
					if phase == layers.Test {
						continue
					}
					cpu.Backward()
					gnet.Backward()
					if err := gnet.Err(); err != nil {
						t.Fatal(err)
					}
					worst, at := 0.0, ""
					for _, b := range cpu.Blocks() {
						lo, hi := b.Off, b.Off+b.Len()
						if b.LRMult == 0 {
							// BatchNorm's statistics: compare the values.
							if e := relErr(gnet.Params()[lo:hi], cpu.Params()[lo:hi]); e > tol {
								t.Errorf("iteration %d: %s (stored statistics) off by %.3g", it, b.Name, e)
							}
							continue
						}
						e := relErr(gnet.Grads()[lo:hi], cpu.Grads()[lo:hi])
						if e > worst {
							worst, at = e, b.Name
						}
						if e > tol {
							t.Errorf("iteration %d: gradient of %s off by %.3g", it, b.Name, e)
						}
					}
					t.Logf("iteration %d: loss %.6g (GPU) %.6g (CPU); worst gradient block %s at %.3g", it, lg, lc, at, worst)
				}
			})
		}
	}
}

// TestDropout: the GPU's mask keeps about 1−ratio of the values, each
// scaled by 1/(1−ratio), changes between passes, and the backward pass
// routes the gradient through the same mask.
func TestDropout(t *testing.T) {
	g := cudatest.Open(t)
	spec := model.Spec{Name: "drop", Inputs: []string{"data"}, Layers: []model.LayerSpec{
		{Name: "drop", Bottom: []string{"data"}, Top: []string{"out"}, Config: &layers.DropoutConfig{Ratio: 0.3}},
		{Name: "loss", Bottom: []string{"out", "data"}, Top: []string{"loss"}, Config: &layers.EuclideanLossConfig{}, LossWeight: []float32{1}},
	}}
	net, err := model.Build(spec, map[string]tensor.Shape{"data": {64, 1000}}, model.Options{Phase: layers.Train, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := net.Input("data").Data
	for i := range x {
		x[i] = 1 + float32(i%7)
	}
	ex, err := gpunet.New(g, net, gpunet.Options{Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	var first []float32
	for pass := range 2 {
		net.Forward()
		net.Backward()
		if err := net.Err(); err != nil {
			t.Fatal(err)
		}
		out := net.Blob("out").Data
		kept := 0
		for i, v := range out {
			switch {
			case v == 0:
			case math.Abs(float64(v-x[i]/0.7)) < 1e-5*float64(x[i]):
				kept++
			default:
				t.Fatalf("pass %d: out[%d] = %v from %v: neither dropped nor scaled", pass, i, v, x[i])
			}
		}
		if f := float64(kept) / float64(len(out)); math.Abs(f-0.7) > 0.01 {
			t.Errorf("pass %d: kept %.4f of the values, want 0.7", pass, f)
		}
		if pass == 0 {
			first = append([]float32(nil), out...)
		} else if relErr(out, first) == 0 {
			t.Error("the second pass drew the same mask")
		}
	}
}

// TestGradientsFiniteDifference checks the GPU's gradients of a net made
// of every GPU layer (convolution with groups and bias, BatchNorm and
// Scale in place, leaky ReLU, LRN, MAX and AVE pooling, Concat, Eltwise
// SUM with coefficients, Flatten, InnerProduct) against the CPU's and
// against central differences of its loss (steps 2e-3 and 1e-3, Caffe's
// threshold 1e-2 relative, 1e-3 absolute), kinks skipped: where halving the step moves the
// estimate by more than 0.2% a max pooling window's winner or a ReLU's
// side changed within the step (BatchNorm's batch statistics make every
// weight of conv1 move every value of its channel). Once with the LRN
// and once without it.
func TestGradientsFiniteDifference(t *testing.T) {
	g := cudatest.Open(t)
	// Without its ReLU, the BatchNorm joins only the Scale.
	t.Run("norelu", func(t *testing.T) {
		checkFD(t, g, strings.Replace(gradNet, `layer { name: "relu" type: "ReLU" bottom: "conv1" top: "conv1" relu_param { negative_slope: 0.2 } }
`, "", 1))
	})
	for _, lrn := range []bool{true, false} {
		src := gradNet
		if !lrn {
			// The same net without its LRN: the pools read conv1.
			src = strings.Replace(src, `layer { name: "norm" type: "LRN" bottom: "conv1" top: "norm" lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 } }
`, "", 1)
			src = strings.ReplaceAll(src, `bottom: "norm"`, `bottom: "conv1"`)
		}
		t.Run(map[bool]string{true: "lrn", false: "nolrn"}[lrn], func(t *testing.T) { checkFD(t, g, src) })
	}
}

// gradNet has every GPU layer (see TestGradientsFiniteDifference).
const gradNet = `name: "grad"
layer { name: "data" type: "Data" top: "data" top: "label" data_param { source: "x" batch_size: 3 } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 4 kernel_size: 3 pad: 1 group: 2 weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.1 } } }
layer { name: "bn" type: "BatchNorm" bottom: "conv1" top: "conv1" }
layer { name: "sc" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.2 } bias_filler { type: "gaussian" std: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "conv1" top: "conv1" relu_param { negative_slope: 0.2 } }
layer { name: "norm" type: "LRN" bottom: "conv1" top: "norm" lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 } }
layer { name: "pmax" type: "Pooling" bottom: "norm" top: "pmax" pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "pave" type: "Pooling" bottom: "norm" top: "pave" pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "cat" type: "Concat" bottom: "pmax" bottom: "pave" top: "cat" }
layer { name: "conv2" type: "Convolution" bottom: "cat" top: "conv2"
  convolution_param { num_output: 8 kernel_size: 1 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "sum" type: "Eltwise" bottom: "cat" bottom: "conv2" top: "sum" eltwise_param { operation: SUM coeff: 0.5 coeff: -1.5 } }
layer { name: "flat" type: "Flatten" bottom: "sum" top: "flat" }
layer { name: "ip" type: "InnerProduct" bottom: "flat" top: "ip" inner_product_param { num_output: 5 weight_filler { type: "gaussian" std: 0.2 } bias_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// checkFD checks the GPU's gradients of src's net against the CPU's (a
// small net: they agree to rounding) and against central differences.
func checkFD(t *testing.T, g *cuda.GPU, src string) {
	tn := testNet{"grad", src, [3]int{2, 7, 7}, 3, 5}
	cpu := tn.build(t, layers.Train, 3, rand.New(rand.NewPCG(5, 6)))
	cpu.Forward()
	cpu.Backward()
	net := tn.build(t, layers.Train, 3, rand.New(rand.NewPCG(5, 6)))
	ex, err := gpunet.New(g, net, gpunet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if len(ex.Fallback) != 0 {
		t.Errorf("on the CPU: %v, want none", ex.Fallback)
	}
	net.Forward()
	net.Backward()
	if err := net.Err(); err != nil {
		t.Fatal(err)
	}
	an := append([]float32(nil), net.Grads()...)
	for _, b := range net.Blocks() {
		if b.LRMult == 0 {
			continue
		}
		lo, hi := b.Off, b.Off+b.Len()
		// A block whose gradient is zero in exact arithmetic (conv1's
		// bias, which the BatchNorm after it cancels) holds rounding
		// (3e-7 to 6e-7 on an H100): measure it against 1e-2, a
		// hundredth of the other blocks' gradients.
		e := relErr(an[lo:hi], cpu.Grads()[lo:hi])
		if n := norm(cpu.Grads()[lo:hi]); n < 1e-2 {
			e = norm(diff(an[lo:hi], cpu.Grads()[lo:hi])) / 1e-2
		}
		t.Logf("%s: GPU against CPU %.3g", b.Name, e)
		if e > 1e-4 {
			t.Errorf("%s: the GPU's gradient is %.3g off the CPU's", b.Name, e)
		}
	}
	params := net.Params()
	loss := func(i int, h float32) float64 {
		v := params[i]
		params[i] = v + h
		l := net.Forward()
		params[i] = v
		return l
	}
	fd := func(i int, h float32) float64 { return (loss(i, h) - loss(i, -h)) / (2 * float64(h)) }
	r := rand.New(rand.NewPCG(7, 8))
	checked, kinks := 0, 0
	for _, b := range net.Blocks() {
		if b.LRMult == 0 {
			continue
		}
		for range 6 {
			i := b.Off + r.IntN(b.Len())
			d1, d2 := fd(i, 2e-3), fd(i, 1e-3)
			if math.Abs(d1-d2) > 2e-3*max(math.Abs(d1), 1e-1) {
				kinks++
				continue
			}
			checked++
			a := float64(an[i])
			// The floor: a float32 loss near 2 moves by about 2e-7 a
			// step, 1e-4 in the estimate (Caffe's floor is 1).
			if math.Abs(a-d1) > 1e-2*max(math.Abs(a), math.Abs(d1), 1e-1) {
				t.Errorf("%s[%d]: gradient %.6g, finite difference %.6g", b.Name, i-b.Off, a, d1)
			}
		}
	}
	if checked < (checked+kinks)/2 {
		t.Errorf("only %d of %d samples checked (%d kinks)", checked, checked+kinks, kinks)
	}
	t.Logf("%d samples checked, %d kinks skipped", checked, kinks)
}

// TestSoftmaxLoss: the GPU's SoftmaxWithLoss against the CPU's over
// spatial positions (a class axis with positions after it), with an
// ignore label and each normalisation.
func TestSoftmaxLoss(t *testing.T) {
	g := cudatest.Open(t)
	ignore := 2
	for _, norm := range []layers.LossNormalization{layers.NormValid, layers.NormBatchSize, layers.NormFull, layers.NormNone} {
		for _, ign := range []*int{nil, &ignore} {
			spec := model.Spec{Name: "sm", Inputs: []string{"data", "label"}, Layers: []model.LayerSpec{
				{Name: "conv", Bottom: []string{"data"}, Top: []string{"conv"}, Config: &layers.ConvolutionConfig{
					NumOutput: 5, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1, Group: 1, BiasTerm: true,
					WeightFiller: layers.Filler{Type: layers.FillGaussian, Std: 0.5}, BiasFiller: layers.Filler{Type: layers.FillGaussian, Std: 0.2}}},
				{Name: "loss", Bottom: []string{"conv", "label"}, Top: []string{"loss"}, LossWeight: []float32{1.5},
					Config: &layers.SoftmaxWithLossConfig{Axis: 1, IgnoreLabel: ign, Normalization: norm}},
			}}
			shapes := map[string]tensor.Shape{"data": {3, 4, 2, 3}, "label": {3, 2, 3}}
			var nets [2]*model.Net
			for i := range nets {
				n, err := model.Build(spec, shapes, model.Options{Phase: layers.Train, Seed: 4})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(8, 9))
				for j := range n.Input("data").Data {
					n.Input("data").Data[j] = float32(r.NormFloat64())
				}
				for j := range n.Input("label").Data {
					n.Input("label").Data[j] = float32(r.IntN(5))
				}
				nets[i] = n
			}
			ex, err := gpunet.New(g, nets[1], gpunet.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lc, lg := nets[0].Forward(), nets[1].Forward()
			nets[0].Backward()
			nets[1].Backward()
			if err := nets[1].Err(); err != nil {
				t.Fatal(err)
			}
			if len(ex.Fallback) != 0 {
				t.Errorf("on the CPU: %v", ex.Fallback)
			}
			if math.Abs(lc-lg) > 1e-5*math.Abs(lc) {
				t.Errorf("normalization %d, ignore %v: loss %v on the GPU, %v on the CPU", norm, ign != nil, lg, lc)
			}
			if e := relErr(nets[1].Grads(), nets[0].Grads()); e > 1e-5 {
				t.Errorf("normalization %d, ignore %v: gradients off by %.3g", norm, ign != nil, e)
			}
			ex.Close()
		}
	}
}

// forkNet uses the Caffe forks' layers (caffedef TestForkNetTrains' net
// with a Data layer): none has a GPU op yet.
const forkNet = `name: "fork"
layer { name: "data" type: "Data" top: "data" top: "label" data_param { source: "x" batch_size: 4 } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 8 kernel_size: 1 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "relu1" type: "ReLU6" bottom: "conv1" top: "conv1" }
layer { name: "conv1/dw" type: "ConvolutionDepthwise" bottom: "conv1" top: "conv1/dw"
  convolution_param { num_output: 8 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "shuffle" type: "ShuffleChannel" bottom: "conv1/dw" top: "shuffle" shuffle_channel_param { group: 2 } }
layer { name: "se_pool" type: "Pooling" bottom: "shuffle" top: "se_pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "se_up" type: "Convolution" bottom: "se_pool" top: "se_up"
  convolution_param { num_output: 8 kernel_size: 1 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "se_prob" type: "Sigmoid" bottom: "se_up" top: "se_up" }
layer { name: "se" type: "Axpy" bottom: "se_up" bottom: "shuffle" bottom: "conv1" top: "se" }
layer { name: "norm" type: "Normalize" bottom: "se" top: "norm" norm_param { across_spatial: false channel_shared: false } }
layer { name: "interp" type: "Interp" bottom: "norm" top: "interp" interp_param { shrink_factor: 2 } }
layer { name: "perm" type: "Permute" bottom: "interp" top: "perm" permute_param { order: 0 order: 2 order: 3 order: 1 } }
layer { name: "ip" type: "InnerProduct" bottom: "perm" top: "ip" inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.2 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// TestForkLayersOnCPU: the fork layers, which have no GPU op, run on the
// CPU with their blobs copied across, between layers that run on the GPU
// (the Sigmoid has no GPU op either), and the net's loss and gradients
// agree with the CPU's.
func TestForkLayersOnCPU(t *testing.T) {
	g := cudatest.Open(t)
	tn := testNet{"fork", forkNet, [3]int{3, 8, 8}, 4, 3}
	cpu := tn.build(t, layers.Train, 3, rand.New(rand.NewPCG(5, 6)))
	lc := cpu.Forward()
	cpu.Backward()
	net := tn.build(t, layers.Train, 3, rand.New(rand.NewPCG(5, 6)))
	ex, err := gpunet.New(g, net, gpunet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	t.Logf("on the CPU: %v", ex.Fallback)
	fork := []string{"relu1 (ReLU6)", "conv1/dw (ConvolutionDepthwise)", "shuffle (ShuffleChannel)", "se (Axpy)",
		"norm (Normalize)", "interp (Interp)", "perm (Permute)"}
	for _, f := range fork {
		if !slices.Contains(ex.Fallback, f) {
			t.Errorf("%s does not run on the CPU: %v", f, ex.Fallback)
		}
	}
	for _, f := range ex.Fallback {
		if !slices.Contains(fork, f) && !strings.Contains(f, "(Sigmoid)") {
			t.Errorf("%s runs on the CPU; only the fork layers (and the Sigmoid) should", f)
		}
	}
	lg := net.Forward()
	net.Backward()
	if err := net.Err(); err != nil {
		t.Fatal(err)
	}
	if e := math.Abs(lc-lg) / max(math.Abs(lc), 1e-6); e > 1e-4 {
		t.Errorf("loss %v on the GPU, %v on the CPU", lg, lc)
	}
	for _, b := range net.Blocks() {
		lo, hi := b.Off, b.Off+b.Len()
		if e := relErr(net.Grads()[lo:hi], cpu.Grads()[lo:hi]); e > 1e-4 {
			t.Errorf("%s: the GPU's gradient is %.3g off the CPU's", b.Name, e)
		}
	}
}
