//go:build !purego

package db

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, b := range []Backend{LMDB, LevelDB} {
		t.Run(b.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			w, err := Create(path, b)
			if err != nil {
				t.Fatal(err)
			}
			const n = 2500 // more than one commit batch
			for i := n - 1; i >= 0; i-- {
				if err := w.Put(fmt.Appendf(nil, "%08d", i), fmt.Appendf(nil, "value %d", i*i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got, ok := Detect(path); !ok || got != b {
				t.Fatalf("Detect = %v, %v; want %v", got, ok, b)
			}
			i := 0
			err = Scan(path, b, func(k, v []byte) error {
				if want := fmt.Sprintf("%08d", i); string(k) != want {
					return fmt.Errorf("key %d = %q, want %q (key order)", i, k, want)
				}
				if want := fmt.Sprintf("value %d", i*i); string(v) != want {
					return fmt.Errorf("value %d = %q, want %q", i, v, want)
				}
				i++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != n {
				t.Fatalf("scanned %d records, want %d", i, n)
			}
			if _, err := Create(path, b); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("Create over an existing database: %v", err)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	lm := filepath.Join(dir, "lm")
	lv := filepath.Join(dir, "lv")
	for _, c := range []struct {
		path string
		b    Backend
	}{{lm, LMDB}, {lv, LevelDB}} {
		w, err := Create(c.path, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Put([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	nop := func(k, v []byte) error { return nil }
	for _, c := range []struct {
		name string
		path string
		b    Backend
		want string
	}{
		{"missing", filepath.Join(dir, "nope"), LMDB, "does not exist"},
		{"lmdb as leveldb", lm, LevelDB, "is a lmdb database: set backend: LMDB"},
		{"leveldb as lmdb", lv, LMDB, "is a leveldb database: set backend: LEVELDB"},
		{"data.mdb file", filepath.Join(lm, "data.mdb"), LMDB, "name the directory holding data.mdb"},
		{"empty dir", t.TempDir(), LMDB, "holds no database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Scan(c.path, c.b, nop)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("Scan: %v; want an error naming %s with %q", err, c.path, c.want)
			}
		})
	}
}

func TestParseBackend(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Backend
		ok   bool
	}{{"lmdb", LMDB, true}, {"LMDB", LMDB, true}, {"LEVELDB", LevelDB, true}, {"rocksdb", 0, false}} {
		got, err := ParseBackend(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseBackend(%q) = %v, %v", c.in, got, err)
		}
	}
}

// TestCursor: cursors walk in key order, seek to a key (absent keys
// reported), go on from a seek, and keep the database open until they
// close even after its last Close; a second Open in the process shares
// the first.
func TestCursor(t *testing.T) {
	for _, b := range []Backend{LMDB, LevelDB} {
		t.Run(b.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			w, err := Create(path, b)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				if err := w.Put(fmt.Appendf(nil, "k%02d", 2*i), fmt.Appendf(nil, "v%d", 2*i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			d, err := Open(path, b)
			if err != nil {
				t.Fatal(err)
			}
			d2, err := Open(path, b)
			if err != nil || d2 != d {
				t.Fatalf("second Open: %v, same DB %v", err, d2 == d)
			}
			d2.Close()
			c, err := d.Cursor()
			if err != nil {
				t.Fatal(err)
			}
			if k, v, ok, err := c.First(); !ok || err != nil || string(k) != "k00" || string(v) != "v0" {
				t.Fatalf("First = %q %q %v %v", k, v, ok, err)
			}
			if v, ok, err := c.Seek([]byte("k14")); !ok || err != nil || string(v) != "v14" {
				t.Fatalf("Seek(k14) = %q %v %v", v, ok, err)
			}
			if k, v, ok, err := c.Next(); !ok || err != nil || string(k) != "k16" || string(v) != "v16" {
				t.Fatalf("Next after Seek = %q %q %v %v", k, v, ok, err)
			}
			if _, ok, err := c.Seek([]byte("k15")); ok || err != nil {
				t.Fatalf("Seek(k15), absent: ok %v, %v", ok, err)
			}
			if v, ok, err := c.Seek([]byte("k18")); !ok || err != nil || string(v) != "v18" {
				t.Fatalf("Seek(k18) = %q %v %v", v, ok, err)
			}
			if _, _, ok, err := c.Next(); ok || err != nil {
				t.Fatalf("Next past the end: ok %v, %v", ok, err)
			}
			d.Close() // the cursor keeps the database open
			if v, ok, err := c.Seek([]byte("k02")); !ok || err != nil || string(v) != "v2" {
				t.Fatalf("Seek after Close = %q %v %v", v, ok, err)
			}
			c.Close()
			c.Close()
			if _, err := d.Cursor(); err == nil {
				t.Fatal("Cursor after Close: no error")
			}
			// Closed for good: it opens afresh.
			d3, err := Open(path, b)
			if err != nil || d3 == d {
				t.Fatalf("Open after Close: %v, same DB %v", err, d3 == d)
			}
			d3.Close()
		})
	}
}

// TestTruncatedLMDB: a data.mdb cut short (to half, or to two pages) is an
// error naming the database and the file, not a SIGBUS inside LMDB's
// cursor (issue 23).
func TestTruncatedLMDB(t *testing.T) {
	for _, cut := range []string{"half", "8KiB"} {
		t.Run(cut, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			w, err := Create(path, LMDB)
			if err != nil {
				t.Fatal(err)
			}
			val := make([]byte, 3000)
			for i := range 2000 {
				if err := w.Put(fmt.Appendf(nil, "%08d", i), val); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(path, "data.mdb")
			st, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			size := st.Size() / 2
			if cut == "8KiB" {
				size = 8 << 10
			}
			if err := os.Truncate(file, size); err != nil {
				t.Fatal(err)
			}
			err = Scan(path, LMDB, func(k, v []byte) error { return nil })
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("scanning a truncated LMDB: %v", err)
			}
		})
	}
}

// TestLevelDBSecondReader: LevelDB lets one process open a database (its
// LOCK); a second reader (another rank of a job on the host) reads a
// private mirror instead of failing with "Resource temporarily
// unavailable", sees every record, and leaves nothing behind (issue 23).
func TestLevelDBSecondReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	w, err := Create(path, LevelDB)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := range n {
		if err := w.Put(fmt.Appendf(nil, "%08d", i), fmt.Appendf(nil, "value %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first, err := openLevelDBReader(path) // holds the LOCK
	if err != nil {
		t.Fatal(err)
	}
	defer first.close()
	second, err := openLevelDBReader(path)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	mirror := second.(*levelDBReader).mirror
	if mirror == "" {
		t.Fatal("the second reader took the lock the first holds")
	}
	c, err := second.cursor()
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, _, ok, err := c.First(); ok; _, _, ok, err = c.Next() {
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	c.Close()
	if count != n {
		t.Fatalf("the mirror holds %d records, want %d", count, n)
	}
	second.close()
	if _, err := os.Stat(mirror); !os.IsNotExist(err) {
		t.Fatalf("the mirror %s is still there after close", mirror)
	}
}
