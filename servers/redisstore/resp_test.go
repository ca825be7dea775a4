package redisstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// readerOf returns a replyReader over the bytes s, holding replies to
// max bytes of strings.
func readerOf(s string, max int64) *replyReader {
	return &replyReader{br: bufio.NewReaderSize(strings.NewReader(s), bufSize), max: max}
}

func TestReadReply(t *testing.T) {
	bulk := func(s string) Reply { return Reply{Kind: KindBulk, Str: []byte(s)} }
	tests := []struct {
		in   string
		want Reply
	}{
		{"+OK\r\n", Reply{Kind: KindSimple, Str: []byte("OK")}},
		{"+\r\n", Reply{Kind: KindSimple, Str: []byte{}}},
		{"-ERR unknown command\r\n", Reply{Kind: KindError, Str: []byte("ERR unknown command")}},
		{":0\r\n", Reply{Kind: KindInt}},
		{":-9223372036854775808\r\n", Reply{Kind: KindInt, Int: math.MinInt64}},
		{":9223372036854775807\r\n", Reply{Kind: KindInt, Int: math.MaxInt64}},
		{"$0\r\n\r\n", bulk("")},
		{"$5\r\nab\r\nc\r\n", bulk("ab\r\nc")},
		{"$-1\r\n", Reply{Kind: KindNil}},
		{"*-1\r\n", Reply{Kind: KindNil}},
		{"*0\r\n", Reply{Kind: KindArray, Elems: []Reply{}}},
		{"*3\r\n$1\r\na\r\n:2\r\n*1\r\n$-1\r\n", Reply{Kind: KindArray, Elems: []Reply{
			bulk("a"), {Kind: KindInt, Int: 2}, {Kind: KindArray, Elems: []Reply{{Kind: KindNil}}}}}},
	}
	for _, tt := range tests {
		r := readerOf(tt.in, 100)
		got, err := r.read()
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("read(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if _, err := r.br.ReadByte(); err != io.EOF {
			t.Errorf("read(%q) left bytes unread", tt.in)
		}
		if enc := appendReply(nil, tt.want); string(enc) != tt.in && !strings.HasPrefix(tt.in, "*-1") {
			t.Errorf("appendReply(%+v) = %q, want %q", tt.want, enc, tt.in)
		}
	}
}

func TestReadReplyBad(t *testing.T) {
	deep := strings.Repeat("*1\r\n", maxDepth+1) + ":1\r\n"
	tests := []struct {
		in   string
		want error
	}{
		{"", io.ErrUnexpectedEOF},
		{"+OK", io.ErrUnexpectedEOF},
		{"+OK\n", ErrProtocol},
		{"\r\n", ErrProtocol},
		{"?x\r\n", ErrProtocol},
		{":\r\n", ErrProtocol},
		{":-\r\n", ErrProtocol},
		{":1x\r\n", ErrProtocol},
		{": 1\r\n", ErrProtocol},
		{":9223372036854775808\r\n", ErrProtocol},
		{":-9223372036854775809\r\n", ErrProtocol},
		{":99999999999999999999\r\n", ErrProtocol},
		{"$-2\r\n", ErrProtocol},
		{"$3\r\nab\r\nX", ErrProtocol},
		{"$3\r\nabc", io.ErrUnexpectedEOF},
		{"$3\r\nabcde", ErrProtocol},
		{"$10\r\nab", io.ErrUnexpectedEOF},
		{"$101\r\n", ErrTooLarge},
		{"*2\r\n$60\r\n" + strings.Repeat("a", 60) + "\r\n$41\r\n", ErrTooLarge},
		{"*2\r\n+" + strings.Repeat("a", 60) + "\r\n-" + strings.Repeat("b", 41) + "\r\n", ErrTooLarge},
		{"*-2\r\n", ErrProtocol},
		{"*2\r\n:1\r\n", io.ErrUnexpectedEOF},
		{"*1048577\r\n", ErrTooLarge},
		{deep, ErrTooLarge},
		{"+" + strings.Repeat("x", bufSize) + "\r\n", ErrProtocol},
	}
	for _, tt := range tests {
		_, err := readerOf(tt.in, 100).read()
		if !errors.Is(err, tt.want) {
			name := tt.in
			if len(name) > 40 {
				name = name[:40] + "..."
			}
			t.Errorf("read(%q) error %v, want %v", name, err, tt.want)
		}
	}
}

// TestReadReplyAllocBound checks that lengths announced by a reply do not
// make the reader allocate ahead of the bound or of the input.
func TestReadReplyAllocBound(t *testing.T) {
	for _, in := range []string{
		"$1000000000\r\n",
		"$1048576\r\nabc",          // within the bound: allocated, then short
		"*1000000\r\n",             // many elements announced, none sent
		"*1000000\r\n*1000000\r\n", // nested announcements
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := readerOf(in, 1<<20).read()
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("read(%q) succeeded", in)
		}
		// The reader's own 64 KiB buffer, plus at most the bound.
		if got := after.TotalAlloc - before.TotalAlloc; got > bufSize+1<<20+16<<10 {
			t.Errorf("read(%q) allocated %d bytes", in, got)
		}
	}
}

// fakeConn returns a conn whose replies come from in.
func fakeConn(in []byte, max int64) *conn {
	cn := &conn{addr: "test:1", br: bufio.NewReaderSize(bytes.NewReader(in), bufSize)}
	cn.rr = replyReader{br: cn.br, max: max}
	return cn
}

// leBytes encodes f as little-endian float32 bytes.
func leBytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, x := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestReadFloatsReply(t *testing.T) {
	big := randomFloats(3*bufSize/4+5, 1) // spans several reader buffers
	bigReply := append(append([]byte("$"+itoa(4*len(big))+"\r\n"), leBytes(big)...), "\r\n"...)
	tests := []struct {
		name string
		in   []byte
		n    int
		want []float32 // nil: want the error
		err  error
	}{
		{"ok", append(append([]byte("$8\r\n"), leBytes([]float32{1.5, -2})...), "\r\n"...), 2, []float32{1.5, -2}, nil},
		{"empty", []byte("$0\r\n\r\n"), 0, []float32{}, nil},
		{"big", bigReply, len(big), big, nil},
		{"missing", []byte("$-1\r\n"), 2, nil, ErrNotFound},
		{"short", []byte("$4\r\nabcd\r\n"), 2, nil, ErrWrongSize},
		{"odd", []byte("$3\r\nabc\r\n"), 2, nil, ErrWrongSize},
		{"too large", []byte("$9999999\r\n"), 2, nil, ErrWrongSize},
		{"truncated", []byte("$8\r\nabcd"), 2, nil, io.ErrUnexpectedEOF},
		{"no crlf", []byte("$4\r\nabcdXY"), 1, nil, ErrProtocol},
		{"bad length", []byte("$x\r\n"), 1, nil, ErrProtocol},
		{"negative", []byte("$-3\r\n"), 1, nil, ErrProtocol},
		{"not bulk", []byte("+OK\r\n"), 1, nil, ErrProtocol},
		{"array", []byte("*1\r\n$4\r\nabcd\r\n"), 1, nil, ErrProtocol},
	}
	for _, tt := range tests {
		for _, native := range []bool{true, false} {
			if native && !nativeLittleEndian() {
				continue
			}
			dst := make([]float32, tt.n)
			err := fakeConn(tt.in, 1000+4*int64(len(big))).readFloatsReply("k", dst, native)
			if tt.want == nil {
				if !errors.Is(err, tt.err) {
					t.Errorf("%s (native %v): error %v, want %v", tt.name, native, err, tt.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (native %v): %v", tt.name, native, err)
				continue
			}
			if i, ok := sameBits(dst, tt.want); !ok {
				t.Errorf("%s (native %v): float %d = %v, want %v", tt.name, native, i, dst[i], tt.want[i])
			}
		}
	}
}

func itoa(n int) string { return string(appendBulkHeader(nil, n)[1 : len(appendBulkHeader(nil, n))-2]) }

// FuzzReadReply feeds arbitrary bytes to the reply reader: it must never
// panic, must respect the bound, and what it accepts must re-encode to
// bytes it reads back as the same value.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":-12\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", "$5000\r\n", "*99999999\r\n", ":99999999999999999999\r\n",
	} {
		f.Add([]byte(s))
	}
	const max = 1 << 12
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := readerOf(string(in), max).read()
		if err != nil {
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrTooLarge) && err != io.ErrUnexpectedEOF {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if n := stringBytes(v); n > max {
			t.Fatalf("accepted a reply with %d bytes of strings, bound %d", n, max)
		}
		enc := appendReply(nil, v)
		back, err := readerOf(string(enc), max).read()
		if err != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("re-encoded %q reads back as %+v, %v; want %+v", enc, back, err, v)
		}
	})
}

// stringBytes counts the string bytes a reply holds.
func stringBytes(v Reply) int {
	n := len(v.Str)
	for _, e := range v.Elems {
		n += stringBytes(e)
	}
	return n
}

// FuzzReadFloatsReply feeds arbitrary bytes as the reply to GET: it must
// never panic, and the native and portable decoders must agree.
func FuzzReadFloatsReply(f *testing.F) {
	f.Add([]byte("$8\r\n\x00\x00\xc0?\x00\x00\x00\xc0\r\n"), uint8(2))
	f.Add([]byte("$-1\r\n"), uint8(1))
	f.Add([]byte("$4\r\nabcd\r\n"), uint8(3))
	f.Add([]byte("-WRONGTYPE x\r\n"), uint8(0))
	f.Add([]byte("$99999999999\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, n uint8) {
		a := make([]float32, n)
		errA := fakeConn(in, 1<<12).readFloatsReply("k", a, false)
		if !nativeLittleEndian() {
			return
		}
		b := make([]float32, n)
		errB := fakeConn(in, 1<<12).readFloatsReply("k", b, true)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("portable error %v, native error %v", errA, errB)
		}
		if errA != nil {
			return
		}
		if i, ok := sameBits(a, b); !ok {
			t.Fatalf("float %d: portable %v, native %v", i, a[i], b[i])
		}
		if want := "$" + itoa(4*int(n)) + "\r\n"; !bytes.HasPrefix(in, []byte(want)) {
			t.Fatalf("accepted %q, which does not start with %q", in, want)
		}
	})
}

// TestParseInt checks the RESP integers parseInt reads and refuses: Redis
// writes lengths and integers without a sign on zero or leading zeros,
// so "$04" is not a length of 4.
func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"4", 4, true}, {"-1", -1, true}, {"1234567890", 1234567890, true},
		{"9223372036854775807", 1<<63 - 1, true}, {"-9223372036854775808", -1 << 63, true},
		{"", 0, false}, {"-", 0, false}, {"04", 0, false}, {"00", 0, false}, {"-0", 0, false},
		{"-01", 0, false}, {"+4", 0, false}, {"4a", 0, false}, {"9223372036854775808", 0, false},
		{"12345678901234567890", 0, false},
	} {
		got, err := parseInt([]byte(tc.in))
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parseInt(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrProtocol) {
			t.Errorf("parseInt(%q): error %v is not ErrProtocol", tc.in, err)
		}
	}
}
