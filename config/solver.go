package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dsgd/prototxt"
	"dsgd/solver"
)

// SolverDef is a parsed Caffe SolverParameter: the update rule as a
// solver.Config plus the run's schedule.
type SolverDef struct {
	// Solver is the update rule and learning-rate policy, Caffe's defaults
	// applied.
	Solver solver.Config
	// Net is the net field, resolved relative to the solver file's
	// directory; empty when absent.
	Net string
	// TestIter is test_iter: test batches per test pass (0 when absent).
	TestIter int
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
	// .caffemodel and .solverstate snapshots, else "" (dsgd's own).
	SnapshotFormat string
	// RandomSeed is random_seed; negative (-1 when absent) means not set.
	RandomSeed int64
	// Warnings lists the harmless fields that were ignored, each with its
	// position and the reason.
	Warnings []string
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
// checks that the learning-rate policy has the settings it needs. Errors
// with a position are *prototxt.Error.
func ParseSolver(filename string, src []byte) (*SolverDef, error) {
	msg, err := prototxt.Parse(filename, src)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	r := d.reader(msg, "solver")
	s := &SolverDef{
		Net:                r.str("net", ""),
		TestInterval:       r.int("test_interval", 0, 0, maxI32),
		TestInitialization: r.bool("test_initialization", true),
		Display:            r.int("display", 0, 0, maxI32),
		AverageLoss:        r.int("average_loss", 1, 1, maxI32),
		MaxIter:            r.int("max_iter", 0, 0, maxI32),
		Snapshot:           r.int("snapshot", 0, 0, maxI32),
		SnapshotPrefix:     r.str("snapshot_prefix", ""),
		RandomSeed:         -1,
	}
	if s.Net != "" && !filepath.IsAbs(s.Net) {
		s.Net = filepath.Join(filepath.Dir(filename), s.Net)
	}
	if ti := r.all("test_iter"); len(ti) > 0 {
		s.TestIter = int(r.intValue(ti[0], 0, maxI32))
		if len(ti) > 1 && r.ok() {
			d.failf(ti[1].Pos, "unsupported field 'test_iter' in solver: more than one test net; give test_iter once")
		}
	}
	if f := r.one("random_seed"); f != nil {
		s.RandomSeed = r.intValue(f, math.MinInt64, math.MaxInt64)
	}
	if f := r.one("iter_size"); f != nil {
		if v := r.intValue(f, 1, maxI32); v != 1 && r.ok() {
			d.failf(f.Pos, "unsupported field 'iter_size' in solver: only iter_size 1 is supported, got %d; "+
				"raise the batch size instead", v)
		}
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

	r.ignore("solver_mode", "dsgd computes on the CPU", "CPU", "GPU")
	r.ignore("device_id", "dsgd computes on the CPU")
	if f := r.one("snapshot_format"); f != nil {
		if i := r.enumValue(f, "HDF5", "BINARYPROTO"); i == 0 {
			d.warnings = append(d.warnings, warning{f.Pos, fmt.Sprintf("%s: ignoring snapshot_format HDF5 in solver: dsgd writes its own format instead (BINARYPROTO writes Caffe's .caffemodel and .solverstate)", f.Pos)})
		} else if i == 1 {
			s.SnapshotFormat = "BINARYPROTO"
		}
	}
	r.ignore("snapshot_after_train", "dsgd snapshots at the snapshot interval and at the end")
	r.ignore("debug_info", "dsgd does not print per-layer debug information")
	const oneNet = "give one net with 'net' and select layers with include { phase: ... }"
	for _, name := range []string{"train_net", "test_net", "net_param", "train_net_param", "test_net_param", "train_state", "test_state"} {
		r.unsupported(name, oneNet)
	}
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
			r.valueErr(tf, "unknown solver type %q; expected one of SGD, Nesterov, AdaGrad, RMSProp, Adam", t)
		}
	case sf != nil:
		if i := r.enumValue(sf, enum...); i >= 0 {
			t = names[i]
		}
	}
	if t == "AdaDelta" && r.ok() {
		f := tf
		if f == nil {
			f = sf
		}
		r.d.failf(f.ValuePos, "unsupported solver type AdaDelta; dsgd supports SGD, Nesterov, AdaGrad, RMSProp, Adam")
	}
	return t
}

// validateSolver checks ranges and that the learning-rate policy has the
// settings it needs, reporting the offending field's position (or the
// file's, for a missing field).
func validateSolver(d *decoder, r *reader, s *SolverDef) {
	c := &s.Solver
	file := r.m.Pos
	at := func(name string) prototxt.Pos {
		if fs := r.m.Get(name); len(fs) > 0 {
			return fs[0].ValuePos
		}
		return file
	}
	need := func(name, why string) {
		if !r.has(name) {
			d.failf(file, "solver: %s needs %s", why, name)
		}
	}
	switch {
	case !r.has("base_lr"):
		d.failf(file, "solver: base_lr is required")
	case c.BaseLR <= 0:
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
	case c.LRPolicy == "":
		d.failf(file, "solver: lr_policy is required (one of %s)", strings.Join(lrPolicies(), ", "))
	case !slices.Contains(lrPolicies(), c.LRPolicy):
		d.failf(at("lr_policy"), "lr_policy in solver: unknown policy %q; expected one of %s",
			c.LRPolicy, strings.Join(lrPolicies(), ", "))
	}
	if d.err != nil {
		return
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
		need("stepvalue", policy)
		need("gamma", policy)
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
	if d.err == nil {
		// A backstop: what the solver itself would reject. The checks above
		// should catch all of it, with positions.
		check := *c
		if err := check.Validate(); err != nil {
			d.failf(file, "%v", err)
		}
	}
}
