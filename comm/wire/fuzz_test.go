package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

func FuzzParseHeader(f *testing.F) {
	f.Add(AppendHeader(nil, Header{Kind: KindFloat32, Tag: 1, Len: 8, Seq: 2}), uint64(1<<20))
	f.Add(AppendHeader(nil, Header{Kind: KindBytes, Len: 100e9}), uint64(1<<30))
	f.Add([]byte("dg\x01\x09"), uint64(0))
	f.Add([]byte{}, uint64(5))
	f.Fuzz(func(t *testing.T, b []byte, max uint64) {
		h, err := ParseHeader(b, max)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		if h.Len > max || h.Len%uint64(h.Kind.ElemSize()) != 0 {
			t.Fatalf("accepted %+v with max %d", h, max)
		}
		if again := AppendHeader(nil, h); !bytes.Equal(again, b[:HeaderSize]) {
			t.Fatalf("re-encoding %+v gives % x, input % x", h, again, b[:HeaderSize])
		}
	})
}

func FuzzDecodeControl(f *testing.F) {
	for _, m := range []Control{
		Hello{Version: Version, Token: "t", Rank: 1, Size: 2, ModelHash: 9, ListenAddr: "127.0.0.1:9"},
		Welcome{Addrs: []string{"a", "bb"}},
		Reject{Reason: "bad token"},
	} {
		b, _ := m.AppendBinary(nil)
		f.Add(b)
	}
	f.Add([]byte{typeWelcome, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{typeReject, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeControl(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := m.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", m, err)
		}
		m2, err := DecodeControl(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip %#v -> %#v, %v", m, m2, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs from the input:\n% x\n% x", again, b)
		}
	})
}

func FuzzF16(f *testing.F) {
	f.Add(uint32(0x3f800000))
	f.Add(uint32(0x477ff000))
	f.Add(uint32(0x7fc00001))
	f.Add(uint32(0x33000000))
	f.Fuzz(func(t *testing.T, bits uint32) {
		checkF16(t, math.Float32frombits(bits))
		// The 16 low bits as a half: exact through float32 and back
		// (NaNs come back quieted).
		h := uint16(bits)
		back := F32ToF16(F16ToF32(h))
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			h |= 0x200
		}
		if back != h {
			t.Fatalf("half %04x came back as %04x", uint16(bits), back)
		}
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], back)
		var out [1]float32
		DecodeF16(out[:], b[:])
		if math.Float32bits(out[0]) != math.Float32bits(F16ToF32(back)) {
			t.Fatalf("DecodeF16 disagrees with F16ToF32")
		}
		f := math.Float32frombits(bits)
		EncodeF16(b[:], []float32{f})
		if binary.LittleEndian.Uint16(b[:]) != F32ToF16(f) {
			t.Fatalf("EncodeF16 disagrees with F32ToF16 on %08x", bits)
		}
	})
}
