package db

import (
	"dsgd/internal/atomicfile"
	"fmt"
	"os"
	"path/filepath"
)

// Staged is a new database written whole or not at all: its records go to
// a temporary sibling of its path (".NAME.partial*" in the same folder),
// which Commit renames to the path and Abort removes, so that a failed or
// interrupted write never leaves half a database where a reader would
// take it for a whole one. A Staged is not safe for concurrent use.
type Staged struct {
	path, tmp string
	b         Backend
	w         Writer
	done      bool
}

// CreateStaged begins a new database of backend b at path, which must not
// exist (as Caffe's tools refuse to overwrite a database); path's folder
// must. Commit or Abort must follow.
func CreateStaged(path string, b Backend) (*Staged, error) {
	if err := checkNew(path, b); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s database %s: its folder %s does not exist", b, path, dir)
	}
	// A unique name beside path: the rename stays on one file system.
	tmp, err := os.MkdirTemp(dir, "."+filepath.Base(path)+".partial*")
	if err != nil {
		return nil, fmt.Errorf("%s database %s: %w", b, path, err)
	}
	if err := os.Remove(tmp); err != nil { // Create makes the folder itself
		return nil, fmt.Errorf("%s database %s: %w", b, path, err)
	}
	w, err := Create(tmp, b)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Staged{path: path, tmp: tmp, b: b, w: w}, nil
}

// Path is the database's final path.
func (s *Staged) Path() string { return s.path }

// Put stores value under key (Writer.Put).
func (s *Staged) Put(key, value []byte) error {
	if s.done {
		return fmt.Errorf("%s database %s: write after Commit or Abort", s.b, s.path)
	}
	return s.w.Put(key, value)
}

// Commit closes the database and renames it to its path, which must still
// not exist. On an error the temporary database is removed.
func (s *Staged) Commit() error {
	if s.done {
		return fmt.Errorf("%s database %s: Commit after Commit or Abort", s.b, s.path)
	}
	s.done = true
	err := s.w.Close()
	if err == nil {
		err = checkNew(s.path, s.b) // made by someone else meanwhile
	}
	if err == nil {
		err = os.Rename(s.tmp, s.path)
	}
	if err != nil {
		os.RemoveAll(s.tmp)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(s.path))
}

// Abort closes and removes the temporary database; the path is never
// made. It is a no-op after Commit or Abort.
func (s *Staged) Abort() error {
	if s.done {
		return nil
	}
	s.done = true
	s.w.Close()
	return os.RemoveAll(s.tmp)
}
