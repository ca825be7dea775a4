//go:build !purego

package db

/*
#cgo LDFLAGS: -llmdb
#include <stdlib.h>
#include <errno.h>
#include <lmdb.h>

static int dsgd_mdb_put(MDB_txn *txn, MDB_dbi dbi, void *k, size_t kl, void *v, size_t vl) {
	MDB_val key = {kl, k}, val = {vl, v};
	return mdb_put(txn, dbi, &key, &val, 0);
}
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// lmdbMapSize is the map size of a database being written: 1 TiB, as
// Caffe uses on 64-bit machines; the file grows only as records arrive.
const lmdbMapSize = 1 << 40

func lmdbErr(path, op string, rc C.int) error {
	return fmt.Errorf("lmdb database %s: %s: %s", path, op, C.GoString(C.mdb_strerror(rc)))
}

func scanLMDB(path string, fn func(key, value []byte) error) error {
	var env *C.MDB_env
	if rc := C.mdb_env_create(&env); rc != 0 {
		return lmdbErr(path, "create environment", rc)
	}
	defer C.mdb_env_close(env)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if rc := C.mdb_env_open(env, cpath, C.MDB_RDONLY|C.MDB_NOTLS, 0o664); rc != 0 {
		if rc == C.EACCES {
			// A read-only directory cannot hold the lock file: read
			// without locking, as nothing can be writing there.
			C.mdb_env_close(env)
			if rc := C.mdb_env_create(&env); rc != 0 {
				return lmdbErr(path, "create environment", rc)
			}
			rc = C.mdb_env_open(env, cpath, C.MDB_RDONLY|C.MDB_NOTLS|C.MDB_NOLOCK, 0o664)
			if rc != 0 {
				return lmdbErr(path, "open", rc)
			}
		} else {
			return lmdbErr(path, "open", rc)
		}
	}
	var txn *C.MDB_txn
	if rc := C.mdb_txn_begin(env, nil, C.MDB_RDONLY, &txn); rc != 0 {
		return lmdbErr(path, "begin read transaction", rc)
	}
	defer C.mdb_txn_abort(txn)
	var dbi C.MDB_dbi
	if rc := C.mdb_dbi_open(txn, nil, 0, &dbi); rc != 0 {
		return lmdbErr(path, "open database", rc)
	}
	var cur *C.MDB_cursor
	if rc := C.mdb_cursor_open(txn, dbi, &cur); rc != 0 {
		return lmdbErr(path, "open cursor", rc)
	}
	defer C.mdb_cursor_close(cur)
	var k, v C.MDB_val
	op := C.MDB_cursor_op(C.MDB_FIRST)
	for {
		rc := C.mdb_cursor_get(cur, &k, &v, op)
		if rc == C.MDB_NOTFOUND {
			return nil
		}
		if rc != 0 {
			return lmdbErr(path, "read", rc)
		}
		op = C.MDB_NEXT
		key := unsafe.Slice((*byte)(k.mv_data), int(k.mv_size))
		val := unsafe.Slice((*byte)(v.mv_data), int(v.mv_size))
		if err := fn(key, val); err != nil {
			return err
		}
	}
}

type lmdbWriter struct {
	path string
	env  *C.MDB_env
	txn  *C.MDB_txn
	dbi  C.MDB_dbi
	n    int
}

func createLMDB(path string) (Writer, error) {
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("lmdb database %s: %w", path, err)
	}
	w := &lmdbWriter{path: path}
	if rc := C.mdb_env_create(&w.env); rc != 0 {
		return nil, lmdbErr(path, "create environment", rc)
	}
	if rc := C.mdb_env_set_mapsize(w.env, lmdbMapSize); rc != 0 {
		C.mdb_env_close(w.env)
		return nil, lmdbErr(path, "set map size", rc)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	// MDB_NOLOCK: the database is new and ours alone, and a write
	// transaction's mutex must otherwise be released by the OS thread
	// that took it, which goroutines do not promise.
	if rc := C.mdb_env_open(w.env, cpath, C.MDB_NOLOCK, 0o664); rc != 0 {
		C.mdb_env_close(w.env)
		return nil, lmdbErr(path, "create", rc)
	}
	if err := w.begin(); err != nil {
		C.mdb_env_close(w.env)
		return nil, err
	}
	return w, nil
}

func (w *lmdbWriter) begin() error {
	if rc := C.mdb_txn_begin(w.env, nil, 0, &w.txn); rc != 0 {
		return lmdbErr(w.path, "begin transaction", rc)
	}
	if rc := C.mdb_dbi_open(w.txn, nil, 0, &w.dbi); rc != 0 {
		C.mdb_txn_abort(w.txn)
		w.txn = nil
		return lmdbErr(w.path, "open database", rc)
	}
	return nil
}

func (w *lmdbWriter) Put(key, value []byte) error {
	if w.txn == nil {
		return fmt.Errorf("lmdb database %s: write after an error or Close", w.path)
	}
	if len(key) == 0 {
		return fmt.Errorf("lmdb database %s: empty key", w.path)
	}
	kp := C.CBytes(key)
	defer C.free(kp)
	var vp unsafe.Pointer
	if len(value) > 0 {
		vp = C.CBytes(value)
		defer C.free(vp)
	}
	if rc := C.dsgd_mdb_put(w.txn, w.dbi, kp, C.size_t(len(key)), vp, C.size_t(len(value))); rc != 0 {
		C.mdb_txn_abort(w.txn)
		w.txn = nil
		return lmdbErr(w.path, fmt.Sprintf("put key %q", key), rc)
	}
	w.n++
	if w.n%batchSize == 0 {
		return w.commit(true)
	}
	return nil
}

func (w *lmdbWriter) commit(again bool) error {
	rc := C.mdb_txn_commit(w.txn)
	w.txn = nil
	if rc != 0 {
		return lmdbErr(w.path, "commit", rc)
	}
	if again {
		return w.begin()
	}
	return nil
}

func (w *lmdbWriter) Close() error {
	if w.env == nil {
		return nil
	}
	var err error
	if w.txn != nil {
		err = w.commit(false)
	}
	C.mdb_env_close(w.env)
	w.env = nil
	return err
}
