package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// TestSumSplitThreads checks that summing a split's diffs across the pool
// gives the serial sum's bits (parts[0] + parts[1] + ... per element) at
// 1, 2 and 3 threads, for sizes around the per-thread threshold and the
// block, with no allocation per sum at one thread (with workers the
// runtime may allocate when a goroutine blocks).
func TestSumSplitThreads(t *testing.T) {
	for _, size := range []int{1, sumBlock - 1, splitPerThread*2 + 3, 3*splitPerThread + sumBlock/2 + 7} {
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("n%d/threads%d", size, threads), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(size), 7))
				sp := split{target: &tensor.Blob{Diff: make([]float32, size)}}
				for range 4 {
					d := make([]float32, size)
					for i := range d {
						d[i] = float32(r.NormFloat64())
					}
					sp.parts = append(sp.parts, &tensor.Blob{Diff: d})
				}
				want := append([]float32(nil), sp.parts[0].Diff...)
				for _, p := range sp.parts[1:] {
					for i, v := range p.Diff {
						want[i] += v
					}
				}
				n := &Net{pool: tensor.NewPool(threads)}
				defer n.pool.Close()
				n.sumFn = n.sumChunk
				n.sumSplit(&sp)
				if i := tensor.FirstDiff(sp.target.Diff, want); i != size {
					t.Fatalf("element %d: %v, want %v", i, sp.target.Diff[i], want[i])
				}
				if threads > 1 || raceEnabled {
					return
				}
				if a := testing.AllocsPerRun(3, func() { n.sumSplit(&sp) }); a != 0 {
					t.Errorf("%v allocations per sum", a)
				}
			})
		}
	}
}
