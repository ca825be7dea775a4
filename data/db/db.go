package db

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Backend is one of Caffe's database kinds (DataParameter.DB).
type Backend int

const (
	// LMDB is Caffe's default backend: a directory holding data.mdb and
	// lock.mdb.
	LMDB Backend = iota
	// LevelDB is Caffe's other backend: a directory holding CURRENT, a
	// MANIFEST and .ldb tables.
	LevelDB
)

// String returns Caffe's name for b: "lmdb" or "leveldb".
func (b Backend) String() string {
	switch b {
	case LMDB:
		return "lmdb"
	case LevelDB:
		return "leveldb"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// ParseBackend parses a backend name as Caffe's tools and prototxt spell
// it, in either case: "lmdb" or "leveldb".
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(s) {
	case "lmdb":
		return LMDB, nil
	case "leveldb":
		return LevelDB, nil
	}
	return 0, fmt.Errorf("unknown database backend %q: want lmdb or leveldb", s)
}

// Detect says which backend the database directory path looks like, from
// the files in it; ok is false when it looks like neither.
func Detect(path string) (b Backend, ok bool) {
	if isFile(filepath.Join(path, "data.mdb")) {
		return LMDB, true
	}
	if isFile(filepath.Join(path, "CURRENT")) {
		return LevelDB, true
	}
	return 0, false
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// checkExisting returns an error unless path is a database of backend b.
func checkExisting(path string, b Backend) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s database %s does not exist", b, path)
	case err != nil:
		return fmt.Errorf("%s database %s: %w", b, path, err)
	case !st.IsDir():
		if b == LMDB && filepath.Base(path) == "data.mdb" {
			return fmt.Errorf("%s database %s: name the directory holding data.mdb, not the file", b, path)
		}
		return fmt.Errorf("%s database %s is a file, not a database directory", b, path)
	}
	got, ok := Detect(path)
	switch {
	case !ok:
		return fmt.Errorf("%s database %s holds no database (want data.mdb for LMDB, CURRENT for LevelDB)", b, path)
	case got != b:
		return fmt.Errorf("%s database %s is a %s database: set backend: %s in data_param (or --backend %s)", b, path, got, strings.ToUpper(got.String()), got)
	}
	return nil
}

// checkNew returns an error if path already exists, as Caffe's tools
// refuse to overwrite a database.
func checkNew(path string, b Backend) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s database %s already exists: remove it or choose another name", b, path)
	}
	return nil
}

// Writer adds records to a new database. Put buffers records and commits
// them in batches; Close commits the rest. A Writer is not safe for
// concurrent use.
type Writer interface {
	// Put stores value under key; a key put twice keeps the last value.
	Put(key, value []byte) error
	// Close commits what is buffered and closes the database. After an
	// error from Put, Close still releases the database.
	Close() error
}

// Create makes a new database of backend b at path, which must not exist.
func Create(path string, b Backend) (Writer, error) {
	if err := checkNew(path, b); err != nil {
		return nil, err
	}
	switch b {
	case LMDB:
		return createLMDB(path)
	case LevelDB:
		return createLevelDB(path)
	}
	return nil, fmt.Errorf("database %s: unknown backend %v", path, b)
}
