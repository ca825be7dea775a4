package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"dsgd/internal/atomicfile"
)

// ErrorFloor is the smallest test error Plot draws: an error of 0 (100%
// accuracy) or below is drawn at ErrorFloor, because a log scale cannot
// show 0.
const ErrorFloor = 1e-4

// Plot size; at the PNG renderer's 96 dpi it is 768 x 480 pixels.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 5 * vg.Inch
)

// Plot draws test error (1 - accuracy, log10 scale, clamped below at
// ErrorFloor) against wall time in seconds, one line with point markers
// per run and a legend naming each run's scheme, and writes it as a PNG to
// pngPath and as an SVG to svgPath. Either path may be "" to skip that
// file. A failed run's points are drawn, its legend entry marked
// "(failed)". Runs without points (or whose points are all NaN or infinite) are
// left out; it is an error if that leaves nothing to draw. Each file is
// written to a temporary file in its directory and renamed into place, so
// on error no partial file or temporary file is left behind.
//
// A target accuracy in (0, 1) is drawn as a dashed line at its error.
func Plot(runs []Run, title string, target float64, pngPath, svgPath string) error {
	p, err := build(runs, title, target)
	if err != nil {
		return err
	}
	return save(p, pngPath, svgPath)
}

// save renders p as PNG and SVG, each written atomically; an empty path
// skips that file.
func save(p *plot.Plot, pngPath, svgPath string) error {
	for _, f := range []struct{ path, format string }{{pngPath, "png"}, {svgPath, "svg"}} {
		if f.path == "" {
			continue
		}
		wt, err := p.WriterTo(plotWidth, plotHeight, f.format)
		if err != nil {
			return fmt.Errorf("report: render %s: %w", f.path, err)
		}
		// Whole or not at all; a plot is for everyone to read.
		err = atomicfile.Write(f.path, 0o644, func(w io.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		})
		if err != nil {
			return fmt.Errorf("report: write %s: %w", f.path, err)
		}
	}
	return nil
}

// build lays out the plot of runs.
func build(runs []Run, title string, target float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "wall time (s)"
	p.Y.Label.Text = "test error"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.TickerFunc(logTicks)
	p.Add(plotter.NewGrid())

	var lines []line
	xMax, yMin, yMax := 0.0, math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		xys := make(plotter.XYs, 0, len(r.Points))
		for _, pt := range r.Points {
			e := 1 - pt.Accuracy
			if !finite(pt.Seconds) || !finite(e) {
				continue
			}
			xys = append(xys, plotter.XY{X: pt.Seconds, Y: max(e, ErrorFloor)})
		}
		if len(xys) == 0 {
			continue
		}
		slices.SortStableFunc(xys, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		for _, xy := range xys {
			xMax = max(xMax, xy.X)
			yMin, yMax = min(yMin, xy.Y), max(yMax, xy.Y)
		}
		name := r.Scheme
		if r.Err != nil {
			name += " (failed)"
		}
		lines = append(lines, line{name, xys})
	}
	if len(lines) == 0 {
		return nil, errors.New("report: plot: no run has a test point to draw")
	}
	hasTarget := target > 0 && target < 1
	if hasTarget {
		e := max(1-target, ErrorFloor)
		yMin, yMax = min(yMin, e), max(yMax, e)
	}

	// Time starts at 0; both axes get a margin so that no point sits on
	// the frame: 3% of the time span, a tenth of a decade of error.
	p.X.Min = min(p.X.Min, 0)
	p.X.Max = p.X.Min + 1
	if xMax > p.X.Min {
		p.X.Max = xMax + 0.03*(xMax-p.X.Min)
	}
	pad := math.Pow(10, 0.1)
	p.Y.Min, p.Y.Max = yMin/pad, yMax*pad
	dataEnd := p.X.Max
	if err := addLines(p, lines, false); err != nil {
		return nil, fmt.Errorf("report: plot: %w", err)
	}
	if hasTarget {
		// Across the data, not the legend's margin.
		if err := targetLine(p, max(1-target, ErrorFloor), p.X.Min, dataEnd, fmt.Sprintf("target %s", pct(target))); err != nil {
			return nil, fmt.Errorf("report: plot: %w", err)
		}
	}
	return p, nil
}

// logTicks marks a log axis: a minor tick at every k·10^n, labelled at
// each power of ten when the axis spans three decades or more, and at 1, 2
// and 5 ·10^n when it spans less. If that leaves fewer than two labels,
// every tick is labelled, and if still fewer than two, the ends of the axis
// are marked and labelled too.
func logTicks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	wide := math.Log10(hi/lo) >= 3
	var ticks []plot.Tick
	labelled := 0
	for dec := math.Floor(math.Log10(lo)); dec <= math.Ceil(math.Log10(hi)); dec++ {
		for k := 1.0; k <= 9; k++ {
			// Dividing by an exact power of ten rounds 6e-1 to 0.6, where
			// multiplying by 0.1 would not.
			v := k * math.Pow(10, dec)
			if dec < 0 {
				v = k / math.Pow(10, -dec)
			}
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 || (!wide && (k == 2 || k == 5)) {
				t.Label = tickLabel(v)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled >= 2 {
		return ticks
	}
	for i := range ticks {
		ticks[i].Label = tickLabel(ticks[i].Value)
	}
	if len(ticks) >= 2 {
		return ticks
	}
	ends := []plot.Tick{{Value: lo, Label: tickLabel(lo)}}
	ends = append(ends, ticks...)
	return append(ends, plot.Tick{Value: hi, Label: tickLabel(hi)})
}

// tickLabel formats a tick value, rounded to two significant digits, in
// plain decimal notation (0.0001, not 1e-04).
func tickLabel(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	if err != nil {
		return ""
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
