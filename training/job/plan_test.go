package job

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanSums: LeNet's batch of 64 on 2 workers is cut into atoms that
// divide it, the passes per iteration follow, and what rules exact sums
// out (a scheme without seq's numbers, an elastic group, a compressor,
// an atom that does not divide the batch) is refused or noted, naming
// Config and Sums fields.
func TestPlanSums(t *testing.T) {
	j, err := Load(Options{Model: "lenet", Seed: -1, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	b, why := j.TrainBatch()
	if b != 64 || why != "" {
		t.Fatalf("TrainBatch %d %q, want 64 and no reason", b, why)
	}
	for _, tc := range []struct {
		scheme string
		sums   Sums
		exact  bool
		passes int
		note   string // in the note, or in the error when err
		err    bool
	}{
		{"sync-ring", Sums{Reduce: "auto", Compress: "none"}, true, 4, "(Config.Exact): 8 atoms of 16 images", false},
		{"sync-ring", Sums{Reduce: "exact", Atom: 32, Compress: "none"}, true, 2, "4 atoms of 32 images", false},
		{"sync-ring", Sums{Reduce: "fast", Compress: "none"}, false, 1, "Config.Exact false: float32", false},
		{"sync-ring", Sums{Reduce: "auto", Compress: "bf16"}, false, 1, "Config.Compress bf16 changes what travels", false},
		{"sync-ring", Sums{Reduce: "auto", Elastic: "2:4", Compress: "none"}, false, 1, "Config.Elastic: float32", false},
		{"sync-ring", Sums{Reduce: "exact", Atom: 3, Compress: "none"}, false, 1, "Sums.Atom 3 does not divide", true},
		{"sync-ring", Sums{Reduce: "exact", Elastic: "2:4", Compress: "none"}, false, 1, "Config.Exact with Config.Elastic 2:4", true},
		{"async", Sums{Reduce: "exact", Compress: "none"}, false, 1, "Config.Exact: async does not promise", true},
		{"sync-ring", Sums{Reduce: "other", Compress: "none"}, false, 1, `Sums.Reduce "other"`, true},
	} {
		cfg := j.Config()
		cfg.Name, cfg.Workers = tc.scheme, 2
		note, err := j.PlanSums(&cfg, tc.sums)
		got := note
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != tc.err || !strings.Contains(got, tc.note) {
			t.Errorf("%s %+v: note %q, error %v; want %q (error %v)", tc.scheme, tc.sums, note, err, tc.note, tc.err)
			continue
		}
		if !tc.err && (cfg.Exact != tc.exact || max(cfg.IterSize, 1) != tc.passes) {
			t.Errorf("%s %+v: Config.Exact %v, IterSize %d; want %v, %d", tc.scheme, tc.sums, cfg.Exact, cfg.IterSize, tc.exact, tc.passes)
		}
	}
}

// TestPlanCompress: a gradient compressor and its default warm-up (10%
// of the iterations) go into the Config; fp16, the wire's, does not.
func TestPlanCompress(t *testing.T) {
	j, err := Load(Options{Model: "lenet", Seed: -1, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := j.Config()
	cfg.MaxIter = 200
	if err := PlanCompress(&cfg, "powersgd:2", -1); err != nil || cfg.Compress.String() != "powersgd:2" || cfg.CompressWarmup != 20 {
		t.Errorf("powersgd:2: %v, Config.Compress %s after %d", err, cfg.Compress, cfg.CompressWarmup)
	}
	cfg = j.Config()
	if err := PlanCompress(&cfg, "fp16", -1); err != nil || cfg.Compress.Gradient() {
		t.Errorf("fp16: %v, Config.Compress %s", err, cfg.Compress)
	}
	for spec, want := range map[string]string{"bogus": "Config.Compress: ", "none 5": "Config.CompressWarmup 5 with Config.Compress none"} {
		s, w := spec, -1
		if spec == "none 5" {
			s, w = "none", 5
		}
		if err := PlanCompress(&cfg, s, w); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// TestPlan: the compressor and the sums are planned in turn, their
// refusals (and the compressor's clash with the scheme) are
// *RefusedError, and a snapshot that cannot be read is a plain error.
func TestPlan(t *testing.T) {
	j, err := Load(Options{Model: "lenet", Seed: -1, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := j.Config()
	cfg.Name, cfg.Workers = "sync-ring", 2
	note, err := j.Plan(&cfg, Sums{Reduce: "auto", Compress: "none"}, -1)
	if err != nil || !strings.Contains(note, "8 atoms of 16 images") || !cfg.Exact {
		t.Fatalf("sync-ring on 2: note %q, error %v, Exact %v", note, err, cfg.Exact)
	}
	for _, tc := range []struct {
		scheme, compress, reduce string
		want                     string
	}{
		{"sync-ring", "nonsense", "auto", "Config.Compress"},
		{"sync-ring", "none", "other", `Sums.Reduce "other"`},
		{"sync-ring", "bf16", "exact", "Config.Exact with Config.Compress bf16"},
		{"async", "powersgd:2", "fast", "Config.Compress"},
	} {
		cfg := j.Config()
		cfg.Name, cfg.Workers = tc.scheme, 2
		_, err := j.Plan(&cfg, Sums{Reduce: tc.reduce, Compress: tc.compress}, -1)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s --compress %s --reduce %s: got %v (%T), want a refusal naming %q", tc.scheme, tc.compress, tc.reduce, err, err, tc.want)
		}
	}
	cfg = j.Config()
	cfg.Resume = filepath.Join(t.TempDir(), "missing.dsgdsnap")
	_, err = j.Plan(&cfg, Sums{Reduce: "auto", Compress: "none"}, -1)
	var refused *RefusedError
	if err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), "Config.Resume") {
		t.Errorf("a missing snapshot: got %v (%T), want a plain error naming Config.Resume", err, err)
	}
}
