package data

import (
	"fmt"
	"os"
)

// CIFAR-10 binary format: records of one label byte then 3×32×32 pixels,
// red plane, green plane, blue plane, each row-major; 10000 per batch file.
const (
	cifarC          = 3
	cifarH          = 32
	cifarW          = 32
	cifarImage      = cifarC * cifarH * cifarW
	cifarRecord     = 1 + cifarImage
	cifarPerFile    = 10000
	cifarClasses    = 10
	cifarTrainFiles = 5
)

// cifarCount validates a CIFAR-10 batch file's bytes and returns its record
// count.
func cifarCount(name string, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%s: empty file, want %d-byte CIFAR-10 records (1 label byte + 3x32x32 pixels)", name, cifarRecord)
	}
	n, rest := len(b)/cifarRecord, len(b)%cifarRecord
	if rest != 0 {
		return 0, fmt.Errorf("%s: truncated: %d bytes is %d whole %d-byte CIFAR-10 records and %d bytes of a partial one", name, len(b), n, cifarRecord, rest)
	}
	if n > cifarPerFile {
		return 0, fmt.Errorf("%s: oversize: %d records (%d bytes), a CIFAR-10 batch file holds at most %d", name, n, len(b), cifarPerFile)
	}
	for i := range n {
		if l := b[i*cifarRecord]; l >= cifarClasses {
			return 0, fmt.Errorf("%s: record %d: label %d out of range 0..%d (not a CIFAR-10 binary batch?)", name, i, l, cifarClasses-1)
		}
	}
	return n, nil
}

// cifarSplit copies n validated records into labels and pixels.
func cifarSplit(b []byte, n int, labels []int32, pixels []uint8) {
	for i := range n {
		rec := b[i*cifarRecord : (i+1)*cifarRecord]
		labels[i] = int32(rec[0])
		copy(pixels[i*cifarImage:(i+1)*cifarImage], rec[1:])
	}
}

// DecodeCIFAR decodes one CIFAR-10 binary batch file (gzipped or not,
// detected from its first bytes): labels in 0..9, and pixels of 3×32×32
// bytes per image in CHW order. Every error starts with name and says what
// is wrong; allocation is bounded by len(b).
func DecodeCIFAR(name string, b []byte) (labels []int32, pixels []uint8, err error) {
	b, err = gunzipCIFAR(name, b)
	if err != nil {
		return nil, nil, err
	}
	n, err := cifarCount(name, b)
	if err != nil {
		return nil, nil, err
	}
	labels = make([]int32, n)
	pixels = make([]uint8, n*cifarImage)
	cifarSplit(b, n, labels, pixels)
	return labels, pixels, nil
}

// ReadCIFARFiles reads CIFAR-10 binary batch files, in order, into one
// Dataset of 3×32×32 images and 10 classes named after the first file.
func ReadCIFARFiles(paths ...string) (*Dataset, error) {
	if len(paths) == 0 {
		panic("data: ReadCIFARFiles: no files")
	}
	raws := make([][]byte, len(paths))
	counts := make([]int, len(paths))
	total := 0
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if b, err = gunzipCIFAR(p, b); err != nil {
			return nil, err
		}
		if counts[i], err = cifarCount(p, b); err != nil {
			return nil, err
		}
		raws[i] = b
		total += counts[i]
	}
	d := &Dataset{
		Name:    paths[0],
		N:       total,
		C:       cifarC,
		H:       cifarH,
		W:       cifarW,
		Classes: cifarClasses,
		Pixels:  make([]uint8, total*cifarImage),
		Labels:  make([]int32, total),
	}
	at := 0
	for i, b := range raws {
		n := counts[i]
		cifarSplit(b, n, d.Labels[at:at+n], d.Pixels[at*cifarImage:(at+n)*cifarImage])
		raws[i] = nil
		at += n
	}
	return d, nil
}

// gunzipCIFAR decompresses a gzipped batch file; a cut stream is an error.
func gunzipCIFAR(name string, b []byte) ([]byte, error) {
	b, cut, err := maybeGunzip(name, b)
	if cut {
		return nil, cutError(name, len(b))
	}
	return b, err
}
