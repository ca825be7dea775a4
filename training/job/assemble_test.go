package job

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRunOptionsCheck: each value out of range is refused naming its
// field, and the defaults pass.
func TestRunOptionsCheck(t *testing.T) {
	if err := DefaultRunOptions().Check(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		set  func(*RunOptions)
		want string
	}{
		{func(o *RunOptions) { o.Iters = -1 }, "RunOptions.Iters must not be negative"},
		{func(o *RunOptions) { o.TestInterval = -2 }, "RunOptions.TestInterval must not be negative, got -2"},
		{func(o *RunOptions) { o.Bucket = -2 }, "RunOptions.Bucket must not be negative, got -2"},
		{func(o *RunOptions) { o.Interval = 0 }, "RunOptions.Interval must be at least 1"},
		{func(o *RunOptions) { o.CommTimeout = 0 }, "RunOptions.CommTimeout must be positive"},
		{func(o *RunOptions) { o.Variant = 4 }, "RunOptions.Variant must be 1, 2 or 3"},
		{func(o *RunOptions) { o.Scheme = "nosuch" }, `RunOptions.Scheme "nosuch": unknown`},
		{func(o *RunOptions) { o.Allreduce = "fastest" }, "RunOptions.Allreduce"},
		{func(o *RunOptions) { o.SnapshotFormat = "zip" }, `RunOptions.SnapshotFormat "zip": want dsgd, caffe or hdf5`},
		{func(o *RunOptions) { o.Straggle = "x" }, "RunOptions.Straggle"},
		{func(o *RunOptions) { o.Store = "redis://h:1" }, "RunOptions.Store: seq moves its gradients"},
		{func(o *RunOptions) { o.ElasticCoordinator = "h:1" }, "RunOptions.ElasticCoordinator without RunOptions.Elastic"},
		{func(o *RunOptions) { o.Elastic, o.Scheme = "2:4", "async" }, "RunOptions.Elastic with RunOptions.Scheme async"},
		{func(o *RunOptions) { o.Elastic, o.Workers = "2:4", 5 }, "RunOptions.Workers 5 outside RunOptions.Elastic 2:4"},
	} {
		o := DefaultRunOptions()
		tc.set(&o)
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// TestTrain: a run assembled from a plain value, as a test writes it,
// trains, prints its header and summary, and returns its result; a bad
// value is a refusal.
func TestTrain(t *testing.T) {
	o := DefaultRunOptions()
	o.Model = Options{Model: "lenet", Data: "synthetic:N=64,C=1,H=28,W=28,classes=10", Seed: 1, Shuffle: true, Batch: 8}
	o.Threads, o.Iters, o.TestIter, o.SnapshotPrefix, o.Display = 1, 3, 1, "none", 0
	var out, errw bytes.Buffer
	res, err := Train(context.Background(), o, RunDeps{Stdout: &out, Stderr: &errw})
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errw.String())
	}
	if res == nil || res.Iters != 3 {
		t.Fatalf("result %+v, want 3 iterations", res)
	}
	for _, want := range []string{"dsgd: net ", "dsgd: scheme seq, 1 worker(s) over inproc", "done: 3 iterations"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	o.CommTimeout = -time.Second
	_, err = Train(context.Background(), o, RunDeps{Stdout: &out, Stderr: &errw})
	if re, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(re.Error(), "RunOptions.CommTimeout") {
		t.Errorf("a negative CommTimeout: %v, want a refusal naming it", err)
	}
}
