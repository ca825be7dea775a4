//go:build !purego

package data

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/data/db"
)

// caffeFeatureRecord is the Datum extract_features serializes, built by
// hand from protobuf's wire format: channels (1), height (2), width (3) as
// varints, then each float_data (6) value unpacked as a fixed32, as
// Caffe's proto2 caffe.proto declares it.
func caffeFeatureRecord(c, h, w byte, vals ...float32) []byte {
	b := []byte{0x08, c, 0x10, h, 0x18, w}
	for _, v := range vals {
		b = append(b, 0x35)
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestFeatureDB: the records are Caffe's bytes under Caffe's keys, read
// back by dsgd's Datum decoder too, in both backends.
func TestFeatureDB(t *testing.T) {
	type rec struct {
		c, h, w byte
		vals    []float32
	}
	recs := []rec{
		{2, 1, 1, []float32{1.5, -2}},
		{1, 2, 2, []float32{0, float32(math.Inf(1)), -0.25, 3e-39}},
		{1, 1, 1, []float32{7}},
	}
	for _, b := range []db.Backend{db.LMDB, db.LevelDB} {
		t.Run(b.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feat")
			f, err := CreateFeatureDB(path, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if err := f.Put(int(r.c), int(r.h), int(r.w), r.vals); err != nil {
					t.Fatal(err)
				}
			}
			if f.Count() != len(recs) {
				t.Fatalf("Count %d, want %d", f.Count(), len(recs))
			}
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			i := 0
			err = db.Scan(path, b, func(k, v []byte) error {
				r := recs[i]
				if want := []string{"0000000000", "0000000001", "0000000002"}[i]; string(k) != want {
					t.Errorf("key %d %q, want %q", i, k, want)
				}
				if want := caffeFeatureRecord(r.c, r.h, r.w, r.vals...); !bytes.Equal(v, want) {
					t.Errorf("record %d\n% x\nwant Caffe's\n% x", i, v, want)
				}
				d, err := DecodeDatum(v)
				if err != nil {
					t.Errorf("record %d: %v", i, err)
				} else if len(d.FloatData) != len(r.vals) || d.Label != nil {
					t.Errorf("record %d decodes as %v", i, d)
				}
				i++
				return nil
			})
			if err != nil || i != len(recs) {
				t.Fatalf("scanned %d records: %v", i, err)
			}
		})
	}
}

// TestFeatureDBRefuses: a shape that does not hold the features is an
// error naming the database and the record.
func TestFeatureDBRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feat")
	f, err := CreateFeatureDB(path, db.LMDB)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	for _, c := range []struct {
		c, h, w int
		n       int
	}{{2, 2, 2, 7}, {-1, 1, 1, 0}, {1 << 40, 1, 1, 1}} {
		err := f.Put(c.c, c.h, c.w, make([]float32, c.n))
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "record 0") {
			t.Errorf("Put(%d, %d, %d, %d values): %v", c.c, c.h, c.w, c.n, err)
		}
	}
	if f.Count() != 0 {
		t.Errorf("Count %d after refusals", f.Count())
	}
}
