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

// dsgd_mdb_extent is the byte where the environment's last used page
// ends: the data file must be at least that long, or reading it through
// the map faults (SIGBUS) past the file's end.
static int dsgd_mdb_extent(MDB_env *env, size_t *end) {
	MDB_envinfo info;
	MDB_stat st;
	int rc = mdb_env_info(env, &info);
	if (rc != 0) return rc;
	rc = mdb_env_stat(env, &st);
	if (rc != 0) return rc;
	*end = ((size_t)info.me_last_pgno + 1) * (size_t)st.ms_psize;
	return 0;
}

static int dsgd_mdb_seek(MDB_cursor *c, void *k, size_t kl, MDB_val *val) {
	MDB_val key = {kl, k};
	return mdb_cursor_get(c, &key, val, MDB_SET_KEY);
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"
)

// lmdbMapSize is the map size of a database being written: 1 TiB, as
// Caffe uses on 64-bit machines; the file grows only as records arrive.
const lmdbMapSize = 1 << 40

func lmdbErr(path, op string, rc C.int) error {
	return fmt.Errorf("lmdb database %s: %s: %s", path, op, C.GoString(C.mdb_strerror(rc)))
}

// lmdbReader is an LMDB environment open for reading.
type lmdbReader struct {
	path string
	env  *C.MDB_env
}

func openLMDBReader(path string) (handle, error) {
	var env *C.MDB_env
	if rc := C.mdb_env_create(&env); rc != 0 {
		return nil, lmdbErr(path, "create environment", rc)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	// MDB_NOTLS: a read transaction belongs to its cursor, not to an OS
	// thread, so that goroutines may use it.
	if rc := C.mdb_env_open(env, cpath, C.MDB_RDONLY|C.MDB_NOTLS, 0o664); rc != 0 {
		if rc != C.EACCES {
			C.mdb_env_close(env)
			return nil, lmdbErr(path, "open", rc)
		}
		// A read-only directory cannot hold the lock file: read
		// without locking, as nothing can be writing there.
		C.mdb_env_close(env)
		if rc := C.mdb_env_create(&env); rc != 0 {
			return nil, lmdbErr(path, "create environment", rc)
		}
		if rc := C.mdb_env_open(env, cpath, C.MDB_RDONLY|C.MDB_NOTLS|C.MDB_NOLOCK, 0o664); rc != 0 {
			C.mdb_env_close(env)
			return nil, lmdbErr(path, "open", rc)
		}
	}
	r := &lmdbReader{path: path, env: env}
	if err := r.checkExtent(); err != nil {
		C.mdb_env_close(env)
		return nil, err
	}
	return r, nil
}

// checkExtent refuses a data file shorter than the pages the environment
// says it holds (a truncated copy, a disk that filled while it was
// written): reading those pages through LMDB's map would kill the
// process with SIGBUS instead of naming the database.
func (r *lmdbReader) checkExtent() error {
	var end C.size_t
	if rc := C.dsgd_mdb_extent(r.env, &end); rc != 0 {
		return lmdbErr(r.path, "read the environment's size", rc)
	}
	file := r.path
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		file = filepath.Join(file, "data.mdb")
	}
	st, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("lmdb database %s: %w", r.path, err)
	}
	if st.Size() < int64(end) {
		return fmt.Errorf("lmdb database %s: %s is truncated: %d bytes, but its pages run to byte %d (a copy cut short, or a disk that filled while it was written)", r.path, file, st.Size(), uint64(end))
	}
	return nil
}

func (r *lmdbReader) close() { C.mdb_env_close(r.env) }

func (r *lmdbReader) cursor() (Cursor, error) {
	// The file may have shrunk since it was opened.
	if err := r.checkExtent(); err != nil {
		return nil, err
	}
	c := &lmdbCursor{path: r.path}
	if rc := C.mdb_txn_begin(r.env, nil, C.MDB_RDONLY, &c.txn); rc != 0 {
		return nil, lmdbErr(r.path, "begin read transaction", rc)
	}
	var dbi C.MDB_dbi
	if rc := C.mdb_dbi_open(c.txn, nil, 0, &dbi); rc != 0 {
		C.mdb_txn_abort(c.txn)
		return nil, lmdbErr(r.path, "open database", rc)
	}
	if rc := C.mdb_cursor_open(c.txn, dbi, &c.cur); rc != 0 {
		C.mdb_txn_abort(c.txn)
		return nil, lmdbErr(r.path, "open cursor", rc)
	}
	return c, nil
}

// lmdbCursor is a cursor in its own read transaction: it sees the
// database as it was when the cursor was made.
type lmdbCursor struct {
	path string
	txn  *C.MDB_txn
	cur  *C.MDB_cursor
}

func (c *lmdbCursor) get(op C.MDB_cursor_op) (key, val []byte, ok bool, err error) {
	var k, v C.MDB_val
	rc := C.mdb_cursor_get(c.cur, &k, &v, op)
	if rc == C.MDB_NOTFOUND {
		return nil, nil, false, nil
	}
	if rc != 0 {
		return nil, nil, false, lmdbErr(c.path, "read", rc)
	}
	return unsafe.Slice((*byte)(k.mv_data), int(k.mv_size)), unsafe.Slice((*byte)(v.mv_data), int(v.mv_size)), true, nil
}

func (c *lmdbCursor) First() ([]byte, []byte, bool, error) { return c.get(C.MDB_FIRST) }

func (c *lmdbCursor) Next() ([]byte, []byte, bool, error) { return c.get(C.MDB_NEXT) }

func (c *lmdbCursor) Seek(key []byte) ([]byte, bool, error) {
	if len(key) == 0 {
		return nil, false, nil
	}
	var v C.MDB_val
	rc := C.dsgd_mdb_seek(c.cur, unsafe.Pointer(&key[0]), C.size_t(len(key)), &v)
	if rc == C.MDB_NOTFOUND {
		return nil, false, nil
	}
	if rc != 0 {
		return nil, false, lmdbErr(c.path, fmt.Sprintf("seek key %q", key), rc)
	}
	return unsafe.Slice((*byte)(v.mv_data), int(v.mv_size)), true, nil
}

func (c *lmdbCursor) Close() {
	if c.txn != nil {
		C.mdb_cursor_close(c.cur)
		C.mdb_txn_abort(c.txn)
		c.txn, c.cur = nil, nil
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

// batchSize is how many records a Writer (LMDB's and LevelDB's) commits at once, as Caffe's
// convert tools do.
const batchSize = 1000
