package metrics

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// IterMetrics is one record of the --metrics file: what one worker did
// in one iteration. Times are milliseconds.
type IterMetrics struct {
	// Kind is "train".
	Kind string `json:"kind"`
	// Time is when the iteration ended, in UTC.
	Time time.Time `json:"time"`
	Rank int       `json:"rank"`
	// Iter is the iteration's index, from 0 (Caffe's "Iteration N" of
	// its display); Iter+1 iterations are done.
	Iter int `json:"iter"`
	// Epoch is Images over train.Config.TrainSetSize (omitted when that is
	// unknown, or Images is 0).
	Epoch float64 `json:"epoch,omitempty"`
	// Images counts the training images of the whole run, all workers
	// and any run resumed from: (Iter+1) times the global batch.
	Images int64 `json:"images"`
	// LR is the learning rate of the iteration's update.
	LR float64 `json:"lr"`
	// Loss is the worker's raw training loss (not smoothed).
	Loss      float64 `json:"loss"`
	DataMS    float64 `json:"data_ms"`
	ForwardMS float64 `json:"forward_ms"`
	BackMS    float64 `json:"backward_ms"`
	CommMS    float64 `json:"comm_exposed_ms"`
	CommBusy  float64 `json:"comm_busy_ms"`
	UpdateMS  float64 `json:"update_ms"`
	WaitMS    float64 `json:"wait_ms"`
	WallMS    float64 `json:"wall_ms"`
}

// TestResult is the mean of each scalar net output over a test pass.
type TestResult struct {
	Iter    int
	Outputs []NamedValue
	// Elapsed is the training time (tests excluded) when the test ran.
	Elapsed time.Duration
}

// NamedValue is one reported figure.
type NamedValue struct {
	Name  string
	Value float64
	// Net, in a TestResult, is the index of the test net the output
	// belongs to (0 the first); the Name of a later net's output is
	// "netK/NAME".
	Net int
}

// Output is the name of the output within its test net: Name without
// the "netK/" prefix of a later test net.
func (v NamedValue) Output() string {
	if v.Net > 0 {
		return strings.TrimPrefix(v.Name, fmt.Sprintf("net%d/", v.Net))
	}
	return v.Name
}

// Get returns the value named name and whether it exists.
func (r TestResult) Get(name string) (float64, bool) {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o.Value, true
		}
	}
	return 0, false
}

// String is the pass on one line: "iter N test:  NAME VALUE ...".
func (r TestResult) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "iter %d test:", r.Iter)
	for _, o := range r.Outputs {
		fmt.Fprintf(&b, "  %s %.4f", o.Name, o.Value)
	}
	return b.String()
}
