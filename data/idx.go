package data

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// IDX magic numbers: two zero bytes, the element type, the dimension count.
const (
	idxUbyte      = 0x08
	idxLabelMagic = 0x00000801
	idxImageMagic = 0x00000803
	// mnistClasses is the class count of MNIST and Fashion-MNIST.
	mnistClasses = 10
)

// idxKind names what an IDX file of ndims dimensions holds, for errors.
func idxKind(ndims int) string {
	switch ndims {
	case 1:
		return "labels"
	case 3:
		return "images"
	}
	return strconv.Itoa(ndims) + "-dimensional array"
}

// idxDescribe says what a header with dims declares, for errors.
func idxDescribe(dims []int) string {
	switch len(dims) {
	case 1:
		return fmt.Sprintf("%d labels", dims[0])
	case 3:
		return fmt.Sprintf("%d images of %dx%d", dims[0], dims[1], dims[2])
	}
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = strconv.Itoa(d)
	}
	return "an array of " + strings.Join(s, "x")
}

// DecodeIDX decodes an IDX file (the MNIST format) of unsigned bytes that
// must have ndims dimensions: 1 for labels (magic 0x00000801), 3 for images
// (magic 0x00000803). b may be gzipped; that is detected from its first
// bytes. It returns the dimensions from the header and the data, which may
// alias b. Every error starts with name and says what is wrong. Nothing is
// allocated from the header's sizes: they are checked against len(b) first.
func DecodeIDX(name string, b []byte, ndims int) (dims []int, data []uint8, err error) {
	if ndims < 1 || ndims > 255 {
		panic(fmt.Sprintf("data: DecodeIDX: ndims %d out of range 1..255", ndims))
	}
	b, cut, err := maybeGunzip(name, b)
	if err != nil {
		return nil, nil, err
	}
	dims, data, err = decodeIDX(name, b, ndims)
	switch {
	case cut && err != nil:
		return nil, nil, fmt.Errorf("%w (the gzip stream ends early)", err)
	case cut:
		return nil, nil, cutError(name, len(b))
	}
	return dims, data, err
}

// decodeIDX decodes an uncompressed IDX file; see DecodeIDX.
func decodeIDX(name string, b []byte, ndims int) (dims []int, data []uint8, err error) {
	want := uint32(idxUbyte)<<8 | uint32(ndims)
	kind := idxKind(ndims)
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%s: truncated: %d bytes, too short for an IDX header (IDX %s, magic 0x%08x)", name, len(b), kind, want)
	}
	magic := binary.BigEndian.Uint32(b)
	switch {
	case b[0] != 0 || b[1] != 0:
		return nil, nil, fmt.Errorf("%s: bad magic 0x%08x: not an IDX file (want 0x%08x for IDX %s)", name, magic, want, kind)
	case b[2] != idxUbyte:
		return nil, nil, fmt.Errorf("%s: wrong dtype 0x%02x in magic 0x%08x: want 0x08 (unsigned byte) for IDX %s", name, b[2], magic, kind)
	case int(b[3]) != ndims:
		return nil, nil, fmt.Errorf("%s: magic 0x%08x says %d dimensions, want %d (IDX %s, magic 0x%08x)", name, magic, b[3], ndims, kind, want)
	}
	hdr := 4 + 4*ndims
	if len(b) < hdr {
		return nil, nil, fmt.Errorf("%s: truncated: IDX %s header needs %d bytes, file has %d", name, kind, hdr, len(b))
	}
	dims = make([]int, ndims)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(b[4+4*i:]))
	}
	for i, d := range dims[1:] {
		if d == 0 {
			return nil, nil, fmt.Errorf("%s: header says %s: dimension %d is zero", name, idxDescribe(dims), i+2)
		}
	}
	have := len(b) - hdr
	need, ok := mulInts(dims...)
	if !ok || need > have {
		size := strconv.Itoa(need) + " bytes"
		if !ok {
			size = "more bytes than memory"
		}
		return nil, nil, fmt.Errorf("%s: truncated: header says %s (%s), file has %d", name, idxDescribe(dims), size, have)
	}
	if need < have {
		return nil, nil, fmt.Errorf("%s: oversize: header says %s (%d bytes), file has %d (%d extra)", name, idxDescribe(dims), need, have, have-need)
	}
	return dims, b[hdr : hdr+need : hdr+need], nil
}

// ReadIDX reads and decodes an IDX file, gzipped or not; see DecodeIDX.
func ReadIDX(path string, ndims int) (dims []int, data []uint8, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return DecodeIDX(path, b, ndims)
}

// ReadIDXFiles reads an MNIST-style pair of IDX files, images and labels,
// gzipped or not, into a Dataset of 10 classes named after the images file.
// The counts must agree and every label must be in 0..9.
func ReadIDXFiles(imagesPath, labelsPath string) (*Dataset, error) {
	idims, pix, err := ReadIDX(imagesPath, 3)
	if err != nil {
		return nil, err
	}
	ldims, labels, err := ReadIDX(labelsPath, 1)
	if err != nil {
		return nil, err
	}
	return idxDataset(imagesPath, idims, pix, labelsPath, ldims, labels)
}

// idxDataset checks a decoded pair of IDX files against each other.
func idxDataset(imagesName string, idims []int, pix []uint8, labelsName string, ldims []int, labels []uint8) (*Dataset, error) {
	if idims[0] == 0 {
		return nil, fmt.Errorf("%s: holds no images", imagesName)
	}
	if idims[0] != ldims[0] {
		return nil, fmt.Errorf("%s has %d images but %s has %d labels", imagesName, idims[0], labelsName, ldims[0])
	}
	for i, l := range labels {
		if l >= mnistClasses {
			return nil, fmt.Errorf("%s: label %d at index %d out of range 0..%d", labelsName, l, i, mnistClasses-1)
		}
	}
	return &Dataset{
		Name:    imagesName,
		N:       idims[0],
		C:       1,
		H:       idims[1],
		W:       idims[2],
		Classes: mnistClasses,
		Pixels:  pix,
		Labels:  widen(labels),
	}, nil
}

// widen returns IDX's byte labels as a Dataset holds them.
func widen(b []uint8) []int32 {
	out := make([]int32, len(b))
	for i, v := range b {
		out[i] = int32(v)
	}
	return out
}
