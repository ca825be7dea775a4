package report

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// Series is one line of a PlotXY plot: the points (X[i], Y[i]), drawn in X
// order, and the name the legend gives them. X and Y have the same length.
type Series struct {
	Name string
	X, Y []float64
}

// PlotXY draws each series as a line with point markers and a legend entry,
// on a log10 X axis when logX and a log10 Y axis when logY, and writes the
// plot as a PNG to pngPath and as an SVG to svgPath; either path may be ""
// to skip that file. Points with a NaN or infinite coordinate, or a
// coordinate <= 0 on a log axis, are left out, and so are series left with
// no point; it is an error if that leaves nothing to draw, or if a series'
// X and Y differ in length. Files are written as Plot writes them:
// atomically, with no partial or temporary file left on error.
func PlotXY(series []Series, title, xLabel, yLabel string, logX, logY bool, pngPath, svgPath string) error {
	p, err := buildXY(series, title, xLabel, yLabel, logX, logY)
	if err != nil {
		return err
	}
	return save(p, pngPath, svgPath)
}

// buildXY lays out the plot of series.
func buildXY(series []Series, title, xLabel, yLabel string, logX, logY bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.TickerFunc(logTicks)
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(logTicks)
	}
	p.Add(plotter.NewGrid())

	var lines []line
	var allX []float64
	xMin, xMax := math.Inf(1), math.Inf(-1)
	yMin, yMax := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("report: plot: series %q has %d X values and %d Y values", s.Name, len(s.X), len(s.Y))
		}
		xys := make(plotter.XYs, 0, len(s.X))
		for i, x := range s.X {
			y := s.Y[i]
			if !finite(x) || !finite(y) || (logX && x <= 0) || (logY && y <= 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		if len(xys) == 0 {
			continue
		}
		slices.SortStableFunc(xys, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
		for _, xy := range xys {
			xMin, xMax = min(xMin, xy.X), max(xMax, xy.X)
			yMin, yMax = min(yMin, xy.Y), max(yMax, xy.Y)
		}
		lines = append(lines, line{s.Name, xys})
		for _, xy := range xys {
			allX = append(allX, xy.X)
		}
	}
	if len(lines) == 0 {
		return nil, errors.New("report: plot: no series has a point to draw")
	}
	if logX && doubling(allX) {
		// A doubling sweep (workers 1, 2, 4, ...) reads in powers of two.
		p.X.Tick.Marker = plot.TickerFunc(pow2Ticks)
	}
	p.X.Min, p.X.Max = axisRange(xMin, xMax, logX)
	p.Y.Min, p.Y.Max = axisRange(yMin, yMax, logY)
	if err := addLines(p, lines, logX); err != nil {
		return nil, fmt.Errorf("report: plot: %w", err)
	}
	return p, nil
}

// axisRange pads [lo, hi] so that no point sits on the frame: by a tenth of
// a decade on a log axis, by 3% of the span (or of the value, or 1, when
// the span is 0) on a linear one.
func axisRange(lo, hi float64, log bool) (float64, float64) {
	if log {
		pad := math.Pow(10, 0.1)
		return lo / pad, hi * pad
	}
	span := hi - lo
	if span == 0 {
		span = math.Abs(lo)
		if span == 0 {
			span = 1
		}
	}
	return lo - 0.03*span, hi + 0.03*span
}
