package caffedef

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/caffe/prototxt"
	"dsgd/engine/solver"
)

func TestLeNetSolver(t *testing.T) {
	const file = "testdata/lenet_solver.prototxt"
	s, err := LoadSolver(file)
	if err != nil {
		t.Fatal(err)
	}
	want := &SolverDef{
		Solver: solver.Config{
			Type: "SGD", BaseLR: 0.01, Momentum: 0.9, Momentum2: 0.999, Delta: 1e-8, RMSDecay: 0.99,
			WeightDecay: 0.0005, Regularization: "L2", ClipGradients: -1,
			LRPolicy: "inv", Gamma: 0.0001, Power: 0.75, MaxIter: 10000,
		},
		// Caffe resolves net from the working directory (its root).
		Net:      "examples/mnist/lenet_train_test.prototxt",
		TrainNet: NetSource{Field: "net", Pos: prototxt.Pos{File: file, Line: 2, Col: 1}, Path: "examples/mnist/lenet_train_test.prototxt"},
		TestNets: []TestNet{{Source: NetSource{Field: "net", Pos: prototxt.Pos{File: file, Line: 2, Col: 1}, Path: "examples/mnist/lenet_train_test.prototxt"}, Iter: 100}},
		IterSize: 1, SnapshotAfterTrain: true,
		TestIter: 100, TestInterval: 500, TestInitialization: true, Display: 100, AverageLoss: 1,
		MaxIter: 10000, Snapshot: 5000, SnapshotPrefix: "examples/mnist/lenet", RandomSeed: -1,
		// solver_mode: GPU is read, not warned about: the caller decides
		// whether a GPU is there.
		GPU: true, GPUAt: file + ":25:1",
		// SSD's solver fields at the fork's defaults.
		EvalType: EvalClassification, APVersion: "Integral",
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got\n%+v\nwant\n%+v", s, want)
	}
}

func TestCifar10QuickSolver(t *testing.T) {
	const file = "testdata/cifar10_quick_solver.prototxt"
	s, err := LoadSolver(file)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Solver
	if c.BaseLR != 0.001 || c.Momentum != 0.9 || c.WeightDecay != 0.004 || c.LRPolicy != "fixed" ||
		s.MaxIter != 4000 || s.Snapshot != 4000 || s.TestIter != 100 || s.TestInterval != 500 || s.Display != 100 {
		t.Errorf("got %+v", s)
	}
	if !s.GPU || s.DeviceID != 0 || s.GPUAt != file+":26:1" || len(s.Warnings) != 0 {
		t.Errorf("GPU %v DeviceID %d GPUAt %q Warnings %q: want solver_mode: GPU read at %s:26:1, no warning", s.GPU, s.DeviceID, s.GPUAt, s.Warnings, file)
	}
	if s.SnapshotFormat != "HDF5" {
		t.Errorf("SnapshotFormat = %q, want HDF5", s.SnapshotFormat)
	}
}

func TestSolverFields(t *testing.T) {
	tests := []struct {
		name, src string
		check     func(s *SolverDef) bool
	}{
		{"adam", `base_lr: 0.001 lr_policy: "fixed" type: "Adam" momentum: 0.9 momentum2: 0.99 delta: 1e-6`,
			func(s *SolverDef) bool {
				return s.Solver.Type == "Adam" && s.Solver.Momentum2 == 0.99 && s.Solver.Delta == 1e-6
			}},
		{"legacy solver_type", `base_lr: 0.1 lr_policy: "fixed" solver_type: NESTEROV`,
			func(s *SolverDef) bool { return s.Solver.Type == "Nesterov" }},
		{"rmsprop", `base_lr: 0.1 lr_policy: "fixed" type: "RMSProp" rms_decay: 0.9`,
			func(s *SolverDef) bool { return s.Solver.Type == "RMSProp" && s.Solver.RMSDecay == 0.9 }},
		{"multistep", `base_lr: 0.1 lr_policy: "multistep" gamma: 0.1 stepvalue: 100 stepvalue: 200`,
			func(s *SolverDef) bool { return slices.Equal(s.Solver.StepValues, []int{100, 200}) }},
		{"step", `base_lr: 0.1 lr_policy: "step" gamma: 0.1 stepsize: 1000`,
			func(s *SolverDef) bool { return s.Solver.StepSize == 1000 && s.Solver.Gamma == 0.1 }},
		{"poly", `base_lr: 0.1 lr_policy: "poly" power: 0.5 max_iter: 100`,
			func(s *SolverDef) bool { return s.Solver.MaxIter == 100 && s.MaxIter == 100 && s.Solver.Power == 0.5 }},
		{"misc", `base_lr: 1 lr_policy: "fixed" regularization_type: "L1" clip_gradients: 10 random_seed: 7
			test_initialization: false average_loss: 20 iter_size: 1 snapshot_prefix: "s/x"`,
			func(s *SolverDef) bool {
				return s.Solver.Regularization == "L1" && s.Solver.ClipGradients == 10 && s.RandomSeed == 7 &&
					!s.TestInitialization && s.AverageLoss == 20 && s.SnapshotPrefix == "s/x"
			}},
		{"absolute net", `net: "/abs/net.prototxt" base_lr: 1 lr_policy: "fixed"`,
			func(s *SolverDef) bool { return s.Net == "/abs/net.prototxt" }},
		{"relative net", `net: "net.prototxt" base_lr: 1 lr_policy: "fixed"`,
			func(s *SolverDef) bool { return s.Net == "net.prototxt" && len(s.Notes) == 0 }},
		{"adadelta", `base_lr: 1 lr_policy: "fixed" type: "AdaDelta" momentum: 0.95 delta: 1e-6`,
			func(s *SolverDef) bool { return s.Solver.Type == "AdaDelta" && s.Solver.Momentum == 0.95 }},
		{"solver_type adadelta", `base_lr: 1 lr_policy: "fixed" solver_type: ADADELTA momentum: 0.95`,
			func(s *SolverDef) bool { return s.Solver.Type == "AdaDelta" }},
		{"iter_size", `base_lr: 1 lr_policy: "fixed" iter_size: 16 snapshot_after_train: false`,
			func(s *SolverDef) bool { return s.IterSize == 16 && !s.SnapshotAfterTrain }},
		{"multistep without stepvalue", `base_lr: 0.1 lr_policy: "multistep"`,
			func(s *SolverDef) bool { return s.Solver.LRPolicy == "multistep" && len(s.Solver.StepValues) == 0 }},
		{"train and test nets", `train_net: "a.prototxt" test_net: "b.prototxt" test_net: "c.prototxt" test_iter: 5 test_iter: 7
			base_lr: 1 lr_policy: "fixed" train_state { stage: "s1" level: 2 } test_state { stage: "t" } test_state { }`,
			func(s *SolverDef) bool {
				return s.Net == "a.prototxt" && s.TrainNet.Field == "train_net" && len(s.TestNets) == 2 &&
					s.TestNets[0].Source.Path == "b.prototxt" && s.TestNets[0].Iter == 5 && s.TestNets[1].Iter == 7 &&
					s.TestNets[1].Source.Path == "c.prototxt" && s.TestIter == 5 &&
					slices.Equal(s.TrainState.Stages, []string{"s1"}) && s.TrainState.Level == 2 &&
					slices.Equal(s.TestNets[0].State.Stages, []string{"t"}) && len(s.TestNets[1].State.Stages) == 0
			}},
		{"generic net twice", `net: "n.prototxt" test_iter: 3 test_iter: 4 base_lr: 1 lr_policy: "fixed"`,
			func(s *SolverDef) bool {
				return len(s.TestNets) == 2 && s.TestNets[1].Source.Path == "n.prototxt" && s.TestNets[1].Iter == 4
			}},
		{"inline nets", `train_net_param { name: "tr" layer { name: "d" type: "Input" top: "x" input_param { shape { dim: 1 } } } }
			test_net_param { name: "te" layer { name: "d" type: "Input" top: "x" input_param { shape { dim: 2 } } } }
			test_iter: 1 base_lr: 1 lr_policy: "fixed"`,
			func(s *SolverDef) bool {
				return s.Net == "" && s.TrainNet.Inline != nil && s.TrainNet.Inline.Name == "tr" &&
					len(s.TestNets) == 1 && s.TestNets[0].Source.Inline.Name == "te"
			}},
		{"weights", `base_lr: 1 lr_policy: "fixed" weights: "a.caffemodel" weights: "b.caffemodel,c.caffemodel"`,
			func(s *SolverDef) bool {
				return slices.Equal(s.Weights, []string{"a.caffemodel", "b.caffemodel,c.caffemodel"})
			}},
		{"layer_wise_reduce", `base_lr: 1 lr_policy: "fixed" layer_wise_reduce: false`,
			func(s *SolverDef) bool {
				return len(s.Warnings) == 1 && strings.Contains(s.Warnings[0], "ignoring layer_wise_reduce")
			}},
		// Caffe's default momentum 0 holds for AdaDelta too: accepted, with a
		// warning that names the type's line.
		{"adadelta without momentum", `base_lr: 1 lr_policy: "fixed"
type: "AdaDelta"`,
			func(s *SolverDef) bool {
				return s.Solver.Type == "AdaDelta" && s.Solver.Momentum == 0 && len(s.Warnings) == 1 &&
					strings.HasPrefix(s.Warnings[0], "dir/s.prototxt:2:7: solver type \"AdaDelta\" without momentum")
			}},
		{"no net", `base_lr: 1 lr_policy: "fixed"`,
			func(s *SolverDef) bool { return s.Net == "" && s.RandomSeed == -1 && s.Solver.Type == "SGD" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSolver("dir/s.prototxt", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s) {
				t.Errorf("unexpected %+v", s)
			}
		})
	}
}

func TestSolverErrors(t *testing.T) {
	const ok = `base_lr: 0.1 lr_policy: "fixed" `
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "base_lr 1", "s.prototxt:1:9: expected ':' or '{', found number 1"},
		{"unknown field", ok + "\nfoo: 1", "s.prototxt:2:1: unsupported field 'foo' in solver"},
		{"zero base_lr", `base_lr: 0 lr_policy: "fixed"`, "s.prototxt:1:10: base_lr in solver: must be > 0, got 0"},
		{"base_lr string", `base_lr: "0.1"`, `s.prototxt:1:10: base_lr in solver: expected a number, found string "0.1"`},
		{"policy ident", `base_lr: 0.1 lr_policy: fixed`, "s.prototxt:1:25: lr_policy in solver: expected a quoted string, found identifier fixed"},
		{"unknown policy", `base_lr: 0.1 lr_policy: "cosine"`, `s.prototxt:1:25: lr_policy in solver: unknown policy "cosine"`},
		{"step no stepsize", `base_lr: 0.1 lr_policy: "step" gamma: 0.1`, `s.prototxt:1:25: solver: lr_policy "step" needs stepsize`},
		{"step no gamma", `base_lr: 0.1 lr_policy: "step" stepsize: 10`, `s.prototxt:1:25: solver: lr_policy "step" needs gamma`},
		{"step zero", `base_lr: 0.1 lr_policy: "step" gamma: 0.1 stepsize: 0`, `s.prototxt:1:53: stepsize in solver: must be > 0`},
		{"multistep order", "base_lr: 0.1 lr_policy: \"multistep\" gamma: 0.1\nstepvalue: 20\nstepvalue: 10",
			`s.prototxt:3:12: stepvalue in solver: must increase, but 10 follows 20`},
		{"inv no power", `base_lr: 0.1 lr_policy: "inv" gamma: 0.1`, `s.prototxt:1:25: solver: lr_policy "inv" needs power`},
		{"poly no max_iter", `base_lr: 0.1 lr_policy: "poly" power: 1`, `s.prototxt:1:25: solver: lr_policy "poly" needs max_iter`},
		{"exp no gamma", `base_lr: 0.1 lr_policy: "exp"`, `s.prototxt:1:25: solver: lr_policy "exp" needs gamma`},
		{"sigmoid no stepsize", `base_lr: 0.1 lr_policy: "sigmoid" gamma: 1`, `s.prototxt:1:25: solver: lr_policy "sigmoid" needs stepsize`},
		{"momentum", ok + "momentum: 1", "s.prototxt:1:43: momentum in solver: must be in [0, 1), got 1"},
		{"adagrad momentum", ok + `type: "AdaGrad" momentum: 0.9`, `s.prototxt:1:59: momentum in solver: type "AdaGrad" takes no momentum`},
		{"negative gamma", `base_lr: 0.1 lr_policy: "exp" gamma: -1`, `s.prototxt:1:38: gamma in solver: must be >= 0, got -1`},
		{"weight decay", ok + "weight_decay: -1", "s.prototxt:1:47: weight_decay in solver: must be >= 0"},
		{"delta", ok + "delta: 0", "s.prototxt:1:40: delta in solver: must be > 0"},
		{"regularization", ok + `regularization_type: "L3"`, `s.prototxt:1:54: regularization_type in solver: unknown value "L3"`},
		{"type", ok + `type: "sgd"`, `s.prototxt:1:39: type in solver: unknown solver type "sgd"`},
		{"both types", ok + `type: "SGD" solver_type: SGD`, `s.prototxt:1:45: solver gives both type and the legacy solver_type`},
		{"solver_type unknown", ok + `solver_type: FOO`, `s.prototxt:1:46: solver_type in solver: unknown value FOO`},
		{"iter_size 0", ok + "iter_size: 0", "s.prototxt:1:44: iter_size in solver: must be at least 1, got 0"},
		{"test_iter without net", ok + "test_iter: 1 test_iter: 2", "s.prototxt:1:46: solver names no net but gives 2 test_iter"},
		{"test_iter without generic net", ok + `train_net: "t" test_iter: 1`, "s.prototxt:1:48: solver has 0 test nets (test_net, test_net_param) but 1 test_iter"},
		{"two train nets", ok + `train_net: "x" net: "y"`, "s.prototxt:1:48: solver names its train net twice (train_net at s.prototxt:1:33 and net at s.prototxt:1:48)"},
		{"net and net_param", ok + `net: "x" net_param { }`, "s.prototxt:1:42: solver gives both net (at s.prototxt:1:33) and net_param"},
		{"test_state count", ok + `net: "x" test_iter: 1 test_state { } test_state { }`, "s.prototxt:1:66: solver has 2 test_state for 1 test nets"},
		{"test_net without test_iter", ok + `test_net: "x"`, "s.prototxt:1:1: solver has 1 test nets (test_net, test_net_param) but 0 test_iter"},
		{"bad inline net", ok + `net_param { layer { name: "x" } }`, "s.prototxt:1:45: layer 'x' has no type"},
		{"state phase", ok + `net: "x" train_state { phase: TEST }`, "s.prototxt:1:63: phase in train_state in solver: the solver builds this net in phase TRAIN; phase TEST would build it"},
		{"test state phase", ok + `net: "x" test_iter: 1 test_state { phase: TRAIN }`, "s.prototxt:1:75: phase in test_state in solver: the solver builds this net in phase TEST; phase TRAIN would build it"},
		{"max_iter negative", ok + "max_iter: -5", "s.prototxt:1:43: max_iter in solver: must be at least 0, got -5"},
		{"average_loss zero", ok + "average_loss: 0", "s.prototxt:1:47: average_loss in solver: must be at least 1, got 0"},
		{"display twice", ok + "display: 1 display: 2", "s.prototxt:1:44: display in solver is given more than once"},
		{"test_initialization", ok + "test_initialization: 2", "s.prototxt:1:54: test_initialization in solver: expected true or false"},
		{"solver_mode", ok + "solver_mode: TPU", "s.prototxt:1:46: solver_mode in solver: unknown value TPU; expected one of CPU, GPU"},
		{"snapshot_diff", ok + "snapshot_diff: true", "s.prototxt:1:33: unsupported field 'snapshot_diff' in solver: dsgd's snapshots hold the weights"},
		{"unknown field says what to do", ok + "\nbase_rate: 1", "s.prototxt:2:1: unsupported field 'base_rate' in solver: not a field dsgd knows there (check its spelling and place against Caffe's caffe.proto)"},
		{"random seed", ok + "random_seed: 1.5", "s.prototxt:1:46: random_seed in solver: expected an integer, found float 1.5"},
		{"eval_type", ok + `eval_type: "segmentation"`, `s.prototxt:1:44: eval_type in solver: unknown evaluation type "segmentation"; SSD's solver knows "classification" and "detection"`},
		{"eval_type ident", ok + `eval_type: detection`, `s.prototxt:1:44: eval_type in solver: expected a quoted string`},
		{"ap_version", ok + `ap_version: "11-point"`, `s.prototxt:1:45: ap_version in solver: unknown ap_version "11-point"; SSD's solver knows "11point", "MaxIntegral" and "Integral"`},
		{"show_per_class_result", ok + `show_per_class_result: 1.5`, `s.prototxt:1:56: show_per_class_result in solver: expected true or false`},
		// Without base_lr the other ranges are checked all the same.
		{"no base_lr, momentum", `lr_policy: "fixed" momentum: 1`, "s.prototxt:1:30: momentum in solver: must be in [0, 1), got 1"},
		{"no policy, unknown type", `base_lr: 0.1 type: "sgd"`, `s.prototxt:1:20: type in solver: unknown solver type "sgd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSolver("s.prototxt", []byte(tt.src))
			if err == nil {
				t.Fatalf("ParseSolver succeeded, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", err, tt.want)
			}
			var pe *prototxt.Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *prototxt.Error", err)
			}
		})
	}
}

// TestSolverEvalType: SSD's eval_type, ap_version and
// show_per_class_result, with the fork's defaults (classification,
// Integral, false).
func TestSolverEvalType(t *testing.T) {
	const ok = `base_lr: 0.1 lr_policy: "fixed" `
	for _, tt := range []struct {
		src, eval, ap string
		perClass      bool
	}{
		{"", EvalClassification, "Integral", false},
		{`eval_type: "classification"`, EvalClassification, "Integral", false},
		// SSD's and MobileNet-SSD's published solvers.
		{`eval_type: "detection" ap_version: "11point"`, EvalDetection, "11point", false},
		{`eval_type: "detection" ap_version: "MaxIntegral" show_per_class_result: true`, EvalDetection, "MaxIntegral", true},
		{`ap_version: "Integral"`, EvalClassification, "Integral", false},
	} {
		s, err := ParseSolver("s.prototxt", []byte(ok+tt.src))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if s.EvalType != tt.eval || s.APVersion != tt.ap || s.ShowPerClassResult != tt.perClass {
			t.Errorf("%s: eval_type %q ap_version %q show_per_class_result %v, want %q %q %v", tt.src, s.EvalType, s.APVersion, s.ShowPerClassResult, tt.eval, tt.ap, tt.perClass)
		}
		if len(s.Warnings) > 0 {
			t.Errorf("%s: warnings %q", tt.src, s.Warnings)
		}
	}
}

// TestSolverCheckTrain checks that a solver without base_lr or lr_policy
// reads, as in Caffe, and that CheckTrain refuses it with the field and
// the file.
func TestSolverCheckTrain(t *testing.T) {
	const policies = "(one of fixed, step, multistep, exp, inv, poly, sigmoid)"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"both", `base_lr: 0.1 lr_policy: "fixed"`, ""},
		{"no base_lr", `lr_policy: "fixed"`, "s.prototxt:1:1: solver: base_lr is required"},
		{"no policy", `base_lr: 0.1`, "s.prototxt:1:1: solver: lr_policy is required " + policies},
		{"empty policy", `base_lr: 0.1 lr_policy: ""`, "s.prototxt:1:1: solver: lr_policy is required " + policies},
		{"neither", `max_iter: 10`, "s.prototxt:1:1: solver: base_lr is required"},
		{"empty file", ``, "s.prototxt:1:1: solver: base_lr is required"},
		{"no base_lr, policy checked", `lr_policy: "step" gamma: 0.1 stepsize: 10`, "s.prototxt:1:1: solver: base_lr is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSolver("s.prototxt", []byte(tt.src))
			if err != nil {
				t.Fatalf("ParseSolver: %v", err)
			}
			err = s.CheckTrain()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckTrain: %v", err)
			case tt.want == "":
			case err == nil || err.Error() != tt.want:
				t.Fatalf("CheckTrain: %v, want %q", err, tt.want)
			}
			if pe := (*prototxt.Error)(nil); err != nil && !errors.As(err, &pe) {
				t.Errorf("CheckTrain's error %T is not a *prototxt.Error", err)
			}
		})
	}
	// The policy's own needs are checked when the rate is missing.
	if _, err := ParseSolver("s.prototxt", []byte(`lr_policy: "step" gamma: 0.1`)); err == nil || !strings.Contains(err.Error(), `lr_policy "step" needs stepsize`) {
		t.Errorf("step without stepsize or base_lr: %v", err)
	}
	// SolverDef{} (a net read without a solver) never trains: nothing to say.
	if err := (&SolverDef{}).CheckTrain(); err != nil {
		t.Errorf("empty SolverDef: %v", err)
	}
}

// TestSolverCaffeDefaults: fields Caffe reads with the value it would
// take anyway (its default, the phase the solver sets) read without a
// word.
func TestSolverCaffeDefaults(t *testing.T) {
	const ok = `base_lr: 0.1 lr_policy: "fixed" net: "x" `
	for _, src := range []string{
		ok + "snapshot_diff: false",
		ok + "train_state { phase: TRAIN stage: 's' }",
		ok + "test_iter: 1 test_state { phase: TEST }",
	} {
		s, err := ParseSolver("s.prototxt", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if len(s.Warnings) > 0 {
			t.Errorf("%s: warnings %q", src, s.Warnings)
		}
	}
}

func TestSolverWarnings(t *testing.T) {
	src := `base_lr: 0.1 lr_policy: "fixed"
solver_mode: CPU
device_id: 0
debug_info: false
snapshot_format: HDF5
test_compute_loss: true
layer_wise_reduce: true`
	s, err := ParseSolver("s.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 3 {
		t.Fatalf("Warnings = %q", s.Warnings)
	}
	for i, w := range s.Warnings {
		if !strings.HasPrefix(w, "s.prototxt:") || !strings.Contains(w, ": ignoring ") {
			t.Errorf("warning %d = %q", i, w)
		}
	}
	if s.GPU {
		t.Error("solver_mode: CPU read as GPU")
	}
}

// TestSolverMode checks solver_mode and device_id as Caffe's tool reads
// them: only a solver_mode: GPU written in the file asks for a GPU.
func TestSolverMode(t *testing.T) {
	const base = `base_lr: 0.1 lr_policy: "fixed"` + "\n"
	tests := []struct {
		src    string
		gpu    bool
		device int
		at     string
	}{
		{"", false, 0, ""},
		{"solver_mode: CPU", false, 0, ""},
		{"solver_mode: GPU", true, 0, "s.prototxt:2:1"},
		{"device_id: 3\nsolver_mode: GPU", true, 3, "s.prototxt:3:1"},
		{"device_id: 3", false, 3, ""},
	}
	for _, tt := range tests {
		s, err := ParseSolver("s.prototxt", []byte(base+tt.src))
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if s.GPU != tt.gpu || s.DeviceID != tt.device || s.GPUAt != tt.at || len(s.Warnings) != 0 {
			t.Errorf("%q: GPU %v DeviceID %d GPUAt %q Warnings %q, want %v %d %q none", tt.src, s.GPU, s.DeviceID, s.GPUAt, s.Warnings, tt.gpu, tt.device, tt.at)
		}
	}
	if _, err := ParseSolver("s.prototxt", []byte(base+"device_id: -1")); err == nil || !strings.Contains(err.Error(), "s.prototxt:2:") {
		t.Errorf("device_id -1: err = %v, want one naming s.prototxt:2", err)
	}
}

func TestLoadSolverMissing(t *testing.T) {
	_, err := LoadSolver("testdata/nope.prototxt")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.prototxt") {
		t.Errorf("err = %v", err)
	}
}

// TestSolverNetBesideSolverNotedOnce: a generic net found beside the solver
// (SqueezeNet's `net: "train_val.prototxt"`, forresti/SqueezeNet's
// SqueezeNet_v1.0/solver.prototxt, run from another folder) is the train
// net and the test net, but the note about where it was found is given once.
func TestSolverNetBesideSolverNotedOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "train_val.prototxt"), []byte(`name: "n"`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := []struct {
		name, src string
		notes     int
	}{
		{"net and one test_iter", `net: "train_val.prototxt" test_iter: 2 base_lr: 1 lr_policy: "fixed"`, 1},
		{"net and two test_iter", `net: "train_val.prototxt" test_iter: 2 test_iter: 3 base_lr: 1 lr_policy: "fixed"`, 1},
		{"train_net and test_net", `train_net: "train_val.prototxt" test_net: "train_val.prototxt" test_iter: 1 base_lr: 1 lr_policy: "fixed"`, 2},
		{"in the working directory", `net: "m/train_val.prototxt" test_iter: 2 base_lr: 1 lr_policy: "fixed"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSolver("m/solver.prototxt", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Notes) != tt.notes {
				t.Errorf("%d notes, want %d: %q", len(s.Notes), tt.notes, s.Notes)
			}
			if s.Net != filepath.Join("m", "train_val.prototxt") {
				t.Errorf("net %q", s.Net)
			}
		})
	}
}
