package data

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idSeed is Caffe's ImageDataLayerTest seed.
const idSeed = 1701

// idJPEG writes a w×h JPEG (colour, or grey with gray) to dir/name: a
// smooth picture standing in for Caffe's examples/images (cat.jpg is
// 480×360, "cat gray.jpg" its grey copy, fish-bike.jpg 481×323).
func idJPEG(t *testing.T, dir, name string, w, h int, gray bool) {
	t.Helper()
	var m image.Image
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				g.SetGray(x, y, color.Gray{Y: uint8((x + y) / 4)})
			}
		}
		m = g
	} else {
		c := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				c.SetRGBA(x, y, color.RGBA{R: uint8(x / 2), G: uint8(y / 2), B: uint8((x + y) / 4), A: 255})
			}
		}
		m = c
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 75}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// idLayer opens list as an ImageData layer's source (is_color: 3
// channels; new_height/new_width h, w) with the loader of a TRAIN layer
// of batch size batch (which reshapes to each image at batch size 1, as
// the job makes it), and returns the first batch's shape and the first
// iters batches' labels and shapes.
func idLayer(t *testing.T, list string, h, w, batch int, shuffle bool, iters int) (shape [4]int, labels [][]float32, shapes [][4]int) {
	t.Helper()
	ds, err := OpenSource(SourceConfig{Type: "ImageData", Path: list, Channels: 3, NewHeight: h, NewWidth: w})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	l, err := NewLoader(ds, LoaderConfig{BatchSize: batch, Train: true, Slice: true, Shuffle: shuffle, Seed: idSeed, Reshape: batch == 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range iters {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, append([]float32(nil), b.Labels...))
		shapes = append(shapes, b.Shape)
		l.Release(b)
	}
	return shapes[0], labels, shapes
}

// TestCaffeImageDataLayer ports Caffe's test_image_data_layer.cpp
// (ImageDataLayerTest): list files of JPEGs of cat.jpg's and
// fish-bike.jpg's sizes, written by the test, read as an ImageData
// layer's source.
func TestCaffeImageDataLayer(t *testing.T) {
	dir := t.TempDir()
	idJPEG(t, dir, "cat.jpg", 480, 360, false)
	idJPEG(t, dir, "cat gray.jpg", 480, 360, true)
	idJPEG(t, dir, "fish-bike.jpg", 481, 323, false)
	var five strings.Builder
	for i := range 5 {
		five.WriteString(filepath.Join(dir, "cat.jpg") + " " + string(rune('0'+i)) + "\n")
	}
	list := filepath.Join(dir, "list.txt")
	space := filepath.Join(dir, "space.txt")
	reshape := filepath.Join(dir, "reshape.txt")
	for name, text := range map[string]string{
		list:    five.String(),
		reshape: filepath.Join(dir, "cat.jpg") + " 0\n" + filepath.Join(dir, "fish-bike.jpg") + " 1\n",
		space:   filepath.Join(dir, "cat.jpg") + " 0\n" + filepath.Join(dir, "cat gray.jpg") + " 1\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inOrder := func(t *testing.T, labels [][]float32) {
		t.Helper()
		for iter, ls := range labels {
			for i, l := range ls {
				if l != float32(i) {
					t.Fatalf("pass %d: label %d is %v, want %d", iter, i, l, i)
				}
			}
		}
	}

	t.Run("TestRead", func(t *testing.T) {
		shape, labels, _ := idLayer(t, list, 0, 0, 5, false, 2)
		if shape != [4]int{5, 3, 360, 480} {
			t.Fatalf("data %v, want 5x3x360x480", shape)
		}
		inOrder(t, labels)
	})
	t.Run("TestResize", func(t *testing.T) {
		shape, labels, _ := idLayer(t, list, 256, 256, 5, false, 2)
		if shape != [4]int{5, 3, 256, 256} {
			t.Fatalf("data %v, want 5x3x256x256", shape)
		}
		inOrder(t, labels)
	})
	t.Run("TestShuffle", func(t *testing.T) {
		shape, labels, _ := idLayer(t, list, 0, 0, 5, true, 2)
		if shape != [4]int{5, 3, 360, 480} {
			t.Fatalf("data %v, want 5x3x360x480", shape)
		}
		for iter, ls := range labels {
			seen, inPlace := map[float32]bool{}, 0
			for i, l := range ls {
				if seen[l] {
					t.Errorf("pass %d: label %v twice in %v", iter, l, ls)
				}
				seen[l] = true
				if l == float32(i) {
					inPlace++
				}
			}
			if len(seen) != 5 || inPlace == 5 {
				t.Errorf("pass %d: labels %v: want a permutation of 0..4 other than the identity", iter, ls)
			}
		}
	})
	t.Run("TestReshape", func(t *testing.T) {
		_, labels, shapes := idLayer(t, reshape, 0, 0, 1, false, 2)
		if shapes[0] != [4]int{1, 3, 360, 480} || shapes[1] != [4]int{1, 3, 323, 481} || labels[0][0] != 0 || labels[1][0] != 1 {
			t.Fatalf("batches %v, labels %v; want 1x3x360x480 (cat.jpg) then 1x3x323x481 (fish-bike.jpg)", shapes, labels)
		}
	})
	t.Run("TestSpace", func(t *testing.T) {
		shape, labels, _ := idLayer(t, space, 0, 0, 1, false, 2)
		if shape != [4]int{1, 3, 360, 480} {
			t.Fatalf("data %v, want 1x3x360x480 (the grey image read in colour)", shape)
		}
		if labels[0][0] != 0 || labels[1][0] != 1 {
			t.Fatalf("labels %v, want [0] then [1]: the path with a space is the one before the last space", labels)
		}
	})
}
