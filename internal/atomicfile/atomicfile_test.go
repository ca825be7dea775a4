package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	if err := os.WriteFile(path, []byte("old contents, longer than the new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v; want \"new\"", b, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (set exactly, whatever the umask)", st.Mode().Perm())
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v, want out.bin alone", names)
	}
}

func TestPermsExact(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o600, 0o644, 0o666} {
		path := filepath.Join(dir, perm.String())
		if err := WriteFile(path, nil, perm); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != perm {
			t.Errorf("WriteFile(%v) made mode %v", perm, st.Mode().Perm())
		}
	}
}

// TestWriteErrorLeavesOld: a failing writer leaves the destination as it
// was and no temporary file behind.
func TestWriteErrorLeavesOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half of the new"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the writer's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("destination holds %q after a failed write, want \"old\"", b)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v after a failed write, want out.bin alone", names)
	}
	// No destination before: none after.
	fresh := filepath.Join(dir, "fresh")
	if err := Write(fresh, 0o644, func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the writer's", err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed first write left %s: %v", fresh, err)
	}
}

// TestRenameErrorRemovesTemp: a destination that cannot be replaced (a
// non-empty folder) fails the write after the bytes were written, and the
// temporary file goes.
func TestRenameErrorRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(path, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("x"), 0o644); err == nil {
		t.Fatal("renaming over a non-empty folder succeeded")
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "busy" {
		t.Errorf("folder holds %v, want busy alone", names)
	}
}

func TestMissingFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "out")
	err := WriteFile(path, []byte("x"), 0o644)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want ErrNotExist", err)
	}
}

func TestWriteByName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.h5")
	var seen string
	err := WriteByName(path, 0o644, func(tmp string) error {
		seen = tmp
		if filepath.Dir(tmp) != dir {
			t.Errorf("temporary file %s is not beside %s", tmp, path)
		}
		if ok, _ := filepath.Match(TempPattern(path), filepath.Base(tmp)); !ok {
			t.Errorf("temporary file %s does not match %s", tmp, TempPattern(path))
		}
		return os.WriteFile(tmp, []byte("by name"), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "by name" {
		t.Errorf("read %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if _, err := os.Stat(seen); !os.IsNotExist(err) {
		t.Errorf("temporary %s still there: %v", seen, err)
	}
	boom := errors.New("boom")
	if err := WriteByName(filepath.Join(dir, "bad.h5"), 0o644, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the writer's", err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v, want out.h5 alone", names)
	}
}

// TestRelativePath: a bare file name writes in the working folder.
func TestRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := WriteFile("plain", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile("plain"); string(b) != "x" {
		t.Errorf("read %q", b)
	}
}
