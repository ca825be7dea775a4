package data

import (
	"fmt"
	"math/bits"
)

// MaxLabel is the largest class label a Dataset holds: 2^24-1, the largest
// whole number below which every integer is exact in float32, the type a
// Caffe net's label blob holds (ImageNet's 0..999 fit many times over).
const MaxLabel = 1<<24 - 1

// Split selects the training or the test part of a data set.
type Split int

const (
	// Train is the training split (train-*-ubyte, data_batch_N.bin).
	Train Split = iota
	// Test is the test split (t10k-*-ubyte, test_batch.bin).
	Test
)

// String returns "train" or "test".
func (s Split) String() string {
	switch s {
	case Train:
		return "train"
	case Test:
		return "test"
	}
	return fmt.Sprintf("Split(%d)", int(s))
}

// Dataset is a labelled image set, held in memory or streamed from a
// database (Stream).
//
// Pixels holds N images of C×H×W bytes each, in NCHW order (image, channel,
// row, column). Labels holds one class per image, in 0..Classes-1. A Dataset
// is never modified once built, so it may be shared by any number of
// Loaders and goroutines.
type Dataset struct {
	// Name says where the images came from, for logs and errors
	// ("fashion-mnist/train", "synthetic/test").
	Name string
	// N is the number of images; C, H and W are the channels, rows and
	// columns of each.
	N, C, H, W int
	// Classes is the number of classes; every label is below it.
	Classes int
	// Pixels holds N*C*H*W bytes, image after image.
	Pixels []uint8
	// Labels holds N labels, each in 0..MaxLabel.
	Labels []int32
	// Encoded, when not nil, holds the N images encoded (JPEG or PNG) in
	// place of Pixels, which is then nil: image i is decoded with
	// Decoding when a Loader reads it, and must come out C×H×W.
	Encoded [][]byte
	// Floats, when not nil, holds the N images as float32 values in place
	// of Pixels (HDF5 data, or a Datum's float_data).
	Floats []float32
	// Stream, when not nil, is the database the N images are read from
	// as Loaders need them (OpenDB), in place of Pixels, Encoded, Floats
	// and Labels, which are then nil: each record brings its label.
	Stream *Stream
	// Untransformed marks data a Caffe layer feeds as it is: HDF5Data
	// takes no transform_param, and a Loader refuses one.
	Untransformed bool
	// Decoding says how Encoded images are decoded.
	Decoding Decoding
	// Keys, when not nil, names each image for errors: its database key
	// or its list file line.
	Keys []string
	// DataItem, when not nil, is the shape of one item of the data top
	// when it is not C×H×W (an HDF5 dataset of rank other than 4: N×D is
	// D, N×T×D is T×D); C is then its size and H and W are 1. The data
	// top's blob is the batch size followed by DataItem, as in Caffe.
	DataItem []int
	// Extra holds further float data per item, one Column per top after
	// the data top (HDF5Data's tops beyond a class label): a Loader copies
	// each into its Batch.Extra. Labels are then all 0.
	Extra []Column
}

// Column is one top's float data of a Dataset beyond its images: N items
// of shape Item, item after item.
type Column struct {
	// Name is the top (and dataset) name.
	Name string
	// Item is the shape of one item ([] for a scalar per item).
	Item []int
	// Values holds N × prod(Item) values.
	Values []float32
}

// ItemSize is the number of values in one item of the column.
func (c Column) ItemSize() int { return prod(c.Item) }

// ImageSize returns C*H*W, the bytes in one image.
func (d *Dataset) ImageSize() int { return d.C * d.H * d.W }

// Image returns image i's C*H*W bytes; the slice aliases d.Pixels. It
// must not be called on an encoded Dataset (see Encoded).
func (d *Dataset) Image(i int) []uint8 {
	if i < 0 || i >= d.N {
		panic(fmt.Sprintf("data: Image(%d) out of range [0,%d)", i, d.N))
	}
	sz := d.ImageSize()
	return d.Pixels[i*sz : (i+1)*sz : (i+1)*sz]
}

// Subset returns a Dataset of the first n images of d, sharing d's memory.
// An n of N or more gives all of d; n below 1 is a programmer error.
func (d *Dataset) Subset(n int) *Dataset {
	if n < 1 {
		panic(fmt.Sprintf("data: Subset(%d): want at least one image", n))
	}
	if n >= d.N {
		c := *d
		return &c
	}
	sz := d.ImageSize()
	s := &Dataset{
		Name:     fmt.Sprintf("%s[:%d]", d.Name, n),
		N:        n,
		C:        d.C,
		H:        d.H,
		W:        d.W,
		Classes:  d.Classes,
		Decoding: d.Decoding,

		Untransformed: d.Untransformed,
	}
	if d.Labels != nil {
		s.Labels = d.Labels[:n:n]
	}
	switch {
	case d.Stream != nil:
		s.Stream = d.Stream
	case d.Encoded != nil:
		s.Encoded = d.Encoded[:n:n]
	case d.Floats != nil:
		s.Floats = d.Floats[: n*sz : n*sz]
	default:
		s.Pixels = d.Pixels[: n*sz : n*sz]
	}
	if len(d.Keys) >= n {
		s.Keys = d.Keys[:n:n]
	}
	return s
}

// Check reports whether d is consistent: positive sizes, buffers of the
// stated lengths, and every label below Classes. Datasets from this package
// always pass; Check is for ones built by hand.
func (d *Dataset) Check() error {
	if d.N < 1 || d.C < 1 || d.H < 1 || d.W < 1 {
		return fmt.Errorf("data: dataset %q: bad size %dx%dx%dx%d (NxCxHxW), want all positive", d.Name, d.N, d.C, d.H, d.W)
	}
	if d.Classes < 1 || d.Classes > MaxLabel+1 {
		return fmt.Errorf("data: dataset %q: %d classes, want 1..%d", d.Name, d.Classes, MaxLabel+1)
	}
	for _, c := range d.Extra {
		if n, ok := mulInts(d.N, c.ItemSize()); !ok || len(c.Values) != n || d.Stream != nil {
			return fmt.Errorf("data: dataset %q: column %q has %d values, want %d items of shape %v (and no streamed database)", d.Name, c.Name, len(c.Values), d.N, c.Item)
		}
	}
	size, ok := mulInts(d.N, d.C, d.H, d.W)
	switch {
	case d.Stream != nil:
		if d.Pixels != nil || d.Encoded != nil || d.Floats != nil || d.Labels != nil || len(d.Stream.ends) < d.N {
			return fmt.Errorf("data: dataset %q: streamed from a database with %d records for %d images, and images or labels in memory; want one or the other", d.Name, len(d.Stream.ends), d.N)
		}
		return nil
	case d.Encoded != nil:
		if len(d.Encoded) != d.N || d.Pixels != nil || d.Floats != nil {
			return fmt.Errorf("data: dataset %q: %d encoded images and %d pixel bytes for %d images; want N encoded and no pixels", d.Name, len(d.Encoded), len(d.Pixels), d.N)
		}
	case d.Floats != nil:
		if !ok || len(d.Floats) != size || d.Pixels != nil {
			return fmt.Errorf("data: dataset %q: %d float values, want %dx%dx%dx%d and no pixels", d.Name, len(d.Floats), d.N, d.C, d.H, d.W)
		}
	case !ok || len(d.Pixels) != size:
		return fmt.Errorf("data: dataset %q: %d pixel bytes, want %dx%dx%dx%d", d.Name, len(d.Pixels), d.N, d.C, d.H, d.W)
	}
	if len(d.Labels) != d.N {
		return fmt.Errorf("data: dataset %q: %d labels for %d images", d.Name, len(d.Labels), d.N)
	}
	for i, l := range d.Labels {
		if l < 0 || int(l) >= d.Classes {
			return fmt.Errorf("data: dataset %q: label %d of image %d out of range 0..%d", d.Name, l, i, d.Classes-1)
		}
	}
	return nil
}

// mulInts multiplies non-negative ints, reporting false on overflow.
func mulInts(xs ...int) (int, bool) {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > uint64(maxInt) {
			return 0, false
		}
		p = lo
	}
	return int(p), true
}

const maxInt = int(^uint(0) >> 1)
