package caffedef

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"dsgd/caffe/prototxt"
	"dsgd/engine/solver"
)

// SolverDef is a parsed Caffe SolverParameter: the update rule as a
// solver.Config plus the run's schedule.
type SolverDef struct {
	// Solver is the update rule and learning-rate policy, Caffe's defaults
	// applied.
	Solver solver.Config
	// Net is the train net's file (net or train_net), resolved as Caffe
	// does: relative to the working directory, or, when it is not there,
	// beside the solver (with a note); empty when the net is inline or
	// absent.
	Net string
	// TrainNet is where the train net comes from: net, net_param,
	// train_net or train_net_param; its Field is "" when the solver names
	// none (the command line then must).
	TrainNet NetSource
	// TrainState is train_state: the stages and level the train net's
	// layers are selected with, beside the TRAIN phase.
	TrainState NetState
	// TestNets are the test nets in Caffe's order: test_net_param, then
	// test_net, then one instance of the generic net (net or net_param)
	// for each remaining test_iter; each with its test_iter and
	// test_state.
	TestNets []TestNet
	// TestIter is test_iter of the first test net (0 when there is none).
	TestIter int
	// IterSize is iter_size: forward/backward passes whose gradients are
	// averaged into each update (default 1).
	IterSize int
	// SnapshotAfterTrain is snapshot_after_train: write a snapshot when
	// training ends (default true).
	SnapshotAfterTrain bool
	// Notes say what dsgd did that Caffe would not (a net found beside the
	// solver), for the user to see.
	Notes []string
	// TestInterval is test_interval: iterations between test passes; 0
	// means never.
	TestInterval int
	// TestInitialization is test_initialization: test before the first
	// iteration (default true).
	TestInitialization bool
	// Display is display: iterations between progress reports; 0 means
	// never.
	Display int
	// AverageLoss is average_loss: the number of iterations whose loss the
	// progress report averages (default 1).
	AverageLoss int
	// MaxIter is max_iter, the number of training iterations.
	MaxIter int
	// Snapshot is snapshot: iterations between snapshots; 0 means never.
	Snapshot int
	// SnapshotPrefix is snapshot_prefix.
	SnapshotPrefix string
	// SnapshotFormat is "BINARYPROTO" when the solver asks for Caffe's
	// .caffemodel and .solverstate snapshots, "HDF5" for Caffe's HDF5
	// ones (.caffemodel.h5 and .solverstate.h5), else "" (dsgd's own).
	SnapshotFormat string
	// GPU is set by solver_mode: GPU, the way Caffe's tool reads it: the
	// solver asks to train on GPU DeviceID (device_id, default 0) when the
	// command line names no GPU. Caffe's own default mode (GPU) does not
	// count: only a solver_mode written in the file does. GPUAt is where
	// it was written, for the messages about it.
	GPU      bool
	DeviceID int
	GPUAt    string
	// RandomSeed is random_seed; negative (-1 when absent) means not set.
	RandomSeed int64
	// Weights is weights (Caffe 1.0): .caffemodel files, each possibly a
	// comma-separated list, to start from, as train's --weights (which
	// overrides it, as caffe train's flag does).
	Weights []string
	// EvalType is SSD's eval_type (weiliu89/caffe, branch ssd): how a test
	// pass reads its test nets' outputs. EvalClassification (the default)
	// averages them; EvalDetection reads them as DetectionEvaluate rows
	// and reports each output's mean average precision.
	EvalType string
	// APVersion is SSD's ap_version, how EvalDetection integrates each
	// class's precision-recall curve: "11point", "MaxIntegral" or
	// "Integral" (the default).
	APVersion string
	// ShowPerClassResult is SSD's show_per_class_result: EvalDetection
	// also reports each class's AP.
	ShowPerClassResult bool
	// Warnings lists the harmless fields that were ignored, each with its
	// position and the reason.
	Warnings []string
	// trainErr is why the solver cannot train (CheckTrain); nil when it can.
	trainErr *prototxt.Error
}

// The evaluation types of SSD's eval_type.
const (
	// EvalClassification averages each test net output over the test
	// iterations (Caffe's Test).
	EvalClassification = "classification"
	// EvalDetection reads the test net's outputs as DetectionEvaluate rows
	// and reports their mean average precision (the fork's
	// TestDetection).
	EvalDetection = "detection"
)

// CheckTrain says why the solver cannot train, nil when it can: a solver
// without base_lr or lr_policy (or with an empty lr_policy). Caffe reads
// such a solver (its own SolverTest and SolverFactoryTest use one) and
// fails only when it first computes the learning rate, so dsgd reads it
// too (dsgd test, time and upgrade need only its nets) and a training run
// refuses it here, before it opens any data. The error is a
// *prototxt.Error at the start of the solver file, naming the missing
// field.
func (s *SolverDef) CheckTrain() error {
	if s.trainErr == nil {
		return nil
	}
	return s.trainErr
}

// LoadSolver reads and parses the solver prototxt at path.
func LoadSolver(path string) (*SolverDef, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: reading solver: %w", err)
	}
	return ParseSolver(path, src)
}

// solverTypes maps the legacy solver_type enum to the type names, in
// solver_type's order.
func solverTypes() (enum, names []string) {
	return []string{"SGD", "NESTEROV", "ADAGRAD", "RMSPROP", "ADADELTA", "ADAM"},
		[]string{"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}
}

// lrPolicies lists the learning-rate policies dsgd supports.
func lrPolicies() []string {
	return []string{"fixed", "step", "multistep", "exp", "inv", "poly", "sigmoid"}
}

// ParseSolver parses src, a Caffe SolverParameter in text format read from
// the file filename. It applies Caffe's defaults, rejects every field dsgd
// does not support (a few harmless ones are ignored with a warning) and
// checks that the learning-rate policy has the settings it needs. A
// solver without base_lr or lr_policy is read, as Caffe reads it; only
// training refuses it (CheckTrain). Errors with a position are
// *prototxt.Error.
func ParseSolver(filename string, src []byte) (*SolverDef, error) {
	msg, err := prototxt.Parse(filename, src)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	r := d.reader(msg, "solver")
	s := &SolverDef{
		TestInterval:       r.int("test_interval", 0, 0, maxI32),
		TestInitialization: r.bool("test_initialization", true),
		Display:            r.int("display", 0, 0, maxI32),
		AverageLoss:        r.int("average_loss", 1, 1, maxI32),
		MaxIter:            r.int("max_iter", 0, 0, maxI32),
		Snapshot:           r.int("snapshot", 0, 0, maxI32),
		SnapshotPrefix:     r.str("snapshot_prefix", ""),
		RandomSeed:         -1,
		IterSize:           r.int("iter_size", 1, 1, maxI32),
		SnapshotAfterTrain: r.bool("snapshot_after_train", true),
	}
	decodeNets(d, r, filename, s)
	if f := r.one("random_seed"); f != nil {
		s.RandomSeed = r.intValue(f, math.MinInt64, math.MaxInt64)
	}

	c := &s.Solver
	c.MaxIter = s.MaxIter
	c.BaseLR = r.float64("base_lr", 0)
	c.Momentum = r.float64("momentum", 0)
	c.Momentum2 = r.float64("momentum2", 0.999)
	c.Delta = r.float64("delta", 1e-8)
	c.RMSDecay = r.float64("rms_decay", 0.99)
	c.WeightDecay = r.float64("weight_decay", 0)
	c.Regularization = r.str("regularization_type", "L2")
	c.ClipGradients = r.float64("clip_gradients", -1)
	c.LRPolicy = r.str("lr_policy", "")
	c.Gamma = r.float64("gamma", 0)
	c.Power = r.float64("power", 0)
	c.StepSize = r.int("stepsize", 0, 0, maxI32)
	c.StepValues = r.ints("stepvalue", 0, maxI32)
	c.Type = solverType(r)

	if f := r.one("solver_mode"); f != nil && r.enumValue(f, "CPU", "GPU") == 1 {
		s.GPU, s.GPUAt = true, f.Pos.String()
	}
	s.DeviceID = r.int("device_id", 0, 0, maxI32)
	if f := r.one("snapshot_format"); f != nil {
		if i := r.enumValue(f, "HDF5", "BINARYPROTO"); i == 0 {
			s.SnapshotFormat = "HDF5"
		} else if i == 1 {
			s.SnapshotFormat = "BINARYPROTO"
		}
	}
	r.ignore("debug_info", "dsgd does not print per-layer debug information")
	s.Weights = r.strs("weights")
	r.ignore("layer_wise_reduce", "it only orders Caffe's multi-GPU NCCL reduction; dsgd's --scheme chooses how workers exchange gradients")
	// snapshot_diff: false is Caffe's default, written out.
	if f := r.one("snapshot_diff"); f != nil && r.boolValue(f) {
		r.d.failf(f.Pos, "unsupported field 'snapshot_diff' in solver: dsgd's snapshots hold the weights and the solver's history, not gradients; remove it")
	}
	// Caffe's mnist_autoencoder solvers set it to print the test loss;
	// dsgd's test pass prints every scalar output of the test net anyway.
	r.ignore("test_compute_loss", "dsgd's test pass reports every output of the test net, its losses among them")
	s.EvalType = EvalClassification
	if f := r.one("eval_type"); f != nil {
		s.EvalType = r.strValue(f)
		if s.EvalType != EvalClassification && s.EvalType != EvalDetection && r.ok() {
			r.valueErr(f, "unknown evaluation type %q; SSD's solver knows %q and %q", s.EvalType, EvalClassification, EvalDetection)
		}
	}
	s.APVersion = "Integral"
	if f := r.one("ap_version"); f != nil {
		s.APVersion = r.strValue(f)
		if !slices.Contains([]string{"11point", "MaxIntegral", "Integral"}, s.APVersion) && r.ok() {
			r.valueErr(f, "unknown ap_version %q; SSD's solver knows \"11point\", \"MaxIntegral\" and \"Integral\"", s.APVersion)
		}
	}
	s.ShowPerClassResult = r.bool("show_per_class_result", false)
	r.finish()
	if d.err == nil {
		validateSolver(d, r, s)
	}
	if d.err != nil {
		return nil, d.err
	}
	s.Warnings = d.sortedWarnings()
	return s, nil
}

// solverType decodes type, or the legacy solver_type enum.
func solverType(r *reader) string {
	enum, names := solverTypes()
	tf, sf := r.one("type"), r.one("solver_type")
	t := "SGD"
	switch {
	case tf != nil && sf != nil:
		r.d.failf(sf.Pos, "solver gives both type and the legacy solver_type; give type only")
		return t
	case tf != nil:
		t = r.strValue(tf)
		if !slices.Contains(names, t) && r.ok() {
			r.valueErr(tf, "unknown solver type %q; expected one of SGD, Nesterov, AdaGrad, RMSProp, AdaDelta, Adam", t)
		}
	case sf != nil:
		if i := r.enumValue(sf, enum...); i >= 0 {
			t = names[i]
		}
	}
	return t
}

// validateSolver checks ranges and that the learning-rate policy has the
// settings it needs, reporting the offending field's position (or the
// file's, for a missing field), and keeps for CheckTrain a missing
// base_lr or lr_policy.
func validateSolver(d *decoder, r *reader, s *SolverDef) {
	c := &s.Solver
	file := r.m.Pos
	at := func(name string) prototxt.Pos {
		if fs := r.m.Get(name); len(fs) > 0 {
			return fs[0].ValuePos
		}
		return file
	}
	// need points at lr_policy, the field that asks for the missing one.
	need := func(name, why string) {
		if !r.has(name) {
			d.failf(at("lr_policy"), "solver: %s needs %s", why, name)
		}
	}
	// Caffe reads a solver without base_lr or lr_policy and needs them
	// only to train: CheckTrain refuses it then. A base_lr written out is
	// checked here, as every other range.
	switch {
	case r.has("base_lr") && c.BaseLR <= 0:
		d.failf(at("base_lr"), "base_lr in solver: must be > 0, got %g", c.BaseLR)
	case c.Momentum < 0 || c.Momentum >= 1:
		d.failf(at("momentum"), "momentum in solver: must be in [0, 1), got %g", c.Momentum)
	case c.Momentum2 < 0 || c.Momentum2 >= 1:
		d.failf(at("momentum2"), "momentum2 in solver: must be in [0, 1), got %g", c.Momentum2)
	case c.RMSDecay < 0 || c.RMSDecay >= 1:
		d.failf(at("rms_decay"), "rms_decay in solver: must be in [0, 1), got %g", c.RMSDecay)
	case c.Delta <= 0:
		d.failf(at("delta"), "delta in solver: must be > 0, got %g", c.Delta)
	case c.Momentum != 0 && (c.Type == "AdaGrad" || c.Type == "RMSProp"):
		d.failf(at("momentum"), "momentum in solver: type %q takes no momentum (got %g), as in Caffe", c.Type, c.Momentum)
	case c.Gamma < 0:
		d.failf(at("gamma"), "gamma in solver: must be >= 0, got %g", c.Gamma)
	case c.Power < 0:
		d.failf(at("power"), "power in solver: must be >= 0, got %g", c.Power)
	case c.WeightDecay < 0:
		d.failf(at("weight_decay"), "weight_decay in solver: must be >= 0, got %g", c.WeightDecay)
	case c.Regularization != "L2" && c.Regularization != "L1":
		d.failf(at("regularization_type"), "regularization_type in solver: unknown value %q; expected \"L2\" or \"L1\"", c.Regularization)
	case c.LRPolicy != "" && !slices.Contains(lrPolicies(), c.LRPolicy):
		d.failf(at("lr_policy"), "lr_policy in solver: unknown policy %q; expected one of %s",
			c.LRPolicy, strings.Join(lrPolicies(), ", "))
	}
	if d.err != nil {
		return
	}
	if c.Type == "AdaDelta" && !r.has("momentum") {
		// Caffe's default momentum is 0, and Caffe runs AdaDelta with it:
		// the running averages then hold only the last iteration.
		pos := at("type")
		if !r.has("type") {
			pos = at("solver_type")
		}
		d.warnings = append(d.warnings, warning{pos, fmt.Sprintf("%s: solver type \"AdaDelta\" without momentum: its decay rate is Caffe's default 0, so its running averages keep only the last iteration (AdaDelta's paper uses 0.95)", pos)})
	}
	policy := fmt.Sprintf("lr_policy %q", c.LRPolicy)
	switch c.LRPolicy {
	case "step":
		need("stepsize", policy)
		need("gamma", policy)
		if d.err == nil && c.StepSize == 0 {
			d.failf(at("stepsize"), "stepsize in solver: must be > 0 for %s", policy)
		}
	case "multistep":
		// Caffe trains on with base_lr when there is no stepvalue.
		if r.has("stepvalue") {
			need("gamma", policy)
		}
		if fs := r.m.Get("stepvalue"); d.err == nil {
			for i := 1; i < len(c.StepValues); i++ {
				if c.StepValues[i] <= c.StepValues[i-1] {
					d.failf(fs[i].ValuePos, "stepvalue in solver: must increase, but %d follows %d",
						c.StepValues[i], c.StepValues[i-1])
					break
				}
			}
		}
	case "exp":
		need("gamma", policy)
	case "inv":
		need("gamma", policy)
		need("power", policy)
	case "poly":
		need("power", policy)
		need("max_iter", policy)
		if d.err == nil && c.MaxIter == 0 {
			d.failf(at("max_iter"), "max_iter in solver: must be > 0 for %s", policy)
		}
	case "sigmoid":
		need("gamma", policy)
		need("stepsize", policy)
	}
	if d.err != nil {
		return
	}
	// A backstop: what the solver itself would reject. The checks above
	// should catch all of it, with positions. What CheckTrain refuses
	// stands in as a fixed rate of 1 here.
	check := *c
	switch {
	case !r.has("base_lr"):
		s.trainErr = &prototxt.Error{Pos: file, Msg: "solver: base_lr is required"}
		check.BaseLR = 1
	case c.LRPolicy == "":
		s.trainErr = &prototxt.Error{Pos: file, Msg: fmt.Sprintf("solver: lr_policy is required (one of %s)", strings.Join(lrPolicies(), ", "))}
	}
	if check.LRPolicy == "" {
		check.LRPolicy = "fixed"
	}
	if err := check.Validate(); err != nil {
		d.failf(file, "%v", err)
	}
}
