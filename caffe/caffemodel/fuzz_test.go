package caffemodel

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"model.caffemodel", "model_v1.caffemodel"} {
		if b, err := os.ReadFile(filepath.Join(fixtures, name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\xa2\x06\x0f\x0a\x01x\x3a\x0a\x3a\x02\x08\x03\x2a\x04\x00\x00\x80\x3f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Decode("fuzz", b)
		if err != nil {
			return
		}
		for _, l := range n.Layers {
			for _, bl := range l.Blobs {
				c := 1
				for _, d := range bl.Shape {
					c *= d
				}
				if c != len(bl.Data) {
					t.Fatalf("blob of shape %v has %d values", bl.Shape, len(bl.Data))
				}
			}
		}
	})
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte("\x08\x2a\x12\x01m"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := DecodeState("fuzz", b); err == nil && st.Iter < 0 {
			t.Fatal("negative iteration accepted")
		}
	})
}
