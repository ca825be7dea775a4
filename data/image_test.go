package data

import (
	"bufio"
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// pngOf encodes h×w gray bytes as a PNG.
func pngOf(t testing.TB, pix []uint8, h, w int) []byte {
	t.Helper()
	g := image.NewGray(image.Rect(0, 0, w, h))
	copy(g.Pix, pix)
	var buf bytes.Buffer
	if err := png.Encode(&buf, g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeImageBGR(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	m.Set(0, 0, color.NRGBA{R: 10, G: 20, B: 30, A: 255})
	m.Set(1, 0, color.NRGBA{R: 40, G: 50, B: 60, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		channels int
		want     []uint8
	}{
		{0, []uint8{30, 60, 20, 50, 10, 40}}, // B plane, G plane, R plane
		{3, []uint8{30, 60, 20, 50, 10, 40}},
		{1, []uint8{18, 48}}, // 0.299R + 0.587G + 0.114B, rounded
	} {
		pix, ch, h, w, err := DecodeImage(buf.Bytes(), c.channels, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ch != len(c.want)/2 || h != 1 || w != 2 || !bytes.Equal(pix, c.want) {
			t.Errorf("channels %d: got %v (%dx%dx%d), want %v", c.channels, pix, ch, h, w, c.want)
		}
	}
}

func TestResizeBilinear(t *testing.T) {
	// Upsampling 1x2 to 1x4 with centres aligned: 10, 20 -> 10, 12.5, 17.5, 20.
	got := resizeBilinear([]uint8{10, 20}, 1, 1, 2, 1, 4)
	if want := []uint8{10, 13, 18, 20}; !bytes.Equal(got, want) {
		t.Errorf("resize 1x2 -> 1x4 = %v, want %v", got, want)
	}
	// Halving averages pairs.
	got = resizeBilinear([]uint8{0, 100, 200, 50}, 1, 1, 4, 1, 2)
	if want := []uint8{50, 125}; !bytes.Equal(got, want) {
		t.Errorf("resize 1x4 -> 1x2 = %v, want %v", got, want)
	}
}

func TestParseImageList(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []ListEntry
		err       string
	}{
		{"plain", "a.jpg 1\nb/c d.png 22\n\n", []ListEntry{{"a.jpg", 1, 1}, {"b/c d.png", 22, 2}}, ""},
		{"crlf and tabs", "a.jpg\t3\r\n", []ListEntry{{"a.jpg", 3, 1}}, ""},
		{"no label", "a.jpg\n", nil, "l.txt:1: want \"path label\""},
		{"bad label", "a.jpg 1\nb.jpg x\n", nil, "l.txt:2: want \"path label\" with an integer label"},
		{"negative", "a.jpg -1\n", nil, "l.txt:1: label -1 is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseImageList("l.txt", bufio.NewReader(strings.NewReader(c.src)))
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("error %v, want prefix %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("entry %d = %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
}
