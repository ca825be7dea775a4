package layers

import (
	"math"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// SSD's inference layers (weiliu89/caffe, branch ssd): PriorBox and
// DetectionOutput against the float64 oracle of scripts/ssd_layers.py
// (testdata/ssd_layers.json), the fork's own tests (test_prior_box_layer.cpp,
// test_detection_output_layer.cpp) and the fork's rules on parameters and
// shapes.

// ssdCases are the layer configurations of ssd_layers.json, by fixture name.
func ssdCases() map[string]Config {
	v4 := []float32{0.1, 0.1, 0.2, 0.2}
	do := func(c DetectionOutputConfig) *DetectionOutputConfig {
		if c.Eta == 0 {
			c.Eta = 1
		}
		return &c
	}
	return map[string]Config{
		"PriorBoxSSD": &PriorBoxConfig{MinSize: []float32{30}, MaxSize: []float32{60}, AspectRatio: []float32{2}, Flip: true,
			Variance: v4, StepH: 8, StepW: 8, Offset: 0.5},
		"PriorBoxMultiSizeClip": &PriorBoxConfig{MinSize: []float32{4.7, 6}, MaxSize: []float32{9, 11.5}, AspectRatio: []float32{2, 3, 0.5, 1},
			Flip: true, Clip: true, Variance: []float32{0.3}, ImgH: 30, ImgW: 20, Offset: 0.5},
		"PriorBoxNoFlipStep": &PriorBoxConfig{MinSize: []float32{5}, AspectRatio: []float32{2, 3}, StepH: 3, StepW: 2.5, Offset: 0.25},
		"DetectionOutputCenterSize": do(DetectionOutputConfig{NumClasses: 3, ShareLocation: true, NMSThreshold: 0.45, TopK: 10,
			Code: CodeCenterSize, KeepTopK: 6, ConfidenceThreshold: 0.1}),
		"DetectionOutputCornerNoShare": do(DetectionOutputConfig{NumClasses: 3, BackgroundLabelID: -1, NMSThreshold: 0.7, Eta: 0.8, TopK: -1,
			Code: CodeCorner, KeepTopK: -1, ConfidenceThreshold: 0.5}),
		"DetectionOutputCornerSizeEncoded": do(DetectionOutputConfig{NumClasses: 4, ShareLocation: true, BackgroundLabelID: 1, NMSThreshold: 0.3, TopK: 5,
			Code: CodeCornerSize, VarianceEncodedInTarget: true, KeepTopK: 8, ConfidenceThreshold: 0.05}),
		"DetectionOutputEmpty": do(DetectionOutputConfig{NumClasses: 3, ShareLocation: true, NMSThreshold: 0.3, TopK: -1,
			Code: CodeCenterSize, KeepTopK: -1, ConfidenceThreshold: 0.999}),
	}
}

// TestSSDFixtures compares PriorBox (within 1e-6) and DetectionOutput
// (within 1e-5, with the same images, labels and order) with the float64
// oracle, twice: the second Forward runs on the tops the first shaped.
func TestSSDFixtures(t *testing.T) {
	cases := ssdCases()
	fx := loadTorchFixture(t, "testdata/ssd_layers.json")
	if len(fx) != len(cases) {
		t.Errorf("%d fixtures, %d configurations", len(fx), len(cases))
	}
	for _, tc := range fx {
		t.Run(tc.Name, func(t *testing.T) {
			cfg, ok := cases[tc.Name]
			if !ok {
				t.Fatalf("no configuration for %s", tc.Name)
			}
			l, bottom, top := tc.setUp(t, caffeCase{cfg: cfg})
			tol := 1e-6
			if strings.HasPrefix(tc.Name, "DetectionOutput") {
				tol = 1e-5
			}
			want := tc.Tops[0]
			for pass := range 2 {
				l.Forward(bottom, top)
				if !top[0].Shape.Equal(want.Shape) {
					t.Fatalf("pass %d: top %v, want %v", pass, top[0].Shape, want.Shape)
				}
				for i, w := range want.Data {
					g := float64(top[0].Data[i])
					exact := tol == 1e-5 && i%7 < 2 // image and label
					if exact && g != w || math.Abs(g-w) > tol {
						t.Fatalf("pass %d: top[%d] (row %d, column %d) = %v, want %v", pass, i, i/7, i%7, g, w)
					}
				}
			}
		})
	}
}

// TestSSDLayersNoAllocs: after a first pass, Forward allocates nothing
// while the detections keep their count.
func TestSSDLayersNoAllocs(t *testing.T) {
	cases := ssdCases()
	for _, tc := range loadTorchFixture(t, "testdata/ssd_layers.json") {
		l, bottom, top := tc.setUp(t, caffeCase{cfg: cases[tc.Name]})
		l.Forward(bottom, top)
		if n := testing.AllocsPerRun(5, func() { l.Forward(bottom, top) }); n != 0 {
			t.Errorf("%s: %v allocations per Forward, want 0", tc.Name, n)
		}
	}
}

// TestSSDLayerRules: the fork's checks on parameters (at Build) and on the
// bottoms' shapes (at Setup and Reshape) are errors naming the layer.
func TestSSDLayerRules(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no min_size", &PriorBoxConfig{Offset: 0.5}, "PriorBox needs min_size"},
		{"min_size 0", &PriorBoxConfig{MinSize: []float32{0}}, "min_size must be positive"},
		{"max_size count", &PriorBoxConfig{MinSize: []float32{4, 5}, MaxSize: []float32{9}}, "1 max_size for 2 min_size"},
		{"max_size below", &PriorBoxConfig{MinSize: []float32{4}, MaxSize: []float32{4}}, "max_size 4 must be greater than its min_size 4"},
		{"aspect_ratio 0", &PriorBoxConfig{MinSize: []float32{4}, AspectRatio: []float32{0}}, "aspect_ratio must be positive"},
		{"aspect_ratio NaN", &PriorBoxConfig{MinSize: []float32{4}, AspectRatio: []float32{float32(math.NaN())}}, "aspect_ratio must be positive"},
		{"variance 3", &PriorBoxConfig{MinSize: []float32{4}, Variance: []float32{1, 2, 3}}, "give 1 or 4 variance values, got 3"},
		{"variance 0", &PriorBoxConfig{MinSize: []float32{4}, Variance: []float32{0}}, "variance must be positive"},
		{"img_h alone", &PriorBoxConfig{MinSize: []float32{4}, ImgH: 3}, "img_h 3 and img_w 0 must both be positive"},
		{"step_w alone", &PriorBoxConfig{MinSize: []float32{4}, StepW: 3}, "step_h 0 and step_w 3 must both be positive"},
		{"num_classes 0", &DetectionOutputConfig{Eta: 1, Code: CodeCorner}, "needs num_classes of at least 1"},
		{"eta 0", &DetectionOutputConfig{NumClasses: 2, Code: CodeCorner}, "eta must be in (0, 1]"},
		{"nms negative", &DetectionOutputConfig{NumClasses: 2, Eta: 1, NMSThreshold: -1, Code: CodeCorner}, "nms_threshold must not be negative"},
		{"code 0", &DetectionOutputConfig{NumClasses: 2, Eta: 1}, "unknown code type BBoxCode(0)"},
	} {
		if _, err := c.cfg.Build(Context{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	blob := func(shape ...int) *tensor.Blob { return tensor.NewBlob("b", shape...) }
	pb := &PriorBoxConfig{MinSize: []float32{4}, Offset: 0.5}
	do := &DetectionOutputConfig{NumClasses: 2, ShareLocation: true, Eta: 1, TopK: -1, KeepTopK: -1, Code: CodeCorner}
	for _, c := range []struct {
		name   string
		cfg    Config
		bottom []*tensor.Blob
		want   string
	}{
		{"PriorBox one bottom", pb, []*tensor.Blob{blob(1, 1, 3, 3)}, "PriorBox takes 2 bottom blob(s), got 1"},
		{"PriorBox 2-D feature map", pb, []*tensor.Blob{blob(1, 9), blob(1, 1, 3, 3)}, "bottom 0 (the feature map) must be N×C×H×W, got"},
		{"PriorBox 2-D image", pb, []*tensor.Blob{blob(1, 1, 3, 3), blob(1, 9)}, "bottom 1 (the image) must be N×C×H×W"},
		{"DetectionOutput two bottoms", do, []*tensor.Blob{blob(1, 4), blob(1, 2)}, "DetectionOutput takes 3 bottom blob(s), got 2"},
		{"DetectionOutput priors 1×1×4", do, []*tensor.Blob{blob(1, 4), blob(1, 2), blob(1, 1, 4)}, "bottom 2 (the priors) must be PriorBox's 1×2×(P·4)"},
		{"DetectionOutput priors 1×2×6", do, []*tensor.Blob{blob(1, 4), blob(1, 2), blob(1, 2, 6)}, "bottom 2 (the priors) must be PriorBox's 1×2×(P·4)"},
		{"DetectionOutput loc count", do, []*tensor.Blob{blob(1, 8), blob(1, 2), blob(1, 2, 4)}, "has 8 values per image; 1 priors × 1 location classes × 4 need 4"},
		{"DetectionOutput conf count", do, []*tensor.Blob{blob(1, 4), blob(1, 3), blob(1, 2, 4)}, "has 3 values per image; 1 priors × 2 classes need 2"},
		{"DetectionOutput images", do, []*tensor.Blob{blob(2, 4), blob(1, 2), blob(1, 2, 4)}, "must have the same number of images"},
	} {
		l, err := c.cfg.Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		if err = l.Setup(c.bottom, top); err == nil {
			err = l.Reshape(c.bottom, top)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
