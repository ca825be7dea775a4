package bytesize

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		bare int64
		want int64
		err  string
	}{
		{"8GiB", 1, 8 << 30, ""},
		{"8gib", 1, 8 << 30, ""},
		{" 512 KiB ", 1, 512 << 10, ""},
		{"1.5MiB", 1, 3 << 19, ""},
		{"2TiB", 1, 2 << 40, ""},
		{"100B", 1 << 20, 100, ""},
		{"3", 1 << 20, 3 << 20, ""},
		{"0", 1, 0, ""},
		{"", 1, 0, "want a number"},
		{"GiB", 1, 0, "want a number"},
		{"eight", 1, 0, "want a number"},
		{"NaN", 1, 0, "want a number"},
		{"-1KiB", 1, 0, "negative"},
		{"1e30GiB", 1, 0, "too large"},
		{"0.3B", 1, 0, "not a whole number"},
	} {
		got, err := Parse(c.in, c.bare)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q): %d, %v; want an error containing %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q, %d) = %d, %v; want %d", c.in, c.bare, got, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"8GiB", "1.5 MiB", "3", "-1", "1e400", "0.5b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s, 1<<20)
		if err == nil && v < 0 {
			t.Fatalf("Parse(%q) = %d: negative without an error", s, v)
		}
	})
}
