package layers

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// TestCaffePortPriorBox ports SSD's test_prior_box_layer.cpp (weiliu89/caffe,
// branch ssd): a 10×10 feature map of a 100×100 image, min_size 4 and
// max_size 9.
func TestCaffePortPriorBox(t *testing.T) {
	const eps = 1e-6
	s2 := math.Sqrt2
	run := func(t *testing.T, c *PriorBoxConfig, feat, img []int) *tensor.Blob {
		t.Helper()
		if c.Offset == 0 {
			c.Offset = 0.5
		}
		l, err := c.Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		bottom := []*tensor.Blob{tensor.NewBlob("feat", feat...), tensor.NewBlob("img", img...)}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		setUpShaped(t, l, bottom, top)
		l.Forward(bottom, top)
		return top[0]
	}
	feat, img := []int{10, 10, 10, 10}, []int{10, 3, 100, 100}
	setup := func(name string, c *PriorBoxConfig, priors int) {
		t.Run("PriorBoxLayerTest."+name, func(t *testing.T) {
			top := run(t, c, feat, img)
			if want := (tensor.Shape{1, 2, 100 * priors * 4}); !top.Shape.Equal(want) {
				t.Errorf("top %v, want %v", top.Shape, want)
			}
		})
	}
	f, tr := false, true
	cfg := func(mins, maxs, ars []float32, flip bool) *PriorBoxConfig {
		return &PriorBoxConfig{MinSize: mins, MaxSize: maxs, AspectRatio: ars, Flip: flip}
	}
	setup("TestSetup", cfg([]float32{4}, []float32{9}, nil, tr), 2)
	setup("TestSetupMultiSize", cfg([]float32{4, 14}, []float32{9, 19}, nil, tr), 4)
	setup("TestSetupNoMaxSize", cfg([]float32{4}, nil, nil, tr), 1)
	setup("TestSetupMultiSizeNoMaxSize", cfg([]float32{4, 14}, nil, nil, tr), 2)
	setup("TestSetupAspectRatio1", cfg([]float32{4}, []float32{9}, []float32{1, 2}, f), 3)
	setup("TestSetupAspectRatioNoFlip", cfg([]float32{4}, []float32{9}, []float32{2, 3}, f), 4)
	setup("TestSetupAspectRatio", cfg([]float32{4}, []float32{9}, []float32{2, 3}, tr), 6)
	setup("TestSetupAspectRatioMultiSize", cfg([]float32{4, 14}, []float32{9, 19}, []float32{2, 3}, tr), 12)

	// check compares the top's values at the given indices, then every
	// variance with variance(d).
	type at struct {
		i    int
		want float64
	}
	check := func(t *testing.T, top *tensor.Blob, vals []at, variance func(d int) float64) {
		t.Helper()
		for _, v := range vals {
			if g := float64(top.Data[v.i]); math.Abs(g-v.want) > eps {
				t.Errorf("top[%d] = %v, want %v", v.i, g, v.want)
			}
		}
		dim := top.Shape[2]
		for d := range dim {
			if g, w := float64(top.Data[dim+d]), variance(d); math.Abs(g-w) > eps {
				t.Fatalf("variance %d = %v, want %v", d, g, w)
			}
		}
	}
	box := func(i int, xmin, ymin, xmax, ymax float64) []at {
		return []at{{i, xmin}, {i + 1, ymin}, {i + 2, xmax}, {i + 3, ymax}}
	}
	join := func(parts ...[]at) []at {
		var out []at
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	v01 := func(int) float64 { return 0.1 }
	first, second := box(0, 0.03, 0.03, 0.07, 0.07), box(4, 0.02, 0.02, 0.08, 0.08)
	r12 := func(i int, c float64) []at { return box(i, c-0.02*s2, c-0.01*s2, c+0.02*s2, c+0.01*s2) }
	r21 := func(i int, c float64) []at { return box(i, c-0.01*s2, c-0.02*s2, c+0.01*s2, c+0.02*s2) }
	t.Run("PriorBoxLayerTest.TestCPU", func(t *testing.T) {
		top := run(t, cfg([]float32{4}, []float32{9}, nil, tr), feat, img)
		check(t, top, join(first, second, box(4*10*2*4+4*2*4, 0.43, 0.43, 0.47, 0.47)), v01)
	})
	t.Run("PriorBoxLayerTest.TestCPUNoMaxSize", func(t *testing.T) {
		top := run(t, cfg([]float32{4}, nil, nil, tr), feat, img)
		check(t, top, join(first, box(4*10*1*4+4*1*4, 0.43, 0.43, 0.47, 0.47)), v01)
	})
	t.Run("PriorBoxLayerTest.TestCPUVariance1", func(t *testing.T) {
		c := cfg([]float32{4}, []float32{9}, nil, tr)
		c.Variance = []float32{1}
		top := run(t, c, feat, img)
		check(t, top, join(first, second, box(4*10*2*4+4*2*4, 0.43, 0.43, 0.47, 0.47)), func(int) float64 { return 1 })
	})
	t.Run("PriorBoxLayerTest.TestCPUVarianceMulti", func(t *testing.T) {
		c := cfg([]float32{4}, []float32{9}, nil, tr)
		c.Variance = []float32{0.1, 0.2, 0.3, 0.4}
		top := run(t, c, feat, img)
		check(t, top, join(first, second, box(4*10*2*4+4*2*4, 0.43, 0.43, 0.47, 0.47)), func(d int) float64 { return 0.1 * float64(d%4+1) })
	})
	t.Run("PriorBoxLayerTest.TestCPUAspectRatioNoFlip", func(t *testing.T) {
		top := run(t, cfg([]float32{4}, []float32{9}, []float32{2}, f), feat, img)
		o := 4*10*3*4 + 4*3*4
		check(t, top, join(first, second, r12(8, 0.05), box(o, 0.43, 0.43, 0.47, 0.47), r12(o+8, 0.45)), v01)
	})
	t.Run("PriorBoxLayerTest.TestCPUAspectRatio", func(t *testing.T) {
		top := run(t, cfg([]float32{4}, []float32{9}, []float32{2}, tr), feat, img)
		o := 4*10*4*4 + 4*4*4
		check(t, top, join(first, second, r12(8, 0.05), r21(12, 0.05), box(o, 0.43, 0.43, 0.47, 0.47), r12(o+8, 0.45), r21(o+12, 0.45)), v01)
	})
	t.Run("PriorBoxLayerTest.TestCPUAspectRatioMultiSize", func(t *testing.T) {
		c := cfg([]float32{4, 8}, []float32{9, 18}, []float32{2}, tr)
		c.Clip = true
		top := run(t, c, feat, img)
		o := 8*10*4*4 + 8*4*4
		check(t, top, join(first, second, r12(8, 0.05), r21(12, 0.05),
			box(16, 0.01, 0.01, 0.09, 0.09), box(20, 0, 0, 0.11, 0.11),
			box(24, 0, 0.05-0.04/s2, 0.05+0.04*s2, 0.05+0.04/s2), box(28, 0.05-0.04/s2, 0, 0.05+0.04/s2, 0.05+0.04*s2),
			box(o, 0.43, 0.43, 0.47, 0.47), r12(o+8, 0.45), r21(o+12, 0.45)), v01)
	})
	t.Run("PriorBoxLayerTest.TestCPUFixStep", func(t *testing.T) {
		c := cfg([]float32{4}, []float32{9}, []float32{2}, tr)
		c.ImgH, c.ImgW, c.StepH, c.StepW = 100, 100, 10, 10
		top := run(t, c, []int{10, 10, 20, 10}, []int{10, 3, 200, 100})
		o := 14*10*4*4 + 4*4*4
		check(t, top, join(first, second, r12(8, 0.05), r21(12, 0.05), box(o, 0.43, 1.43, 0.47, 1.47),
			box(o+8, 0.45-0.02*s2, 1.45-0.01*s2, 0.45+0.02*s2, 1.45+0.01*s2),
			box(o+12, 0.45-0.01*s2, 1.45-0.02*s2, 0.45+0.01*s2, 1.45+0.02*s2)), v01)
	})
}

// TestCaffePortDetectionOutput ports SSD's test_detection_output_layer.cpp
// (weiliu89/caffe, branch ssd): 2 images, 4 priors of side 0.3 centred on
// a 2×2 grid, 2 classes, nms_threshold 0.1, top_k 2.
func TestCaffePortDetectionOutput(t *testing.T) {
	const num, priors, classes = 2, 4, 2
	prior := tensor.NewBlob("prior", num, 2, priors*4, 1)
	idx := 0
	for h := range 2 {
		cy := (float32(h) + 0.5) * 0.5
		for w := range 2 {
			cx := (float32(w) + 0.5) * 0.5
			copy(prior.Data[idx:], []float32{cx - 0.15, cy - 0.15, cx + 0.15, cy + 0.15})
			idx += 4
		}
	}
	for i := range idx {
		prior.Data[idx+i] = 0.1
	}
	conf := tensor.NewBlob("conf", num, priors*classes, 1, 1)
	idx = 0
	for i := range num {
		for j := range priors {
			for c := range classes {
				if i%2 == c%2 {
					conf.Data[idx] = float32(j) * 0.2
				} else {
					conf.Data[idx] = 1 - float32(j)*0.2
				}
				idx++
			}
		}
	}
	loc := func(share bool) *tensor.Blob {
		lc := 1
		if !share {
			lc = classes
		}
		b := tensor.NewBlob("loc", num, priors*lc*4, 1, 1)
		idx := 0
		for i := range num {
			for h := range 2 {
				for w := range 2 {
					for c := range lc {
						v := float32(i) + float32(c)/2 + 0.5
						sw, sh := v, v
						if w%2 == 1 {
							sw = -v
						}
						if h%2 == 1 {
							sh = -v
						}
						copy(b.Data[idx:], []float32{sw, sh, sw, sh})
						idx += 4
					}
				}
			}
		}
		return b
	}
	run := func(t *testing.T, share bool, background, topK int, rows ...string) {
		t.Helper()
		c := &DetectionOutputConfig{NumClasses: classes, ShareLocation: share, BackgroundLabelID: background,
			NMSThreshold: 0.1, Eta: 1, TopK: topK, Code: CodeCorner, KeepTopK: -1, ConfidenceThreshold: -math.MaxFloat32}
		l, err := c.Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		bottom := []*tensor.Blob{loc(share), conf, prior}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		setUpShaped(t, l, bottom, top)
		if rows == nil {
			if want := (tensor.Shape{1, 1, 1, 7}); !top[0].Shape.Equal(want) {
				t.Errorf("top %v, want %v", top[0].Shape, want)
			}
			return
		}
		l.Forward(bottom, top)
		if want := (tensor.Shape{1, 1, len(rows), 7}); !top[0].Shape.Equal(want) {
			t.Fatalf("top %v, want %v", top[0].Shape, want)
		}
		for r, row := range rows {
			for k, s := range strings.Fields(row) {
				w, _ := strconv.ParseFloat(s, 64)
				g := float64(top[0].Data[r*7+k])
				if k < 2 && int(g) != int(w) || k >= 2 && math.Abs(g-w) > 1e-6 {
					t.Errorf("row %d column %d = %v, want %v (row %q)", r, k, g, w, row)
				}
			}
		}
	}
	t.Run("DetectionOutputLayerTest.TestSetup", func(t *testing.T) { run(t, true, 0, -1) })
	t.Run("DetectionOutputLayerTest.TestForwardShareLocation", func(t *testing.T) {
		run(t, true, 0, -1, "0 1 1.0 0.15 0.15 0.45 0.45", "0 1 0.8 0.55 0.15 0.85 0.45", "0 1 0.6 0.15 0.55 0.45 0.85",
			"0 1 0.4 0.55 0.55 0.85 0.85", "1 1 0.6 0.45 0.45 0.75 0.75", "1 1 0.0 0.25 0.25 0.55 0.55")
	})
	t.Run("DetectionOutputLayerTest.TestForwardShareLocationTopK", func(t *testing.T) {
		run(t, true, 0, 2, "0 1 1.0 0.15 0.15 0.45 0.45", "0 1 0.8 0.55 0.15 0.85 0.45", "1 1 0.6 0.45 0.45 0.75 0.75")
	})
	t.Run("DetectionOutputLayerTest.TestForwardNoShareLocation", func(t *testing.T) {
		run(t, false, -1, -1, "0 0 0.6 0.55 0.55 0.85 0.85", "0 0 0.4 0.15 0.55 0.45 0.85", "0 0 0.2 0.55 0.15 0.85 0.45",
			"0 0 0.0 0.15 0.15 0.45 0.45", "0 1 1.0 0.20 0.20 0.50 0.50", "0 1 0.8 0.50 0.20 0.80 0.50",
			"0 1 0.6 0.20 0.50 0.50 0.80", "0 1 0.4 0.50 0.50 0.80 0.80", "1 0 1.0 0.25 0.25 0.55 0.55",
			"1 0 0.4 0.45 0.45 0.75 0.75", "1 1 0.6 0.40 0.40 0.70 0.70")
	})
	t.Run("DetectionOutputLayerTest.TestForwardNoShareLocationTopK", func(t *testing.T) {
		run(t, false, -1, 2, "0 0 0.6 0.55 0.55 0.85 0.85", "0 0 0.4 0.15 0.55 0.45 0.85", "0 1 1.0 0.20 0.20 0.50 0.50",
			"0 1 0.8 0.50 0.20 0.80 0.50", "1 0 1.0 0.25 0.25 0.55 0.55", "1 1 0.6 0.40 0.40 0.70 0.70")
	})
	t.Run("DetectionOutputLayerTest.TestForwardNoShareLocationNeg0", func(t *testing.T) {
		run(t, false, 0, -1, "0 1 1.0 0.20 0.20 0.50 0.50", "0 1 0.8 0.50 0.20 0.80 0.50", "0 1 0.6 0.20 0.50 0.50 0.80",
			"0 1 0.4 0.50 0.50 0.80 0.80", "1 1 0.6 0.40 0.40 0.70 0.70")
	})
	t.Run("DetectionOutputLayerTest.TestForwardNoShareLocationNeg0TopK", func(t *testing.T) {
		run(t, false, 0, 2, "0 1 1.0 0.20 0.20 0.50 0.50", "0 1 0.8 0.50 0.20 0.80 0.50", "1 1 0.6 0.40 0.40 0.70 0.70")
	})
}
