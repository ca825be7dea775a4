package job

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confNet is a net whose Data layers leave their source to the tool, as
// DIGITS writes them: the TRAIN layer has none, the TEST layer an empty
// one.
const confNet = `name: "conf"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { batch_size: 4 } }
layer { name: "dt" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// writeConf writes confNet and solver into a new directory and returns
// the solver's path.
func writeConf(t *testing.T, solver string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"net.prototxt": confNet, "solver.prototxt": `net: "` + filepath.Join(dir, "net.prototxt") + `"` + "\n" + solver} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "solver.prototxt")
}

// TestEmptySource: a data layer without a source loads, and is refused
// where its data are opened, naming the layer and its line, unless
// Options.Data stands in for it.
func TestEmptySource(t *testing.T) {
	solver := writeConf(t, `base_lr: 0.1 lr_policy: "fixed" max_iter: 2 test_iter: 1 test_interval: 1`)
	net := filepath.Join(filepath.Dir(solver), "net.prototxt")
	for _, c := range []struct {
		name string
		data string
		test bool
		want string
	}{
		{"train, no source", "", false, net + ":3:14: data_param of layer 'd' needs a source (give one with Options.Data)"},
		{"train, Options.Data", "synthetic:N=16,C=1,H=2,W=2,classes=4", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := Load(Options{Solver: solver, Data: c.data, Seed: 1})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			defer j.Close()
			err = j.OpenData(c.test, 1)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("OpenData: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Fatalf("OpenData: %v, want %q", err, c.want)
			}
		})
	}
	// The TEST layer alone (its source empty, not absent).
	j, err := Load(Options{Solver: solver, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.OpenTestFeeds(); err == nil || err.Error() != net+":5:14: data_param of layer 'dt' needs a source (give one with Options.Data)" {
		t.Errorf("OpenTestFeeds: %v", err)
	}
}

// TestTrainNeedsRate: a solver without base_lr or lr_policy loads (what
// test and time need), and Train refuses it with the solver file and
// the field before it opens the data (Options.Data names none there).
func TestTrainNeedsRate(t *testing.T) {
	for _, c := range []struct{ name, solver, want string }{
		{"no base_lr", `lr_policy: "fixed" max_iter: 2`, ":1:1: solver: base_lr is required"},
		{"no lr_policy", `base_lr: 0.1 max_iter: 2`, ":1:1: solver: lr_policy is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			solver := writeConf(t, c.solver)
			if _, err := Load(Options{Solver: solver, Seed: 1}); err != nil {
				t.Fatalf("Load: %v", err)
			}
			o := DefaultRunOptions()
			o.Model = Options{Solver: solver, Data: filepath.Join(filepath.Dir(solver), "nodata"), Seed: 1}
			o.Threads, o.SnapshotPrefix = 1, "none"
			var out, errw bytes.Buffer
			_, err := Train(context.Background(), o, RunDeps{Stdout: &out, Stderr: &errw})
			if err == nil || !strings.HasPrefix(err.Error(), solver+c.want) {
				t.Fatalf("Train: %v, want %q", err, solver+c.want)
			}
			if out.Len() > 0 {
				t.Errorf("the refused run printed:\n%s", out.String())
			}
		})
	}
}

// TestTestWeightsOpensNoTrainData: TestWeights, as caffe test, reads the
// TEST data alone: a TRAIN data layer without a source, or with one that
// cannot be read, does not stop it, with a dsgd snapshot (of the TRAIN
// net, whose shapes then come from the TEST net's) or a Caffe model.
func TestTestWeightsOpensNoTrainData(t *testing.T) {
	const test = `layer { name: "dt" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=8,C=1,H=2,W=2,classes=4" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "acc" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("net.prototxt", `name: "w"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "synthetic:N=16,C=1,H=2,W=2,classes=4" batch_size: 4 } }
`+test)
	solver := write("solver.prototxt", `net: "`+filepath.Join(dir, "net.prototxt")+`"
base_lr: 0.1 lr_policy: "fixed" max_iter: 2 test_iter: 1 test_interval: 100
snapshot_prefix: "`+filepath.Join(dir, "out", "w")+`"`)
	for _, format := range []string{"", "caffe"} {
		o := DefaultRunOptions()
		o.Model = Options{Solver: solver, Seed: 1}
		o.Threads, o.SnapshotFormat = 1, format
		if _, err := Train(context.Background(), o, RunDeps{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			t.Fatalf("Train (snapshot format %q): %v", format, err)
		}
	}
	for _, c := range []struct{ name, train string }{
		{"no source", `data_param { batch_size: 4 }`},
		{"unreadable source", `data_param { source: "` + filepath.Join(dir, "nodata") + `" batch_size: 4 }`},
		{"other batch", `data_param { source: "` + filepath.Join(dir, "nodata") + `" batch_size: 3 }`},
	} {
		for _, weights := range []string{"w_iter_2.dsgdsnap", "w_iter_2.caffemodel"} {
			t.Run(c.name+"/"+weights, func(t *testing.T) {
				write("net.prototxt", `name: "w"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  `+c.train+` }
`+test)
				j, err := Load(Options{Solver: solver, Seed: 1})
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				defer j.Close()
				res, n, err := j.TestWeights(t.Context(), WeightsTest{Weights: filepath.Join(dir, "out", weights), Threads: 1, Out: io.Discard})
				if err != nil {
					t.Fatalf("TestWeights: %v", err)
				}
				if n != 1 || len(res.Outputs) != 2 {
					t.Errorf("%d batches, outputs %v; want 1 batch, acc and loss", n, res.Outputs)
				}
				if len(j.TrainFeeds) > 0 {
					t.Error("the TRAIN data were opened")
				}
			})
		}
	}
}

// TestTrainNoIteration: with max_iter 0 (or none) and no
// RunOptions.Iters, Train does what Caffe's Solver::Solve does: no
// iteration, the snapshot of the starting weights at iteration 0 in the
// run's format (none with snapshot_after_train: false or an interval, as
// in Caffe), and the test
// (only the final one: Caffe tests before the first iteration inside
// its loop), with any scheme. Nothing else is left in the snapshot
// folder.
func TestTrainNoIteration(t *testing.T) {
	for _, c := range []struct {
		name, solver, format, scheme string
		workers                      int
		finish                       string
		files                        []string // in out/ beside the lock
		test                         bool
	}{
		{"no max_iter", `test_iter: 1 test_interval: 10`, "", "", 1, "", []string{"w_iter_0.dsgdsnap"}, true},
		{"max_iter 0, caffe format", `max_iter: 0 test_iter: 1 test_interval: 10`, "caffe", "", 1, "", []string{"w_iter_0.caffemodel", "w_iter_0.solverstate"}, true},
		{"no test", `max_iter: 0`, "", "", 1, "", []string{"w_iter_0.dsgdsnap"}, false},
		{"no snapshot after train", `max_iter: 0 snapshot_after_train: false test_iter: 1 test_interval: 10`, "", "", 1, "", nil, true},
		// Caffe's Solve: "if we haven't already" (iter % snapshot != 0) is
		// false at iteration 0.
		{"snapshot interval", `max_iter: 0 snapshot: 5 test_iter: 1 test_interval: 10`, "", "", 1, "", nil, true},
		{"sync-tree", `test_iter: 1 test_interval: 10`, "", "sync-tree", 2, "", []string{"w_iter_0.dsgdsnap"}, true},
		{"easgd", `test_iter: 1 test_interval: 10`, "", "easgd", 2, "", []string{"w_iter_0.dsgdsnap"}, true},
		// The center's finish rules count to an iteration there is not.
		{"easgd, finish master", `test_iter: 1 test_interval: 10`, "", "easgd", 2, "master", []string{"w_iter_0.dsgdsnap"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			net := `name: "w"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "synthetic:N=16,C=1,H=2,W=2,classes=4" batch_size: 4 } }
layer { name: "dt" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=8,C=1,H=2,W=2,classes=4" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`
			solver := filepath.Join(dir, "solver.prototxt")
			for name, text := range map[string]string{"net.prototxt": net, "solver.prototxt": `net: "` + filepath.Join(dir, "net.prototxt") + `"
base_lr: 0.1 lr_policy: "fixed" snapshot_prefix: "` + filepath.Join(dir, "out", "w") + `" ` + c.solver} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			o := DefaultRunOptions()
			o.Model = Options{Solver: solver, Seed: 1}
			o.Threads, o.SnapshotFormat, o.Scheme, o.Workers = 2, c.format, c.scheme, c.workers
			if c.finish != "" {
				o.Finish = c.finish
			}
			var out bytes.Buffer
			res, err := Train(context.Background(), o, RunDeps{Stdout: &out, Stderr: io.Discard})
			if err != nil {
				t.Fatalf("Train: %v\n%s", err, out.String())
			}
			if res.Iters != 0 || res.Start != 0 {
				t.Errorf("%d iterations from %d, want none", res.Iters, res.Start)
			}
			if tests := len(res.Tests); c.test && (tests != 1 || !strings.Contains(out.String(), "final test:")) || !c.test && tests != 0 {
				t.Errorf("%d tests, want the final one: %v; output:\n%s", tests, c.test, out.String())
			}
			entries, err := os.ReadDir(filepath.Join(dir, "out"))
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, e := range entries {
				if e.Name() != "w.lock" {
					files = append(files, e.Name())
				}
			}
			if strings.Join(files, " ") != strings.Join(c.files, " ") {
				t.Errorf("out/ holds %q, want %q", files, c.files)
			}
		})
	}
}

// TestLoadTestOnly: a solver whose TRAIN net does not build (a fork's
// data layer dsgd does not know, HED's) is refused by Load, except for testing alone
// (Options.TestOnly), which keeps the error in TrainErr and builds the
// TEST net.
func TestLoadTestOnly(t *testing.T) {
	dir := t.TempDir()
	net := `name: "py"
layer { name: "data" type: "ImageLabelmapData" top: "data" top: "label" include { phase: TRAIN } image_data_param { source: "l" batch_size: 1 } }
layer { name: "dt" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=8,C=1,H=2,W=2,classes=4" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`
	netPath, solver := filepath.Join(dir, "net.prototxt"), filepath.Join(dir, "solver.prototxt")
	if err := os.WriteFile(netPath, []byte(net), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(solver, []byte(`net: "`+netPath+`" base_lr: 0.1 lr_policy: "fixed" test_iter: 1 test_interval: 1`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := netPath + `:2:1: layer 'data' (TRAIN phase) has unknown type 'ImageLabelmapData'`
	for _, testOnly := range []bool{false, true} {
		j, err := Load(Options{Solver: solver, TestOnly: testOnly, Seed: 1})
		switch {
		case !testOnly && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("Load: %v, want %q", err, want)
		case testOnly && err != nil:
			t.Errorf("Load, TestOnly: %v", err)
		case testOnly && (j.TrainErr == nil || !strings.HasPrefix(j.TrainErr.Error(), want) || len(j.Test.Spec.Layers) != 2):
			t.Errorf("Load, TestOnly: TrainErr %v, TEST layers %d", j.TrainErr, len(j.Test.Spec.Layers))
		}
	}
}

// TestTestOnlyDetectionRefused: SSD's eval_type "detection" is computed
// by the trainer's test pass; testing a Caffe model on the TEST net alone
// (the TRAIN net does not build) refuses it, saying why, rather than
// averaging the DetectionEvaluate rows.
func TestTestOnlyDetectionRefused(t *testing.T) {
	dir := t.TempDir()
	net := `name: "py"
layer { name: "data" type: "ImageLabelmapData" top: "data" top: "label" include { phase: TRAIN } image_data_param { source: "l" batch_size: 1 } }
layer { name: "dt" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=8,C=1,H=2,W=2,classes=4" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 } }
`
	netPath, solver := filepath.Join(dir, "net.prototxt"), filepath.Join(dir, "solver.prototxt")
	if err := os.WriteFile(netPath, []byte(net), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(solver, []byte(`net: "`+netPath+`" base_lr: 0.1 lr_policy: "fixed" test_iter: 1 test_interval: 1 eval_type: "detection" ap_version: "11point"`), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Load(Options{Solver: solver, TestOnly: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if cfg := j.Config(); cfg.Detection == nil || cfg.Detection.APVersion != "11point" {
		t.Errorf("Config().Detection = %+v, want 11point", cfg.Detection)
	}
	_, _, err = j.TestWeights(context.Background(), WeightsTest{Weights: filepath.Join(dir, "w.caffemodel")})
	if err == nil || !strings.Contains(err.Error(), `eval_type "detection"`) || !strings.Contains(err.Error(), "the TRAIN net does not build") {
		t.Errorf("TestWeights: %v, want eval_type detection refused on the TEST net alone", err)
	}
}
