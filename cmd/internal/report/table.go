package report

import (
	"fmt"
	"io"
	"math"
	"slices"
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
	// Images is the training images the run went through, Epochs those
	// over the training set (0 when unknown), and ImagesPerSec its
	// training rate: runs with other global batches compare by these,
	// not by iterations.
	Images       int64
	Epochs       float64
	ImagesPerSec float64
	// Dropped counts updates that were discarded; Waits counts the times
	// a worker waited at the center's clock for the slowest (SSP's bound,
	// aligned termination), which is not staleness.
	Dropped, Waits int64
	// Staleness is the mean staleness of the updates the center took (the
	// updates between a worker's read and its update), MaxStale the
	// largest, when StaleKnown (a run with center updates: the
	// synchronous schemes have none, and none is stale).
	Staleness  float64
	MaxStale   int64
	StaleKnown bool
	// BytesPerIter is what one worker moved per iteration, both ways (0:
	// not measured: a lone worker, or traffic outside the counters).
	BytesPerIter float64
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

// Table writes one row per scheme: scheme, workers, iterations, training
// images, epochs and images per second, final and best test accuracy,
// time to target accuracy ("not reached" when no test pass reached it),
// speedup over the baseline scheme at the target ("-" when either time is
// missing), communication ratio, megabytes a worker moved per iteration
// (both ways), the center's update staleness (mean and
// max; "-" without a center), dropped updates, clock waits and wall
// time. Runs of the same scheme and worker count (compare --repeats) make
// one row: each number is their median, with the range "(min–max)" where
// they differ. A failed run's row shows "-" for its numbers and
// "error: ..." in place of its wall time (with repeats, the errors are
// counted). Lines after the rows say which baseline the speedups are
// relative to, or why there are none. The only errors returned are w's.
func Table(w io.Writer, runs []Run, baseline string, target float64) error {
	groups := group(runs)
	baseSec, baseNote := baselineTime(groups, baseline, target)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scheme\tworkers\titers\timages\tepochs\timg/s\tfinal acc\tbest acc\ttime to %s\tspeedup\tcomm\tMB/iter\tstaleness\tdropped\tclock waits\twall\n",
		pct(target))
	repeated := false
	for _, g := range groups {
		r := g[0]
		name := r.Scheme
		if name == "" {
			name = "?"
		}
		var ok []Run
		var errs []string
		for _, x := range g {
			if x.Err != nil {
				errs = append(errs, oneLine(x.Err.Error()))
			} else {
				ok = append(ok, x)
			}
		}
		repeated = repeated || len(g) > 1
		if len(ok) == 0 {
			msg := "error: " + errs[0]
			if len(g) > 1 {
				msg = fmt.Sprintf("error (%d of %d runs): %s", len(errs), len(g), errs[0])
			}
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", oneLine(name), r.Workers, msg)
			continue
		}
		num := func(f func(Run) float64, format string) string { return spread(ok, f, format) }
		final, best := "-", "-"
		var finals, bests []float64
		for _, x := range ok {
			if f, b, tested := finalBest(x.Points); tested {
				finals, bests = append(finals, f), append(bests, b)
			}
		}
		if len(finals) > 0 {
			final, best = pctSpread(finals), pctSpread(bests)
		}
		reach, speed := "-", "-"
		if len(finals) > 0 {
			reach = "not reached"
		}
		if secs := timesTo(ok, target); len(secs) > 0 {
			reach = floatSpread(secs, "%.1fs")
			if m := median(secs); !math.IsNaN(baseSec) && baseSec > 0 && m > 0 {
				speed = fmt.Sprintf("%.2fx", baseSec/m)
			}
			if len(secs) < len(ok) {
				reach += fmt.Sprintf(" (%d of %d)", len(secs), len(ok))
			}
		}
		comm := "-"
		if r := ok[0].CommRatio; r >= 0 && !math.IsInf(r, 0) { // false for NaN
			comm = num(func(x Run) float64 { return 100 * x.CommRatio }, "%.1f%%")
		}
		epochs := "-"
		if ok[0].Epochs > 0 {
			epochs = num(func(x Run) float64 { return x.Epochs }, "%.2f")
		}
		imgs := "-"
		if ok[0].Images > 0 {
			imgs = num(func(x Run) float64 { return float64(x.Images) }, "%.0f")
		}
		rate := "-"
		if ok[0].ImagesPerSec > 0 {
			rate = num(func(x Run) float64 { return x.ImagesPerSec }, "%.0f")
		}
		wall := num(func(x Run) float64 { return x.Wall.Seconds() }, "%.1fs")
		if len(errs) > 0 {
			wall += fmt.Sprintf("; %d of %d failed: %s", len(errs), len(g), errs[0])
		}
		mb := "-"
		if ok[0].BytesPerIter > 0 {
			mb = num(func(x Run) float64 { return x.BytesPerIter / 1e6 }, "%.3g")
		}
		stale := "-"
		if ok[0].StaleKnown {
			stale = num(func(x Run) float64 { return x.Staleness }, "%.2f") + " (max " + num(func(x Run) float64 { return float64(x.MaxStale) }, "%.0f") + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			oneLine(name), r.Workers, num(func(x Run) float64 { return float64(x.Iters) }, "%.0f"), imgs, epochs, rate, final, best, reach, speed, comm, mb, stale,
			num(func(x Run) float64 { return float64(x.Dropped) }, "%.0f"), num(func(x Run) float64 { return float64(x.Waits) }, "%.0f"), wall)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	if repeated {
		baseNote += "\nrepeated runs: each cell is their median, with (min–max) where they differ; speedup compares medians"
	}
	if _, err := fmt.Fprintln(w, baseNote); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	return nil
}

// Medians keeps, of each scheme's repeated runs (same scheme and worker
// count, as Table groups them), the one whose final accuracy is the
// median (the lower middle one for an even count; a failed or untested
// run counts as lowest): one line per scheme for Plot.
func Medians(runs []Run) []Run {
	var out []Run
	for _, g := range group(runs) {
		acc := func(r Run) float64 {
			if f, _, ok := finalBest(r.Points); ok && r.Err == nil {
				return f
			}
			return -1
		}
		g = slices.Clone(g)
		slices.SortStableFunc(g, func(a, b Run) int { return cmpFloat(acc(a), acc(b)) })
		out = append(out, g[(len(g)-1)/2])
	}
	return out
}

// group gathers the runs by scheme and worker count, in the order each
// first appears.
func group(runs []Run) [][]Run {
	var out [][]Run
	at := map[string]int{}
	for _, r := range runs {
		k := fmt.Sprintf("%s\x00%d", r.Scheme, r.Workers)
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// timesTo returns each run's time to target, for the runs that reached it.
func timesTo(runs []Run, target float64) []float64 {
	var out []float64
	for _, r := range runs {
		if sec, ok := TimeTo(r.Points, target); ok {
			out = append(out, sec)
		}
	}
	return out
}

// median returns the median of xs (the mean of the middle two for an even
// count); NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// floatSpread formats the median of xs, and "(min–max)" after it when
// they differ in that format.
func floatSpread(xs []float64, format string) string {
	m := fmt.Sprintf(format, median(xs))
	lo, hi := fmt.Sprintf(format, slices.Min(xs)), fmt.Sprintf(format, slices.Max(xs))
	if lo == hi {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, lo, hi)
}

// spread is floatSpread of f over runs.
func spread(runs []Run, f func(Run) float64, format string) string {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return floatSpread(xs, format)
}

// pctSpread is floatSpread of fractions as percentages.
func pctSpread(xs []float64) string {
	p := make([]float64, len(xs))
	for i, x := range xs {
		p[i] = 100 * x
	}
	return floatSpread(p, "%.2f%%")
}

// baselineTime returns the baseline's time to target (NaN when there is
// none) and a line explaining what speedups are relative to.
func baselineTime(groups [][]Run, baseline string, target float64) (float64, string) {
	if baseline == "" {
		return math.NaN(), "speedup: no baseline scheme given"
	}
	failed := false
	for _, g := range groups {
		if g[0].Scheme != baseline {
			continue
		}
		var ok []Run
		for _, r := range g {
			if r.Err == nil {
				ok = append(ok, r)
			}
		}
		if len(ok) == 0 {
			failed = true
			continue
		}
		secs := timesTo(ok, target)
		sec := median(secs)
		if len(secs) == 0 {
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
