//go:build !purego

package db

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStaged: a staged database appears at its path on Commit only, whole;
// Abort and a failed Commit leave nothing behind, not even the temporary
// sibling.
func TestStaged(t *testing.T) {
	cases := []struct {
		name string
		// before runs between the Puts and the end; end is Commit or Abort.
		before  func(t *testing.T, path string)
		commit  bool
		wantErr string
		made    bool
	}{
		{name: "commit", commit: true, made: true},
		{name: "abort"},
		{name: "taken meanwhile", commit: true, wantErr: "already exists",
			before: func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, b := range []Backend{LMDB, LevelDB} {
		for _, c := range cases {
			t.Run(b.String()+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "feat")
				s, err := CreateStaged(path, b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Fatalf("%s exists before Commit: %v", path, err)
				}
				for i := range 3 {
					if err := s.Put(fmt.Appendf(nil, "%010d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
						t.Fatal(err)
					}
				}
				if c.before != nil {
					c.before(t, path)
				}
				if c.commit {
					err = s.Commit()
				} else {
					err = s.Abort()
				}
				if c.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), c.wantErr) {
						t.Fatalf("err = %v, want %q", err, c.wantErr)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if err := s.Put([]byte("k"), []byte("v")); err == nil {
					t.Error("Put after the end was accepted")
				}
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if e.Name() != "feat" {
						t.Errorf("left %s in the folder", e.Name())
					}
				}
				if !c.made {
					return
				}
				n := 0
				if err := Scan(path, b, func(k, v []byte) error {
					if want := fmt.Sprintf("%010d", n); string(k) != want {
						return fmt.Errorf("key %q, want %q", k, want)
					}
					n++
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if n != 3 {
					t.Fatalf("%d records, want 3", n)
				}
			})
		}
	}
}

// TestStagedRefuses: an existing database or a missing folder is refused
// before anything is written, naming the path.
func TestStagedRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "old"), "already exists"},
		{filepath.Join(dir, "no", "such"), "does not exist"},
	} {
		if _, err := CreateStaged(c.path, LMDB); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("CreateStaged(%s): %v, want %q naming it", c.path, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left %d entries, want the one there before", len(ents))
	}
}
