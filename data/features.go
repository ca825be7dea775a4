package data

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// FeatureDB is a new database of the records Caffe's extract_features
// writes: one Datum per image, its channels, height and width set and its
// features in float_data (no label, no data), keyed by the image's index
// as ten zero-padded digits (FeatureKey). It is staged (db.Staged): the
// database appears at its path on Commit only, whole.
type FeatureDB struct {
	s *db.Staged
	n int
	// Bytes is the total size of the record values put so far.
	Bytes int64
}

// FeatureKey is the key of the i-th image's record, as extract_features
// formats it (caffe::format_int(i, 10)): "0000000042".
func FeatureKey(i int) string { return fmt.Sprintf("%010d", i) }

// CreateFeatureDB begins a feature database of backend b at path, which
// must not exist.
func CreateFeatureDB(path string, b db.Backend) (*FeatureDB, error) {
	s, err := db.CreateStaged(path, b)
	if err != nil {
		return nil, err
	}
	return &FeatureDB{s: s}, nil
}

// Count is the records put so far: the next record's index.
func (f *FeatureDB) Count() int { return f.n }

// Put adds the next image's record: shape c×h×w (Caffe's legacy
// channels, height, width), whose product must be len(features).
func (f *FeatureDB) Put(c, h, w int, features []float32) error {
	if c < 0 || h < 0 || w < 0 || c > math.MaxInt32 || h > math.MaxInt32 || w > math.MaxInt32 || c*h*w != len(features) {
		return fmt.Errorf("%s: record %d: shape %dx%dx%d does not hold %d features", f.s.Path(), f.n, c, h, w, len(features))
	}
	c32, h32, w32 := int32(c), int32(h), int32(w)
	v, err := proto.Marshal(&caffepb.Datum{Channels: &c32, Height: &h32, Width: &w32, FloatData: features})
	if err != nil {
		return fmt.Errorf("%s: record %d: %w", f.s.Path(), f.n, err)
	}
	if err := f.s.Put([]byte(FeatureKey(f.n)), v); err != nil {
		return err
	}
	f.n++
	f.Bytes += int64(len(v))
	return nil
}

// Commit makes the database appear at its path (db.Staged.Commit).
func (f *FeatureDB) Commit() error { return f.s.Commit() }

// Abort discards the database (db.Staged.Abort).
func (f *FeatureDB) Abort() error { return f.s.Abort() }
