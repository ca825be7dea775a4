package data

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// windowFixture is data/testdata/window/cases.json, written by
// scripts/window_fixture.py with OpenCV.
type windowFixture struct {
	Crop       int         `json:"crop"`
	MeanValues []float32   `json:"mean_values"`
	Windows    [][]float64 `json:"windows"`
	Cases      []struct {
		Window     int     `json:"window"`
		ContextPad int     `json:"context_pad"`
		Square     bool    `json:"square"`
		Mirror     bool    `json:"mirror"`
		MeanFile   bool    `json:"mean_file"`
		Scale      float32 `json:"scale"`
		Offset     int     `json:"offset"`
	} `json:"cases"`
}

const windowDir = "testdata/window"

func readWindowFixture(t *testing.T) (*windowFixture, []float32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(windowDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx windowFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(windowDir, "crops.f32"))
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, len(raw)/4)
	for i := range vals {
		vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return &fx, vals
}

func windowConfig(crop int) WindowConfig {
	return WindowConfig{
		Name: "data", Source: filepath.Join(windowDir, "windows.txt"), RootFolder: windowDir + "/",
		BatchSize: 8, FgThreshold: 0.5, BgThreshold: 0.3, FgFraction: 0.25,
		Transform: TransformConfig{CropSize: crop},
	}
}

// TestWindowCropsMatchOpenCV holds every window crop (context padding,
// square and warp, mirror, mean file or values, scale) to the one the
// fixture script computed with OpenCV following Caffe's load_batch. The
// only freedom is OpenCV's fixed-point bilinear interpolation of bytes:
// a pixel may differ by one grey level; where padding, the crop's place
// and size, the mirror or the mean were wrong, whole rows would differ.
func TestWindowCropsMatchOpenCV(t *testing.T) {
	fx, want := readWindowFixture(t)
	if len(fx.Cases) == 0 || len(want) != len(fx.Cases)*3*fx.Crop*fx.Crop {
		t.Fatalf("fixture: %d cases, %d values", len(fx.Cases), len(want))
	}
	per := 3 * fx.Crop * fx.Crop
	exact, total := 0, 0
	for _, c := range fx.Cases {
		cfg := windowConfig(fx.Crop)
		cfg.ContextPad, cfg.Square, cfg.Scale = c.ContextPad, c.Square, c.Scale
		if c.MeanFile {
			cfg.Transform.MeanFile = filepath.Join(windowDir, "mean.binaryproto")
		} else {
			cfg.Transform.MeanValue = fx.MeanValues
		}
		s, err := OpenWindows(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fw := fx.Windows[c.Window]
		win := Window{Image: int(fw[0]), Label: int(fw[1]), X1: int(fw[3]), Y1: int(fw[4]), X2: int(fw[5]), Y2: int(fw[6])}
		pix, h, w, err := s.image(win.Image)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, per)
		if err := s.cropWindow(got, pix, h, w, win, c.Mirror); err != nil {
			t.Fatalf("case %+v: %v", c, err)
		}
		exp := want[c.Offset : c.Offset+per]
		for i := range got {
			d := math.Abs(float64(got[i] - exp[i]))
			total++
			if d == 0 {
				exact++
			}
			if d > 1.0001*float64(c.Scale) {
				t.Fatalf("case %+v: value %d (c %d, y %d, x %d) = %g, OpenCV/Caffe %g", c, i, i/(fx.Crop*fx.Crop), i/fx.Crop%fx.Crop, i%fx.Crop, got[i], exp[i])
			}
		}
	}
	// OpenCV interpolates bytes in 11-bit fixed point and dsgd in float32,
	// so about one value in twelve lands one grey level apart (91.9% are
	// equal on this fixture); a wrong offset, size, flip or mean would
	// move whole rows by far more than one level.
	if frac := float64(exact) / float64(total); frac < 0.85 {
		t.Fatalf("only %.1f%% of %d values equal OpenCV's exactly", 100*frac, total)
	}
	t.Logf("%d cases, %d of %d values exact", len(fx.Cases), exact, total)
}

// TestWindowFill checks a batch: background windows first, then
// fg_fraction of foreground ones, labels as Caffe assigns them (the
// window with overlap between the thresholds never drawn), and each
// crop one of its window's crops.
func TestWindowFill(t *testing.T) {
	cfg := windowConfig(10)
	cfg.Transform.Mirror = true
	cfg.Seed = 7
	s, err := OpenWindows(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wf := s.File()
	if len(wf.Images) != 2 || len(wf.Fg) != 3 || len(wf.Bg) != 2 {
		t.Fatalf("images %d, fg %d, bg %d; want 2, 3, 2 (overlap 0.4 between bg 0.3 and fg 0.5 dropped)", len(wf.Images), len(wf.Fg), len(wf.Bg))
	}
	data := tensor.NewBlob("data", 8, 3, 10, 10)
	label := tensor.NewBlob("label", 8)
	seen := map[float32]bool{}
	for range 20 {
		if err := s.Fill(context.Background(), []*tensor.Blob{data, label}); err != nil {
			t.Fatal(err)
		}
		for i, l := range label.Data {
			seen[l] = true
			if (i < 6) != (l == 0) {
				t.Fatalf("item %d has label %g: want background (0) for items 0-5, foreground for 6-7", i, l)
			}
			if l == 3 {
				t.Fatal("drew the window whose overlap lies between the thresholds")
			}
			item := data.Data[i*300 : (i+1)*300]
			if !matchesSomeCrop(t, s, item, l) {
				t.Fatalf("item %d (label %g) is none of its windows' crops", i, l)
			}
		}
	}
	for _, l := range []float32{0, 1, 2, 4} {
		if !seen[l] {
			t.Errorf("label %g never drawn in 160 samples", l)
		}
	}
}

func matchesSomeCrop(t *testing.T, s *WindowSource, got []float32, label float32) bool {
	for _, set := range [][]Window{s.file.Fg, s.file.Bg} {
		for _, w := range set {
			if float32(w.Label) != label {
				continue
			}
			pix, h, wd, err := s.image(w.Image)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []bool{false, true} {
				want := make([]float32, len(got))
				if err := s.cropWindow(want, pix, h, wd, w, m); err != nil {
					t.Fatal(err)
				}
				if slicesEqual(got, want) {
					return true
				}
			}
		}
	}
	return false
}

func slicesEqual(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestParseWindowFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "w.txt: the window file is empty"},
		{"no hash", "0\nimg.png\n", `w.txt:1: "0" where an image's "# image_index" header`},
		{"index order", "# 1\na.png 3 10 10 0\n", "w.txt:1: image_index 1, but this is image 0"},
		{"gray", "# 0\na.png\n1\n10\n10\n0\n", "w.txt:3: image a.png declares 1 channels"},
		{"short", "# 0\na.png\n3\n10\n10\n2\n1 0.9 0 0 5 5\n", "w.txt:8: the file ends where class_index was expected"},
		{"overlap", "# 0\na.png\n3\n10\n10\n1\n1 high 0 0 5 5\n", `w.txt:7: overlap is "high"`},
		{"empty box", "# 0\na.png\n3\n10\n10\n1\n1 0.9 5 0 4 5\n", "w.txt:7: window (5,0)-(4,5) is empty"},
		{"fg class 0", "# 0\na.png\n3\n10\n10\n1\n0 0.9 0 0 5 5\n", "w.txt:7: foreground window (overlap 0.9 >= fg_threshold 0.5) has class 0"},
		{"bad count", "# 0\na.png\n3\n10\n10\n-1\n", "w.txt:6: num_windows is \"-1\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWindowFile(strings.NewReader(tc.text), "w.txt", "", 0.5, 0.5)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestOpenWindowsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*WindowConfig)
		want string
	}{
		{"no crop", func(c *WindowConfig) { c.Transform.CropSize = 0 }, "needs a crop_size"},
		{"pad", func(c *WindowConfig) { c.ContextPad = 5 }, "context_pad 5 leaves nothing"},
		{"transform scale", func(c *WindowConfig) { c.Transform.Scale = 0.5 }, "ignores transform_param.scale"},
		{"missing", func(c *WindowConfig) { c.Source = "testdata/window/none.txt" }, "window file: open testdata/window/none.txt"},
		{"no fg", func(c *WindowConfig) { c.FgThreshold = 1.5 }, "has no foreground window"},
		{"mean values", func(c *WindowConfig) { c.Transform.MeanValue = []float32{1, 2} }, "2 mean_value entries"},
		{"mean too small", func(c *WindowConfig) {
			c.Transform.CropSize = 14
			c.Transform.MeanFile = "testdata/window/mean.binaryproto"
		}, "does not fit 3-channel 14x14 crops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := windowConfig(10)
			tc.edit(&cfg)
			_, err := OpenWindows(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
	// An image that is not there is named with its window-file line.
	dir := t.TempDir()
	src := filepath.Join(dir, "w.txt")
	if err := os.WriteFile(src, []byte("# 0\nmissing.png\n3\n10\n10\n2\n1 0.9 0 0 5 5\n0 0.1 0 0 3 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := windowConfig(8)
	cfg.Source, cfg.RootFolder, cfg.BatchSize = src, dir+"/", 2
	s, err := OpenWindows(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Fill(context.Background(), []*tensor.Blob{tensor.NewBlob("d", 2, 3, 8, 8), tensor.NewBlob("l", 2)})
	if err == nil || !strings.Contains(err.Error(), "w.txt:1") || !strings.Contains(err.Error(), "missing.png") {
		t.Fatalf("error %v; want it to name the image and w.txt:1", err)
	}
}

func FuzzParseWindowFile(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join(windowDir, "windows.txt")); err == nil {
		f.Add(string(b))
	}
	f.Add("# 0\na.png 3 10 10 1 1 0.9 0 0 5 5")
	f.Fuzz(func(t *testing.T, text string) {
		wf, err := ParseWindowFile(strings.NewReader(text), "f", "", 0.5, 0.5)
		if err != nil {
			return
		}
		for _, w := range append(append([]Window{}, wf.Fg...), wf.Bg...) {
			if w.Image < 0 || w.Image >= len(wf.Images) || w.X2 < w.X1 || w.Y2 < w.Y1 {
				t.Fatalf("accepted a bad window %+v of %d images", w, len(wf.Images))
			}
		}
	})
}
