package layers

import (
	"fmt"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestAccuracyValues(t *testing.T) {
	scores := []float32{
		0.1, 0.5, 0.4, // label 1: best
		0.3, 0.2, 0.5, // label 0: second
		0.6, 0.3, 0.1, // label 2: third
		0.2, 0.2, 0.6, // label 1: tied with class 0 for second, counted third as in Caffe
	}
	labels := []float32{1, 0, 2, 1}
	tests := []struct {
		topK     int
		ignore   *int
		want     float32
		perClass []float32
	}{
		{1, nil, 0.25, []float32{0, 0.5, 0}},
		{2, nil, 0.5, []float32{1, 0.5, 0}},
		{3, nil, 1, []float32{1, 1, 1}},
		{1, intPtr(1), 0, []float32{0, 0, 0}},
		{2, intPtr(1), 0.5, []float32{1, 0, 0}},
		{1, intPtr(0), 1.0 / 3, []float32{0, 0.5, 0}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("top%d ignore %v", tc.topK, tc.ignore != nil), func(t *testing.T) {
			bs := []*tensor.Blob{newBlobData([]int{4, 3}, scores), newBlobData([]int{4}, labels)}
			ts := []*tensor.Blob{tensor.NewBlob("acc"), tensor.NewBlob("per class")}
			l := newTestLayer(t, &AccuracyConfig{TopK: tc.topK, Axis: 1, IgnoreLabel: tc.ignore}, Context{Phase: Test}, bs, ts)
			if !ts[1].Shape.Equal(tensor.Shape{3}) {
				t.Fatalf("per-class shape %v, want [3]", ts[1].Shape)
			}
			l.Forward(bs, ts)
			assertClose(t, "accuracy", ts[0].Data, []float32{tc.want}, 1e-6)
			assertClose(t, "per class", ts[1].Data, tc.perClass, 1e-6)
		})
	}
}

func TestAccuracyInnerPositions(t *testing.T) {
	// 1×3×2, classes on axis 1: position 0 scores (1, 2, 3), position 1
	// scores (0, 5, 1).
	bs := []*tensor.Blob{newBlobData([]int{1, 3, 2}, []float32{1, 0, 2, 5, 3, 1}), newBlobData([]int{1, 2}, []float32{2, 0})}
	ts := []*tensor.Blob{tensor.NewBlob("acc")}
	l := newTestLayer(t, &AccuracyConfig{TopK: 1, Axis: 1}, Context{}, bs, ts)
	l.Forward(bs, ts)
	assertClose(t, "accuracy", ts[0].Data, []float32{0.5}, 0)
	// No gradient: Backward leaves the bottoms alone.
	for i := range bs[0].Diff {
		bs[0].Diff[i] = 3
	}
	l.Backward(ts, []bool{true, true}, bs)
	assertClose(t, "diff", bs[0].Diff, []float32{3, 3, 3, 3, 3, 3}, 0)
}

func TestAccuracyErrors(t *testing.T) {
	if _, err := (&AccuracyConfig{TopK: 0, Axis: 1}).Build(Context{}); err == nil {
		t.Error("top_k 0: no error")
	}
	for _, tc := range []struct {
		name    string
		topK    int
		shapes  [][]int
		wantErr string
	}{
		{"top_k above classes", 4, [][]int{{2, 3}, {2}}, "top_k 4 exceeds the 3 classes"},
		{"label count", 1, [][]int{{2, 3}, {3}}, "has 3 values, want 2"},
		{"axis", 1, [][]int{{6}, {6}}, "axis 1 out of range"},
	} {
		l, err := (&AccuracyConfig{TopK: tc.topK, Axis: 1}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		var bs []*tensor.Blob
		for _, s := range tc.shapes {
			bs = append(bs, tensor.NewBlob("", s...))
		}
		err = l.Setup(bs, []*tensor.Blob{tensor.NewBlob("acc")})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}
