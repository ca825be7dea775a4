package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes builds an IDX file: magic, big-endian dims, payload.
func idxBytes(magic uint32, dims []uint32, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, payload...)
}

// idxImages builds an IDX images file of n h×w images whose pixel j of
// image i is i*h*w+j (mod 256).
func idxImages(n, h, w int) []byte {
	pix := make([]byte, n*h*w)
	for j := range pix {
		pix[j] = byte(j)
	}
	return idxBytes(idxImageMagic, []uint32{uint32(n), uint32(h), uint32(w)}, pix)
}

// idxLabels builds an IDX labels file.
func idxLabels(labels ...byte) []byte {
	return idxBytes(idxLabelMagic, []uint32{uint32(len(labels))}, labels)
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cifarBytes builds a CIFAR-10 batch: record i has label labels[i] and
// every pixel equal to first+i (mod 256).
func cifarBytes(first int, labels ...byte) []byte {
	var b []byte
	for i, l := range labels {
		b = append(b, l)
		b = append(b, bytes.Repeat([]byte{byte(first + i)}, cifarImage)...)
	}
	return b
}

// wantErr fails unless err is non-nil and contains every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// Protobuf encoding, for building BlobProto test inputs.

func pbVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func pbTag(b []byte, field, wt int) []byte { return pbVarint(b, uint64(field<<3|wt)) }

func pbBytes(b []byte, field int, p []byte) []byte {
	b = pbTag(b, field, wireBytes)
	b = pbVarint(b, uint64(len(p)))
	return append(b, p...)
}

func pbPackedFloats(b []byte, field int, xs ...float32) []byte {
	var p []byte
	for _, x := range xs {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(x))
	}
	return pbBytes(b, field, p)
}

func pbFloat(b []byte, field int, x float32) []byte {
	b = pbTag(b, field, wireFixed32)
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
}

func pbPackedDoubles(b []byte, field int, xs ...float64) []byte {
	var p []byte
	for _, x := range xs {
		p = binary.LittleEndian.AppendUint64(p, math.Float64bits(x))
	}
	return pbBytes(b, field, p)
}

func pbInt(b []byte, field int, v int64) []byte {
	b = pbTag(b, field, wireVarint)
	return pbVarint(b, uint64(v))
}

// pbShape builds a shape field (7) holding a packed BlobShape.
func pbShape(b []byte, dims ...int64) []byte {
	var p []byte
	for _, d := range dims {
		p = pbVarint(p, uint64(d))
	}
	return pbBytes(b, bpShape, pbBytes(nil, bsDim, p))
}

// meanProto builds a modern mean file: shape 1×c×h×w, packed data.
func meanProto(c, h, w int, data []float32) []byte {
	return pbPackedFloats(pbShape(nil, 1, int64(c), int64(h), int64(w)), bpData, data...)
}
