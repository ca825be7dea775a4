//go:build !purego

package data

/*
#cgo LDFLAGS: -ljpeg
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <jpeglib.h>

struct dsgd_jpeg_err {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void dsgd_jpeg_exit(j_common_ptr c) {
	struct dsgd_jpeg_err *e = (struct dsgd_jpeg_err *)c->err;
	(*c->err->format_message)(c, e->msg);
	longjmp(e->jump, 1);
}

static void dsgd_jpeg_silent(j_common_ptr c, int level) { (void)c; (void)level; }

// dsgd_jpeg reads a JPEG's header into w, h, comps; with out, it then
// decodes it into out (h*w*c bytes, interleaved), RGB for c = 3 and grey
// for c = 1, with libjpeg's defaults (the accurate integer IDCT, fancy
// upsampling), as OpenCV's imread reads it. Returns 0, or -1 with msg
// set; libjpeg's errors come back here by longjmp instead of exiting.
static int dsgd_jpeg(const unsigned char *b, unsigned long n, int *w, int *h, int *comps, unsigned char *out, int c, char *msg) {
	struct jpeg_decompress_struct d;
	struct dsgd_jpeg_err e;
	d.err = jpeg_std_error(&e.mgr);
	e.mgr.error_exit = dsgd_jpeg_exit;
	e.mgr.emit_message = dsgd_jpeg_silent;
	if (setjmp(e.jump)) {
		strncpy(msg, e.msg, JMSG_LENGTH_MAX);
		jpeg_destroy_decompress(&d);
		return -1;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, (unsigned char *)b, n);
	jpeg_read_header(&d, TRUE);
	if (!out) {
		*w = d.image_width;
		*h = d.image_height;
		*comps = d.num_components;
		jpeg_destroy_decompress(&d);
		return 0;
	}
	d.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_start_decompress(&d);
	if ((int)d.output_width != *w || (int)d.output_height != *h || d.output_components != c) {
		snprintf(msg, JMSG_LENGTH_MAX, "decoded %ux%ux%d, header said %dx%dx%d", d.output_width, d.output_height, d.output_components, *w, *h, c);
		jpeg_destroy_decompress(&d);
		return -1;
	}
	while (d.output_scanline < d.output_height) {
		JSAMPROW row = out + (size_t)d.output_scanline * (*w) * c;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// libjpegDecodes says that JPEGs are decoded by libjpeg (libjpeg-turbo
// on Debian), as Caffe's OpenCV decodes them: the same pixels.
const libjpegDecodes = true

// errNotLibjpeg marks a JPEG that libjpeg leaves to Go's decoder (CMYK
// and YCCK, which OpenCV converts in its own way).
var errNotLibjpeg = errors.New("not a JPEG for libjpeg")

// decodeJPEG decodes a JPEG with libjpeg into c planes (BGR for 3, grey
// for 1; c = 0: as stored, grey or colour), checking its claimed size
// against dsgd's limits before decoding.
func decodeJPEG(b []byte, channels int) (pix []uint8, c, h, w int, err error) {
	if len(b) < 3 || b[0] != 0xFF || b[1] != 0xD8 {
		return nil, 0, 0, 0, errNotLibjpeg
	}
	var cw, ch, comps C.int
	msg := (*C.char)(C.malloc(C.JMSG_LENGTH_MAX))
	defer C.free(unsafe.Pointer(msg))
	src := (*C.uchar)(unsafe.Pointer(&b[0]))
	if C.dsgd_jpeg(src, C.ulong(len(b)), &cw, &ch, &comps, nil, 0, msg) != 0 {
		return nil, 0, 0, 0, fmt.Errorf("cannot decode JPEG (%d bytes): %s", len(b), C.GoString(msg))
	}
	w, h = int(cw), int(ch)
	if w < 1 || h < 1 || w > maxImageSide || h > maxImageSide || w*h > maxImagePixels {
		return nil, 0, 0, 0, fmt.Errorf("image claims %dx%d pixels; dsgd decodes images of at most %d pixels", w, h, maxImagePixels)
	}
	if comps != 1 && comps != 3 {
		return nil, 0, 0, 0, errNotLibjpeg
	}
	c = channels
	if c == 0 {
		c = 3
		if comps == 1 {
			c = 1
		}
	}
	if c != 1 && c != 3 {
		return nil, 0, 0, 0, fmt.Errorf("cannot decode to %d channels: want 1 or 3", c)
	}
	inter := make([]uint8, h*w*c)
	if C.dsgd_jpeg(src, C.ulong(len(b)), &cw, &ch, &comps, (*C.uchar)(unsafe.Pointer(&inter[0])), C.int(c), msg) != 0 {
		return nil, 0, 0, 0, fmt.Errorf("cannot decode JPEG (%d bytes): %s", len(b), C.GoString(msg))
	}
	if c == 1 {
		return inter, c, h, w, nil
	}
	n := h * w
	pix = make([]uint8, 3*n)
	for i := range n {
		pix[i], pix[n+i], pix[2*n+i] = inter[3*i+2], inter[3*i+1], inter[3*i] // BGR planes
	}
	return pix, c, h, w, nil
}
