package data

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
)

func FuzzDecodeIDX(f *testing.F) {
	f.Add(idxImages(2, 3, 3), uint8(3))
	f.Add(idxLabels(1, 2, 9), uint8(1))
	f.Add(gz(f, idxImages(1, 2, 2)), uint8(3))
	f.Add(idxBytes(idxImageMagic, []uint32{0xffffffff, 0xffffffff, 0xffffffff}, nil), uint8(3))
	f.Add([]byte{0, 0, 8}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, nd uint8) {
		ndims := int(nd%4) + 1
		dims, data, err := DecodeIDX("fuzz", b, ndims)
		if err != nil {
			return
		}
		n, ok := mulInts(dims...)
		if len(dims) != ndims || !ok || n != len(data) {
			t.Fatalf("dims %v but %d bytes of data", dims, len(data))
		}
	})
}

func FuzzDecodeCIFAR(f *testing.F) {
	f.Add(cifarBytes(0, 1, 2))
	f.Add(gz(f, cifarBytes(3, 9)))
	f.Add(cifarBytes(0, 11))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		labels, pix, err := DecodeCIFAR("fuzz", b)
		if err != nil {
			return
		}
		if len(pix) != len(labels)*cifarImage || len(labels) == 0 {
			t.Fatalf("%d labels, %d pixel bytes", len(labels), len(pix))
		}
		for _, l := range labels {
			if l >= cifarClasses {
				t.Fatalf("label %d accepted", l)
			}
		}
	})
}

func FuzzDecodeBlobProto(f *testing.F) {
	f.Add(meanProto(3, 2, 2, make([]float32, 12)))
	f.Add(pbFloat(pbInt(nil, bpNum, 1), bpData, 2))
	f.Add(pbPackedDoubles(pbShape(nil, 2), bpDoubleData, 1, 2))
	f.Add(pbBytes(nil, bpShape, pbInt(nil, bsDim, 1<<62)))
	f.Add([]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		blob, err := DecodeBlobProto("fuzz", b)
		if err != nil {
			return
		}
		n, ok := mulInts(blob.Shape...)
		if !ok || n != len(blob.Data) {
			t.Fatalf("shape %v but %d values", blob.Shape, len(blob.Data))
		}
		if len(blob.Data) > len(b) {
			t.Fatalf("%d values from %d bytes", len(blob.Data), len(b))
		}
	})
}

func FuzzParseSynthetic(f *testing.F) {
	f.Add("synthetic")
	f.Add("synthetic:N=1000,C=1,H=28,W=28,classes=10,seed=1")
	f.Add("synthetic:noise=0,n=3")
	f.Add("synthetic:N=1,,")
	f.Fuzz(func(t *testing.T, spec string) {
		cfg, err := ParseSynthetic(spec)
		if err != nil {
			return
		}
		full, err := cfg.withDefaults()
		if err != nil {
			t.Fatalf("%q parsed but its config is invalid: %v", spec, err)
		}
		if full.N < 1 || full.C < 1 || full.H < 1 || full.W < 1 || full.Classes < 1 || full.Classes > 256 {
			t.Fatalf("%q gave %+v", spec, full)
		}
	})
}

func FuzzDecodeDatum(f *testing.F) {
	f.Add([]byte("\x08\x01\x10\x02\x18\x02\x22\x04abcd\x28\x03"))
	f.Add([]byte("\x22\x03png\x38\x01"))
	f.Add([]byte("\x08\x01\x10\x01\x18\x02\x32\x08\x00\x00\x80\x3f\x00\x00\x00\x40"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDatum(b)
		if err != nil || d.GetEncoded() {
			return
		}
		n := int(d.GetChannels()) * int(d.GetHeight()) * int(d.GetWidth())
		if len(d.FloatData) > 0 {
			if n != len(d.FloatData) || len(d.Data) > 0 {
				t.Fatalf("accepted a %dx%dx%d Datum with %d floats and %d bytes", d.GetChannels(), d.GetHeight(), d.GetWidth(), len(d.FloatData), len(d.Data))
			}
			return
		}
		if n != len(d.Data) {
			t.Fatalf("accepted a %dx%dx%d Datum with %d bytes", d.GetChannels(), d.GetHeight(), d.GetWidth(), len(d.Data))
		}
	})
}

func FuzzParseImageList(f *testing.F) {
	f.Add("a.jpg 1\nb c.png 2\n")
	f.Add("x\n")
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseImageList("l.txt", bufio.NewReader(strings.NewReader(s)))
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Path == "" || e.Label < 0 || e.Line < 1 {
				t.Fatalf("bad entry %+v", e)
			}
		}
	})
}

func FuzzDecodeImage(f *testing.F) {
	f.Add(pngOf(f, []uint8{1, 2, 3, 4}, 2, 2))
	for _, name := range []string{"c420", "prog", "gray"} { // libjpeg's path
		if b, err := os.ReadFile("testdata/jpeg/" + name + ".jpg"); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		pix, c, h, w, err := DecodeImage(b, 0, 0, 0)
		if err == nil && len(pix) != c*h*w {
			t.Fatalf("%d bytes for %dx%dx%d", len(pix), c, h, w)
		}
	})
}

// FuzzParseDatum holds the streaming loader's in-place Datum parser to
// DecodeDatum (proto.Unmarshal): the same records accepted, with the same
// fields.
func FuzzParseDatum(f *testing.F) {
	f.Add([]byte("\x08\x01\x10\x02\x18\x02\x22\x04abcd\x28\x03"))
	f.Add([]byte("\x22\x03png\x38\x01"))
	f.Add([]byte("\x08\x01\x10\x01\x18\x02\x32\x08\x00\x00\x80\x3f\x00\x00\x00\x40"))
	f.Add([]byte("\x08\x01\x10\x01\x18\x02\x35\x00\x00\x80\x3f\x35\x00\x00\x00\x40\x28\xe7\x07"))
	var v datumView
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := DecodeDatum(b)
		err := parseDatum(b, &v)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parseDatum: %v; DecodeDatum: %v", err, werr)
		}
		if err != nil {
			return
		}
		if v.Channels != want.GetChannels() || v.Height != want.GetHeight() || v.Width != want.GetWidth() ||
			v.Label != want.GetLabel() || v.Encoded != want.GetEncoded() || !bytes.Equal(v.Data, want.Data) ||
			!slices.EqualFunc(v.Floats, want.FloatData, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("parseDatum gave %+v; DecodeDatum %v", v, want)
		}
	})
}

// FuzzDecodeAnnotatedDatum: whatever DecodeAnnotatedDatum accepts has a
// byte Datum, type BBOX and finite box corners, and turns into groups of
// as many ids as boxes without panicking.
func FuzzDecodeAnnotatedDatum(f *testing.F) {
	ok := func(ad *caffepb.AnnotatedDatum) []byte {
		b, err := proto.Marshal(ad)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	box := &caffepb.NormalizedBBox{Xmin: proto.Float32(0.1), Ymin: proto.Float32(0.2), Xmax: proto.Float32(0.5), Ymax: proto.Float32(0.9), Difficult: proto.Bool(true)}
	f.Add(ok(&caffepb.AnnotatedDatum{
		Datum:           &caffepb.Datum{Channels: proto.Int32(1), Height: proto.Int32(1), Width: proto.Int32(2), Data: []byte{1, 2}},
		Type:            caffepb.AnnotatedDatum_BBOX.Enum(),
		AnnotationGroup: []*caffepb.AnnotationGroup{{GroupLabel: proto.Int32(3), Annotation: []*caffepb.Annotation{{InstanceId: proto.Int32(0), Bbox: box}}}},
	}))
	f.Add(ok(&caffepb.AnnotatedDatum{Datum: &caffepb.Datum{Encoded: proto.Bool(true), Data: []byte{0xff, 0xd8}}}))
	f.Add(ok(&caffepb.AnnotatedDatum{Type: caffepb.AnnotatedDatum_AnnotationType(3).Enum()}))
	f.Add([]byte{0x0a, 0x02, 0x08})
	f.Fuzz(func(t *testing.T, b []byte) {
		ad, err := DecodeAnnotatedDatum(b)
		if err != nil {
			if ad != nil {
				t.Fatal("an error with a result")
			}
			return
		}
		if ad.Datum == nil || len(ad.Datum.FloatData) > 0 || ad.GetType() != caffepb.AnnotatedDatum_BBOX {
			t.Fatalf("accepted %v", ad)
		}
		if !ad.Datum.GetEncoded() && len(ad.Datum.Data) != int(ad.Datum.GetChannels()*ad.Datum.GetHeight()*ad.Datum.GetWidth()) {
			t.Fatalf("accepted a raw datum of %d bytes for %dx%dx%d", len(ad.Datum.Data), ad.Datum.GetChannels(), ad.Datum.GetHeight(), ad.Datum.GetWidth())
		}
		for _, g := range annoGroups(ad) {
			if len(g.IDs) != len(g.Boxes) {
				t.Fatalf("group %d: %d ids, %d boxes", g.Label, len(g.IDs), len(g.Boxes))
			}
			for _, bb := range g.Boxes {
				for _, v := range []float32{bb.XMin, bb.YMin, bb.XMax, bb.YMax} {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("accepted corner %v", v)
					}
				}
			}
		}
	})
}
