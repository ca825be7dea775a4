package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// Comparison is a run of dsgd compare: every scheme trained on the same
// model, data and seed for the same time budget, Repeats times round the
// schemes (so that a busy spell of the machine lands on several schemes'
// runs rather than all of one).
type Comparison struct {
	Schemes []string      // in order; the first is the table's speedup baseline
	Workers int           // each run's workers (1 for a scheme of one worker)
	Budget  time.Duration // each run's training time
	Target  float64       // the test accuracy whose time to reach the table reports
	Repeats int           // runs per scheme, at least 1
	// LogDir, when set, receives each run's training output as
	// SCHEME.log (SCHEME.N.log with Repeats > 1); else it is discarded.
	LogDir string
	// Prepare readies one scheme's run with the workers it has; an error
	// ends the comparison. The trainer it returns runs it, its output
	// to out; the trainer's error is the run's (Run.Err), not the
	// comparison's.
	Prepare func(scheme string, workers int) (Trainer, error)
}

// A Trainer trains one scheme of a Comparison, its output to out, and
// returns what the run measured (nil where it measured nothing).
type Trainer func(ctx context.Context, out io.Writer) (*train.Result, error)

// Header writes the comparison's first lines to w: what it runs and the
// machine's load average at the start.
func (c Comparison) Header(w io.Writer) {
	fmt.Fprintf(w, "dsgd compare: %d schemes, %d workers (seq: 1), %v of training each, %d run(s) each, target accuracy %.2f%%\n", len(c.Schemes), c.Workers, c.Budget, c.Repeats, 100*c.Target)
	fmt.Fprintf(w, "  machine: load average %s at the start, on %d CPUs (other work on the machine slows every scheme it overlaps)\n", loadAverage(), runtime.NumCPU())
}

// Run trains every scheme c.Repeats times, interleaved, writing a line
// per run to w (and the load average at the end), and returns the runs
// in the order they ran. It stops at the first error of Prepare, of a
// log file (naming Comparison.LogDir), or of ctx.
func (c Comparison) Run(ctx context.Context, w io.Writer) ([]Run, error) {
	var runs []Run
	for rep := range c.Repeats {
		for _, name := range c.Schemes {
			logName := name
			if c.Repeats > 1 {
				fmt.Fprintf(w, "  [%d/%d]", rep+1, c.Repeats)
				logName = fmt.Sprintf("%s.%d", name, rep+1)
			}
			run, err := c.one(ctx, name, logName, w)
			if err != nil {
				return nil, err
			}
			runs = append(runs, run)
		}
	}
	fmt.Fprintf(w, "  machine: load average %s at the end\n", loadAverage())
	return runs, nil
}

// one trains one scheme, its output to LogDir/logName.log when LogDir is
// set.
func (c Comparison) one(ctx context.Context, name, logName string, w io.Writer) (Run, error) {
	workers := c.Workers
	if in, _ := scheme.Lookup(name); in.MaxWorkers == 1 {
		workers = 1
	}
	run := Run{Scheme: name, Workers: workers}
	out, closeOut, err := openLog(c.LogDir, logName)
	if err != nil {
		return Run{}, err
	}
	trainer, err := c.Prepare(name, workers)
	if err != nil {
		closeOut()
		return Run{}, err
	}
	fmt.Fprintf(w, "  %-14s ", name)
	t0 := time.Now()
	res, runErr := trainer(ctx, out)
	closeOut()
	if ctx.Err() != nil {
		return Run{}, ctx.Err()
	}
	run.Err = runErr
	if res != nil {
		run.Fill(res)
	}
	if run.Err != nil {
		fmt.Fprintf(w, "failed after %v: %v\n", time.Since(t0).Round(time.Second), run.Err)
	} else {
		fmt.Fprintf(w, "%d iterations, final accuracy %.4f\n", run.Iters, run.FinalAccuracy())
	}
	return run, nil
}

// openLog opens where a scheme's training output goes: dir/name.log, or
// nowhere without a dir.
func openLog(dir, name string) (io.Writer, func(), error) {
	if dir == "" {
		return io.Discard, func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("Comparison.LogDir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, nil, fmt.Errorf("Comparison.LogDir: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// loadAverage is the machine's one-minute load average, as /proc/loadavg
// says, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
