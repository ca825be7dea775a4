package simd

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddRuns checks AddRuns against the scalar loop, bit for bit, on run
// lengths that take the assembly (multiples of four) and the loop, with
// overlapping and gapped steps.
func TestAddRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ rows, n, dstep, sstep int }{
		{1, 1, 0, 0}, {3, 8, 12, 8}, {8, 8, 12, 8}, {5, 4, 4, 4}, {7, 24, 28, 24},
		{4, 3, 5, 3}, {6, 13, 20, 13}, {2, 64, 64, 80}, {9, 8, 1, 8}, {3, 12, 0, 12},
	} {
		nd, ns := (tc.rows-1)*tc.dstep+tc.n, (tc.rows-1)*tc.sstep+tc.n
		dst, src := make([]float32, nd+3), make([]float32, ns+5)
		for i := range dst {
			dst[i] = r.Float32()*2 - 1
		}
		for i := range src {
			src[i] = r.Float32()*2 - 1
		}
		want := slices.Clone(dst)
		addRunsGo(want, src, tc.rows, tc.n, tc.dstep, tc.sstep)
		got := slices.Clone(dst)
		AddRuns(got, src, tc.rows, tc.n, tc.dstep, tc.sstep)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: AddRuns differs from the scalar loop", tc)
		}
	}
}

// TestAddRunsBounds checks that AddRuns refuses a slice too short for its
// last run and a negative step, and does nothing for no rows.
func TestAddRunsBounds(t *testing.T) {
	for _, tc := range []struct {
		name               string
		nd, ns             int
		rows, n, dst, sstp int
	}{
		{"short dst", 15, 24, 3, 8, 4, 8},
		{"short src", 24, 15, 3, 8, 8, 4},
		{"negative step", 64, 64, 2, 8, -8, 8},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			AddRuns(make([]float32, tc.nd), make([]float32, tc.ns), tc.rows, tc.n, tc.dst, tc.sstp)
		}()
	}
	AddRuns(nil, nil, 0, 8, 8, 8)
}

func BenchmarkAddRuns(b *testing.B) {
	dst, src := make([]float32, 12*12), make([]float32, 8*8)
	for range b.N {
		for range 25 {
			AddRuns(dst, src, 8, 8, 12, 8)
		}
	}
}
