package report

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette holds 20 colours told apart on screen and in print (Tableau's
// 20, dark and light of each hue), so that compare's 18 schemes each get
// their own; markers cycle through shapes on a different period, so that
// even a repeated colour comes with another shape.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
	{174, 199, 232, 255}, {255, 187, 120, 255}, {152, 223, 138, 255}, {255, 152, 150, 255}, {197, 176, 213, 255},
	{196, 156, 148, 255}, {247, 182, 210, 255}, {199, 199, 199, 255}, {219, 219, 141, 255}, {158, 218, 229, 255},
}

var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(2)}, {vg.Points(2), vg.Points(2)}}

// line is one named series to draw.
type line struct {
	name string
	xys  plotter.XYs
}

// addLines draws each line with its own colour, marker and (after the
// palette's first round) dash, adds it to the legend, and widens the X
// axis, whose range the caller has set, so that the legend stands in a
// margin of its own to the right of the data instead of over it.
func addLines(p *plot.Plot, lines []line, logX bool) error {
	longest := 0
	for i, l := range lines {
		lp, pts, err := plotter.NewLinePoints(l.xys)
		if err != nil {
			return err
		}
		c := palette[i%len(palette)]
		lp.Color, pts.Color = c, c
		lp.Width = vg.Points(1.5)
		lp.Dashes = dashes[(i/len(palette))%len(dashes)]
		pts.Shape = shapes[i%len(shapes)]
		p.Add(lp, pts)
		p.Legend.Add(l.name, lp, pts)
		longest = max(longest, len(l.name))
	}
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = -vg.Points(4)
	// The legend's share of the width: its text (about 0.55 em a letter
	// at the default 12 pt) and its thumbnail, over the data area.
	legend := float64(longest)*0.55*12 + 40
	f := min(legend/float64(plotWidth-vg.Points(60)), 0.5)
	span := p.X.Max - p.X.Min
	if logX {
		span = math.Log10(p.X.Max / p.X.Min)
		p.X.Max *= math.Pow(10, span*f/(1-f))
		return nil
	}
	p.X.Max += span * f / (1 - f)
	return nil
}

// targetLine draws a dashed horizontal line at y, named in the legend.
func targetLine(p *plot.Plot, y, xMin, xMax float64, name string) error {
	l, err := plotter.NewLine(plotter.XYs{{X: xMin, Y: y}, {X: xMax, Y: y}})
	if err != nil {
		return err
	}
	l.Color = color.Black
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// pow2Ticks marks a log axis whose values double (workers 1, 2, 4, ...)
// at each power of two, labelled as integers.
func pow2Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log2(lo)); e <= math.Ceil(math.Log2(hi)); e++ {
		v := math.Pow(2, e)
		if v < lo || v > hi {
			continue
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	if len(ticks) < 2 {
		return logTicks(lo, hi)
	}
	return ticks
}

// doubling reports whether every x is a power of two (at least two of
// them), as a sweep of worker counts is.
func doubling(xs []float64) bool {
	n := 0
	for _, x := range xs {
		if x <= 0 || math.Exp2(math.Round(math.Log2(x))) != x {
			return false
		}
		n++
	}
	return n >= 2
}
