package layers

import (
	"fmt"
	"math/rand/v2"
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

// TestEltwiseUnitSumPieces runs the unit-coefficient SUM's piecewise,
// threaded path on blobs of several pieces and a ragged end, against the
// plain loops: the same top (a + b + c, left to right) and each bottom's
// gradient a copy of the top's, on 1 and 3 threads, one bottom not
// propagated.
func TestEltwiseUnitSumPieces(t *testing.T) {
	n := 5*eltwisePiece + 77
	for _, threads := range []int{1, 3} {
		r := rand.New(rand.NewPCG(5, 6))
		bottom := []*tensor.Blob{hlBlob(r, "a", 2, n), hlBlob(r, "b", 2, n), hlBlob(r, "c", 2, n)}
		top := []*tensor.Blob{tensor.NewBlob("y")}
		l := newTestLayer(t, &EltwiseConfig{Operation: EltwiseSum}, Context{Threads: threads}, bottom, top)
		l.Forward(bottom, top)
		for i, y := range top[0].Data {
			if want := bottom[0].Data[i] + bottom[1].Data[i] + bottom[2].Data[i]; y != want {
				t.Fatalf("threads %d: top[%d] = %v, want %v", threads, i, y, want)
			}
		}
		fillGaussianDiff(top[0], r)
		for _, b := range bottom {
			for i := range b.Diff {
				b.Diff[i] = -7
			}
		}
		l.Backward(top, []bool{true, false, true}, bottom)
		for k, b := range bottom {
			for i, d := range b.Diff {
				want := top[0].Diff[i]
				if k == 1 {
					want = -7
				}
				if d != want {
					t.Fatalf("threads %d: bottom %d diff[%d] = %v, want %v", threads, k, i, d, want)
				}
			}
		}
	}
}
