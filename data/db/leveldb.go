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
		return nil, fmt.Errorf("%w (is another program using it?)", err)
	}
	return h, nil
}

func scanLevelDB(path string, fn func(key, value []byte) error) error {
	h, err := openLevelDB(path, false)
	if err != nil {
		return err
	}
	defer C.leveldb_close(h)
	ro := C.leveldb_readoptions_create()
	defer C.leveldb_readoptions_destroy(ro)
	C.leveldb_readoptions_set_fill_cache(ro, 0)
	it := C.leveldb_create_iterator(h, ro)
	defer C.leveldb_iter_destroy(it)
	for C.leveldb_iter_seek_to_first(it); C.leveldb_iter_valid(it) != 0; C.leveldb_iter_next(it) {
		var kl, vl C.size_t
		kp := C.leveldb_iter_key(it, &kl)
		vp := C.leveldb_iter_value(it, &vl)
		key := unsafe.Slice((*byte)(unsafe.Pointer(kp)), int(kl))
		val := unsafe.Slice((*byte)(unsafe.Pointer(vp)), int(vl))
		if err := fn(key, val); err != nil {
			return err
		}
	}
	var e *C.char
	C.leveldb_iter_get_error(it, &e)
	return takeErr(path, "read", e)
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
