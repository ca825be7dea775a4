package redisstore

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url  string
		want Endpoint
	}{
		{"redis://127.0.0.1:6379", Endpoint{Addr: "127.0.0.1:6379"}},
		{"redis://localhost:1/", Endpoint{Addr: "localhost:1"}},
		{"redis://h:65535/0", Endpoint{Addr: "h:65535"}},
		{"redis://h:6379/15", Endpoint{Addr: "h:6379", DB: 15}},
		{"redis://[::1]:6379/2", Endpoint{Addr: "[::1]:6379", DB: 2}},
		{"redis://:pa%40ss@h:6379", Endpoint{Addr: "h:6379", Password: "pa@ss"}},
		{"redis://alice:pw@h:6379/3", Endpoint{Addr: "h:6379", DB: 3, Username: "alice", Password: "pw"}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.url)
		if err != nil || got != tt.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tt.url, got, err, tt.want)
		}
	}
}

func TestParseURLBad(t *testing.T) {
	tests := []struct {
		url  string
		want string // substring of the error, after the quoted URL
	}{
		{"", "empty"},
		{"127.0.0.1:6379", "want redis://HOST:PORT"},
		{"localhost:6379", "want redis://HOST:PORT"},
		{"://h:6379", "missing protocol scheme"},
		{"http://h:6379", `scheme is "http"`},
		{"rediss://h:6379", "TLS"},
		{"redis:h:6379", "want redis://HOST:PORT"},
		{"redis://", "missing HOST:PORT"},
		{"redis:///0", "missing HOST:PORT"},
		{"redis://h", "missing port"},
		{"redis://h:", `port ""`},
		{"redis://:6379", "missing host"},
		{"redis://h:0", `port "0"`},
		{"redis://h:65536", `port "65536"`},
		{"redis://h:abc", "port"},
		{"redis://h:+80", "port"},
		{"redis://h:6379/x", `database "x"`},
		{"redis://h:6379/-1", `database "-1"`},
		{"redis://h:6379/+1", `database "+1"`},
		{"redis://h:6379/1/2", `database "1/2"`},
		{"redis://h:6379/99999999999999999999", "database"},
		{"redis://h:6379?db=1", "query"},
		{"redis://h:6379/?", "query"},
		{"redis://h:6379#x", "fragment"},
		{"redis://h:6379#", "fragment"},
		{"redis://alice@h:6379", "without a password"},
		{"redis://:@h:6379", "empty password"},
		{"redis://::1:6379", "port"},
		{"redis://h:6379/%zz", "invalid URL escape"},
		{"redis://:se%zzcret@h:6379", "invalid"},
		{"redis://h :6379", "invalid character"},
	}
	for _, tt := range tests {
		_, err := ParseURL(tt.url)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded", tt.url)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "redisstore: bad store URL ") || !strings.Contains(msg, tt.want) {
			t.Errorf("ParseURL(%q): %q, want it to name the URL and say %q", tt.url, msg, tt.want)
		}
		if strings.Contains(tt.url, "cret") && strings.Contains(msg, "cret") {
			t.Errorf("ParseURL(%q): error %q leaks the password", tt.url, msg)
		}
		switch {
		case strings.Contains(tt.url, "@"):
			// Credentials are redacted, the rest is quoted.
			if !strings.Contains(msg, `"redis://xxxxx@h:6379"`) {
				t.Errorf("ParseURL(%q): error %q does not quote the redacted URL", tt.url, msg)
			}
		case !strings.Contains(msg, `"`+tt.url+`"`):
			t.Errorf("ParseURL(%q): error %q does not quote the URL", tt.url, msg)
		}
	}
}

func TestEndpointString(t *testing.T) {
	tests := []struct {
		ep   Endpoint
		want string
	}{
		{Endpoint{Addr: "h:1"}, "redis://h:1"},
		{Endpoint{Addr: "h:1", DB: 2, Password: "secret"}, "redis://:xxxxx@h:1/2"},
		{Endpoint{Addr: "h:1", Username: "bob", Password: "secret"}, "redis://bob:xxxxx@h:1"},
	}
	for _, tt := range tests {
		if got := tt.ep.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.ep, got, tt.want)
		}
		if back, err := ParseURL(tt.ep.String()); err != nil || back.Addr != tt.ep.Addr || back.DB != tt.ep.DB {
			t.Errorf("ParseURL(%q) = %+v, %v", tt.ep.String(), back, err)
		}
	}
}
