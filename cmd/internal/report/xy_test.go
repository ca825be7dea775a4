package report

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func xyFixture() []Series {
	ps := []float64{1, 2, 4, 8, 16, 4096}
	return []Series{
		{Name: "sync-ps", X: ps, Y: []float64{10, 12, 16, 24, 40, 8000}},
		{Name: "sync-tree", X: ps, Y: []float64{10, 11, 12, 13, 14, 22}},
		// Unsorted, with points a log axis cannot show: dropped, not fatal.
		{Name: "overlap", X: []float64{4, 1, 2, 0, math.NaN()}, Y: []float64{10.5, 10, 10.2, 3, 1}},
		{Name: "empty"},
	}
}

func TestPlotXY(t *testing.T) {
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "it.png"), filepath.Join(dir, "it.svg")
	if err := PlotXY(xyFixture(), "iteration time vs workers", "workers", "iteration time (ms)", true, true, pngPath, svgPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", pngPath, err)
	}
	if b := img.Bounds(); b.Dx() != 768 || b.Dy() != 480 {
		t.Errorf("png is %dx%d, want 768x480", b.Dx(), b.Dy())
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, want := range []string{"sync-ps", "sync-tree", "overlap", "workers", "iteration time (ms)", "iteration time vs workers", ">1024<"} {
		if !strings.Contains(s, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if strings.Contains(s, ">empty<") {
		t.Error("svg names the series with no points")
	}
	assertOnly(t, dir, "it.png", "it.svg")
}

func TestPlotXYAxes(t *testing.T) {
	tests := []struct {
		name         string
		logX, logY   bool
		xMin, xMax   float64
		wantLogScale [2]bool
	}{
		{"linear", false, false, 1 - 0.03*4095, 4096 + 0.03*4095, [2]bool{false, false}},
		{"log x", true, false, 1 / math.Pow(10, 0.1), 4096 * math.Pow(10, 0.1), [2]bool{true, false}},
		{"log both", true, true, 1 / math.Pow(10, 0.1), 4096 * math.Pow(10, 0.1), [2]bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := buildXY(xyFixture()[:2], "t", "x", "y", tt.logX, tt.logY)
			if err != nil {
				t.Fatal(err)
			}
			// The data's padded range, and on the right a margin for the
			// legend of at most the data's width again.
			margin := p.X.Max - tt.xMax
			limit := tt.xMax - tt.xMin
			if tt.logX {
				margin, limit = math.Log10(p.X.Max/tt.xMax), math.Log10(tt.xMax/tt.xMin)
			}
			if math.Abs(p.X.Min-tt.xMin) > 1e-9 || margin <= 0 || margin > limit {
				t.Errorf("x range [%g, %g], want [%g, %g] and a legend margin up to the data's width", p.X.Min, p.X.Max, tt.xMin, tt.xMax)
			}
			if p.X.Min >= 1 || p.X.Max <= 4096 || p.Y.Min >= 10 || p.Y.Max <= 8000 {
				t.Errorf("a point sits on or outside the frame: x [%g, %g], y [%g, %g]", p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
			}
			if got := isLog(p.X.Scale); got != tt.wantLogScale[0] {
				t.Errorf("x log scale %v, want %v", got, tt.wantLogScale[0])
			}
			if got := isLog(p.Y.Scale); got != tt.wantLogScale[1] {
				t.Errorf("y log scale %v, want %v", got, tt.wantLogScale[1])
			}
		})
	}
}

func TestPlotXYErrors(t *testing.T) {
	dir := t.TempDir()
	isDir := filepath.Join(dir, "taken.png")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		series   []Series
		logY     bool
		png, svg string
		wantErr  string
	}{
		{"no series", nil, false, filepath.Join(dir, "a.png"), "", "no series has a point"},
		{"all unplottable on log y", []Series{{Name: "z", X: []float64{1, 2}, Y: []float64{0, -1}}}, true, filepath.Join(dir, "b.png"), "", "no series has a point"},
		{"length mismatch", []Series{{Name: "bad", X: []float64{1, 2}, Y: []float64{1}}}, false, filepath.Join(dir, "c.png"), "", `series "bad" has 2 X values and 1 Y values`},
		{"missing directory", xyFixture(), false, filepath.Join(dir, "nope", "x.png"), "", filepath.Join(dir, "nope", "x.png")},
		{"target is a directory", xyFixture(), false, isDir, "", isDir},
		{"svg in missing directory", xyFixture(), false, "", filepath.Join(dir, "nope", "x.svg"), filepath.Join(dir, "nope", "x.svg")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := PlotXY(tt.series, "t", "x", "y", true, tt.logY, tt.png, tt.svg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "report: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			assertOnly(t, dir, "taken.png")
		})
	}
}

func TestAxisRange(t *testing.T) {
	tests := []struct {
		lo, hi float64
		log    bool
		wl, wh float64
	}{
		{0, 100, false, -3, 103},
		{5, 5, false, 5 - 0.15, 5 + 0.15},
		{0, 0, false, -0.03, 0.03},
		{1, 1000, true, 1 / math.Pow(10, 0.1), 1000 * math.Pow(10, 0.1)},
	}
	for _, tt := range tests {
		l, h := axisRange(tt.lo, tt.hi, tt.log)
		if math.Abs(l-tt.wl) > 1e-12 || math.Abs(h-tt.wh) > 1e-12 {
			t.Errorf("axisRange(%g, %g, %v) = %g, %g; want %g, %g", tt.lo, tt.hi, tt.log, l, h, tt.wl, tt.wh)
		}
	}
}

func isLog(s plot.Normalizer) bool {
	_, ok := s.(plot.LogScale)
	return ok
}

// TestEighteenLines: compare's 18 schemes get 18 colours, no two alike
// (each palette colour appears in the drawing), and the X axis leaves room
// right of every point for the legend.
func TestEighteenLines(t *testing.T) {
	var runs []Run
	for i := range 18 {
		runs = append(runs, Run{Scheme: "scheme-" + strconv.Itoa(i), Workers: 4,
			Points: []Point{{1, 10, 0.5 + 0.01*float64(i)}, {10, 100, 0.8 + 0.01*float64(i)}}})
	}
	p, err := build(runs, "t", 0.85)
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Max < 10*1.2 {
		t.Errorf("x axis ends at %g: no room right of the data (last point at 10) for the legend", p.X.Max)
	}
	svgPath := filepath.Join(t.TempDir(), "p.svg")
	if err := save(p, "", svgPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range palette[:18] {
		s := fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B)
		if !strings.Contains(strings.ToUpper(string(b)), s) {
			t.Errorf("colour %s of the palette is not drawn", s)
		}
		seen[s] = true
	}
	if len(seen) != 18 {
		t.Errorf("%d distinct colours among the first 18 of the palette", len(seen))
	}
}
