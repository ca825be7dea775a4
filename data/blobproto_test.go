package data

import (
	"slices"
	"testing"
)

func TestDecodeBlobProto(t *testing.T) {
	legacy := pbInt(pbInt(pbInt(pbInt(nil, bpNum, 1), bpChannels, 2), bpHeight, 1), bpWidth, 2)
	cases := []struct {
		name  string
		in    []byte
		shape []int
		data  []float32
	}{
		{"legacy packed", pbPackedFloats(legacy, bpData, 1, 2, 3, 4), []int{1, 2, 1, 2}, []float32{1, 2, 3, 4}},
		{"legacy unpacked", pbFloat(pbFloat(pbFloat(pbFloat(legacy, bpData, 1), bpData, 2), bpData, 3), bpData, -4),
			[]int{1, 2, 1, 2}, []float32{1, 2, 3, -4}},
		{"shape packed", meanProto(1, 2, 1, []float32{0.5, 1.5}), []int{1, 1, 2, 1}, []float32{0.5, 1.5}},
		{"shape unpacked dims", pbPackedFloats(pbBytes(nil, bpShape, pbInt(pbInt(nil, bsDim, 3), bsDim, 1)), bpData, 7, 8, 9),
			[]int{3, 1}, []float32{7, 8, 9}},
		{"double data", pbPackedDoubles(pbShape(nil, 2), bpDoubleData, 0.25, -2), []int{2}, []float32{0.25, -2}},
		{"unknown fields skipped", pbInt(pbBytes(pbPackedFloats(pbShape(nil, 1), bpData, 3), 6, []byte{1, 2, 3, 4}), 100, 5),
			[]int{1}, []float32{3}},
		{"shape wins over legacy", pbPackedFloats(pbShape(legacy, 4), bpData, 1, 2, 3, 4), []int{4}, []float32{1, 2, 3, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeBlobProto("mean.binaryproto", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.Shape, tc.shape) || !slices.Equal(b.Data, tc.data) {
				t.Errorf("got shape %v data %v, want %v %v", b.Shape, b.Data, tc.shape, tc.data)
			}
		})
	}
}

func TestDecodeBlobProtoCorrupt(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no shape"},
		{"count mismatch", pbPackedFloats(pbShape(nil, 1, 3), bpData, 1, 2), "shape 1x3 holds 3 values but data has 2"},
		{"truncated varint", []byte{0x08, 0x80}, "truncated varint"},
		{"truncated length", pbBytes(nil, bpData, make([]byte, 8))[:5], "truncated: length 8"},
		{"long varint", append([]byte{0x08}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "overflows"},
		{"packed not multiple of 4", pbBytes(pbShape(nil, 1), bpData, []byte{1, 2, 3}), "not a multiple of 4"},
		{"negative legacy dim", pbInt(nil, bpChannels, -3), "negative size -3"},
		{"negative shape dim", pbShape(nil, -1), "negative"},
		{"group wire type", pbTag(nil, 9, 3), "unsupported wire type 3"},
		{"field zero", []byte{0x00}, "field number 0"},
		{"data and double_data", pbPackedDoubles(pbPackedFloats(pbShape(nil, 2), bpData, 1), bpDoubleData, 2), "both data and double_data"},
		{"shape not a message", pbInt(nil, bpShape, 3), "want a message"},
		{"overflowing shape", pbShape(nil, 1<<40, 1<<40, 1<<40), "too many values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeBlobProto("mean.binaryproto", tc.in)
			wantErr(t, err, "mean.binaryproto", tc.want)
		})
	}
}

func TestReadBlobProto(t *testing.T) {
	p := writeFile(t, t.TempDir(), "mean.binaryproto", meanProto(1, 1, 2, []float32{3, 4}))
	b, err := ReadBlobProto(p)
	if err != nil {
		t.Fatal(err)
	}
	if ShapeString(b.Shape) != "1x1x1x2" || !slices.Equal(b.Data, []float32{3, 4}) {
		t.Errorf("got %v %v", b.Shape, b.Data)
	}
}
