package metrics

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestStampWriter: each whole line gets the time and the prefix, written
// at once; a partial line waits for its newline, or Flush.
func TestStampWriter(t *testing.T) {
	at := time.Date(2026, 11, 27, 1, 23, 45, 678_900_000, time.Local)
	for _, tc := range []struct {
		name, prefix string
		writes       []string
		want         string
	}{
		{"one line", "", []string{"iter 10 loss 0.5\n"}, "2026-11-27 01:23:45.678 iter 10 loss 0.5\n"},
		{"two lines in one write", "", []string{"a\nb\n"}, "2026-11-27 01:23:45.678 a\n2026-11-27 01:23:45.678 b\n"},
		{"split line", "", []string{"dsgd: war", "ning: x\n"}, "2026-11-27 01:23:45.678 dsgd: warning: x\n"},
		{"rank prefix", "[rank 1] ", []string{"dsgd: warning: x\n"}, "2026-11-27 01:23:45.678 [rank 1] dsgd: warning: x\n"},
		{"unfinished line flushed", "", []string{"last"}, "2026-11-27 01:23:45.678 last\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			w := NewStampWriter(&b, tc.prefix)
			w.now = func() time.Time { return at }
			for _, s := range tc.writes {
				if n, err := fmt.Fprint(w, s); err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			w.Flush()
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}
