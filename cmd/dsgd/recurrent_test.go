//go:build !purego

package main

import (
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"dsgd/data"
)

// recurrentNet is LRCN's language model in small: time-major HDF5 rows
// (T time steps of N streams) through Embed, an LSTM and a per-step
// InnerProduct, with a Reshape that names the batch's T rows as S2VT's
// stage indicator does.
const recurrentNet = `name: "delay"
layer { name: "d" type: "HDF5Data" top: "cont" top: "input" top: "target" hdf5_data_param { source: "seq.txt" batch_size: 6 } }
layer { name: "c" type: "Reshape" bottom: "cont" top: "c" reshape_param { shape { dim: 6 dim: 4 } } }
layer { name: "embed" type: "Embed" bottom: "input" top: "x" embed_param { input_dim: 4 num_output: 8 weight_filler { type: "uniform" min: -0.3 max: 0.3 } } }
layer { name: "lstm" type: "LSTM" bottom: "x" bottom: "c" top: "h" recurrent_param { num_output: 16 weight_filler { type: "uniform" min: -0.3 max: 0.3 } } }
layer { name: "predict" type: "InnerProduct" bottom: "h" top: "p" inner_product_param { num_output: 4 axis: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "p" bottom: "target" top: "loss" loss_param { ignore_label: -1 } softmax_param { axis: 2 } }
`

// TestRecurrentDataKeepsTimeOrder: a net with an LSTM reads its HDF5 rows
// as time steps, so dsgd must neither reshuffle the rows (by default) nor
// cut a batch into atoms along its first axis. The task (each step's
// target is the previous step's input) is learnt only from rows in order.
func TestRecurrentDataKeepsTimeOrder(t *testing.T) {
	dir := t.TempDir()
	const T, N, seqs = 6, 4, 40
	rng := rand.New(rand.NewPCG(7, 8))
	cont := make([]float32, 0, T*N*seqs)
	in := make([]float32, 0, T*N*seqs)
	tgt := make([]float32, 0, T*N*seqs)
	for range seqs {
		var prev [N]float32
		for step := range T {
			for s := range N {
				v := float32(rng.IntN(4))
				c, y := float32(1), prev[s]
				if step == 0 {
					c, y = 0, -1 // a sequence starts: nothing to recall
				}
				cont, in, tgt = append(cont, c), append(in, v), append(tgt, y)
				prev[s] = v
			}
		}
	}
	shape := []int{T * seqs, N}
	if err := data.WriteHDF5(filepath.Join(dir, "seq.h5"), []string{"cont", "input", "target"}, [][]int{shape, shape, shape}, [][]float32{cont, in, tgt}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "seq.txt", filepath.Join(dir, "seq.h5")+"\n")
	write(t, dir, "net.prototxt", recurrentNet)
	write(t, dir, "solver.prototxt", `net: "net.prototxt"
base_lr: 0.5 momentum: 0.9 lr_policy: "fixed" max_iter: 300 display: 100 random_seed: 3 average_loss: 20
`)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--snapshot-prefix", "none", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "in file order: the recurrent layers (lstm)") {
		t.Errorf("the header does not say the rows keep file order:\n%s", out)
	}
	if !strings.Contains(out, "each worker's batch one atom: LSTM lstm reads its batch's first axis as time steps") {
		t.Errorf("the header does not say why the batch is one atom:\n%s", out)
	}
	m := regexp.MustCompile(`iter 300/300\s+loss ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no loss at iteration 300 in\n%s", out)
	}
	// Chance is ln 4 = 1.39 per step; five of six steps are recallable.
	if loss, _ := strconv.ParseFloat(m[1], 64); loss > 0.3 {
		t.Errorf("loss %v after 300 iterations: the delay task was not learnt (rows out of order?)", loss)
	}
	// --shuffle asked for reshuffles the rows anyway, and says nothing.
	code, out, errs = runCmd(t, dir, "train", "--solver", "solver.prototxt", "--snapshot-prefix", "none", "--threads", "2", "--shuffle", "--iters", "2")
	if code != 0 {
		t.Fatalf("--shuffle: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out, "in file order") {
		t.Errorf("--shuffle given, but the header says file order:\n%s", out)
	}
}

// TestTimeBatchLeavesRecurrentInputs: LRCN's deploy net gives time-major
// inputs (1×N) beside an N×D static input; --batch cannot set "the first
// axis" of both, so dsgd time leaves a recurrent net's Input shapes as
// given, and says so.
func TestTimeBatchLeavesRecurrentInputs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "deploy.prototxt", `name: "word_to_preds"
input: "cont" input_shape { dim: 1 dim: 3 }
input: "word" input_shape { dim: 1 dim: 3 }
input: "image" input_shape { dim: 3 dim: 5 }
layer { name: "embed" type: "Embed" bottom: "word" top: "x" embed_param { input_dim: 6 num_output: 4 bias_term: false } }
layer { name: "lstm" type: "LSTM" bottom: "x" bottom: "cont" bottom: "image" top: "h" recurrent_param { num_output: 4 } }
layer { name: "predict" type: "InnerProduct" bottom: "h" top: "p" inner_product_param { num_output: 6 axis: 2 } }
`)
	code, out, errs := runCmd(t, dir, "time", "--net", "deploy.prototxt", "--batch", "1", "--iters", "1", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "Input layers keep their shapes under --batch 1: the recurrent layers (lstm)") {
		t.Errorf("no note on the Input shapes:\n%s", out)
	}
	if !strings.Contains(out, "[1 3 6]") {
		t.Errorf("predict's top is not 1x3x6 (T x N x vocabulary):\n%s", out)
	}
}
