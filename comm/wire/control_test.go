package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestControlRoundTrip(t *testing.T) {
	for _, m := range []Control{
		Hello{Version: Version, Token: "s3cret", Rank: 3, Size: 4, ModelHash: 0xdeadbeefcafef00d, ListenAddr: "10.0.0.3:4242"},
		Hello{},
		Hello{Version: Version, Rank: 1, Size: 2, Host: "boot/net:4026531840/h/shmdev:25"},
		Welcome{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2", ""}},
		Welcome{Addrs: []string{}},
		Reject{Reason: "bad token"},
		Reject{},
	} {
		b, err := m.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b[:6]) != "prefix" {
			t.Fatalf("AppendBinary overwrote the prefix")
		}
		got, err := DecodeControl(b[6:])
		if err != nil {
			t.Fatalf("%#v: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip %#v -> %#v", m, got)
		}
	}
}

func TestControlEncodeErrors(t *testing.T) {
	long := strings.Repeat("x", MaxString+1)
	for _, m := range []Control{
		Hello{Rank: -1},
		Hello{Size: 1 << 40},
		Hello{Token: long},
		Welcome{Addrs: []string{"a", long}},
		Reject{Reason: long},
	} {
		if _, err := m.AppendBinary(nil); err == nil {
			t.Errorf("%T accepted", m)
		}
	}
}

func TestDecodeControlRejects(t *testing.T) {
	hello, _ := Hello{Token: "tok", Rank: 1, Size: 2}.AppendBinary(nil)
	hostHello, _ := Hello{Token: "tok", Rank: 1, Size: 2, Host: "h"}.AppendBinary(nil)
	welcome, _ := Welcome{Addrs: []string{"a:1"}}.AppendBinary(nil)
	tests := []struct {
		name string
		b    []byte
		msg  string
	}{
		{"empty", nil, "empty control message"},
		{"type", []byte{9}, "unknown control message type 9"},
		{"truncated hello", hello[:len(hello)-1], "truncated"},
		{"trailing", append(append([]byte{}, hostHello...), 0), "1 trailing bytes"},
		{"partial host", append(append([]byte{}, hello...), 0), "truncated"},
		{"long string", []byte{typeReject, 0xff, 0xff, 0xff, 0x7f}, "string of 2147483647 bytes"},
		{"string past end", []byte{typeReject, 5, 0, 0, 0, 'a'}, "truncated"},
		{"addr count", []byte{typeWelcome, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, "welcome announces 4294967295 addresses in 4 bytes"},
		{"welcome truncated", welcome[:len(welcome)-2], "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeControl(tc.b)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %#v, %v; want an error containing %q", m, err, tc.msg)
			}
		})
	}
}
