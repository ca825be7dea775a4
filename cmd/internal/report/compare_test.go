package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/training/metrics"
	"dsgd/training/train"
)

// TestComparisonRun: the schemes run round after round, seq with one
// worker, a run's error is its own, each run's output goes to its log,
// and a Prepare error or a bad log folder ends the comparison.
func TestComparisonRun(t *testing.T) {
	dir := t.TempDir()
	var order []string
	c := Comparison{Schemes: []string{"seq", "sync-ring"}, Workers: 4, Repeats: 2, LogDir: dir,
		Prepare: func(name string, workers int) (Trainer, error) {
			return func(_ context.Context, out io.Writer) (*train.Result, error) {
				order = append(order, fmt.Sprintf("%s/%d", name, workers))
				fmt.Fprintln(out, "trained", name)
				if name == "sync-ring" {
					return nil, errors.New("boom")
				}
				return &train.Result{Iters: 3, Phases: metrics.NewPhases(train.PhaseNames...)}, nil
			}, nil
		}}
	var b strings.Builder
	runs, err := c.Run(t.Context(), &b)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "seq/1 sync-ring/4 seq/1 sync-ring/4" {
		t.Errorf("order %s", got)
	}
	if len(runs) != 4 || runs[0].Iters != 3 || runs[1].Err == nil || runs[1].Workers != 4 {
		t.Errorf("runs %+v", runs)
	}
	if out := b.String(); !strings.Contains(out, "  [2/2]  sync-ring      failed after") || !strings.Contains(out, "at the end\n") {
		t.Errorf("output:\n%s", out)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "seq.2.log")); err != nil || string(log) != "trained seq\n" {
		t.Errorf("log %q, %v", log, err)
	}
	c.Prepare = func(string, int) (Trainer, error) { return nil, errors.New("bad flags") }
	if _, err := c.Run(t.Context(), io.Discard); err == nil || err.Error() != "bad flags" {
		t.Errorf("Prepare's error: %v", err)
	}
	c.LogDir = filepath.Join(dir, "seq.2.log", "sub")
	if _, err := c.Run(t.Context(), io.Discard); err == nil || !strings.HasPrefix(err.Error(), "Comparison.LogDir: ") {
		t.Errorf("log folder's error: %v", err)
	}
}
