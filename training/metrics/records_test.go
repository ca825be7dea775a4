package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRecordFileAppend: a resumed run appends after the last complete
// line, cutting off one a killed run left unfinished, and reads the
// first line (a CSV header); a fresh run truncates.
func TestRecordFileAppend(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		appending    bool
		first, after string
	}{
		{"fresh", "h\na\n", false, "", "new\n"},
		{"empty", "", true, "", "new\n"},
		{"complete", "h\na\n", true, "h", "h\na\nnew\n"},
		{"unfinished", "h\na\n{\"kind\":\"tr", true, "h", "h\na\nnew\n"},
		{"only unfinished", "kind,ti", true, "", "new\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m")
			if err := os.WriteFile(path, []byte(tc.before), 0o666); err != nil {
				t.Fatal(err)
			}
			rf, err := OpenRecordFile("--metrics", path, tc.appending)
			if err != nil {
				t.Fatal(err)
			}
			if rf.first != tc.first {
				t.Errorf("first line %q, want %q", rf.first, tc.first)
			}
			rf.bw.WriteString("new\n")
			if err := rf.Close(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.after {
				t.Errorf("file %q, want %q", b, tc.after)
			}
		})
	}
}

// TestRecordFileFlushes: whole lines written to a record file reach the
// disk as the run goes (at most once per interval), not only at Close; a
// partial line waits.
func TestRecordFileFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	rf, err := OpenRecordFile("--metrics", path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	rf.every = 0
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	fmt.Fprint(rf, `{"iter":0`)
	if got := read(); got != "" {
		t.Fatalf("a partial line reached the file: %q", got)
	}
	fmt.Fprint(rf, "}\n")
	if got := read(); got != "{\"iter\":0}\n" {
		t.Fatalf("file holds %q after a whole line, want it", got)
	}
	rf.every = time.Hour
	fmt.Fprint(rf, "{\"iter\":1}\n")
	if got := read(); got != "{\"iter\":0}\n" {
		t.Fatalf("flushed again within the interval: %q", got)
	}
}
