package job

import (
	"fmt"
	"os"
	"strings"
	"time"

	"dsgd/training/launch"
	"dsgd/training/metrics"
	"dsgd/training/timeline"
	"dsgd/training/train"
)

// Files names the files a run writes beside its output, "" for none:
// Metrics, the records (CSV when its name ends .csv, else JSON lines);
// Log, a training log shaped like Caffe's, which rank 0 writes; Timeline,
// a trace. In a multi-process run (Config.Group) each process writes its
// own Metrics and Timeline (launch.ProcessPath); Center marks a center's
// process (dsgd ps), which writes no Log.
type Files struct {
	Metrics, Log, Timeline string
	Center                 bool
}

// RunFiles are a run's open files: the zero value has none, Open opens
// them, Close closes them.
type RunFiles struct {
	// Metrics is the records file; nil without Files.Metrics.
	Metrics *metrics.RecordFile
	// MetricsPath is the path this process writes its records to.
	MetricsPath string
	closers     []func() error
}

// Open opens the files f names for cfg's process and gives them to cfg
// (Config.Metrics, MetricsFormat, MetricsNoHeader, CaffeLog, Timeline); a
// resumed run (Config.Resume) appends to its records and log, after any
// partial last line. On an error the files opened so far stay in o, for
// Close.
func (o *RunFiles) Open(cfg *train.Config, f Files) error {
	rank := 0
	path := func(p string) string { return p }
	if g := cfg.Group; g != nil {
		rank = g.Rank
		path = func(p string) string { return launch.ProcessPath(p, g.Rank, f.Center) }
	}
	appending := cfg.Resume != ""
	if f.Metrics != "" {
		p := path(f.Metrics)
		mf, err := metrics.OpenRecordFile("Files.Metrics", p, appending)
		if err != nil {
			return err
		}
		o.Metrics, o.MetricsPath = mf, p
		o.closers = append(o.closers, func() error {
			if err := mf.Close(); err != nil {
				return fmt.Errorf("Files.Metrics %s: %w", p, err)
			}
			return nil
		})
		cfg.Metrics = mf
		if metrics.IsCSV(f.Metrics) {
			cfg.MetricsFormat = train.MetricsCSV
			cfg.MetricsNoHeader = mf.First() != ""
		}
	}
	if f.Log != "" && rank == 0 && !f.Center {
		lf, err := metrics.OpenRecordFile("Files.Log", f.Log, appending)
		if err != nil {
			return err
		}
		o.closers = append(o.closers, func() error {
			if err := lf.Close(); err != nil {
				return fmt.Errorf("Files.Log %s: %w", f.Log, err)
			}
			return nil
		})
		cfg.CaffeLog = lf
	}
	if f.Timeline != "" {
		p := path(f.Timeline)
		tf, err := os.Create(p)
		if err != nil {
			return fmt.Errorf("Files.Timeline: cannot create the trace file: %w", err)
		}
		tl := timeline.New(tf, time.Time{})
		cfg.Timeline = tl
		o.closers = append(o.closers, func() error {
			err := tl.Close()
			if cerr := tf.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("Files.Timeline %s: the trace is incomplete: %w", p, err)
			}
			return nil
		})
	}
	return nil
}

// CheckHeader refuses to append records to a CSV file whose header is
// another run's columns (Trainer.MetricsColumns); nil when the run writes
// the header itself.
func (o *RunFiles) CheckHeader(cfg train.Config, columns []string) error {
	if !cfg.MetricsNoHeader {
		return nil
	}
	if want := strings.Join(columns, ","); o.Metrics.First() != want {
		return fmt.Errorf("Files.Metrics %s: the file's CSV header is not this run's columns, so rows cannot be appended to it:\n  file: %s\n  run:  %s\nwrite the metrics to a new file", o.MetricsPath, o.Metrics.First(), want)
	}
	return nil
}

// Close closes the files, the last opened first, and calls report with
// each one's error.
func (o *RunFiles) Close(report func(error)) {
	for i := len(o.closers) - 1; i >= 0; i-- {
		if err := o.closers[i](); err != nil {
			report(err)
		}
	}
}
