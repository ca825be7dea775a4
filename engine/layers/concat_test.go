package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// TestConcatThreadsAgree runs a Concat large enough to split across the
// pool at 1, 2 and 3 threads: the top, and the bottoms' diffs (one bottom
// not propagating), must be the same bits as the serial reference at
// every count. At one thread a pass must not allocate (the pool runs the
// bound chunk functions inline; with workers the runtime may allocate
// when a goroutine blocks, as hlAllocs notes).
func TestConcatThreadsAgree(t *testing.T) {
	for _, axis := range []int{0, 1, 2} {
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("axis%d/threads%d", axis, threads), func(t *testing.T) {
				r := rand.New(rand.NewPCG(5, uint64(axis)))
				shapes := [][]int{{7, 3, 90, 110}, {7, 5, 90, 110}, {7, 2, 90, 110}}
				var bottom []*tensor.Blob
				for i, s := range shapes {
					s = append([]int(nil), s...)
					if axis != 1 {
						s[1] = 4
					}
					if axis == 0 {
						s[0] = 2 + i
					}
					if axis == 2 {
						s[2] = 30 + 20*i
					}
					b := hlBlob(r, fmt.Sprint("b", i), s...)
					b.Diff = make([]float32, b.Count())
					bottom = append(bottom, b)
				}
				top := tensor.NewBlob("y")
				pool := tensor.NewPool(threads)
				defer pool.Close()
				cfg := &ConcatConfig{Axis: axis}
				l := newTestLayer(t, cfg, Context{Threads: threads, Pool: pool}, bottom, []*tensor.Blob{top})
				bs, ts := bottom, []*tensor.Blob{top}
				l.Forward(bs, ts)
				if want := concatRef(bottom, axis); !tensor.SameBits(top.Data, want) {
					t.Fatalf("top differs from the serial concat")
				}
				for i := range top.Diff {
					top.Diff[i] = float32(r.NormFloat64())
				}
				prop := []bool{true, false, true}
				for i := range bottom {
					for k := range bottom[i].Diff {
						bottom[i].Diff[k] = -1
					}
				}
				l.Backward(ts, prop, bs)
				outer := bottom[0].Shape.CountRange(0, axis)
				topStride := top.Count() / outer
				off := 0
				for i, b := range bottom {
					n := b.Count() / outer
					for o := range outer {
						for k := range n {
							want := top.Diff[o*topStride+off+k]
							if !prop[i] {
								want = -1
							}
							if got := b.Diff[o*n+k]; got != want {
								t.Fatalf("bottom %d diff [%d]: %v, want %v", i, o*n+k, got, want)
							}
						}
					}
					off += n
				}
				if threads > 1 {
					return
				}
				if a := testing.AllocsPerRun(3, func() { l.Forward(bs, ts); l.Backward(ts, prop, bs) }); a != 0 {
					t.Errorf("%v allocations per pass", a)
				}
			})
		}
	}
}
