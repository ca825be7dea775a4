package data

import (
	"context"
	"slices"
	"testing"
)

// TestSliceMatchesOneWorker: with Slice, W workers of batch b read at
// every iteration, between them and in rank order, exactly the images
// (and crops and mirrors) one worker of batch W·b reads, across epochs
// and from any start batch.
func TestSliceMatchesOneWorker(t *testing.T) {
	ds, err := Synthetic(SyntheticConfig{N: 50, C: 1, H: 6, W: 6, Classes: 3, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	tf := TransformConfig{CropSize: 4, Mirror: true}
	ctx := context.Background()
	for _, world := range []int{2, 4} {
		for _, start := range []int64{0, 3} {
			const b, iters = 4, 9 // 9 global batches of 16: past three epochs
			one, err := NewLoader(ds, LoaderConfig{BatchSize: world * b, Train: true, Shuffle: true, Seed: 7, Slice: true, Start: start, Transform: tf})
			if err != nil {
				t.Fatal(err)
			}
			var ws []*Loader
			for r := 0; r < world; r++ {
				l, err := NewLoader(ds, LoaderConfig{BatchSize: b, Train: true, Shuffle: true, Seed: 7, Slice: true, Start: start, Rank: r, World: world, Transform: tf})
				if err != nil {
					t.Fatal(err)
				}
				ws = append(ws, l)
			}
			for it := 0; it < iters; it++ {
				whole, err := one.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var idx []int
				var px []float32
				for _, l := range ws {
					part, err := l.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					idx = append(idx, part.Index...)
					px = append(px, part.Data...)
					l.Release(part)
				}
				if !slices.Equal(idx, whole.Index) || !slices.Equal(px, whole.Data) {
					t.Fatalf("world %d start %d iteration %d: the workers read %v, one worker %v", world, start, it, idx, whole.Index)
				}
				one.Release(whole)
			}
			one.Close()
			for _, l := range ws {
				l.Close()
			}
		}
	}
}
