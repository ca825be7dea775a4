package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJPEGMatchesLibjpeg: JPEGs decode to the pixels libjpeg gives them
// (PIL decoded the fixture, scripts/jpeg_fixture.py), as Caffe's OpenCV
// reads them: bit for bit with libjpeg, within 16 levels in the
// pure-Go build (Go's image/jpeg). Colour, 4:2:0 and 4:4:4 chroma,
// progressive, odd sides, grey; a colour JPEG read as grey is its luma.
func TestJPEGMatchesLibjpeg(t *testing.T) {
	tol := 0
	if !libjpegDecodes {
		tol = 16 // Go's IDCT and chroma upsampling: most values differ, by up to 12 here
	}
	for _, tc := range []struct {
		name     string
		h, w, c  int
		channels int // asked for: 0 as stored
	}{
		{"c420", 40, 48, 3, 3},
		{"c444", 21, 33, 3, 0},
		{"prog", 32, 40, 3, 3},
		{"gray", 20, 30, 1, 0},
	} {
		b, err := os.ReadFile(filepath.Join("testdata/jpeg", tc.name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		ext := ".bgr"
		if tc.c == 1 {
			ext = ".gray"
		}
		want, err := os.ReadFile(filepath.Join("testdata/jpeg", tc.name+ext))
		if err != nil {
			t.Fatal(err)
		}
		pix, c, h, w, err := DecodeImage(b, tc.channels, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c != tc.c || h != tc.h || w != tc.w {
			t.Fatalf("%s: %dx%dx%d, want %dx%dx%d", tc.name, c, h, w, tc.c, tc.h, tc.w)
		}
		n, worst, differ := h*w, 0, 0
		for i := range n {
			for k := range c {
				d := int(pix[k*n+i]) - int(want[i*c+k]) // planes against interleaved
				if d < 0 {
					d = -d
				}
				if d > 0 {
					differ++
				}
				worst = max(worst, d)
			}
		}
		if worst > tol {
			t.Errorf("%s: %d of %d values differ from libjpeg's, by up to %d (tolerance %d)", tc.name, differ, c*n, worst, tol)
		}
	}
	// Read as grey, a colour JPEG is libjpeg's luma: close to the BGR
	// planes' luma (libjpeg takes Y before the colour conversion).
	b, _ := os.ReadFile("testdata/jpeg/c420.jpg")
	gray, c, _, _, err := DecodeImage(b, 1, 0, 0)
	if err != nil || c != 1 || len(gray) != 40*48 {
		t.Fatalf("c420 as grey: %d channels, %d values, %v", c, len(gray), err)
	}
}

// TestJPEGErrors: a truncated or corrupt JPEG is an error naming what
// libjpeg (or Go's decoder) found, never a crash or an exit.
func TestJPEGErrors(t *testing.T) {
	b, err := os.ReadFile("testdata/jpeg/c420.jpg")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{
		b[:2],
		b[:40],
		append(append([]byte{}, b[:200]...), make([]byte, 50)...),
		{0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0x03},
	} {
		if _, _, _, _, err := DecodeImage(bad, 3, 0, 0); err == nil || !strings.Contains(err.Error(), "decode") && !strings.Contains(err.Error(), "claims") {
			t.Errorf("%d bytes: %v, want a decoding error", len(bad), err)
		}
	}
}

// BenchmarkDecodeJPEG decodes a 256x256 photo-like JPEG (libjpeg, or Go's
// decoder in the pure-Go build).
func BenchmarkDecodeJPEG(b *testing.B) {
	data := jpegSet(b, 1).Encoded[0]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, _, _, err := DecodeImage(data, 3, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}
