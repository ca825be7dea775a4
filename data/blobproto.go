package data

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Blob is a decoded Caffe BlobProto, as in a mean file (.binaryproto): a
// shape and its float32 values in row-major order.
type Blob struct {
	// Shape holds the dimensions, outermost first.
	Shape []int
	// Data holds the product of Shape values.
	Data []float32
}

// ShapeString formats a shape as "1x3x32x32".
func ShapeString(shape []int) string {
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, "x")
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// BlobProto field numbers (caffe.proto).
const (
	bpNum        = 1
	bpChannels   = 2
	bpHeight     = 3
	bpWidth      = 4
	bpData       = 5
	bpShape      = 7
	bpDoubleData = 8
	bsDim        = 1 // BlobShape.dim
)

// maxBlobDims bounds the dimensions a shape may list.
const maxBlobDims = 32

// wireReader walks protobuf wire-format bytes; err is set once and sticks.
type wireReader struct {
	b   []byte
	off int
	err error
}

func (r *wireReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *wireReader) more() bool { return r.err == nil && r.off < len(r.b) }

func (r *wireReader) varint() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		if r.off >= len(r.b) {
			r.fail("truncated varint")
			return 0
		}
		c := r.b[r.off]
		r.off++
		if i == 9 && c > 1 {
			r.fail("varint overflows 64 bits")
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	r.fail("varint longer than 10 bytes")
	return 0
}

func (r *wireReader) fixed(n int) []byte {
	if len(r.b)-r.off < n {
		r.fail("truncated: %d-byte value, %d bytes left", n, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *wireReader) bytes() []byte {
	n := r.varint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail("truncated: length %d, %d bytes left", n, len(r.b)-r.off)
		return nil
	}
	return r.fixed(int(n))
}

// skip passes over a field of wire type wt.
func (r *wireReader) skip(field uint64, wt int) {
	switch wt {
	case wireVarint:
		r.varint()
	case wireFixed64:
		r.fixed(8)
	case wireBytes:
		r.bytes()
	case wireFixed32:
		r.fixed(4)
	default:
		r.fail("field %d: unsupported wire type %d", field, wt)
	}
}

// tag reads a field key.
func (r *wireReader) tag() (field uint64, wt int) {
	k := r.varint()
	field, wt = k>>3, int(k&7)
	if r.err == nil && field == 0 {
		r.fail("field number 0")
	}
	return field, wt
}

// int32Dim reads a legacy int32 size (num, channels, height, width).
func (r *wireReader) int32Dim(field uint64, name string, wt int) int {
	if wt != wireVarint {
		r.fail("field %d (%s): wire type %d, want varint", field, name, wt)
		return 0
	}
	v := int32(r.varint())
	if v < 0 {
		r.fail("field %d (%s): negative size %d", field, name, v)
		return 0
	}
	return int(v)
}

// DecodeBlobProto decodes a Caffe BlobProto from protobuf binary bytes:
// num, channels, height and width (fields 1–4) or shape (field 7, a
// BlobShape of int64 dims, packed or not), and data (field 5, float32,
// packed or not) or double_data (field 8). Other fields are skipped.
// Allocation is bounded by len(b). Errors start with name.
func DecodeBlobProto(name string, b []byte) (*Blob, error) {
	r := &wireReader{b: b}
	var (
		legacy    [4]int
		hasLegacy bool
		shape     []int
		hasShape  bool
		data      []float32
		doubles   bool
	)
	legacyNames := [4]string{"num", "channels", "height", "width"}
	for r.more() {
		field, wt := r.tag()
		if r.err != nil {
			break
		}
		switch field {
		case bpNum, bpChannels, bpHeight, bpWidth:
			legacy[field-1] = r.int32Dim(field, legacyNames[field-1], wt)
			hasLegacy = true
		case bpData, bpDoubleData:
			isDouble := field == bpDoubleData
			if len(data) > 0 && doubles != isDouble {
				r.fail("both data and double_data are set")
				break
			}
			doubles = isDouble
			data = r.floats(field, wt, isDouble, data)
		case bpShape:
			if wt != wireBytes {
				r.fail("field 7 (shape): wire type %d, want a message", wt)
				break
			}
			hasShape = true
			shape = r.blobShape(r.bytes(), shape)
		default:
			r.skip(field, wt)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s: corrupt BlobProto: %v", name, r.err)
	}
	if !hasShape {
		if !hasLegacy {
			return nil, fmt.Errorf("%s: BlobProto has no shape (neither shape nor num/channels/height/width)", name)
		}
		shape = legacy[:]
	}
	count, ok := mulInts(shape...)
	if !ok || count != len(data) {
		return nil, fmt.Errorf("%s: BlobProto shape %s holds %s values but data has %d", name, ShapeString(shape), countString(count, ok), len(data))
	}
	return &Blob{Shape: shape, Data: data}, nil
}

func countString(n int, ok bool) string {
	if !ok {
		return "too many"
	}
	return strconv.Itoa(n)
}

// floats reads field 5 or 8, packed or a single value, appending to dst.
func (r *wireReader) floats(field uint64, wt int, isDouble bool, dst []float32) []float32 {
	size, single := 4, wireFixed32
	if isDouble {
		size, single = 8, wireFixed64
	}
	switch wt {
	case wireBytes:
		p := r.bytes()
		if r.err != nil {
			return dst
		}
		if len(p)%size != 0 {
			r.fail("field %d: packed length %d is not a multiple of %d", field, len(p), size)
			return dst
		}
		if dst == nil {
			dst = make([]float32, 0, len(p)/size)
		}
		for ; len(p) > 0; p = p[size:] {
			dst = append(dst, decodeFloat(p, isDouble))
		}
	case single:
		if p := r.fixed(size); p != nil {
			dst = append(dst, decodeFloat(p, isDouble))
		}
	default:
		r.fail("field %d: wire type %d, want %d or 2 (packed)", field, wt, single)
	}
	return dst
}

func decodeFloat(p []byte, isDouble bool) float32 {
	if isDouble {
		return float32(math.Float64frombits(binary.LittleEndian.Uint64(p)))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(p))
}

// blobShape decodes a BlobShape message, appending its dims to dst.
func (r *wireReader) blobShape(msg []byte, dst []int) []int {
	if r.err != nil {
		return dst
	}
	s := &wireReader{b: msg}
	add := func(v uint64) {
		if int64(v) < 0 || v > uint64(maxInt) {
			s.fail("shape dim %d is negative or too large", int64(v))
			return
		}
		if len(dst) >= maxBlobDims {
			s.fail("shape has more than %d dims", maxBlobDims)
			return
		}
		dst = append(dst, int(v))
	}
	for s.more() {
		field, wt := s.tag()
		if s.err != nil {
			break
		}
		if field != bsDim {
			s.skip(field, wt)
			continue
		}
		switch wt {
		case wireVarint:
			add(s.varint())
		case wireBytes:
			p := &wireReader{b: s.bytes()}
			for p.more() && s.err == nil {
				add(p.varint())
			}
			if p.err != nil {
				s.fail("packed dims: %v", p.err)
			}
		default:
			s.fail("dim: wire type %d, want varint", wt)
		}
	}
	if s.err != nil {
		r.fail("field 7 (shape): %v", s.err)
	}
	return dst
}

// ReadBlobProto reads and decodes a Caffe .binaryproto file.
func ReadBlobProto(path string) (*Blob, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeBlobProto(path, b)
}
