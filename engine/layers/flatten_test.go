package layers

import (
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestFlattenShapes(t *testing.T) {
	in := []int{2, 3, 4, 5}
	tests := []struct {
		axis, end int
		want      []int
	}{
		{1, -1, []int{2, 60}},
		{1, 2, []int{2, 12, 5}},
		{0, 0, []int{2, 3, 4, 5}},
		{0, -1, []int{120}},
		{-2, -1, []int{2, 3, 20}},
		{2, 3, []int{2, 3, 20}},
	}
	for _, tc := range tests {
		bottom := []*tensor.Blob{randBlob(in, 1)}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &FlattenConfig{Axis: tc.axis, EndAxis: tc.end}, Context{}, bottom, top)
		if !top[0].Shape.Equal(tc.want) {
			t.Errorf("axis %d end %d: shape %v, want %v", tc.axis, tc.end, top[0].Shape, tc.want)
		}
		l.Forward(bottom, top)
		assertClose(t, "flatten", top[0].Data, bottom[0].Data, 0)
		dy := randBlob(top[0].Shape, 2)
		copy(top[0].Diff, dy.Data)
		l.Backward(top, []bool{true}, bottom)
		assertClose(t, "flatten diff", bottom[0].Diff, dy.Data, 0)
	}
}

func TestFlattenErrors(t *testing.T) {
	for _, tc := range []struct {
		axis, end int
		inPlace   bool
		wantErr   string
	}{
		{4, -1, false, "axis 4 out of range"},
		{1, -5, false, "axis -5 out of range"},
		{2, 1, false, "comes after end_axis"},
		{1, -1, true, "in place"},
	} {
		l, err := (&FlattenConfig{Axis: tc.axis, EndAxis: tc.end}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		b := tensor.NewBlob("b", 2, 3, 4, 5)
		top := tensor.NewBlob("top")
		if tc.inPlace {
			top = b
		}
		err = l.Setup([]*tensor.Blob{b}, []*tensor.Blob{top})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("axis %d end %d: error %v, want one containing %q", tc.axis, tc.end, err, tc.wantErr)
		}
	}
}
