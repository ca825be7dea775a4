package report

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTimeTo(t *testing.T) {
	pts := []Point{{1, 10, 0.5}, {2, 20, 0.84999}, {3, 30, 0.85}, {4, 40, 0.9}, {5, 50, 0.7}}
	tests := []struct {
		name   string
		points []Point
		target float64
		sec    float64
		ok     bool
	}{
		{"nil", nil, 0.5, 0, false},
		{"empty", []Point{}, 0, 0, false},
		{"exactly equal counts", pts, 0.85, 3, true},
		{"just below is not reached", pts[:2], 0.85, 0, false},
		{"first point", pts, 0.5, 1, true},
		{"target zero", pts, 0, 1, true},
		{"never reached", pts, 0.95, 0, false},
		{"no interpolation", pts, 0.875, 4, true},
		{"reached then lost still counts", pts, 0.9, 4, true},
		{"time zero", []Point{{0, 0, 0.9}}, 0.85, 0, true},
		{"unsorted takes earliest", []Point{{9, 90, 0.9}, {4, 40, 0.86}, {7, 70, 0.2}}, 0.85, 4, true},
		{"NaN target", pts, math.NaN(), 0, false},
		{"NaN accuracy", []Point{{1, 1, math.NaN()}, {2, 2, 0.9}}, 0.85, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec, ok := TimeTo(tt.points, tt.target)
			if sec != tt.sec || ok != tt.ok {
				t.Errorf("TimeTo(%v, %v) = %v, %v; want %v, %v", tt.points, tt.target, sec, ok, tt.sec, tt.ok)
			}
		})
	}
}

// fixture: seq reaches 85% at 40 s, sync-easgd at 10 s (4x), async at 16 s
// (2.5x), easgd never does, hogwild failed.
func fixture() []Run {
	return []Run{
		{Scheme: "seq", Workers: 1, Iters: 4000, Wall: 60 * time.Second, CommRatio: 0,
			Points: []Point{{20, 2000, 0.80}, {40, 4000, 0.85}, {60, 6000, 0.88}}},
		{Scheme: "sync-easgd", Workers: 4, Iters: 3000, Wall: 30 * time.Second, CommRatio: 0.14,
			Points: []Point{{5, 500, 0.81}, {10, 1000, 0.86}, {30, 3000, 0.905}}},
		{Scheme: "async", Workers: 4, Iters: 5000, Wall: 31500 * time.Millisecond, CommRatio: 0.5, Waits: 123,
			Points: []Point{{8, 800, 0.7}, {16, 1600, 0.9}, {31, 3100, 0.89}}},
		{Scheme: "easgd", Workers: 4, Iters: 900, Wall: 20 * time.Second, CommRatio: 0.87, Dropped: 7,
			Points: []Point{{10, 300, 0.6}, {20, 600, 0.8}}},
		{Scheme: "hogwild", Workers: 4, Err: errors.New("worker 2: connection reset\nby peer")},
	}
}

func TestTable(t *testing.T) {
	failedSeq := fixture()
	failedSeq[0] = Run{Scheme: "seq", Workers: 1, Err: errors.New("out of memory")}
	slowSeq := fixture()
	slowSeq[0].Points = slowSeq[0].Points[:1]

	tests := []struct {
		name     string
		runs     []Run
		baseline string
		want     []string // substrings, each of which must appear
		absent   []string
	}{
		{
			name: "speedups", runs: fixture(), baseline: "seq",
			want: []string{
				"time to 85.00%",
				"1.00x", "4.00x", "2.50x",
				"40.0s", "10.0s", "16.0s", "not reached",
				"88.00%", "90.50%", "89.00%", // final accuracies
				"14.0%", "87.0%", "50.0%", // comm ratios
				"123", "31.5s",
				"error: worker 2: connection reset by peer",
				"relative to seq (40.0s = 1x)",
			},
		},
		{
			name: "failed baseline", runs: failedSeq, baseline: "seq",
			want:   []string{"error: out of memory", "speedup: baseline seq failed", "10.0s"},
			absent: []string{"x "},
		},
		{
			name: "baseline not reached", runs: slowSeq, baseline: "seq",
			want:   []string{"speedup: baseline seq did not reach 85.00% test accuracy", "10.0s"},
			absent: []string{"x "},
		},
		{
			name: "baseline missing", runs: fixture()[1:], baseline: "seq",
			want:   []string{"speedup: baseline seq was not run"},
			absent: []string{"x "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Table(&b, tt.runs, tt.baseline, 0.85); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("missing %q in:\n%s", s, out)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(out, s) {
					t.Errorf("unexpected %q in:\n%s", s, out)
				}
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(tt.runs)+2 {
				t.Fatalf("%d lines, want header + %d rows + note:\n%s", len(lines), len(tt.runs), out)
			}
			// Columns are aligned: every row's second column starts where
			// the header's does.
			col := strings.Index(lines[0], "workers")
			for _, l := range lines[1 : len(lines)-1] {
				if col >= len(l) || l[col-1] != ' ' || l[col] == ' ' {
					t.Errorf("row not aligned with header at %d:\n%s\n%s", col, lines[0], l)
				}
			}
		})
	}
}

// TestTableRow checks one row cell by cell.
func TestTableRow(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, fixture()[:2], "seq", 0.85); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	got := strings.Fields(lines[2])
	want := []string{"sync-easgd", "4", "3000", "-", "-", "-", "90.50%", "90.50%", "10.0s", "4.00x", "14.0%", "-", "-", "0", "0", "30.0s"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("row = %q, want %q", got, want)
	}
	// A run whose center measured staleness shows its mean and max.
	runs := fixture()[:3]
	runs[2].Staleness, runs[2].MaxStale, runs[2].StaleKnown = 2.5, 9, true
	b.Reset()
	if err := Table(&b, runs, "seq", 0.85); err != nil {
		t.Fatal(err)
	}
	runs[2].BytesPerIter = 3.5e6
	b.Reset()
	if err := Table(&b, runs, "seq", 0.85); err != nil {
		t.Fatal(err)
	}
	if row := strings.Split(b.String(), "\n")[3]; !strings.Contains(row, " 50.0%  3.5      2.50 (max 9)  0 ") {
		t.Errorf("async row without its staleness: %q", row)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTableWriteError(t *testing.T) {
	err := Table(failWriter{}, fixture(), "seq", 0.85)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v, want the writer's error", err)
	}
}

func TestPlot(t *testing.T) {
	runs := fixture()
	// A perfect score must not break the log scale.
	runs[1].Points = append(runs[1].Points, Point{40, 4000, 1})
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "cmp.png"), filepath.Join(dir, "cmp.svg")
	if err := Plot(runs, "LeNet / Fashion-MNIST", 0.85, pngPath, svgPath); err != nil {
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
	if !strings.HasPrefix(s, "<?xml") && !strings.HasPrefix(s, "<svg") {
		t.Errorf("svg starts with %q", s[:min(len(s), 20)])
	}
	for _, name := range []string{"seq", "sync-easgd", "async", "easgd", "wall time (s)", "test error", "LeNet / Fashion-MNIST", "target 85.00%"} {
		if !strings.Contains(s, name) {
			t.Errorf("svg lacks %q", name)
		}
	}
	if strings.Contains(s, "hogwild") {
		t.Error("svg names hogwild, which has no points")
	}
	// 1e-4 (the floor, where 100% accuracy is drawn) gets a labelled tick.
	if !strings.Contains(s, ">0.0001<") {
		t.Error("svg has no 0.0001 tick label for the clamped error")
	}
	assertOnly(t, dir, "cmp.png", "cmp.svg")
}

func TestPlotSkips(t *testing.T) {
	dir := t.TempDir()
	one := []Run{{Scheme: "seq", Points: []Point{{3, 30, 0.9}}}}
	tests := []struct {
		name    string
		runs    []Run
		png     string
		svg     string
		wantErr string
		files   []string
	}{
		{"single point", one, "a.png", "", "", []string{"a.png"}},
		{"svg only", one, "", "b.svg", "", []string{"b.svg"}},
		{"neither file", one, "", "", "", nil},
		{"all empty", []Run{{Scheme: "seq"}, {Scheme: "x", Points: []Point{{1, 1, math.NaN()}}}}, "c.png", "c.svg", "no run has a test point", nil},
		{"no runs", nil, "d.png", "", "no run has a test point", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			join := func(p string) string {
				if p == "" {
					return ""
				}
				return filepath.Join(dir, p)
			}
			err := Plot(tt.runs, "", 0, join(tt.png), join(tt.svg))
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			assertOnly(t, dir, tt.files...)
		})
	}
}

func TestPlotUnwritable(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file should go: the temp file is written, the
	// rename fails, and the temp file must be cleaned up.
	isDir := filepath.Join(dir, "taken.png")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, png, svg, bad string
	}{
		{"missing directory", filepath.Join(dir, "nope", "x.png"), "", filepath.Join(dir, "nope", "x.png")},
		{"target is a directory", isDir, "", isDir},
		{"svg in missing directory", "", filepath.Join(dir, "nope", "x.svg"), filepath.Join(dir, "nope", "x.svg")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Plot(fixture(), "t", 0.85, tt.png, tt.svg)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("error %q does not name %s", err, tt.bad)
			}
			assertOnly(t, dir, "taken.png")
		})
	}
	if ents, _ := os.ReadDir(isDir); len(ents) != 0 {
		t.Errorf("%s gained entries: %v", isDir, ents)
	}
}

// assertOnly fails unless dir holds exactly the named entries.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   []string // labels in order
	}{
		{"narrow gets 1-2-5", 0.08, 0.6, []string{"0.1", "0.2", "0.5"}},
		{"wide gets decades", 1e-4, 0.5, []string{"0.0001", "0.001", "0.01", "0.1"}},
		{"one tick labels ends", 0.15, 0.25, []string{"0.15", "0.2", "0.25"}},
		{"no tick labels ends", 0.11, 0.19, []string{"0.11", "0.19"}},
		{"two ticks labelled", 0.25, 0.45, []string{"0.3", "0.4"}},
		{"integers", 1, 100, []string{"1", "2", "5", "10", "20", "50", "100"}},
		{"bad range", 0, 1, nil},
		{"reversed", 1, 0.1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tk := range logTicks(tt.lo, tt.hi) {
				if tk.Value < tt.lo || tk.Value > tt.hi {
					t.Errorf("tick %v outside [%v, %v]", tk.Value, tt.lo, tt.hi)
				}
				if tk.Label != "" {
					got = append(got, tk.Label)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("labels %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTableRepeats: repeated runs of a scheme make one row of medians
// with their ranges; images, epochs and images/s are shown; a failed
// repeat is counted; the speedup compares the medians' times.
func TestTableRepeats(t *testing.T) {
	seq := func(sec, final float64, ips float64) Run {
		return Run{Scheme: "seq", Workers: 1, Iters: 100, Images: 6400, Epochs: 0.11, ImagesPerSec: ips, Wall: 20 * time.Second,
			Points: []Point{{sec, 50, 0.86}, {20, 100, final}}}
	}
	ring := func(sec float64) Run {
		return Run{Scheme: "sync-ring", Workers: 4, Iters: 50, Images: 12800, Epochs: 0.21, ImagesPerSec: 4000, Wall: 10 * time.Second,
			Points: []Point{{sec, 25, 0.9}, {10, 50, 0.91}}}
	}
	runs := []Run{seq(10, 0.87, 3000), ring(4), seq(12, 0.88, 3100), ring(6), seq(14, 0.90, 2900),
		{Scheme: "sync-ring", Workers: 4, Err: errors.New("rank 2 died")}}
	var b bytes.Buffer
	if err := Table(&b, runs, "seq", 0.85); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want header, 2 rows, 2 notes:\n%s", len(lines), b.String())
	}
	for _, tc := range []struct {
		line int
		want []string
	}{
		{1, []string{"seq", "6400", "0.11", "3000 (2900–3100)", "88.00% (87.00%–90.00%)", "12.0s (10.0s–14.0s)", "1.00x"}},
		{2, []string{"sync-ring", "12800", "0.21", "4000", "91.00%", "5.0s (4.0s–6.0s)", "2.40x", "1 of 3 failed: rank 2 died"}},
		{4, []string{"median", "(min–max)"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(lines[tc.line], w) {
				t.Errorf("line %d lacks %q:\n%s", tc.line, w, lines[tc.line])
			}
		}
	}
}

// TestMedians: of each scheme's repeats, the run with the median final
// accuracy is kept, a failed run counting lowest, in first-seen order.
func TestMedians(t *testing.T) {
	run := func(s string, acc float64) Run {
		return Run{Scheme: s, Workers: 2, Points: []Point{{1, 1, acc}}}
	}
	failed := Run{Scheme: "a", Workers: 2, Err: errors.New("x")}
	got := Medians([]Run{run("a", 0.9), run("b", 0.5), failed, run("a", 0.7), run("b", 0.6), run("a", 0.8)})
	if len(got) != 2 || got[0].Scheme != "a" || got[0].Points[0].Accuracy != 0.7 || got[1].Scheme != "b" || got[1].Points[0].Accuracy != 0.5 {
		t.Fatalf("got %+v", got)
	}
}
