package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dsgd/simulator/sim"
	"dsgd/training/job"
)

// recorder is a Reporter that notes the events it hears, in order.
type recorder struct {
	Quiet
	events []string
}

func (r *recorder) Start(m sim.Model, nw sim.Network) { r.events = append(r.events, "start") }
func (r *recorder) Baseline(time.Duration)            { r.events = append(r.events, "baseline") }
func (r *recorder) Run(run Run) {
	r.events = append(r.events, fmt.Sprintf("run %s %d", run.Scheme, run.Workers))
}
func (r *recorder) MeasuringLockstep(int) { r.events = append(r.events, "lockstep") }

// uniform is a small study of a uniform model that Sweep runs in
// milliseconds.
func uniform() Config {
	return Config{Schemes: []string{"sync-tree", "sync-ps"}, Workers: []int{1, 2, 4},
		Uniform: true, Params: 100_000, Layers: 2, ComputeMS: 5, Iters: 3, Seed: 1,
		Pack: true, BucketKiB: -1, Interval: 1, OuterInterval: 100, Staleness: 3, Variant: 3, Compress: "none"}
}

// TestSweepReports: a sweep reports its model, T1 and every (scheme, P)
// in order, and each run's weak scaling is P*T1/T(P) and T1/T(P).
func TestSweepReports(t *testing.T) {
	var r recorder
	res, err := Sweep(context.Background(), uniform(), &r)
	if err != nil {
		t.Fatal(err)
	}
	want := "start,baseline,run sync-tree 1,run sync-tree 2,run sync-tree 4,run sync-ps 1,run sync-ps 2,run sync-ps 4"
	if got := strings.Join(r.events, ","); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	if len(res.Runs) != 6 || res.T1 <= 0 || res.Model.Params() != 100_000 || res.Network.Name != "10gbe" {
		t.Fatalf("result %+v", res)
	}
	for _, run := range res.Runs {
		eff := float64(res.T1) / float64(run.Result.Iter)
		if math.Abs(run.Efficiency-eff) > 1e-9 || math.Abs(run.Speedup-float64(run.Workers)*eff) > 1e-9 {
			t.Errorf("%s P=%d: speedup %g, efficiency %g; want %g and %g", run.Scheme, run.Workers, run.Speedup, run.Efficiency, float64(run.Workers)*eff, eff)
		}
	}
}

// TestSweepRefusesByField: a Config the study cannot run is refused by a
// *ConfigError naming the field, before anything is measured or reported
// (the compression and the cores after the model and network are).
func TestSweepRefusesByField(t *testing.T) {
	for _, tc := range []struct {
		edit    func(*Config)
		want    string
		started bool
	}{
		{func(c *Config) { c.Iters = 0 }, "Config.Iters", false},
		{func(c *Config) { c.Interval = 0 }, "Config.Interval", false},
		{func(c *Config) { c.Alpha = 1 }, "Config.Alpha", false},
		{func(c *Config) { c.Params = 0 }, "Config.Params", false},
		{func(c *Config) { c.Layers = 200_000 }, "Config.Layers", false},
		{func(c *Config) { c.Schemes = []string{"seq"} }, "Config.Schemes seq with Config.Workers 2", false},
		{func(c *Config) { c.Compress = "fp16" }, "Config.Compress", true},
		{func(c *Config) { c.CompressWarmup = -1 }, "Config.CompressWarmup", true},
		{func(c *Config) { c.Cores = -1 }, "Config.Cores", true},
	} {
		c := uniform()
		tc.edit(&c)
		var r recorder
		_, err := Sweep(context.Background(), c, &r)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want a ConfigError naming it", tc.want, err)
		}
		if started := len(r.events) > 0; started != tc.started {
			t.Errorf("%s: events %v before the refusal", tc.want, r.events)
		}
	}
}

// TestValidateTrainsRoundTheSchemes: Validate trains the schemes in
// turn, Repeat times round, and returns the Trainer's error as it is,
// before it measures anything.
func TestValidateTrainsRoundTheSchemes(t *testing.T) {
	c := uniform()
	c.Workers, c.Repeat = []int{2}, 2
	var calls []string
	boom := errors.New("boom")
	train := func(_ context.Context, name string, run int) (Measured, error) {
		calls = append(calls, fmt.Sprintf("%s %d", name, run))
		if len(calls) == 3 {
			return Measured{}, boom
		}
		return Measured{Iter: time.Millisecond}, nil
	}
	var r recorder
	if _, err := Validate(context.Background(), c, train, &r); err != boom {
		t.Fatalf("err %v, want the trainer's", err)
	}
	if got := strings.Join(calls, ","); got != "sync-tree 0,sync-ps 0,sync-tree 1" {
		t.Errorf("trained %s", got)
	}
	if len(r.events) != 0 {
		t.Errorf("events %v before the real runs were done", r.events)
	}
	c.Repeat = 0
	var ce *ConfigError
	if _, err := Validate(context.Background(), c, train, &r); !errors.As(err, &ce) || !strings.Contains(err.Error(), "Config.Repeat") {
		t.Errorf("Repeat 0: err %v", err)
	}
}

// TestMeasureNeedsRate: a solver without base_lr, which Caffe and dsgd
// read, is refused by the measurement of the run it would train, with the
// solver file and the field (not the solver package's words).
func TestMeasureNeedsRate(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"net.prototxt": `name: "r"
layer { name: "d" type: "Data" top: "data" top: "label" data_param { source: "synthetic:N=16,C=1,H=2,W=2,classes=2" batch_size: 4 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`,
		"solver.prototxt": `net: "` + filepath.Join(dir, "net.prototxt") + `" lr_policy: "fixed" max_iter: 10`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := job.Options{Solver: filepath.Join(dir, "solver.prototxt"), Seed: 1}
	want := filepath.Join(dir, "solver.prototxt") + ":1:1: solver: base_lr is required"
	if _, err := measureModel(context.Background(), o, 1); err == nil || err.Error() != want {
		t.Errorf("measureModel: %v, want %q", err, want)
	}
	if _, err := measureModels(context.Background(), o, 1, 2); err == nil || err.Error() != want {
		t.Errorf("measureModels: %v, want %q", err, want)
	}
}
