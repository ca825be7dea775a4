package data

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadImageList: ImageData's list file under root_folder, with
// new_height/new_width resizing images of different sizes and is_color
// choosing 1 or 3 channels; a missing or undecodable image is named by
// its list line.
func TestReadImageList(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "img") + "/"
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pix := make([]uint8, 6*7)
	for i := range pix {
		pix[i] = uint8(i * 5)
	}
	write("a.png", pngOf(t, pix, 6, 7))
	write("sub/b.png", pngOf(t, make([]uint8, 4*5), 4, 5))
	write("bad.png", []byte("not an image"))
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte("a.png 3\nsub/b.png 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dec     Decoding
		c, h, w int
	}{
		{Decoding{Channels: 3, Height: 8, Width: 9}, 3, 8, 9},
		{Decoding{Channels: 1, Height: 3, Width: 2}, 1, 3, 2},
	} {
		ds, err := ReadImageList(list, root, c.dec)
		if err != nil {
			t.Fatal(err)
		}
		if ds.N != 2 || ds.C != c.c || ds.H != c.h || ds.W != c.w || ds.Classes != 4 || ds.Labels[0] != 3 || ds.Labels[1] != 1 {
			t.Fatalf("%+v: N %d CxHxW %dx%dx%d classes %d labels %v", c.dec, ds.N, ds.C, ds.H, ds.W, ds.Classes, ds.Labels)
		}
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Data) != 2*c.c*c.h*c.w || b.Labels[0] != 3 || b.Labels[1] != 1 {
			t.Fatalf("%+v: batch of %d values, labels %v", c.dec, len(b.Data), b.Labels)
		}
		l.Release(b)
		l.Close()
	}
	// Without new_height/new_width images of two sizes cannot batch.
	ds, err := ReadImageList(list, root, Decoding{Channels: 1})
	if err == nil {
		var l *Loader
		if l, err = NewLoader(ds, LoaderConfig{BatchSize: 2}); err == nil {
			_, err = l.Next(context.Background())
			l.Close()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "list.txt:2") {
		t.Errorf("two sizes without resizing: %v, want the line named", err)
	}
	for _, c := range []struct{ lines, want string }{
		{"a.png 0\nmissing.png 1\n", "list.txt:2: open " + root + "missing.png"},
		{"bad.png 0\n", "list.txt:1 (" + root + "bad.png): cannot decode image"},
	} {
		if err := os.WriteFile(list, []byte(c.lines), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadImageList(list, root, Decoding{Channels: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.lines, err, c.want)
		}
	}
	// A later image that does not decode stops the loader naming its line.
	if err := os.WriteFile(list, []byte("a.png 0\nbad.png 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err = ReadImageList(list, root, Decoding{Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "list.txt:2") {
		t.Errorf("late bad image: %v, want its line named", err)
	}
}

// TestImageListReshape: an image list of images of differing sizes read
// at batch size 1 with Reshape (what a job does for an ImageData layer of
// batch_size 1) gives each batch its image's shape and pixels, as
// Caffe's ImageData layer reshapes its top to each batch's first image;
// without it the second image is refused naming its list line.
func TestImageListReshape(t *testing.T) {
	dir := t.TempDir()
	sizes := [][2]int{{2, 3}, {4, 1}, {3, 3}}
	var lines []string
	var pixels [][]uint8
	for i, hw := range sizes {
		pix := make([]uint8, hw[0]*hw[1])
		for j := range pix {
			pix[j] = uint8(10*i + j)
		}
		pixels = append(pixels, pix)
		name := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		if err := os.WriteFile(name, pngOf(t, pix, hw[0], hw[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %d", name, i))
	}
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := ReadImageList(list, "", Decoding{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 1, Reshape: true, Transform: TransformConfig{Scale: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Variable() {
		t.Fatal("a reshaping loader over an image list says its batches do not vary")
	}
	for n := range 2 * len(sizes) {
		i := n % len(sizes)
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := [4]int{1, 1, sizes[i][0], sizes[i][1]}; b.Shape != want || b.Labels[0] != float32(i) {
			t.Fatalf("batch %d: shape %v label %v, want %v and %d", n, b.Shape, b.Labels[0], want, i)
		}
		for j, v := range b.Data {
			if want := float32(pixels[i][j]) * 0.5; v != want {
				t.Fatalf("batch %d value %d: %v, want %v", n, j, v, want)
			}
		}
		l.Release(b)
	}
	fixed, err := NewLoader(ds, LoaderConfig{BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fixed.Close()
	if fixed.Variable() {
		t.Error("a loader without Reshape says its batches vary")
	}
	b, err := fixed.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fixed.Release(b)
	_, err = fixed.Next(context.Background())
	if want := list + ":2"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "decodes to 1x4x1") {
		t.Fatalf("second image without Reshape: %v; want an error naming %s", err, want)
	}
}
