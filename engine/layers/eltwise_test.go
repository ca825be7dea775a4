package layers

import (
	"fmt"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func TestEltwiseValues(t *testing.T) {
	a := []float32{1, -2, 3, 0}
	b := []float32{2, 5, -1, 0}
	c := []float32{-1, 1, 4, 0}
	dy := []float32{1, 2, 3, 4}
	tests := []struct {
		name string
		cfg  EltwiseConfig
		want []float32
		// wantDx[i] is bottom i's diff for top diff dy.
		wantDx [3][]float32
	}{
		{
			name:   "prod",
			cfg:    EltwiseConfig{Operation: EltwiseProd},
			want:   []float32{-2, -10, -12, 0},
			wantDx: [3][]float32{{-2, 10, -12, 0}, {-1, -4, 36, 0}, {2, -20, -9, 0}},
		},
		{
			name:   "sum",
			cfg:    EltwiseConfig{Operation: EltwiseSum},
			want:   []float32{2, 4, 6, 0},
			wantDx: [3][]float32{dy, dy, dy},
		},
		{
			name:   "sum with coeffs",
			cfg:    EltwiseConfig{Operation: EltwiseSum, Coeff: []float32{1, -1, 0.5}},
			want:   []float32{-1.5, -6.5, 6, 0},
			wantDx: [3][]float32{dy, {-1, -2, -3, -4}, {0.5, 1, 1.5, 2}},
		},
		{
			// In the three-way tie of the last column, bottom 1 wins as in
			// Caffe (it beats bottom 0 on ties; bottom 2 must be greater).
			name:   "max",
			cfg:    EltwiseConfig{Operation: EltwiseMax},
			want:   []float32{2, 5, 4, 0},
			wantDx: [3][]float32{{0, 0, 0, 0}, {1, 2, 0, 4}, {0, 0, 3, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bottom := []*tensor.Blob{newBlobData([]int{2, 2}, a), newBlobData([]int{2, 2}, b), newBlobData([]int{2, 2}, c)}
			top := []*tensor.Blob{tensor.NewBlob("top")}
			l := newTestLayer(t, &tc.cfg, Context{}, bottom, top)
			l.Forward(bottom, top)
			assertClose(t, "eltwise", top[0].Data, tc.want, 1e-6)
			copy(top[0].Diff, dy)
			l.Backward(top, allTrue(3), bottom)
			for i := range bottom {
				assertClose(t, "eltwise diff", bottom[i].Diff, tc.wantDx[i], 1e-6)
			}
		})
	}
}

func TestEltwiseMaxTies(t *testing.T) {
	// Column 0: bottoms 0 and 2 tie above bottom 1, and bottom 0 wins.
	// Column 1: all tie, and bottom 1 wins (Caffe's rule for the first pair).
	bs := []*tensor.Blob{newBlobData([]int{2}, []float32{1, 3}), newBlobData([]int{2}, []float32{0, 3}), newBlobData([]int{2}, []float32{1, 3})}
	ts := []*tensor.Blob{tensor.NewBlob("top")}
	l := newTestLayer(t, &EltwiseConfig{Operation: EltwiseMax}, Context{}, bs, ts)
	l.Forward(bs, ts)
	assertClose(t, "max", ts[0].Data, []float32{1, 3}, 0)
	copy(ts[0].Diff, []float32{5, 6})
	l.Backward(ts, allTrue(3), bs)
	for i, want := range [][]float32{{5, 0}, {0, 6}, {0, 0}} {
		assertClose(t, fmt.Sprint("bottom ", i, " diff"), bs[i].Diff, want, 0)
	}
}

func TestEltwiseGradient(t *testing.T) {
	shape := []int{2, 3, 4}
	for _, cfg := range []EltwiseConfig{
		{Operation: EltwiseProd},
		{Operation: EltwiseSum},
		{Operation: EltwiseSum, Coeff: []float32{2, -0.5, 1.5}},
		{Operation: EltwiseMax},
	} {
		bottom := []*tensor.Blob{randBlob(shape, 1), randBlob(shape, 2), randBlob(shape, 3)}
		if cfg.Operation == EltwiseMax {
			// Keep the three inputs at least 0.3 apart everywhere, each
			// bottom holding the maximum somewhere, so the finite
			// differences (step 0.01) never switch the maximum.
			offsets := [][2]float32{{0.3, -0.3}, {-0.3, 0.3}, {0.3, 0.6}, {-0.3, -0.6}, {0.6, 0.3}, {-0.6, -0.3}}
			for i := range bottom[0].Data {
				d := offsets[i%len(offsets)]
				bottom[1].Data[i] = bottom[0].Data[i] + d[0]
				bottom[2].Data[i] = bottom[0].Data[i] + d[1]
			}
		}
		top := []*tensor.Blob{tensor.NewBlob("top")}
		l := newTestLayer(t, &cfg, Context{}, bottom, top)
		checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-3})
	}
}

func TestEltwiseErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     EltwiseConfig
		shapes  [][]int
		wantErr string
	}{
		{"coeff with prod", EltwiseConfig{Operation: EltwiseProd, Coeff: []float32{1, 2}}, nil, "only allowed with operation SUM"},
		{"unknown op", EltwiseConfig{Operation: 9}, nil, "unknown operation"},
		{"shape mismatch", EltwiseConfig{Operation: EltwiseSum}, [][]int{{2, 3}, {3, 2}}, "does not match"},
		{"coeff count", EltwiseConfig{Operation: EltwiseSum, Coeff: []float32{1, 2, 3}}, [][]int{{2}, {2}}, "3 coeffs for 2 bottoms"},
		{"one bottom", EltwiseConfig{Operation: EltwiseSum}, [][]int{{2}}, "at least 2 bottom"},
	} {
		l, err := tc.cfg.Build(Context{})
		if err == nil {
			var bottom []*tensor.Blob
			for _, s := range tc.shapes {
				bottom = append(bottom, tensor.NewBlob("", s...))
			}
			err = l.Setup(bottom, []*tensor.Blob{tensor.NewBlob("top")})
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}
