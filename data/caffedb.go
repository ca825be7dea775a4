package data

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// DecodeDatum decodes one Caffe Datum record. It checks what dsgd relies
// on: a positive shape, and exactly C×H×W values: bytes in data, or
// float32s in float_data (which Caffe writes for features that are not
// images), never both.
func DecodeDatum(b []byte) (*caffepb.Datum, error) {
	var d caffepb.Datum
	if err := proto.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("not a Caffe Datum: %v", err)
	}
	if err := checkDatum(&d); err != nil {
		return nil, err
	}
	return &d, nil
}

// checkDatum applies DecodeDatum's rules to a decoded Datum.
func checkDatum(d *caffepb.Datum) error {
	if len(d.FloatData) > 0 {
		if d.GetEncoded() || len(d.Data) > 0 {
			return fmt.Errorf("the Datum holds %d float_data values and %d bytes of data (encoded %v); want one or the other", len(d.FloatData), len(d.Data), d.GetEncoded())
		}
		c, h, w := int(d.GetChannels()), int(d.GetHeight()), int(d.GetWidth())
		if c < 1 || h < 1 || w < 1 {
			return fmt.Errorf("the Datum has shape %dx%dx%d (CxHxW); want all positive", c, h, w)
		}
		if n, ok := mulInts(c, h, w); !ok || n != len(d.FloatData) {
			return fmt.Errorf("the Datum's shape %dx%dx%d (CxHxW) needs %s float_data values but it holds %d", c, h, w, countString(n, ok), len(d.FloatData))
		}
		return nil
	}
	if d.GetEncoded() {
		if len(d.Data) == 0 {
			return errors.New("encoded Datum has no image data")
		}
		return nil
	}
	c, h, w := int(d.GetChannels()), int(d.GetHeight()), int(d.GetWidth())
	if c < 1 || h < 1 || w < 1 {
		return fmt.Errorf("the Datum has shape %dx%dx%d (CxHxW); want all positive (is this a database of Caffe Datum records?)", c, h, w)
	}
	n, ok := mulInts(c, h, w)
	if !ok || n != len(d.Data) {
		return fmt.Errorf("the Datum's shape %dx%dx%d (CxHxW) needs %s bytes but data holds %d", c, h, w, countString(n, ok), len(d.Data))
	}
	return nil
}

// DBConfig says how ReadDB turns a database's Datum records into a
// Dataset.
type DBConfig struct {
	// Backend is the database kind.
	Backend db.Backend
	// Channels decodes encoded images to 1 (force_gray) or 3
	// (force_color) channels; 0 keeps each image's own.
	Channels int
	// Limit, when positive, stops after that many records.
	Limit int
}

// ReadDB reads a Caffe database (LMDB or LevelDB) of Datum records, as
// Caffe's convert_imageset and convert_mnist_data write them, into a
// Dataset. Raw records are held as pixels, float_data ones as Floats;
// encoded ones (JPEG, PNG) stay encoded and are decoded as a Loader reads
// them, the first one here to learn the shape. Every raw or float record
// must have the first one's shape and kind.
// Errors name the database and the record's key.
func ReadDB(path string, cfg DBConfig) (*Dataset, error) {
	d := &Dataset{Name: path, Decoding: Decoding{Channels: cfg.Channels}}
	var encoded, floats bool
	var maxL int32
	stop := errors.New("limit")
	err := db.Scan(path, cfg.Backend, func(key, val []byte) error {
		if cfg.Limit > 0 && d.N == cfg.Limit {
			return stop
		}
		at := func(format string, args ...any) error {
			return fmt.Errorf("%s database %s: record %d (key %s): %s", cfg.Backend, path, d.N, strconv.Quote(string(key)), fmt.Sprintf(format, args...))
		}
		dt, err := DecodeDatum(val)
		if err != nil {
			return at("%v", err)
		}
		l := dt.GetLabel()
		if l < 0 || l > MaxLabel {
			return at("label %d is outside 0..%d, the class labels a float32 label blob holds exactly", l, MaxLabel)
		}
		maxL = max(maxL, l)
		if d.N == 0 {
			encoded, floats = dt.GetEncoded(), len(dt.FloatData) > 0
			if encoded {
				_, c, h, w, err := DecodeImage(dt.Data, cfg.Channels, 0, 0)
				if err != nil {
					return at("%v", err)
				}
				d.C, d.H, d.W = c, h, w
			} else {
				d.C, d.H, d.W = int(dt.GetChannels()), int(dt.GetHeight()), int(dt.GetWidth())
			}
		}
		switch {
		case dt.GetEncoded() != encoded:
			return at("encoded is %v but the first record's is %v; a database holds one kind", dt.GetEncoded(), encoded)
		case encoded:
			d.Encoded = append(d.Encoded, dt.Data)
		case (len(dt.FloatData) > 0) != floats:
			return at("%s but the first record holds %s; a database holds one kind", datumKind(dt), map[bool]string{true: "float_data", false: "byte data"}[floats])
		default:
			if c, h, w := int(dt.GetChannels()), int(dt.GetHeight()), int(dt.GetWidth()); c != d.C || h != d.H || w != d.W {
				return at("Datum shape %dx%dx%d (CxHxW) differs from the first record's %dx%dx%d", c, h, w, d.C, d.H, d.W)
			}
			if floats {
				d.Floats = append(d.Floats, dt.FloatData...)
			} else {
				d.Pixels = append(d.Pixels, dt.Data...)
			}
		}
		d.Labels = append(d.Labels, l)
		if encoded || floats {
			d.Keys = append(d.Keys, "key "+strconv.Quote(string(key)))
		}
		d.N++
		return nil
	})
	if err != nil && err != stop {
		return nil, err
	}
	if d.N == 0 {
		return nil, fmt.Errorf("%s database %s is empty", cfg.Backend, path)
	}
	d.Classes = int(maxL) + 1
	return d, nil
}

// datumKind says what a decoded Datum holds, for errors.
func datumKind(d *caffepb.Datum) string {
	switch {
	case len(d.FloatData) > 0:
		return "it holds float_data"
	case d.GetEncoded():
		return "it holds an encoded image"
	}
	return "it holds byte data"
}
