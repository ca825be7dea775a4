package layers

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// fillRows parses space-separated rows of width w into a 1×1×len(rows)×w
// blob.
func fillRows(t *testing.T, name string, w int, rows ...string) *tensor.Blob {
	t.Helper()
	b := tensor.NewBlob(name, 1, 1, len(rows), w)
	for r, s := range rows {
		f := strings.Fields(s)
		if len(f) != w {
			t.Fatalf("%s row %d: %d values, want %d", name, r, len(f), w)
		}
		for i, v := range f {
			x, err := strconv.ParseFloat(v, 32)
			if err != nil {
				t.Fatal(err)
			}
			b.Data[r*w+i] = float32(x)
		}
	}
	return b
}

// runDetectionEvaluate builds, sets up, reshapes and runs a
// DetectionEvaluate layer, returning its top.
func runDetectionEvaluate(t *testing.T, c *DetectionEvaluateConfig, det, gt *tensor.Blob) *tensor.Blob {
	t.Helper()
	l, err := c.Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	bottom := []*tensor.Blob{det, gt}
	top := []*tensor.Blob{tensor.NewBlob("eval")}
	setUpShaped(t, l, bottom, top)
	l.Forward(bottom, top)
	return top[0]
}

// checkEvalRows compares a DetectionEvaluate top with rows: the score
// within 1e-6, the rest as integers (the fork's CheckEqual).
func checkEvalRows(t *testing.T, top *tensor.Blob, want []string) {
	t.Helper()
	if w := (tensor.Shape{1, 1, len(want), 5}); !top.Shape.Equal(w) {
		t.Fatalf("top %v, want %v", top.Shape, w)
	}
	for r, s := range want {
		for i, v := range strings.Fields(s) {
			x, _ := strconv.ParseFloat(v, 64)
			got := top.Data[r*5+i]
			if i == 2 && math.Abs(float64(got)-x) > 1e-6 || i != 2 && int(got) != int(x) {
				t.Errorf("row %d: got %v, want %s", r, top.Data[r*5:r*5+5], s)
				break
			}
		}
	}
}

// TestCaffePortDetectionEvaluate ports SSD's
// test_detection_evaluate_layer.cpp (weiliu89/caffe, branch ssd): three
// classes, overlap threshold 0.3, a difficult ground truth box, a
// detection of a class beyond num_classes and one of an image without
// ground truth.
func TestCaffePortDetectionEvaluate(t *testing.T) {
	det := func() *tensor.Blob {
		return fillRows(t, "det", 7,
			"0 1 0.3 0.1 0.0 0.4 0.3",
			"0 1 0.7 0.0 0.1 0.2 0.3",
			"0 1 0.9 0.7 0.6 0.8 0.8",
			"1 2 0.8 0.2 0.1 0.4 0.4",
			"1 2 0.1 0.4 0.3 0.7 0.5",
			"1 1 0.2 0.8 0.1 1.0 0.3",
			"1 3 0.2 0.8 0.1 1.0 0.3",
			"2 1 0.2 0.8 0.1 1.0 0.3")
	}
	gt := func() *tensor.Blob {
		return fillRows(t, "gt", 8,
			"0 1 0 0.1 0.1 0.3 0.3 0",
			"0 1 0 0.6 0.6 0.8 0.8 1",
			"1 2 0 0.3 0.3 0.6 0.5 0",
			"1 1 0 0.7 0.1 0.9 0.3 0")
	}
	for _, tc := range []struct {
		name      string
		difficult bool
		want      []string
	}{
		{"DetectionEvaluateLayerTest.TestForward", true, []string{
			"-1 1 3 -1 -1", "-1 2 1 -1 -1",
			"0 1 0.9 1 0", "0 1 0.7 1 0", "0 1 0.3 0 1",
			"1 1 0.2 1 0", "1 2 0.8 0 1", "1 2 0.1 1 0", "1 3 0.2 0 1",
			"2 1 0.2 0 1",
		}},
		{"DetectionEvaluateLayerTest.TestForwardSkipDifficult", false, []string{
			"-1 1 2 -1 -1", "-1 2 1 -1 -1",
			"0 1 0.9 0 0", "0 1 0.7 1 0", "0 1 0.3 0 1",
			"1 1 0.2 1 0", "1 2 0.8 0 1", "1 2 0.1 1 0", "1 3 0.2 0 1",
			"2 1 0.2 0 1",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &DetectionEvaluateConfig{NumClasses: 3, OverlapThreshold: 0.3, EvaluateDifficultGT: tc.difficult}
			checkEvalRows(t, runDetectionEvaluate(t, c, det(), gt()), tc.want)
		})
	}
	t.Run("DetectionEvaluateLayerTest.TestSetup", func(t *testing.T) {
		l, err := (&DetectionEvaluateConfig{NumClasses: 3, OverlapThreshold: 0.3, EvaluateDifficultGT: true}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		bottom := []*tensor.Blob{det(), gt()}
		top := []*tensor.Blob{tensor.NewBlob("eval")}
		setUpShaped(t, l, bottom, top)
		if want := (tensor.Shape{1, 1, 8 + 2, 5}); !top[0].Shape.Equal(want) {
			t.Errorf("top %v, want %v", top[0].Shape, want)
		}
	})
}

// TestCaffePortComputeAP ports SSD's test_bbox_util.cpp TestCumSum and
// TestComputeAP (weiliu89/caffe, branch ssd): eleven detections of a class
// with five ground truth boxes, then their first seven.
func TestCaffePortComputeAP(t *testing.T) {
	t.Run("CPUBBoxUtilTest.TestCumSum", func(t *testing.T) {
		got := cumSum([]ScoreFlag{{0.1, 0}, {0.2, 1}, {0.3, 0}})
		if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 1 {
			t.Errorf("cumsum %v, want [0 1 1]", got)
		}
	})
	t.Run("CPUBBoxUtilTest.TestComputeAP", func(t *testing.T) {
		const eps = 1e-5
		scores := []float32{1, 1, 0.9, 0.9, 0.8, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4}
		flags := []int{0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 1}
		var tp, fp []ScoreFlag
		for i, s := range scores {
			tp = append(tp, ScoreFlag{s, flags[i]})
			fp = append(fp, ScoreFlag{s, 1 - flags[i]})
		}
		wantPrec := []float64{0. / 1, 1. / 2, 2. / 3, 2. / 4, 3. / 5, 3. / 6, 4. / 7, 4. / 8, 4. / 9, 4. / 10, 5. / 11}
		wantRec := []float64{0, 0.2, 0.4, 0.4, 0.6, 0.6, 0.8, 0.8, 0.8, 0.8, 1}
		for _, tc := range []struct {
			n       int
			version APVersion
			ap      float64
		}{
			{11, APIntegral, 0.558528},
			{11, APMaxIntegral, 0.591861},
			{11, AP11Point, 0.598662},
			// The fork subtracts prec_old.back(), the full list's last
			// precision 5/11, times the recall step or the points lost.
			{7, APIntegral, 0.558528 - 5./11*0.2},
			{7, APMaxIntegral, 0.591861 - 5./11*0.2},
			{7, AP11Point, 0.598662 - 5./11*2/11},
		} {
			ap, prec, rec, err := ComputeAP(tp[:tc.n], 5, fp[:tc.n], tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(ap)-tc.ap) > eps {
				t.Errorf("%d detections, %s: ap %v, want %v", tc.n, tc.version, ap, tc.ap)
			}
			if len(prec) != tc.n || len(rec) != tc.n {
				t.Fatalf("%d detections, %s: %d precisions, %d recalls", tc.n, tc.version, len(prec), len(rec))
			}
			for i := range tc.n {
				if math.Abs(float64(prec[i])-wantPrec[i]) > eps || math.Abs(float64(rec[i])-wantRec[i]) > eps {
					t.Errorf("%d detections, %s: step %d prec %v rec %v, want %v %v", tc.n, tc.version, i, prec[i], rec[i], wantPrec[i], wantRec[i])
				}
			}
		}
	})
}

// TestComputeAPOracle checks ComputeAP's three versions against
// scripts/ap_oracle.py (testdata/ap_oracle.json), the PASCAL VOC devkit's
// definitions in float64 numpy, on seeded random detection lists with
// tied scores and on edge cases.
func TestComputeAPOracle(t *testing.T) {
	src, err := os.ReadFile("testdata/ap_oracle.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name   string
		Scores []float32
		TP     []int
		NumPos int `json:"num_pos"`
		AP     map[string]float64
	}
	if err := json.Unmarshal(src, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("%d cases in ap_oracle.json", len(cases))
	}
	for _, c := range cases {
		var tp, fp []ScoreFlag
		for i, s := range c.Scores {
			tp = append(tp, ScoreFlag{s, c.TP[i]})
			fp = append(fp, ScoreFlag{s, 1 - c.TP[i]})
		}
		for _, v := range []APVersion{AP11Point, APMaxIntegral, APIntegral} {
			want, ok := c.AP[string(v)]
			if !ok {
				t.Fatalf("%s: no %s AP", c.Name, v)
			}
			got, _, _, err := ComputeAP(tp, c.NumPos, fp, v)
			if err != nil {
				t.Errorf("%s, %s: %v", c.Name, v, err)
				continue
			}
			if math.Abs(float64(got)-want) > 1e-5 {
				t.Errorf("%s, %s: AP %v, oracle %v", c.Name, v, got, want)
			}
		}
	}
}

// TestComputeAPErrors: inputs the fork CHECK-fails on are errors.
func TestComputeAPErrors(t *testing.T) {
	one := []ScoreFlag{{0.9, 1}}
	for _, tc := range []struct {
		name   string
		tp, fp []ScoreFlag
		numPos int
		v      APVersion
		want   string
	}{
		{"version", one, []ScoreFlag{{0.9, 0}}, 1, "VOC", `unknown ap_version "VOC"`},
		{"lengths", one, nil, 1, APIntegral, "1 true-positive flags but 0 false-positive"},
		{"scores", one, []ScoreFlag{{0.8, 0}}, 1, APIntegral, "detection 0 is (0.9, 1) as a true positive but (0.8, 0)"},
		{"flags", one, []ScoreFlag{{0.9, 1}}, 1, APIntegral, "detection 0 is (0.9, 1) as a true positive but (0.9, 1)"},
		{"too many", []ScoreFlag{{0.9, 1}, {0.8, 1}}, []ScoreFlag{{0.9, 0}, {0.8, 0}}, 1, AP11Point, "2 true positives but 1 ground truth boxes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := ComputeAP(tc.tp, tc.numPos, tc.fp, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDetectionEvaluateCases: rows worked out by hand from the fork's
// Forward for what its own tests leave out.
func TestDetectionEvaluateCases(t *testing.T) {
	gt := []string{
		"0 1 0 0.1 0.1 0.3 0.3 1", // difficult
		"0 1 0 0.5 0.5 0.9 0.9 0",
		"1 3 0 0.0 0.0 0.5 0.5 0",
	}
	for _, tc := range []struct {
		name      string
		cfg       DetectionEvaluateConfig
		det, gt   []string
		want      []string
		wantShape int // rows, when the top is longer than want
	}{
		{"difficult matched and evaluated", DetectionEvaluateConfig{NumClasses: 4, OverlapThreshold: 0.5, EvaluateDifficultGT: true},
			[]string{"0 1 0.8 0.1 0.1 0.3 0.3", "0 1 0.6 0.1 0.1 0.3 0.3"}, gt,
			[]string{"-1 1 2 -1 -1", "-1 2 0 -1 -1", "-1 3 1 -1 -1", "0 1 0.8 1 0", "0 1 0.6 0 1"}, 0},
		{"difficult matched, not evaluated: neither, twice", DetectionEvaluateConfig{NumClasses: 4, OverlapThreshold: 0.5},
			[]string{"0 1 0.8 0.1 0.1 0.3 0.3", "0 1 0.6 0.1 0.1 0.3 0.3"}, gt,
			[]string{"-1 1 1 -1 -1", "-1 2 0 -1 -1", "-1 3 1 -1 -1", "0 1 0.8 0 0", "0 1 0.6 0 0"}, 0},
		// Class 2 has no ground truth: its row counts 0, its detection is
		// false. Image 1's class 3 box is found below the threshold.
		{"class without ground truth", DetectionEvaluateConfig{NumClasses: 4, OverlapThreshold: 0.5, EvaluateDifficultGT: true},
			[]string{"1 3 0.4 0.3 0.3 0.8 0.8", "0 2 0.9 0.5 0.5 0.9 0.9"}, gt,
			[]string{"-1 1 2 -1 -1", "-1 2 0 -1 -1", "-1 3 1 -1 -1", "0 2 0.9 0 1", "1 3 0.4 0 1"}, 0},
		// DetectionOutput's rows for images without detections: label -1,
		// never output; the fork's Reshape counts only label ≠ -1 rows.
		{"images without detections", DetectionEvaluateConfig{NumClasses: 4, OverlapThreshold: 0.5, EvaluateDifficultGT: true},
			[]string{"0 -1 -1 -1 -1 -1 -1", "1 -1 -1 -1 -1 -1 -1"}, gt,
			[]string{"-1 1 2 -1 -1", "-1 2 0 -1 -1", "-1 3 1 -1 -1"}, 0},
		// A row of -1s is skipped and, its label -1, not counted; a row
		// of image -1 with a label is skipped but counted by Reshape, so
		// its top row is left 0, as the fork leaves it.
		{"rows of image -1", DetectionEvaluateConfig{NumClasses: 2, OverlapThreshold: 0.5, EvaluateDifficultGT: true},
			[]string{"-1 -1 -1 -1 -1 -1 -1", "-1 1 0.5 0 0 1 1", "0 1 0.7 0.5 0.5 0.9 0.9"}, gt,
			[]string{"-1 1 2 -1 -1", "0 1 0.7 1 0", "0 0 0 0 0"}, 0},
		// Ground truth is read up to its first image -1 row.
		{"ground truth stops at image -1", DetectionEvaluateConfig{NumClasses: 2, OverlapThreshold: 0.5, EvaluateDifficultGT: true},
			[]string{"0 1 0.7 0.5 0.5 0.9 0.9"}, []string{"-1 0 0 0 0 0 0 0", "0 1 0 0.5 0.5 0.9 0.9 0"},
			[]string{"-1 1 0 -1 -1", "0 1 0.7 0 1"}, 0},
		// The better overlap wins, then the box is taken: the lower score
		// overlapping it most is false even though another box is free.
		{"greedy by score", DetectionEvaluateConfig{NumClasses: 2, BackgroundLabelID: -1, OverlapThreshold: 0.5, EvaluateDifficultGT: true},
			[]string{"0 1 0.3 0.0 0.0 0.5 0.5", "0 1 0.9 0.0 0.0 0.5 0.5"}, []string{"0 1 0 0.0 0.0 0.5 0.5 0", "0 1 0 0.0 0.0 0.45 0.5 0"},
			[]string{"-1 0 0 -1 -1", "-1 1 2 -1 -1", "0 1 0.9 1 0", "0 1 0.3 0 1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkEvalRows(t, runDetectionEvaluate(t, &tc.cfg, fillRows(t, "det", 7, tc.det...), fillRows(t, "gt", 8, tc.gt...)), tc.want)
		})
	}
}

// TestDetectionEvaluateBadInput: the fork's CHECK failures are errors (a
// bad shape at Reshape) or a panic naming the row (a background label in
// the data, which the model turns into an error naming the layer).
func TestDetectionEvaluateBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  DetectionEvaluateConfig
		want string
	}{
		{"num_classes", DetectionEvaluateConfig{OverlapThreshold: 0.5}, "num_classes of at least 1"},
		{"overlap", DetectionEvaluateConfig{NumClasses: 2}, "overlap_threshold must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cfg.Build(Context{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	c := &DetectionEvaluateConfig{NumClasses: 3, OverlapThreshold: 0.5, EvaluateDifficultGT: true}
	l, err := c.Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	top := []*tensor.Blob{tensor.NewBlob("eval")}
	if err := l.Reshape([]*tensor.Blob{tensor.NewBlob("det", 1, 1, 2, 6), tensor.NewBlob("gt", 1, 1, 1, 8)}, top); err == nil || !strings.Contains(err.Error(), "bottom 0 (the detections") {
		t.Errorf("6-wide detections: %v", err)
	}
	if err := l.Reshape([]*tensor.Blob{tensor.NewBlob("det", 1, 1, 2, 7), tensor.NewBlob("gt", 2, 1, 1, 8)}, top); err == nil || !strings.Contains(err.Error(), "bottom 1 (the ground truth") {
		t.Errorf("ground truth of 2 items: %v", err)
	}
	for _, tc := range []struct {
		name, det, gt, want string
	}{
		{"background detection", "0 0 0.5 0 0 1 1", "0 1 0 0 0 1 1 0", "detection row 0 has the background's label 0"},
		{"background ground truth", "0 1 0.5 0 0 1 1", "0 0 0 0 0 1 1 0", "ground truth row 0 has the background's label 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			runDetectionEvaluate(t, c, fillRows(t, "det", 7, tc.det), fillRows(t, "gt", 8, tc.gt))
		})
	}
}

// TestDetectionEvaluateNoAllocs: Forward reuses its buffers.
func TestDetectionEvaluateNoAllocs(t *testing.T) {
	l, err := (&DetectionEvaluateConfig{NumClasses: 3, OverlapThreshold: 0.3, EvaluateDifficultGT: true}).Build(Context{})
	if err != nil {
		t.Fatal(err)
	}
	bottom := []*tensor.Blob{
		fillRows(t, "det", 7, "0 1 0.3 0.1 0.0 0.4 0.3", "0 1 0.9 0.7 0.6 0.8 0.8", "1 2 0.8 0.2 0.1 0.4 0.4", "2 1 0.2 0.8 0.1 1.0 0.3"),
		fillRows(t, "gt", 8, "0 1 0 0.1 0.1 0.3 0.3 0", "0 1 0 0.6 0.6 0.8 0.8 1", "1 2 0 0.3 0.3 0.6 0.5 0"),
	}
	top := []*tensor.Blob{tensor.NewBlob("eval")}
	setUpShaped(t, l, bottom, top)
	l.Forward(bottom, top)
	if n := testing.AllocsPerRun(5, func() { l.Forward(bottom, top) }); n != 0 {
		t.Errorf("%v allocations per Forward, want 0", n)
	}
}
