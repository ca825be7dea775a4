package db

import (
	"fmt"
	"path/filepath"
	"sync"
)

// Cursor walks one database's records, in key order or to a key. Its key
// and value slices are valid until the cursor next moves or closes. A
// Cursor is for one goroutine at a time (any goroutine, not only the one
// that made it).
type Cursor interface {
	// First moves to the first record; ok is false when there is none.
	First() (key, val []byte, ok bool, err error)
	// Next moves to the record after the current one; ok is false past
	// the last.
	Next() (key, val []byte, ok bool, err error)
	// Seek moves to key's record; ok is false when key is not there.
	Seek(key []byte) (val []byte, ok bool, err error)
	// Close releases the cursor (and its read transaction or iterator).
	Close()
}

// handle is a backend's open database.
type handle interface {
	cursor() (Cursor, error)
	close()
}

// DB is an open database that cursors read. Open gives the same DB for a
// path already open in this process — neither LMDB nor LevelDB may be
// opened twice by one process — and counts: each Open needs a Close.
type DB struct {
	path    string
	backend Backend
	id      string
	refs    int // Opens not yet closed
	cursors int // cursors not yet closed
	h       handle
}

var open = struct {
	sync.Mutex
	m map[string]*DB
}{m: map[string]*DB{}}

// Open opens the existing database of backend b at path for reading.
// Errors name the path and say what is wrong (missing, of the other
// backend, locked by another program).
func Open(path string, b Backend) (*DB, error) {
	if err := checkExisting(path, b); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s database %s: %w", b, path, err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	id := b.String() + "\x00" + abs
	open.Lock()
	defer open.Unlock()
	if d := open.m[id]; d != nil {
		d.refs++
		return d, nil
	}
	var h handle
	switch b {
	case LMDB:
		h, err = openLMDBReader(path)
	case LevelDB:
		h, err = openLevelDBReader(path)
	default:
		err = fmt.Errorf("database %s: unknown backend %v", path, b)
	}
	if err != nil {
		return nil, err
	}
	d := &DB{path: path, backend: b, id: id, refs: 1, h: h}
	open.m[id] = d
	return d, nil
}

// Path returns the path the database was first opened by.
func (d *DB) Path() string { return d.path }

// Backend returns the database's kind.
func (d *DB) Backend() Backend { return d.backend }

// Cursor opens a cursor on the database. Any number may be open at once,
// each for its own goroutine.
func (d *DB) Cursor() (Cursor, error) {
	open.Lock()
	defer open.Unlock()
	if d.refs == 0 {
		return nil, fmt.Errorf("%s database %s: cursor after Close", d.backend, d.path)
	}
	c, err := d.h.cursor()
	if err != nil {
		return nil, err
	}
	d.cursors++
	return &counted{Cursor: c, db: d}, nil
}

// Close gives back one Open; the last closes the database, once its
// cursors are closed too.
func (d *DB) Close() error {
	open.Lock()
	defer open.Unlock()
	if d.refs == 0 {
		return nil
	}
	d.refs--
	if d.refs == 0 {
		delete(open.m, d.id)
		d.release()
	}
	return nil
}

// release closes the backend's database when nothing uses it; open is
// locked.
func (d *DB) release() {
	if d.refs == 0 && d.cursors == 0 && d.h != nil {
		d.h.close()
		d.h = nil
	}
}

// counted is a cursor its DB counts, so that the database outlives it.
type counted struct {
	Cursor
	db     *DB
	closed bool
}

func (c *counted) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.Cursor.Close()
	open.Lock()
	defer open.Unlock()
	c.db.cursors--
	c.db.release()
}

// Scan calls fn with every record of the database at path in key order.
// key and value are valid only during the call. An error from fn stops the
// scan and is returned as it is.
func Scan(path string, b Backend, fn func(key, value []byte) error) error {
	d, err := Open(path, b)
	if err != nil {
		return err
	}
	defer d.Close()
	c, err := d.Cursor()
	if err != nil {
		return err
	}
	defer c.Close()
	k, v, ok, err := c.First()
	for ; ok && err == nil; k, v, ok, err = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return err
}
