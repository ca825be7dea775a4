package job

import (
	"errors"
	"io"
	"os"
	"testing"

	"dsgd/engine/model"
	"dsgd/training/train"
)

// TestConfigFromSolver: a built-in model's Config carries its solver's
// settings, and a solver's snapshot_format picks the snapshot format.
func TestConfigFromSolver(t *testing.T) {
	j, err := Load(Options{Model: "lenet", Seed: -1, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := j.Config()
	if cfg.MaxIter != j.Solver.MaxIter || cfg.TestIter != j.Solver.TestIter || cfg.Solver.BaseLR != j.Solver.Solver.BaseLR {
		t.Errorf("Config: max_iter %d, test_iter %d, base_lr %g; the solver says %d, %d, %g", cfg.MaxIter, cfg.TestIter, cfg.Solver.BaseLR, j.Solver.MaxIter, j.Solver.TestIter, j.Solver.Solver.BaseLR)
	}
	if cfg.SnapshotFormat != train.FormatDsgd || cfg.Seed != j.Seed || len(cfg.Train.Layers) == 0 || len(cfg.Test.Layers) == 0 {
		t.Errorf("Config: format %q, seed %d (job %d), %d TRAIN and %d TEST layers", cfg.SnapshotFormat, cfg.Seed, j.Seed, len(cfg.Train.Layers), len(cfg.Test.Layers))
	}
	for format, want := range map[string]string{"BINARYPROTO": train.FormatCaffe, "HDF5": train.FormatHDF5} {
		j.Solver.SnapshotFormat = format
		if got := j.Config().SnapshotFormat; got != want {
			t.Errorf("snapshot_format %s: Config.SnapshotFormat %q, want %q", format, got, want)
		}
	}
}

// TestPlace: outside an elastic group only rank 0 prints and tests, and
// only rank 0 (or the last rank, the server of a scheme whose server
// updates) snapshots.
func TestPlace(t *testing.T) {
	j, err := Load(Options{Model: "lenet", Seed: -1, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scheme      string
		rank, world int
		elastic     bool
		reports     bool
		prefix      string
	}{
		{"sync-ring", 0, 3, false, true, "snap"},
		{"sync-ring", 1, 3, false, false, ""},
		{"sync-ring", 1, 3, true, true, "snap"},
		{"sync-ps", 1, 3, false, false, ""},
		{"sync-ps", 2, 3, false, false, "snap"},
	} {
		cfg := j.Config()
		cfg.Name, cfg.Out, cfg.SnapshotPrefix = tc.scheme, os.Stdout, "snap"
		Place(&cfg, tc.rank, tc.world, tc.elastic)
		reports := cfg.Out != io.Discard && len(cfg.Test.Layers) > 0
		if cfg.Group == nil || cfg.Group.Rank != tc.rank || cfg.Group.Size != tc.world || reports != tc.reports || cfg.SnapshotPrefix != tc.prefix {
			t.Errorf("%s rank %d of %d (elastic %v): group %+v, prints and tests %v, snapshot prefix %q; want prints and tests %v, prefix %q",
				tc.scheme, tc.rank, tc.world, tc.elastic, cfg.Group, reports, cfg.SnapshotPrefix, tc.reports, tc.prefix)
		}
	}
}

// TestPlanTests: no test_iter, no testing; a run that tests a job whose
// TEST net failed is refused with why.
func TestPlanTests(t *testing.T) {
	j := &Job{}
	cfg := train.Config{TestIter: 0}
	cfg.Test.Layers = make([]model.LayerSpec, 1)
	if err := j.PlanTests(&cfg); err != nil || cfg.Test.Layers != nil {
		t.Errorf("test_iter 0: %v, %d test layers; want no error, none", err, len(cfg.Test.Layers))
	}
	j.TestErr = errors.New("no TEST phase")
	cfg.TestIter = 5
	if err := j.PlanTests(&cfg); err == nil || err.Error() != "Config.TestIter 5: no TEST phase" {
		t.Errorf("a failed TEST net: %v", err)
	}
}
