package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{Kind: KindFloat32, Tag: 7, Len: 4 * 1000, Seq: 0},
		{Kind: KindFloat16, Tag: 0xffffffff, Len: 2, Seq: 1<<64 - 1},
		{Kind: KindBytes, Tag: 0, Len: 0, Seq: 42},
		{Kind: KindControl, Tag: 1, Len: 13, Seq: 3},
	} {
		b := AppendHeader(nil, h)
		if len(b) != HeaderSize {
			t.Fatalf("encoded %d bytes, want %d", len(b), HeaderSize)
		}
		got, err := ParseHeader(b, 1<<20)
		if err != nil {
			t.Fatalf("%+v: %v", h, err)
		}
		if got != h {
			t.Fatalf("round trip %+v -> %+v", h, got)
		}
	}
}

func TestHeaderLayout(t *testing.T) {
	b := AppendHeader(nil, Header{Kind: KindBytes, Tag: 0x04030201, Len: 0x0c0b0a09, Seq: 0x14131211})
	want := []byte{'d', 'g', Version, 3, 1, 2, 3, 4, 9, 10, 11, 12, 0, 0, 0, 0, 0x11, 0x12, 0x13, 0x14, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("layout\n got %v\nwant %v", b, want)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	good := func() []byte { return AppendHeader(nil, Header{Kind: KindFloat32, Tag: 1, Len: 16}) }
	tests := []struct {
		name  string
		edit  func(b []byte) []byte
		max   uint64
		isErr error
		msg   string
	}{
		{"short", func(b []byte) []byte { return b[:HeaderSize-1] }, 100, ErrMalformed, "header of 23 bytes"},
		{"magic", func(b []byte) []byte { b[0] = 'x'; return b }, 100, ErrMalformed, "bad magic"},
		{"version", func(b []byte) []byte { b[2] = Version + 1; return b }, 100, ErrMalformed, "protocol version 2"},
		{"kind zero", func(b []byte) []byte { b[3] = 0; return b }, 100, ErrMalformed, "unknown kind 0"},
		{"kind 9", func(b []byte) []byte { b[3] = 9; return b }, 100, ErrMalformed, "unknown kind 9"},
		{"too large", func(b []byte) []byte { return b }, 15, ErrTooLarge, "16-byte float32 payload announced, limit 15"},
		{"huge", func(b []byte) []byte { return AppendHeader(nil, Header{Kind: KindBytes, Len: 100e9}) }, 1 << 30, ErrTooLarge, "100000000000-byte"},
		{"ragged f32", func(b []byte) []byte { return AppendHeader(nil, Header{Kind: KindFloat32, Len: 6}) }, 100, ErrMalformed, "whole number of 4-byte"},
		{"ragged f16", func(b []byte) []byte { return AppendHeader(nil, Header{Kind: KindFloat16, Len: 3}) }, 100, ErrMalformed, "whole number of 2-byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeader(tc.edit(good()), tc.max)
			if !errors.Is(err, tc.isErr) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.isErr, tc.msg)
			}
		})
	}
}

func TestPutHeaderShortPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "wire: ") {
			t.Fatalf("recovered %v", r)
		}
	}()
	PutHeader(make([]byte, HeaderSize-1), Header{})
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindFloat32: "float32", KindFloat16: "float16", KindBytes: "bytes", KindControl: "control", 77: "kind(77)"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", uint8(k), k.String(), want)
		}
	}
}
