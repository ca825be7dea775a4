package data

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"dsgd/data/db"
)

// Stream is a Caffe database that a Dataset reads record by record as its
// Loaders need them, as Caffe's Data layer does, holding only the
// records' keys in memory (ImageNet's 1.28 M keys take about 60 MB), so a
// database larger than memory trains. Record i is the i-th in key order,
// the order ReadDB gives, so a streamed Dataset gives the same batches as
// the same database read into memory.
type Stream struct {
	db   *db.DB
	keys []byte // every key, one after another
	ends []int  // record i's key ends at ends[i] and starts at ends[i-1]
	kind streamKind
}

// streamKind is what a database's records hold; every record holds the
// first one's.
type streamKind int

const (
	streamRaw streamKind = iota
	streamFloats
	streamEncoded
)

func (k streamKind) String() string {
	return [...]string{"byte data", "float_data", "an encoded image"}[k]
}

// OpenDB opens a Caffe database of Datum records for streaming: one pass
// over its keys (LMDB reads only its index pages for them; LevelDB reads
// the records), the first record for the shape (for encoded images, of
// the decoded first image), and nothing else until a Loader reads.
// Labels are not known ahead: the Loader reads each with its record, and
// Classes is MaxLabel+1. The Dataset must be closed (Close) once its
// Loaders are. Errors name the database and the record's key.
func OpenDB(path string, cfg DBConfig) (*Dataset, error) {
	h, err := db.Open(path, cfg.Backend)
	if err != nil {
		return nil, err
	}
	st := &Stream{db: h}
	d := &Dataset{Name: path, Classes: MaxLabel + 1, Decoding: Decoding{Channels: cfg.Channels}, Stream: st}
	if err := st.scan(d, cfg.Limit); err != nil {
		h.Close()
		return nil, err
	}
	if d.N == 0 {
		h.Close()
		return nil, fmt.Errorf("%s database %s is empty", cfg.Backend, path)
	}
	return d, nil
}

// scan collects the keys, up to limit if positive, and learns the shape
// from the first record.
func (st *Stream) scan(d *Dataset, limit int) error {
	c, err := st.db.Cursor()
	if err != nil {
		return err
	}
	defer c.Close()
	var v datumView
	k, val, ok, err := c.First()
	for ; ok && err == nil && (limit <= 0 || d.N < limit); k, val, ok, err = c.Next() {
		if d.N == 0 {
			if err := st.first(d, k, val, &v); err != nil {
				return err
			}
		}
		st.keys = append(st.keys, k...)
		st.ends = append(st.ends, len(st.keys))
		d.N++
	}
	return err
}

// first learns the shape and kind from the first record.
func (st *Stream) first(d *Dataset, key, val []byte, v *datumView) error {
	if err := parseDatum(val, v); err != nil {
		return st.errAt(0, key, err)
	}
	switch {
	case v.Encoded:
		st.kind = streamEncoded
		_, c, h, w, err := DecodeImage(v.Data, d.Decoding.Channels, 0, 0)
		if err != nil {
			return st.errAt(0, key, err)
		}
		d.C, d.H, d.W = c, h, w
	default:
		if len(v.Floats) > 0 {
			st.kind = streamFloats
		}
		d.C, d.H, d.W = int(v.Channels), int(v.Height), int(v.Width)
	}
	return nil
}

// key returns record i's key.
func (st *Stream) key(i int) []byte {
	lo := 0
	if i > 0 {
		lo = st.ends[i-1]
	}
	return st.keys[lo:st.ends[i]:st.ends[i]]
}

// errAt names record i of the database in err.
func (st *Stream) errAt(i int, key []byte, err error) error {
	return fmt.Errorf("%s database %s: record %d (key %s): %w", st.db.Backend(), st.db.Path(), i, strconv.Quote(string(key)), err)
}

// name names record i for errors.
func (st *Stream) name(i int) string {
	return fmt.Sprintf("record %d (key %s)", i, strconv.Quote(string(st.key(i))))
}

// Close closes the Dataset's database, if it streams one; its Loaders
// must be closed first. Closing a Dataset held in memory does nothing.
func (d *Dataset) Close() error {
	if d.Stream == nil || d.Stream.db == nil {
		return nil
	}
	err := d.Stream.db.Close()
	d.Stream.db = nil
	return err
}

// streamReader is one Loader's cursor over a Stream: it moves to the next
// record when the order asks for it, and seeks only when the order jumps
// (a shuffled epoch, a new epoch, another rank's slice).
type streamReader struct {
	st   *Stream
	cur  db.Cursor
	last int // the record the cursor is at; -1: none
	view datumView
}

func newStreamReader(st *Stream) (*streamReader, error) {
	if st.db == nil {
		return nil, errors.New("the database is closed")
	}
	c, err := st.db.Cursor()
	if err != nil {
		return nil, err
	}
	return &streamReader{st: st, cur: c, last: -1}, nil
}

// read parses record i into r.view (valid until the next read) and
// checks it against the first record's kind; its shape is the sampler's
// to check (shaped).
func (r *streamReader) read(i int) (*datumView, error) {
	key := r.st.key(i)
	var val []byte
	found := false
	if i == r.last+1 && r.last >= 0 {
		k, v, ok, err := r.cur.Next()
		if err != nil {
			return nil, r.st.errAt(i, key, err)
		}
		val, found = v, ok && bytes.Equal(k, key)
	}
	if !found {
		v, ok, err := r.cur.Seek(key)
		if err != nil {
			return nil, r.st.errAt(i, key, err)
		}
		if !ok {
			return nil, r.st.errAt(i, key, errors.New("the record is gone: the database changed after it was opened"))
		}
		val = v
	}
	r.last = i
	v := &r.view
	if err := parseDatum(val, v); err != nil {
		return nil, r.st.errAt(i, key, err)
	}
	kind := streamRaw
	switch {
	case v.Encoded:
		kind = streamEncoded
	case len(v.Floats) > 0:
		kind = streamFloats
	}
	if kind != r.st.kind {
		return nil, r.st.errAt(i, key, fmt.Errorf("it holds %s but the first record holds %s; a database holds one kind", kind, r.st.kind))
	}
	if v.Label < 0 || v.Label > MaxLabel {
		return nil, r.st.errAt(i, key, fmt.Errorf("label %d is outside 0..%d, the class labels a float32 label blob holds exactly", v.Label, MaxLabel))
	}
	return v, nil
}

func (r *streamReader) close() { r.cur.Close() }
