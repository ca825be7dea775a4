package layers

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func intPtr(v int) *int { return &v }

func TestSoftmaxWithLossValues(t *testing.T) {
	bs := []*tensor.Blob{
		newBlobData([]int{2, 3}, []float32{1, 2, 3, 1, 1, 1}),
		newBlobData([]int{2}, []float32{2, 0}),
	}
	ts := []*tensor.Blob{tensor.NewBlob("loss"), tensor.NewBlob("prob")}
	l := newTestLayer(t, &SoftmaxWithLossConfig{Axis: 1}, Context{}, bs, ts)
	if _, ok := l.(LossLayer); !ok {
		t.Fatal("SoftmaxWithLoss is not a LossLayer")
	}
	if len(ts[0].Shape) != 0 || ts[0].Count() != 1 {
		t.Fatalf("loss shape %v, want a scalar", ts[0].Shape)
	}
	l.Forward(bs, ts)
	// (-log 0.66524096 - log 1/3) / 2
	assertClose(t, "loss", ts[0].Data, []float32{0.75310913}, 1e-6)
	assertClose(t, "prob", ts[1].Data, []float32{0.09003057, 0.24472847, 0.66524096, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-6)
	// Loss weight 2 doubles (prob - onehot)/2.
	ts[0].Diff[0] = 2
	for i := range bs[1].Diff {
		bs[1].Diff[i] = 7
	}
	l.Backward(ts, []bool{true, true}, bs)
	assertClose(t, "diff", bs[0].Diff, []float32{0.09003057, 0.24472847, 0.66524096 - 1, 1.0/3 - 1, 1.0 / 3, 1.0 / 3}, 1e-6)
	assertClose(t, "label diff untouched", bs[1].Diff, []float32{7, 7}, 0)
}

func TestSoftmaxWithLossNormalization(t *testing.T) {
	// Scores 2×3×2, all zero: every position costs ln 3. Labels (per image,
	// per position) 0, -1 | 2, 1 with ignore_label -1: three count.
	ln3 := math.Log(3)
	tests := []struct {
		norm    LossNormalization
		divisor float64
	}{
		{NormValid, 3},
		{NormBatchSize, 2},
		{NormFull, 4},
		{NormNone, 1},
	}
	for _, tc := range tests {
		bs := []*tensor.Blob{tensor.NewBlob("x", 2, 3, 2), newBlobData([]int{2, 1, 2}, []float32{0, -1, 2, 1})}
		ts := []*tensor.Blob{tensor.NewBlob("loss")}
		l := newTestLayer(t, &SoftmaxWithLossConfig{Axis: 1, IgnoreLabel: intPtr(-1), Normalization: tc.norm}, Context{}, bs, ts)
		l.Forward(bs, ts)
		assertClose(t, fmt.Sprint("loss ", tc.norm), ts[0].Data, []float32{float32(3 * ln3 / tc.divisor)}, 1e-6)
		ts[0].Diff[0] = 1
		l.Backward(ts, []bool{true, false}, bs)
		third, d := float32(1.0/3), float32(tc.divisor)
		want := []float32{
			(third - 1) / d, 0, third / d, 0, third / d, 0, // image 0: position 1 ignored
			third / d, third / d, third / d, (third - 1) / d, (third - 1) / d, third / d,
		}
		assertClose(t, fmt.Sprint("diff ", tc.norm), bs[0].Diff, want, 1e-6)
	}
}

func TestSoftmaxWithLossAllIgnored(t *testing.T) {
	// VALID with nothing valid divides by 1, not 0.
	bs := []*tensor.Blob{randBlob([]int{2, 3}, 1), newBlobData([]int{2}, []float32{4, 4})}
	ts := []*tensor.Blob{tensor.NewBlob("loss")}
	l := newTestLayer(t, &SoftmaxWithLossConfig{Axis: 1, IgnoreLabel: intPtr(4)}, Context{}, bs, ts)
	l.Forward(bs, ts)
	ts[0].Diff[0] = 1
	l.Backward(ts, []bool{true, false}, bs)
	assertClose(t, "loss", ts[0].Data, []float32{0}, 0)
	assertClose(t, "diff", bs[0].Diff, make([]float32, 6), 0)
}

func TestSoftmaxWithLossGradient(t *testing.T) {
	for _, norm := range []LossNormalization{NormValid, NormBatchSize, NormFull, NormNone} {
		for _, ignore := range []*int{nil, intPtr(1)} {
			bs := []*tensor.Blob{randBlob([]int{3, 4, 2}, 3), newBlobData([]int{3, 2}, []float32{0, 1, 3, 2, 1, 0})}
			ts := []*tensor.Blob{tensor.NewBlob("loss"), tensor.NewBlob("prob")}
			l := newTestLayer(t, &SoftmaxWithLossConfig{Axis: 1, IgnoreLabel: ignore, Normalization: norm}, Context{}, bs, ts)
			checkGradients(t, l, bs, ts, gradCheck{Threshold: 1e-3, Skip: map[int]bool{1: true}})
		}
	}
	// Classes on the last axis.
	bs := []*tensor.Blob{randBlob([]int{2, 3, 5}, 4), newBlobData([]int{2, 3}, []float32{0, 4, 2, 1, 3, 3})}
	ts := []*tensor.Blob{tensor.NewBlob("loss")}
	l := newTestLayer(t, &SoftmaxWithLossConfig{Axis: -1}, Context{}, bs, ts)
	checkGradients(t, l, bs, ts, gradCheck{Threshold: 1e-3, Skip: map[int]bool{1: true}})
}

func TestSoftmaxWithLossBadLabelPanics(t *testing.T) {
	for _, tc := range []struct {
		label float32
		want  string
	}{
		{3, "layers: label 3 out of range [0,3)"},
		{-1, "layers: label -1 out of range [0,3)"},
		{1.5, "layers: label 1.5 is not an integer"},
	} {
		bs := []*tensor.Blob{randBlob([]int{1, 3}, 1), newBlobData([]int{1}, []float32{tc.label})}
		ts := []*tensor.Blob{tensor.NewBlob("loss")}
		l := newTestLayer(t, &SoftmaxWithLossConfig{Axis: 1}, Context{}, bs, ts)
		func() {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("label %v: recovered %v, want %q", tc.label, r, tc.want)
				}
			}()
			l.Forward(bs, ts)
		}()
	}
}

func TestSoftmaxWithLossErrors(t *testing.T) {
	if _, err := (&SoftmaxWithLossConfig{Normalization: 7}).Build(Context{}); err == nil {
		t.Error("unknown normalization: no error")
	}
	for _, tc := range []struct {
		name    string
		shapes  [][]int
		nTop    int
		wantErr string
	}{
		{"label count", [][]int{{2, 3, 2}, {2}}, 1, "has 2 values, want 4"},
		{"one bottom", [][]int{{2, 3}}, 1, "bottom"},
		{"three tops", [][]int{{2, 3}, {2}}, 3, "top"},
	} {
		l, err := (&SoftmaxWithLossConfig{Axis: 1}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		var bs, ts []*tensor.Blob
		for _, s := range tc.shapes {
			bs = append(bs, tensor.NewBlob("", s...))
		}
		for range tc.nTop {
			ts = append(ts, tensor.NewBlob("top"))
		}
		err = l.Setup(bs, ts)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}
