package data

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestReadIDXFilesRoundTrip(t *testing.T) {
	for _, zip := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "gzip"}[zip]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			img, lab := idxImages(3, 2, 4), idxLabels(7, 0, 9)
			if zip {
				img, lab = gz(t, img), gz(t, lab)
			}
			// Names deliberately lie about compression: detection is by content.
			ip := writeFile(t, dir, "images.bin", img)
			lp := writeFile(t, dir, "labels.gz", lab)
			if !zip {
				ip = writeFile(t, dir, "images.gz", img)
				lp = writeFile(t, dir, "labels.bin", lab)
			}
			d, err := ReadIDXFiles(ip, lp)
			if err != nil {
				t.Fatal(err)
			}
			if d.N != 3 || d.C != 1 || d.H != 2 || d.W != 4 || d.Classes != 10 {
				t.Fatalf("got %dx%dx%dx%d, %d classes; want 3x1x2x4, 10", d.N, d.C, d.H, d.W, d.Classes)
			}
			if !slices.Equal(d.Labels, []int32{7, 0, 9}) {
				t.Errorf("labels %v", d.Labels)
			}
			if got := d.Image(2); got[0] != 16 || got[7] != 23 {
				t.Errorf("image 2 = %v, want 16..23", got)
			}
			if err := d.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// noisyImages builds an IDX images file of hard-to-compress pixels.
func noisyImages(n, h, w int) []byte {
	pix := make([]byte, n*h*w)
	x := uint32(1)
	for j := range pix {
		x = x*1664525 + 1013904223
		pix[j] = byte(x >> 24)
	}
	return idxBytes(idxImageMagic, []uint32{uint32(n), uint32(h), uint32(w)}, pix)
}

func TestIDXCorrupt(t *testing.T) {
	hdr := func(magic uint32, dims ...uint32) []byte { return idxBytes(magic, dims, nil) }
	big := uint32(4_000_000_000)
	cases := []struct {
		name   string
		images []byte // nil means a good 3x4x4 file
		labels []byte // nil means good labels for 3 images
		file   string // which file the error must name
		want   []string
	}{
		{name: "empty", images: []byte{}, file: "images", want: []string{"truncated: 0 bytes"}},
		{name: "bad magic", images: hdr(0x12340803, 3, 4, 4), file: "images", want: []string{"bad magic 0x12340803", "not an IDX file"}},
		{name: "wrong dtype", images: hdr(0x00000d03, 3, 4, 4), file: "images", want: []string{"wrong dtype 0x0d", "unsigned byte"}},
		{name: "labels as images", images: idxLabels(1, 2, 3), file: "images", want: []string{"says 1 dimensions, want 3"}},
		{name: "images as labels", labels: idxImages(3, 4, 4), file: "labels", want: []string{"says 3 dimensions, want 1"}},
		{name: "short header", images: hdr(idxImageMagic, 3, 4)[:9], file: "images", want: []string{"truncated: IDX images header needs 16 bytes, file has 9"}},
		{name: "truncated", images: idxBytes(idxImageMagic, []uint32{3, 4, 4}, make([]byte, 20)), file: "images",
			want: []string{"truncated: header says 3 images of 4x4 (48 bytes), file has 20"}},
		{name: "truncated gz", images: func() []byte { b := gz(t, noisyImages(300, 8, 8)); return b[:len(b)/2] }(), file: "images",
			want: []string{"truncated: header says 300 images of 8x8 (19200 bytes), file has", "gzip stream ends early"}},
		{name: "gz missing trailer", images: func() []byte { b := gz(t, idxImages(3, 4, 4)); return b[:len(b)-4] }(), file: "images",
			want: []string{"truncated: the gzip stream ends early, after 64 decompressed bytes"}},
		{name: "bad gz header", images: []byte{0x1f, 0x8b, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0}, file: "images",
			want: []string{"corrupt gzip header"}},
		{name: "truncated labels", labels: idxBytes(idxLabelMagic, []uint32{3}, []byte{1}), file: "labels",
			want: []string{"truncated: header says 3 labels (3 bytes), file has 1"}},
		{name: "oversize", images: idxBytes(idxImageMagic, []uint32{3, 4, 4}, make([]byte, 50)), file: "images",
			want: []string{"oversize: header says 3 images of 4x4 (48 bytes), file has 50 (2 extra)"}},
		{name: "huge header", images: hdr(idxImageMagic, big, big, big), file: "images",
			want: []string{"truncated: header says 4000000000 images of 4000000000x4000000000", "file has 0"}},
		{name: "zero rows", images: hdr(idxImageMagic, 3, 0, 4), file: "images", want: []string{"dimension 2 is zero"}},
		{name: "no images", images: idxImages(0, 4, 4), labels: idxLabels(), file: "images", want: []string{"holds no images"}},
		{name: "count mismatch", labels: idxLabels(1, 2), file: "labels", want: []string{"has 3 images but", "has 2 labels"}},
		{name: "label out of range", labels: idxLabels(1, 12, 3), file: "labels", want: []string{"label 12 at index 1 out of range 0..9"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			img, lab := tc.images, tc.labels
			if img == nil {
				img = idxImages(3, 4, 4)
			}
			if lab == nil {
				lab = idxLabels(1, 2, 3)
			}
			ip := writeFile(t, dir, "train-images-idx3-ubyte.gz", img)
			lp := writeFile(t, dir, "train-labels-idx1-ubyte.gz", lab)
			_, err := ReadIDXFiles(ip, lp)
			named := map[string]string{"images": "train-images-idx3-ubyte.gz", "labels": "train-labels-idx1-ubyte.gz"}[tc.file]
			wantErr(t, err, append([]string{filepath.Join(dir, named)}, tc.want...)...)
		})
	}
}

// A header claiming terabytes must not make the decoder allocate them,
// gzipped or not.
func TestIDXHugeHeaderDoesNotAllocate(t *testing.T) {
	big := uint32(0xffffffff)
	plain := idxBytes(idxImageMagic, []uint32{big, big, big}, make([]byte, 100))
	zipped := gz(t, plain)
	for _, in := range [][]byte{plain, zipped} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := DecodeIDX("x", in, 3)
		runtime.ReadMemStats(&after)
		wantErr(t, err, "truncated")
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("decoding a corrupt header allocated %d bytes", d)
		}
	}
}

func TestReadIDXMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope-idx3-ubyte")
	_, _, err := ReadIDX(p, 3)
	wantErr(t, err, p, "no such file")
}
