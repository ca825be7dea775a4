package layers

import (
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestConcatValues(t *testing.T) {
	tests := []struct {
		name      string
		axis      int
		shapes    [][]int
		data      [][]float32
		wantShape []int
		want      []float32
	}{
		{
			name:      "axis 0",
			axis:      0,
			shapes:    [][]int{{1, 2}, {2, 2}},
			data:      [][]float32{{1, 2}, {3, 4, 5, 6}},
			wantShape: []int{3, 2},
			want:      []float32{1, 2, 3, 4, 5, 6},
		},
		{
			name:      "axis 1",
			axis:      1,
			shapes:    [][]int{{2, 1, 2}, {2, 2, 2}},
			data:      [][]float32{{1, 2, 3, 4}, {5, 6, 7, 8, 9, 10, 11, 12}},
			wantShape: []int{2, 3, 2},
			want:      []float32{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12},
		},
		{
			name:      "axis -1, three bottoms",
			axis:      -1,
			shapes:    [][]int{{2, 1}, {2, 2}, {2, 1}},
			data:      [][]float32{{1, 2}, {3, 4, 5, 6}, {7, 8}},
			wantShape: []int{2, 4},
			want:      []float32{1, 3, 4, 7, 2, 5, 6, 8},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bottom []*tensor.Blob
			for i, s := range tc.shapes {
				bottom = append(bottom, newBlobData(s, tc.data[i]))
			}
			top := []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, &ConcatConfig{Axis: tc.axis}, Context{}, bottom, top)
			if !top[0].Shape.Equal(tc.wantShape) {
				t.Fatalf("top shape %v, want %v", top[0].Shape, tc.wantShape)
			}
			l.Forward(bottom, top)
			assertClose(t, "concat", top[0].Data, tc.want, 0)
			// Backward sends each part of the top diff back to its bottom:
			// with top diff = top data, bottom diffs equal bottom data.
			copy(top[0].Diff, top[0].Data)
			prop := allTrue(len(bottom))
			prop[1] = false
			for i := range bottom[1].Diff {
				bottom[1].Diff[i] = -1
			}
			l.Backward(top, prop, bottom)
			for i, b := range bottom {
				if i == 1 {
					for _, v := range b.Diff {
						if v != -1 {
							t.Fatal("bottom 1 diff changed with propagateDown false")
						}
					}
					continue
				}
				assertClose(t, "concat diff", b.Diff, tc.data[i], 0)
			}
		})
	}
}

func TestConcatGradient(t *testing.T) {
	for _, c := range []struct {
		axis   int
		shapes [][]int
	}{
		{0, [][]int{{2, 3, 2}, {1, 3, 2}}},
		{1, [][]int{{2, 3, 2}, {2, 1, 2}, {2, 2, 2}}},
	} {
		var bottom []*tensor.Blob
		for i, s := range c.shapes {
			bottom = append(bottom, randBlob(s, uint64(i)))
		}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &ConcatConfig{Axis: c.axis}, Context{}, bottom, top)
		checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-3})
	}
}

func TestConcatSetupErrors(t *testing.T) {
	tests := []struct {
		name    string
		axis    int
		shapes  [][]int
		wantErr string
	}{
		{"other axis differs", 1, [][]int{{2, 3, 4}, {2, 3, 5}}, "does not match"},
		{"axis count differs", 1, [][]int{{2, 3}, {2, 3, 1}}, "axes"},
		{"axis out of range", 3, [][]int{{2, 3, 4}, {2, 3, 4}}, "axis 3 out of range"},
		{"negative axis out of range", -4, [][]int{{2, 3, 4}, {2, 3, 4}}, "out of range"},
	}
	for _, tc := range tests {
		var bottom []*tensor.Blob
		for _, s := range tc.shapes {
			bottom = append(bottom, tensor.NewBlob("", s...))
		}
		l, err := (&ConcatConfig{Axis: tc.axis}).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		err = l.Setup(bottom, []*tensor.Blob{tensor.NewBlob("top")})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}
