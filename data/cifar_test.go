package data

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestDecodeCIFAR(t *testing.T) {
	for _, zip := range []bool{false, true} {
		in := cifarBytes(5, 3, 9, 0)
		if zip {
			in = gz(t, in)
		}
		labels, pix, err := DecodeCIFAR("test_batch.bin", in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(labels, []int32{3, 9, 0}) {
			t.Errorf("labels %v", labels)
		}
		if len(pix) != 3*cifarImage || pix[0] != 5 || pix[cifarImage-1] != 5 || pix[2*cifarImage] != 7 {
			t.Errorf("pixels: len %d, first bytes of images %d %d", len(pix), pix[0], pix[2*cifarImage])
		}
	}
}

func TestReadCIFARFilesConcatenates(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "data_batch_1.bin", cifarBytes(0, 1, 2))
	b := writeFile(t, dir, "data_batch_2.bin", cifarBytes(10, 3))
	d, err := ReadCIFARFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 3 || d.C != 3 || d.H != 32 || d.W != 32 || d.Classes != 10 {
		t.Fatalf("got %dx%dx%dx%d, %d classes", d.N, d.C, d.H, d.W, d.Classes)
	}
	if !slices.Equal(d.Labels, []int32{1, 2, 3}) || d.Image(1)[100] != 1 || d.Image(2)[3071] != 10 {
		t.Errorf("labels %v, pixels %d %d", d.Labels, d.Image(1)[100], d.Image(2)[3071])
	}
	if err := d.Check(); err != nil {
		t.Error(err)
	}
}

func TestCIFARCorrupt(t *testing.T) {
	good := cifarBytes(0, 1, 2, 3)
	cases := []struct {
		name string
		in   []byte
		want []string
	}{
		{"empty", nil, []string{"empty file", "3073-byte"}},
		{"truncated", good[:len(good)-100], []string{"truncated: 9119 bytes is 2 whole 3073-byte CIFAR-10 records and 2973 bytes of a partial one"}},
		{"extra bytes", append(slices.Clone(good), 1, 2), []string{"truncated", "2 bytes of a partial one"}},
		{"label out of range", cifarBytes(0, 1, 10, 3), []string{"record 1: label 10 out of range 0..9"}},
		{"oversize", make([]byte, (cifarPerFile+1)*cifarRecord), []string{"oversize: 10001 records", "at most 10000"}},
		{"bad gzip", []byte{0x1f, 0x8b, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []string{"corrupt gzip header"}},
		{"cut gzip", []byte{0x1f, 0x8b, 1, 2, 3}, []string{"truncated: the gzip stream ends early"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "data_batch_1.bin", tc.in)
			_, err := ReadCIFARFiles(p)
			wantErr(t, err, append([]string{p}, tc.want...)...)
		})
	}
}

func TestReadCIFARMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "data_batch_1.bin")
	_, err := ReadCIFARFiles(p)
	wantErr(t, err, p, "no such file")
}
