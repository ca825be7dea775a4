package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Point is one test pass during a run.
type Point struct {
	// Seconds is the wall time since the run started, in seconds.
	Seconds float64
	// Iter is the iteration count at the test pass.
	Iter int
	// Accuracy is the test accuracy, a fraction in [0, 1].
	Accuracy float64
}

// Run is the outcome of training one scheme.
type Run struct {
	// Scheme is the scheme's name, as given to --schemes.
	Scheme string
	// Workers is the number of workers the scheme ran with.
	Workers int
	// Points are the test passes, in the order they were taken.
	Points []Point
	// Wall is the run's total wall time.
	Wall time.Duration
	// Iters is the number of iterations completed.
	Iters int
	// CommRatio is the fraction of wall time spent in exposed
	// communication, in [0, 1] (SC17 Table 3). NaN or negative means
	// unknown.
	CommRatio float64
	// Dropped and Stale count updates that were discarded, and updates
	// applied against out-of-date weights.
	Dropped, Stale int64
	// Err is why the run failed, or nil. A failed run is listed in the
	// table with its error, and is never a speedup baseline.
	Err error
}

// TimeTo returns the time of the earliest point whose accuracy is at least
// target, without interpolating between points. ok is false when no point
// reaches target (including when points is empty, and when target or an
// accuracy is NaN). Points need not be sorted.
func TimeTo(points []Point, target float64) (sec float64, ok bool) {
	for _, p := range points {
		if p.Accuracy >= target && (!ok || p.Seconds < sec) {
			sec, ok = p.Seconds, true
		}
	}
	return sec, ok
}

// finalBest returns the last point's accuracy and the best accuracy.
func finalBest(points []Point) (final, best float64, ok bool) {
	if len(points) == 0 {
		return 0, 0, false
	}
	best = math.Inf(-1)
	for _, p := range points {
		if p.Accuracy > best {
			best = p.Accuracy
		}
	}
	if math.IsInf(best, -1) { // all NaN
		best = math.NaN()
	}
	return points[len(points)-1].Accuracy, best, true
}

// Table writes one row per run: scheme, workers, iterations, final and
// best test accuracy, time to target accuracy ("not reached" when no test
// pass reached it), speedup over the first successful run of the baseline
// scheme at the target ("-" when either time is missing), communication
// ratio, dropped and stale updates, and wall time. A failed run's row
// shows "-" for its numbers and "error: ..." in place of its wall time. Lines after the rows
// say which baseline the speedups are relative to, or why there are none.
// The only errors returned are w's.
func Table(w io.Writer, runs []Run, baseline string, target float64) error {
	baseSec, baseNote := baselineTime(runs, baseline, target)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scheme\tworkers\titers\tfinal acc\tbest acc\ttime to %s\tspeedup\tcomm\tdropped\tstale\twall\n",
		pct(target))
	for _, r := range runs {
		name := r.Scheme
		if name == "" {
			name = "?"
		}
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\terror: %s\n",
				oneLine(name), r.Workers, oneLine(r.Err.Error()))
			continue
		}
		final, best, tested := "-", "-", false
		if f, b, ok := finalBest(r.Points); ok {
			final, best, tested = pct(f), pct(b), true
		}
		reach, speed := "-", "-"
		if tested {
			reach = "not reached"
		}
		if sec, ok := TimeTo(r.Points, target); ok {
			reach = fmt.Sprintf("%.1fs", sec)
			if !math.IsNaN(baseSec) && baseSec > 0 && sec > 0 {
				speed = fmt.Sprintf("%.2fx", baseSec/sec)
			}
		}
		comm := "-"
		if r.CommRatio >= 0 && !math.IsInf(r.CommRatio, 0) { // false for NaN
			comm = fmt.Sprintf("%.1f%%", 100*r.CommRatio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.1fs\n",
			oneLine(name), r.Workers, r.Iters, final, best, reach, speed, comm,
			r.Dropped, r.Stale, r.Wall.Seconds())
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	if _, err := fmt.Fprintln(w, baseNote); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	return nil
}

// baselineTime returns the baseline's time to target (NaN when there is
// none) and a line explaining what speedups are relative to.
func baselineTime(runs []Run, baseline string, target float64) (float64, string) {
	if baseline == "" {
		return math.NaN(), "speedup: no baseline scheme given"
	}
	failed := false
	for _, r := range runs {
		if r.Scheme != baseline {
			continue
		}
		if r.Err != nil {
			failed = true
			continue
		}
		sec, ok := TimeTo(r.Points, target)
		if !ok {
			return math.NaN(), fmt.Sprintf("speedup: baseline %s did not reach %s test accuracy", baseline, pct(target))
		}
		if sec <= 0 {
			return math.NaN(), fmt.Sprintf("speedup: baseline %s reached %s at time 0", baseline, pct(target))
		}
		return sec, fmt.Sprintf("speedup: time to %s test accuracy relative to %s (%.1fs = 1x)", pct(target), baseline, sec)
	}
	if failed {
		return math.NaN(), fmt.Sprintf("speedup: baseline %s failed", baseline)
	}
	return math.NaN(), fmt.Sprintf("speedup: baseline %s was not run", baseline)
}

// pct formats a fraction as a percentage with two decimals.
func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*f)
}

// oneLine keeps a table cell on one line and out of the column separators.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == '\n' || r == '\r' || r == '\t'
	}), " ")
}
