package data

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// datumView is a Caffe Datum read in place: Data aliases the record it
// was parsed from, and Floats a buffer the parser reuses. The streaming
// loader reads every record of every epoch through it, where
// proto.Unmarshal would copy each image into a fresh allocation.
type datumView struct {
	Channels, Height, Width int32
	Data                    []byte
	Label                   int32
	Floats                  []float32
	Encoded                 bool
}

// parseDatum reads b as a Datum into v, as proto.Unmarshal would (a
// scalar or bytes field given twice keeps the last; float_data packed or
// not; unknown fields skipped), reusing v.Floats, then checks it as
// DecodeDatum does. DecodeDatum is the reference: FuzzParseDatum holds the
// two to each other.
func parseDatum(b []byte, v *datumView) error {
	floats := v.Floats[:0]
	*v = datumView{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return datumWireErr(n)
		}
		b = b[n:]
		switch {
		case num >= 1 && num <= 3 || num == 5 || num == 7:
			if typ != protowire.VarintType {
				break
			}
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return datumWireErr(n)
			}
			b = b[n:]
			switch num {
			case 1:
				v.Channels = int32(x)
			case 2:
				v.Height = int32(x)
			case 3:
				v.Width = int32(x)
			case 5:
				v.Label = int32(x)
			case 7:
				v.Encoded = x != 0
			}
			continue
		case num == 4 && typ == protowire.BytesType:
			x, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return datumWireErr(n)
			}
			v.Data, b = x, b[n:]
			continue
		case num == 6 && typ == protowire.Fixed32Type:
			x, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return datumWireErr(n)
			}
			floats, b = append(floats, math.Float32frombits(x)), b[n:]
			continue
		case num == 6 && typ == protowire.BytesType:
			x, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return datumWireErr(n)
			}
			b = b[n:]
			if len(x)%4 != 0 {
				return errors.New("not a Caffe Datum: packed float_data is not a whole number of floats")
			}
			for ; len(x) > 0; x = x[4:] {
				floats = append(floats, math.Float32frombits(uint32(x[0])|uint32(x[1])<<8|uint32(x[2])<<16|uint32(x[3])<<24))
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return datumWireErr(n)
		}
		b = b[n:]
	}
	v.Floats = floats
	return v.check()
}

func datumWireErr(n int) error {
	return fmt.Errorf("not a Caffe Datum: %v", protowire.ParseError(n))
}

// check applies DecodeDatum's rules.
func (v *datumView) check() error {
	c, h, w := int(v.Channels), int(v.Height), int(v.Width)
	if len(v.Floats) > 0 {
		if v.Encoded || len(v.Data) > 0 {
			return fmt.Errorf("the Datum holds %d float_data values and %d bytes of data (encoded %v); want one or the other", len(v.Floats), len(v.Data), v.Encoded)
		}
		if c < 1 || h < 1 || w < 1 {
			return fmt.Errorf("the Datum has shape %dx%dx%d (CxHxW); want all positive", c, h, w)
		}
		if n, ok := mulInts(c, h, w); !ok || n != len(v.Floats) {
			return fmt.Errorf("the Datum's shape %dx%dx%d (CxHxW) needs %s float_data values but it holds %d", c, h, w, countString(n, ok), len(v.Floats))
		}
		return nil
	}
	if v.Encoded {
		if len(v.Data) == 0 {
			return errors.New("encoded Datum has no image data")
		}
		return nil
	}
	if c < 1 || h < 1 || w < 1 {
		return fmt.Errorf("the Datum has shape %dx%dx%d (CxHxW); want all positive (is this a database of Caffe Datum records?)", c, h, w)
	}
	n, ok := mulInts(c, h, w)
	if !ok || n != len(v.Data) {
		return fmt.Errorf("the Datum's shape %dx%dx%d (CxHxW) needs %s bytes but data holds %d", c, h, w, countString(n, ok), len(v.Data))
	}
	return nil
}
