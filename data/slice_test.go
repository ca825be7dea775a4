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

// TestSliceOffsetChangesWorld: an elastic group that shrinks from 4
// workers to 3 and grows to 5, each generation going on from the
// position the last one reached (Offset), reads the sequence one worker
// of batch b reads, with no image skipped or read twice.
func TestSliceOffsetChangesWorld(t *testing.T) {
	ds, err := Synthetic(SyntheticConfig{N: 37, C: 1, H: 6, W: 6, Classes: 3, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	tf := TransformConfig{CropSize: 4, Mirror: true}
	ctx := context.Background()
	const b = 3
	one, err := NewLoader(ds, LoaderConfig{BatchSize: b, Train: true, Shuffle: true, Seed: 7, Slice: true, Transform: tf})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	var offset int64
	for _, gen := range []struct{ world, iters int }{{4, 3}, {3, 5}, {5, 4}} {
		var ws []*Loader
		for r := range gen.world {
			l, err := NewLoader(ds, LoaderConfig{BatchSize: b, Train: true, Shuffle: true, Seed: 7, Slice: true, Offset: offset, Rank: r, World: gen.world, Transform: tf})
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, l)
		}
		for it := range gen.iters {
			for r, l := range ws {
				part, err := l.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want, err := one.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(part.Index, want.Index) || !slices.Equal(part.Data, want.Data) {
					t.Fatalf("world %d iteration %d rank %d: read %v, the one worker %v", gen.world, it, r, part.Index, want.Index)
				}
				l.Release(part)
				one.Release(want)
			}
		}
		for _, l := range ws {
			l.Close()
		}
		offset += int64(gen.world * gen.iters * b)
	}
	if _, err := NewLoader(ds, LoaderConfig{BatchSize: b, Offset: 3}); err == nil {
		t.Fatal("an Offset without Slice was accepted")
	}
}
