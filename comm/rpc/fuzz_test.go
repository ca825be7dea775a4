package rpc

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// decode reads one message from b the way both ends do.
func decode(b []byte, maxFrame int) (message, error) {
	rd := reader{r: bytes.NewReader(b), maxFrame: maxFrame, seq: 1}
	var m message
	n, err := rd.readHead(&m, func() {})
	if err != nil {
		return m, err
	}
	if n > maxFrame/4 {
		panic("rpc: payload bound not enforced")
	}
	m.data = make([]float32, n)
	return m, rd.readFloats(m.data)
}

func encode(m *message) []byte {
	var buf []byte
	var w bytes.Buffer
	if err := writeMessage(&w, m, 1, &buf); err != nil {
		panic(err)
	}
	return w.Bytes()
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(&message{op: 1, ints: [NumInts]int64{1, 2, 3, 4}, floats: [NumFloats]float64{0.5, -1}, text: "dsgd:w", data: []float32{1, 2, 3}}))
	f.Add(encode(&message{op: 7, status: statusError, text: "boom"}))
	f.Add(encode(&message{status: statusPending}))
	f.Add(encode(&message{op: 2, data: make([]float32, 5000)}))
	f.Add([]byte("dg\x01\x03"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b, 1<<16)
		if err != nil {
			return
		}
		// A message that decodes re-encodes to the bytes it came from.
		again := encode(&m)
		if !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("re-encoding differs:\n% x\n% x", again, b[:len(again)])
		}
		m2, err := decode(again, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(floatBits(m.data), floatBits(m2.data)) || m.text != m2.text || m.ints != m2.ints || m.op != m2.op {
			t.Fatalf("round trip: %+v vs %+v", m, m2)
		}
	})
}

func floatBits(f []float32) []byte { return append([]byte(nil), floatBytes(f)...) }

func TestDecodeTruncated(t *testing.T) {
	b := encode(&message{op: 3, text: "abc", data: []float32{1, 2, 3, 4}})
	for n := range len(b) {
		_, err := decode(b[:n], 1<<16)
		want := io.ErrUnexpectedEOF
		if n == 0 {
			want = io.EOF
		}
		if !errors.Is(err, want) {
			t.Fatalf("decode of %d of %d bytes: %v, want %v", n, len(b), err, want)
		}
	}
	if _, err := decode(b, 1<<16); err != nil {
		t.Fatal(err)
	}
}
