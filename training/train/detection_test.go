package train

import (
	"math"
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// evalBlob is a DetectionEvaluate top holding rows.
func evalBlob(rows ...[5]float32) *tensor.Blob {
	b := tensor.NewBlob("detection_eval", 1, 1, len(rows), 5)
	for i, r := range rows {
		copy(b.Data[i*5:], r[:])
	}
	return b
}

// TestDetectionTally: DetectionEvaluate rows over two batches give the
// fork's TestDetection mAP: test_bbox_util.cpp's TestComputeAP detections
// (label 1, five ground truth boxes counted over both batches) split
// between the batches, a row matched to a difficult box (skipped), and a
// label 2 with ground truth but no detection, which counts 0 in the mean.
func TestDetectionTally(t *testing.T) {
	scores := []float32{1, 1, 0.9, 0.9, 0.8, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4}
	flags := []float32{0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 1}
	batch := func(from, to int, numPos1, numPos2 float32) *tensor.Blob {
		rows := [][5]float32{{-1, 1, numPos1, -1, -1}, {-1, 2, numPos2, -1, -1}, {0, 1, 0.95, 0, 0}}
		for i := from; i < to; i++ {
			rows = append(rows, [5]float32{float32(i % 2), 1, scores[i], flags[i], 1 - flags[i]})
		}
		return evalBlob(rows...)
	}
	for _, tc := range []struct {
		version  layers.APVersion
		perClass bool
		want     float64 // the label's AP; the mAP is half of it
	}{
		{layers.AP11Point, false, 0.598662},
		{layers.APMaxIntegral, true, 0.591861},
		{layers.APIntegral, true, 0.558528},
	} {
		t.Run(string(tc.version), func(t *testing.T) {
			var d detectionTally
			for _, b := range []*tensor.Blob{batch(0, 4, 3, 1), batch(4, 11, 2, 0)} {
				if err := d.add(b, 0); err != nil {
					t.Fatal(err)
				}
			}
			vs, err := d.mAP("detection_eval", 0, &DetectionEval{APVersion: tc.version, PerClass: tc.perClass})
			if err != nil {
				t.Fatal(err)
			}
			if vs[0].Name != "detection_eval" || math.Abs(vs[0].Value-tc.want/2) > 1e-5 {
				t.Errorf("mAP %+v, want detection_eval = %v", vs[0], tc.want/2)
			}
			if !tc.perClass {
				if len(vs) != 1 {
					t.Errorf("per-class values %+v without show_per_class_result", vs[1:])
				}
				return
			}
			// Only labels with detections, as the fork logs them.
			if len(vs) != 2 || vs[1].Name != "detection_eval/class1" || math.Abs(vs[1].Value-tc.want) > 1e-5 {
				t.Errorf("per class %+v, want detection_eval/class1 = %v", vs[1:], tc.want)
			}
		})
	}
	t.Run("later net", func(t *testing.T) {
		var d detectionTally
		if err := d.add(batch(0, 11, 5, 1), 1); err != nil {
			t.Fatal(err)
		}
		vs, err := d.mAP("eval", 1, &DetectionEval{APVersion: layers.AP11Point, PerClass: true})
		if err != nil {
			t.Fatal(err)
		}
		if vs[0].Name != "net1/eval" || vs[1].Name != "net1/eval/class1" || vs[1].Output() != "eval/class1" {
			t.Errorf("names %+v", vs)
		}
	})
	t.Run("no detections", func(t *testing.T) {
		var d detectionTally
		if err := d.add(evalBlob([5]float32{-1, 1, 2, -1, -1}), 0); err != nil {
			t.Fatal(err)
		}
		vs, err := d.mAP("e", 0, &DetectionEval{APVersion: layers.AP11Point})
		if err != nil || len(vs) != 1 || vs[0].Value != 0 {
			t.Errorf("mAP %+v, %v; want 0", vs, err)
		}
	})
	for _, tc := range []struct {
		name string
		blob *tensor.Blob
		want string
	}{
		{"scalar loss output", tensor.NewBlob("mbox_loss"), "output 'mbox_loss' of test net #0 has shape []"},
		{"accuracy rows", tensor.NewBlob("acc", 1, 1, 3, 4), "output 'acc' of test net #0 has shape [1 1 3 4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d detectionTally
			err := d.add(tc.blob, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "DetectionEvaluate rows") {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("too many true positives", func(t *testing.T) {
		var d detectionTally
		if err := d.add(evalBlob([5]float32{-1, 1, 1, -1, -1}, [5]float32{0, 1, 0.9, 1, 0}, [5]float32{0, 1, 0.8, 1, 0}), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.mAP("e", 0, &DetectionEval{APVersion: layers.APIntegral}); err == nil || !strings.Contains(err.Error(), "label 1") {
			t.Errorf("error %v, want one naming label 1", err)
		}
	})
}
