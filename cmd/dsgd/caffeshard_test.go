//go:build !purego

package main

import (
	"context"
	"hash/fnv"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// imagesOf fills n batches from feed and returns a hash of every image.
func imagesOf(t *testing.T, feed train.Feed, shapes map[string]tensor.Shape, n int) []uint64 {
	t.Helper()
	var tops []*tensor.Blob
	for _, name := range feed.Tops {
		tops = append(tops, tensor.NewBlob(name, shapes[name]...))
	}
	var out []uint64
	for range n {
		if err := feed.Source.Fill(context.Background(), tops); err != nil {
			t.Fatal(err)
		}
		per := tops[0].Count() / tops[0].Shape[0]
		for i := range tops[0].Shape[0] {
			h := fnv.New64a()
			for _, v := range tops[0].Data[i*per : (i+1)*per] {
				b := math.Float32bits(v)
				h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
			}
			out = append(out, h.Sum64())
		}
	}
	return out
}

// TestCaffeShardsPerWorker: a Caffe Data layer (Python's LMDB) is read as
// one shard per worker, disjoint, under every scheme: the in-process
// schemes' workers (openData) and each process of a group (openShard, as
// `dsgd worker` opens it) read the same shard for the same rank.
func TestCaffeShardsPerWorker(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fx")
	copyTree(t, caffeFixtures, fx)
	write(t, dir, "net.prototxt", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"))
	write(t, dir, "solver.prototxt", logregSolver)
	t.Chdir(dir)
	m := &modelFlags{solver: "solver.prototxt", net: "net.prototxt", threads: 1, seed: -1}
	const workers = 3
	j, err := m.load()
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.OpenData(false, workers); err != nil {
		t.Fatal(err)
	}
	feeds := append([][]train.Feed{j.TrainFeeds}, j.WorkerFeeds...)
	if len(feeds) != workers {
		t.Fatalf("%d workers' feeds, want %d", len(feeds), workers)
	}
	// 400 images, batch 20: 6 batches stay within each 133-image shard.
	seen := map[uint64]int{}
	for r, f := range feeds {
		imgs := imagesOf(t, f[0], j.TrainShapes, 6)
		for _, h := range imgs {
			if w, ok := seen[h]; ok {
				t.Fatalf("an image read by worker %d is read by worker %d too", r, w)
			}
			seen[h] = r
		}
		p, err := m.load()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.OpenShard(false, r, workers); err != nil {
			t.Fatal(err)
		}
		if got := imagesOf(t, p.TrainFeeds[0], p.TrainShapes, 6); !slices.Equal(got, imgs) {
			t.Errorf("rank %d: a worker process reads another shard than the in-process worker", r)
		}
		p.Close()
	}
	if len(seen) != workers*6*20 {
		t.Fatalf("%d distinct images over the workers, want %d", len(seen), workers*6*20)
	}
}
