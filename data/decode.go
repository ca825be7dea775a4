package data

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // Datum and list-file images may be JPEG
	_ "image/png"  // or PNG
	"math"
)

// Bounds on an image to decode, so that a corrupt header cannot make the
// decoder allocate without limit.
const (
	maxImageSide   = 1 << 16
	maxImagePixels = 1 << 27
)

// Decoding is how a Dataset's encoded images become C×H×W bytes.
type Decoding struct {
	// Channels is 1 (gray) or 3 (BGR, Caffe's channel order from OpenCV);
	// 0 keeps each image's own (gray stays gray, colour becomes BGR), as
	// Caffe's DecodeDatumToCVMatNative does.
	Channels int
	// Height and Width, when both positive, resize every image to that
	// size (bilinear, as OpenCV's cv::resize); otherwise every image must
	// already have the data set's size.
	Height, Width int
}

// DecodeImage decodes a JPEG or PNG image into C×H×W bytes in Caffe's
// layout: channel planes in BGR order for colour. channels is 0 (the
// image's own: 1 for gray, 3 otherwise), 1 or 3; height and width, when
// both positive, resize the image. It returns the bytes and their shape.
func DecodeImage(b []byte, channels, height, width int) (pix []uint8, c, h, w int, err error) {
	// A JPEG goes to libjpeg, as Caffe's OpenCV sends it: the same pixels
	// (Go's decoder differs by a few levels in about half of them).
	if pix, c, h, w, err = decodeJPEG(b, channels); !errors.Is(err, errNotLibjpeg) {
		if err == nil && height > 0 && width > 0 && (height != h || width != w) {
			pix = resizeBilinear(pix, c, h, w, height, width)
			h, w = height, width
		}
		return pix, c, h, w, err
	}
	ic, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("cannot decode image (%d bytes): %v", len(b), err)
	}
	if ic.Width < 1 || ic.Height < 1 || ic.Width > maxImageSide || ic.Height > maxImageSide || ic.Width*ic.Height > maxImagePixels {
		return nil, 0, 0, 0, fmt.Errorf("image claims %dx%d pixels; dsgd decodes images of at most %d pixels", ic.Width, ic.Height, maxImagePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("cannot decode image (%d bytes): %v", len(b), err)
	}
	c = channels
	if c == 0 {
		c = 3
		switch img.ColorModel() {
		case color.GrayModel, color.Gray16Model:
			c = 1
		}
	}
	if c != 1 && c != 3 {
		return nil, 0, 0, 0, fmt.Errorf("cannot decode to %d channels: want 1 or 3", c)
	}
	r := img.Bounds()
	h, w = r.Dy(), r.Dx()
	if h < 1 || w < 1 {
		return nil, 0, 0, 0, fmt.Errorf("image is empty (%dx%d)", w, h)
	}
	pix = make([]uint8, c*h*w)
	planes(pix, img, c)
	if height > 0 && width > 0 && (height != h || width != w) {
		pix = resizeBilinear(pix, c, h, w, height, width)
		h, w = height, width
	}
	return pix, c, h, w, nil
}

// planes writes img into dst as c planes (BGR for 3, luma for 1).
func planes(dst []uint8, img image.Image, c int) {
	r := img.Bounds()
	h, w := r.Dy(), r.Dx()
	n := h * w
	put := func(i int, R, G, B uint8) {
		if c == 1 {
			// ITU-R 601 luma, as OpenCV's BGR2GRAY.
			dst[i] = uint8((19595*uint32(R) + 38470*uint32(G) + 7471*uint32(B) + 1<<15) >> 16)
			return
		}
		dst[i], dst[n+i], dst[2*n+i] = B, G, R
	}
	switch m := img.(type) {
	case *image.Gray:
		for y := range h {
			o := m.PixOffset(r.Min.X, r.Min.Y+y)
			row := m.Pix[o : o+w]
			for x, v := range row {
				if c == 1 {
					dst[y*w+x] = v
				} else {
					put(y*w+x, v, v, v)
				}
			}
		}
	case *image.YCbCr:
		for y := range h {
			for x := range w {
				yi := m.YOffset(r.Min.X+x, r.Min.Y+y)
				if c == 1 {
					dst[y*w+x] = m.Y[yi]
					continue
				}
				ci := m.COffset(r.Min.X+x, r.Min.Y+y)
				R, G, B := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				put(y*w+x, R, G, B)
			}
		}
	case *image.RGBA:
		// Go decodes an opaque PNG or a BMP to RGBA with every alpha 255,
		// where premultiplied values are the stored ones.
		if !m.Opaque() {
			planesGeneric(put, img, r)
			return
		}
		for y := range h {
			o := m.PixOffset(r.Min.X, r.Min.Y+y)
			row := m.Pix[o : o+4*w]
			for x := range w {
				put(y*w+x, row[4*x], row[4*x+1], row[4*x+2])
			}
		}
	case *image.Paletted:
		pal := make([]color.NRGBA, len(m.Palette))
		for i, p := range m.Palette {
			pal[i] = color.NRGBAModel.Convert(p).(color.NRGBA)
		}
		for y := range h {
			o := m.PixOffset(r.Min.X, r.Min.Y+y)
			row := m.Pix[o : o+w]
			for x, v := range row {
				var q color.NRGBA
				if int(v) < len(pal) {
					q = pal[v]
				} else {
					q = color.NRGBA{A: 255} // as image.Paletted.At: opaque black
				}
				put(y*w+x, q.R, q.G, q.B)
			}
		}
	case *image.NRGBA:
		for y := range h {
			o := m.PixOffset(r.Min.X, r.Min.Y+y)
			row := m.Pix[o : o+4*w]
			for x := range w {
				put(y*w+x, row[4*x], row[4*x+1], row[4*x+2])
			}
		}
	default:
		planesGeneric(put, img, r)
	}
}

// planesGeneric is planes for any image type, a pixel at a time through
// the colour model: correct for every type, and slow.
func planesGeneric(put func(i int, R, G, B uint8), img image.Image, r image.Rectangle) {
	w := r.Dx()
	for y := range r.Dy() {
		for x := range w {
			q := color.NRGBAModel.Convert(img.At(r.Min.X+x, r.Min.Y+y)).(color.NRGBA)
			put(y*w+x, q.R, q.G, q.B)
		}
	}
}

// resizeBilinear resizes c planes of h×w bytes to oh×ow with OpenCV's
// INTER_LINEAR sampling (pixel centres aligned, edges clamped).
func resizeBilinear(src []uint8, c, h, w, oh, ow int) []uint8 {
	dst := make([]uint8, c*oh*ow)
	type tap struct {
		i0, i1 int
		f      float32
	}
	taps := func(in, out int) []tap {
		t := make([]tap, out)
		s := float64(in) / float64(out)
		for o := range out {
			f := (float64(o)+0.5)*s - 0.5
			i := int(math.Floor(f))
			fr := float32(f - float64(i))
			i0, i1 := i, i+1
			if i0 < 0 {
				i0, fr = 0, 0
			}
			if i1 > in-1 {
				i1 = in - 1
			}
			if i0 > in-1 {
				i0 = in - 1
			}
			t[o] = tap{i0, i1, fr}
		}
		return t
	}
	ty, tx := taps(h, oh), taps(w, ow)
	for ch := range c {
		p := src[ch*h*w : (ch+1)*h*w]
		q := dst[ch*oh*ow : (ch+1)*oh*ow]
		for y, a := range ty {
			r0, r1 := p[a.i0*w:(a.i0+1)*w], p[a.i1*w:(a.i1+1)*w]
			for x, b := range tx {
				top := float32(r0[b.i0]) + (float32(r0[b.i1])-float32(r0[b.i0]))*b.f
				bot := float32(r1[b.i0]) + (float32(r1[b.i1])-float32(r1[b.i0]))*b.f
				v := top + (bot-top)*a.f
				q[y*ow+x] = uint8(min(255, max(0, v+0.5)))
			}
		}
	}
	return dst
}

// decodeInto decodes image i of an encoded Dataset into dst (C*H*W
// bytes), checking it against the data set's shape.
func (d *Dataset) decodeInto(i int, dst []uint8) error {
	return d.decodeBytes(d.Encoded[i], d.ItemName(i), dst)
}

// decodeBytes decodes the encoded image b, named name, into dst.
func (d *Dataset) decodeBytes(b []byte, name string, dst []uint8) error {
	pix, c, h, w, err := DecodeImage(b, d.Decoding.Channels, d.Decoding.Height, d.Decoding.Width)
	if err != nil {
		return fmt.Errorf("%s: %s: %v", d.Name, name, err)
	}
	if c != d.C || h != d.H || w != d.W {
		return fmt.Errorf("%s: %s decodes to %dx%dx%d (CxHxW) but the first image is %dx%dx%d; every image must have one size (resize them: convert-imageset --resize_height/--resize_width, or new_height/new_width)", d.Name, name, c, h, w, d.C, d.H, d.W)
	}
	copy(dst, pix)
	return nil
}

// ItemName names image i for errors: its database record and key, its
// list line or its HDF5 file and item, or its index.
func (d *Dataset) ItemName(i int) string {
	if d.Stream != nil && i >= 0 && i < len(d.Stream.ends) {
		return d.Stream.name(i)
	}
	if i >= 0 && i < len(d.Keys) {
		return d.Keys[i]
	}
	return fmt.Sprintf("image %d", i)
}
