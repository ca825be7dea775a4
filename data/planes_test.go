package data

import (
	"bytes"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

// TestPlanesFastPathsMatchColourModel holds planes' per-type fast paths to
// the colour model's answer (planesGeneric), for colour and grey output
// and for sub-images whose origin is not (0, 0).
func TestPlanesFastPathsMatchColourModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(b []uint8) {
		for i := range b {
			b[i] = uint8(rng.IntN(256))
		}
	}
	r := image.Rect(0, 0, 13, 7)
	opaque := image.NewRGBA(r)
	fill(opaque.Pix)
	for i := 3; i < len(opaque.Pix); i += 4 {
		opaque.Pix[i] = 255
	}
	translucent := image.NewRGBA(r)
	fill(translucent.Pix)
	for i := 0; i < len(translucent.Pix); i += 4 { // valid premultiplied values
		a := translucent.Pix[i+3]
		for k := range 3 {
			translucent.Pix[i+k] = min(translucent.Pix[i+k], a)
		}
	}
	nrgba := image.NewNRGBA(r)
	fill(nrgba.Pix)
	gray := image.NewGray(r)
	fill(gray.Pix)
	pal := color.Palette{}
	for range 5 {
		pal = append(pal, color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256))})
	}
	paletted := image.NewPaletted(r, pal)
	for i := range paletted.Pix {
		paletted.Pix[i] = uint8(rng.IntN(len(pal)))
	}
	ycc := image.NewYCbCr(r, image.YCbCrSubsampleRatio420)
	fill(ycc.Y)
	fill(ycc.Cb)
	fill(ycc.Cr)
	sub := image.Rect(2, 1, 11, 6)
	for _, tc := range []struct {
		name string
		img  image.Image
	}{
		{"RGBA opaque", opaque},
		{"RGBA translucent", translucent},
		{"NRGBA", nrgba},
		{"Gray", gray},
		{"Paletted", paletted},
		{"YCbCr 4:2:0", ycc},
		{"RGBA opaque sub-image", opaque.SubImage(sub)},
		{"NRGBA sub-image", nrgba.SubImage(sub)},
		{"Gray sub-image", gray.SubImage(sub)},
		{"Paletted sub-image", paletted.SubImage(sub)},
		{"YCbCr sub-image", ycc.SubImage(sub)},
	} {
		for _, c := range []int{1, 3} {
			b := tc.img.Bounds()
			n := b.Dx() * b.Dy()
			got := make([]uint8, c*n)
			planes(got, tc.img, c)
			want := make([]uint8, c*n)
			put := func(i int, R, G, B uint8) {
				if c == 1 {
					want[i] = uint8((19595*uint32(R) + 38470*uint32(G) + 7471*uint32(B) + 1<<15) >> 16)
					return
				}
				want[i], want[n+i], want[2*n+i] = B, G, R
			}
			switch m := tc.img.(type) {
			case *image.Gray:
				if c == 1 {
					copyGray(want, m)
					break
				}
				planesGeneric(put, tc.img, b)
			case *image.YCbCr:
				if c == 1 {
					// A JPEG read as grey is its luma plane, as libjpeg
					// decodes to JCS_GRAYSCALE for OpenCV's IMREAD_GRAYSCALE.
					for y := b.Min.Y; y < b.Max.Y; y++ {
						for x := b.Min.X; x < b.Max.X; x++ {
							want[(y-b.Min.Y)*b.Dx()+x-b.Min.X] = m.YCbCrAt(x, y).Y
						}
					}
					break
				}
				planesGeneric(put, tc.img, b)
			default:
				planesGeneric(put, tc.img, b)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %d channel(s): fast path differs from the colour model", tc.name, c)
			}
		}
	}
}

// copyGray is the grey image's bytes in row order: a grey image read as
// one channel is its own luma, unrounded.
func copyGray(dst []uint8, m *image.Gray) {
	b := m.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			dst[(y-b.Min.Y)*b.Dx()+x-b.Min.X] = m.GrayAt(x, y).Y
		}
	}
}
