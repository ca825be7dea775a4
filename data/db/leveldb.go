//go:build !purego

package db

/*
#cgo LDFLAGS: -lleveldb
#include <stdlib.h>
#include <leveldb/c.h>
*/
import "C"

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"
)

// takeErr turns a LevelDB error string into a Go error and frees it.
func takeErr(path, op string, e *C.char) error {
	if e == nil {
		return nil
	}
	msg := C.GoString(e)
	C.leveldb_free(unsafe.Pointer(e))
	return fmt.Errorf("leveldb database %s: %s: %s", path, op, msg)
}

func openLevelDB(path string, create bool) (*C.leveldb_t, error) {
	opts := C.leveldb_options_create()
	defer C.leveldb_options_destroy(opts)
	// Caffe's settings (db_leveldb.cpp).
	C.leveldb_options_set_block_size(opts, 65536)
	C.leveldb_options_set_write_buffer_size(opts, 268435456)
	C.leveldb_options_set_max_open_files(opts, 100)
	if create {
		C.leveldb_options_set_create_if_missing(opts, 1)
		C.leveldb_options_set_error_if_exists(opts, 1)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var e *C.char
	h := C.leveldb_open(opts, cpath, &e)
	if err := takeErr(path, "open", e); err != nil {
		if isLockErr(err) && create {
			return nil, fmt.Errorf("%w (is another program using it?)", err)
		}
		return nil, err
	}
	return h, nil
}

// isLockErr reports whether a LevelDB open failed on its LOCK file: held
// by another process (a second reader: LevelDB has no shared mode), or not
// creatable (a read-only directory).
func isLockErr(err error) bool {
	m := err.Error()
	return strings.Contains(m, "LOCK") || strings.Contains(m, "lock ")
}

// levelDBReader is a LevelDB database open for reading.
type levelDBReader struct {
	path string
	h    *C.leveldb_t
	// mirror, when set, is the private copy being read (removed at
	// close): the database's LOCK was another reader's.
	mirror string
}

func openLevelDBReader(path string) (handle, error) {
	h, err := openLevelDB(path, false)
	if err == nil {
		return &levelDBReader{path: path, h: h}, nil
	}
	if !isLockErr(err) {
		return nil, err
	}
	// LevelDB opens a database for one process at a time (its LOCK), and
	// needs to write that lock. Readers that cannot take it (the other
	// ranks of a job on one host, or a read-only directory) read a
	// private copy instead.
	// The holder may be rewriting CURRENT and the MANIFEST as it opens
	// (LevelDB recovers its log into a table at open): a copy taken
	// meanwhile can be inconsistent, so a failed copy is taken again.
	var mirror string
	for try := 0; ; try++ {
		m, merr := mirrorLevelDB(path)
		if merr == nil {
			var err2 error
			if h, err2 = openLevelDB(m, false); err2 == nil {
				mirror = m
				break
			}
			os.RemoveAll(m)
			merr = err2
		}
		if try == 9 {
			return nil, fmt.Errorf("%w; and reading a private copy failed: %w", err, merr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := &levelDBReader{path: path, h: h, mirror: mirror}
	if r.empty() {
		// Nothing flushed yet: the holder is most likely still writing.
		r.close()
		return nil, fmt.Errorf("%w: another process holds the database and nothing it wrote is on disk yet (is it still being written?)", err)
	}
	return r, nil
}

// mirrorLevelDB makes a private copy of the database at path for reading:
// a new directory (beside the database when it is writable, else in the
// temporary directory) holding copies of its files, but its LOCK.
func mirrorLevelDB(path string) (string, error) {
	ents, err := os.ReadDir(path)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), "."+filepath.Base(path)+".reader-*")
	if err != nil {
		if dir, err = os.MkdirTemp("", "dsgd-leveldb-*"); err != nil {
			return "", err
		}
	}
	for _, e := range ents {
		name := e.Name()
		if name == "LOCK" || e.IsDir() {
			continue
		}
		// Copies, not hard links: a linked table shares its inode with
		// the holder's map, and the copy's own LevelDB must never be
		// able to touch it (a SIGBUS in the holder was seen with links).
		src, dst := filepath.Join(path, name), filepath.Join(dir, name)
		if err := copyFile(src, dst); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// empty reports whether the database has no record.
func (r *levelDBReader) empty() bool {
	c, err := r.cursor()
	if err != nil {
		return false
	}
	defer c.Close()
	_, _, ok, _ := c.First()
	return !ok
}

func (r *levelDBReader) close() {
	C.leveldb_close(r.h)
	if r.mirror != "" {
		os.RemoveAll(r.mirror)
	}
}

func (r *levelDBReader) cursor() (Cursor, error) {
	ro := C.leveldb_readoptions_create()
	defer C.leveldb_readoptions_destroy(ro)
	// A pass over the records would only evict what others cached.
	C.leveldb_readoptions_set_fill_cache(ro, 0)
	return &levelDBCursor{path: r.path, it: C.leveldb_create_iterator(r.h, ro)}, nil
}

// levelDBCursor is an iterator: it sees the database as it was when the
// cursor was made.
type levelDBCursor struct {
	path string
	it   *C.leveldb_iterator_t
}

func (c *levelDBCursor) at() (key, val []byte, ok bool, err error) {
	if C.leveldb_iter_valid(c.it) == 0 {
		var e *C.char
		C.leveldb_iter_get_error(c.it, &e)
		return nil, nil, false, takeErr(c.path, "read", e)
	}
	var kl, vl C.size_t
	kp := C.leveldb_iter_key(c.it, &kl)
	vp := C.leveldb_iter_value(c.it, &vl)
	return unsafe.Slice((*byte)(unsafe.Pointer(kp)), int(kl)), unsafe.Slice((*byte)(unsafe.Pointer(vp)), int(vl)), true, nil
}

func (c *levelDBCursor) First() ([]byte, []byte, bool, error) {
	C.leveldb_iter_seek_to_first(c.it)
	return c.at()
}

func (c *levelDBCursor) Next() ([]byte, []byte, bool, error) {
	if C.leveldb_iter_valid(c.it) == 0 {
		return nil, nil, false, nil
	}
	C.leveldb_iter_next(c.it)
	return c.at()
}

func (c *levelDBCursor) Seek(key []byte) ([]byte, bool, error) {
	if len(key) == 0 {
		return nil, false, nil
	}
	C.leveldb_iter_seek(c.it, (*C.char)(unsafe.Pointer(&key[0])), C.size_t(len(key)))
	k, v, ok, err := c.at()
	if !ok || err != nil || string(k) != string(key) {
		return nil, false, err
	}
	return v, true, nil
}

func (c *levelDBCursor) Close() {
	if c.it != nil {
		C.leveldb_iter_destroy(c.it)
		c.it = nil
	}
}

type levelDBWriter struct {
	path  string
	h     *C.leveldb_t
	wo    *C.leveldb_writeoptions_t
	batch *C.leveldb_writebatch_t
	n     int
}

func createLevelDB(path string) (Writer, error) {
	h, err := openLevelDB(path, true)
	if err != nil {
		return nil, err
	}
	return &levelDBWriter{path: path, h: h, wo: C.leveldb_writeoptions_create(), batch: C.leveldb_writebatch_create()}, nil
}

func (w *levelDBWriter) Put(key, value []byte) error {
	if w.h == nil {
		return fmt.Errorf("leveldb database %s: write after Close", w.path)
	}
	if len(key) == 0 {
		return fmt.Errorf("leveldb database %s: empty key", w.path)
	}
	kp := C.CBytes(key)
	defer C.free(kp)
	vp := C.CBytes(value)
	defer C.free(vp)
	C.leveldb_writebatch_put(w.batch, (*C.char)(kp), C.size_t(len(key)), (*C.char)(vp), C.size_t(len(value)))
	w.n++
	if w.n%batchSize == 0 {
		return w.flush()
	}
	return nil
}

func (w *levelDBWriter) flush() error {
	var e *C.char
	C.leveldb_write(w.h, w.wo, w.batch, &e)
	C.leveldb_writebatch_clear(w.batch)
	return takeErr(w.path, "write", e)
}

func (w *levelDBWriter) Close() error {
	if w.h == nil {
		return nil
	}
	err := w.flush()
	C.leveldb_writebatch_destroy(w.batch)
	C.leveldb_writeoptions_destroy(w.wo)
	C.leveldb_close(w.h)
	w.h = nil
	return err
}
