//go:build !purego

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data"
	"dsgd/data/db"
	"dsgd/engine/tensor"
)

// annosetFixture is scripts/annoset_fixture.py's folder: images, VOC XML
// and txt annotations, a label map, list files and expected.json.
var annosetFixture = filepath.Join("..", "..", "data", "testdata", "annoset")

// annosetCase is one case of expected.json: the command's flags and the
// records SSD's fork writes for its list.
type annosetCase struct {
	Name    string
	List    string
	Flags   []string
	Records []struct {
		Key                     string
		Channels, Height, Width int32
		Label                   int32
		Encoded                 bool
		Data                    string
		Reencoded               string
		Pixels                  string
		Resized                 bool
		Type                    *int32
		Groups                  []struct {
			Label int32
			Annos []struct {
				ID        int32
				Box       [4]float64
				Difficult bool
			}
		}
	}
}

func loadAnnosetCases(t *testing.T) []annosetCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(annosetFixture, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []annosetCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 8 {
		t.Fatalf("expected.json has %d cases; remake it with make annoset-crosscheck", len(cases))
	}
	return cases
}

// readAll returns the database's keys and values in order.
func readAll(t *testing.T, path string, b db.Backend) (keys []string, vals [][]byte) {
	t.Helper()
	d, err := db.Open(path, b)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.Cursor()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k, v, ok, err := c.First()
	for ; ok && err == nil; k, v, ok, err = c.Next() {
		keys = append(keys, string(k))
		vals = append(vals, bytes.Clone(v))
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys, vals
}

// maxPixelDiff is the largest difference between two equally long pixel
// slices, or 256 when their lengths differ.
func maxPixelDiff(a, b []byte) int {
	if len(a) != len(b) {
		return 256
	}
	m := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		m = max(m, d, -d)
	}
	return m
}

// TestConvertAnnosetOracle runs convert_annoset, in the fork's form and
// create_data.sh's flags among others, over the fixture and holds every
// record to what scripts/annoset_fixture.py computes the fork writes:
// keys (the unreadable image's number skipped), the Datum's fields and
// bytes (the file's own when kept; OpenCV's pixels otherwise, exactly,
// cv2.resize's too, but for a colour PNG read gray: 1 level), type BBOX, the groups in order,
// instance ids, float32 boxes and difficult flags.
func TestConvertAnnosetOracle(t *testing.T) {
	root, err := filepath.Abs(annosetFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range loadAnnosetCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "db")
			args := []string{"convert_annoset"}
			backend := db.LMDB
			for _, f := range tc.Flags {
				args = append(args, strings.ReplaceAll(f, "@", root))
				if f == "--backend=leveldb" {
					backend = db.LevelDB
				}
			}
			args = append(args, root+"/", filepath.Join(root, tc.List), out)
			code, stdout, stderr := runCmd(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			if tc.List == "voc.txt" {
				if !strings.Contains(stdout, "skipped 1 unreadable") || !strings.Contains(stderr, "voc.txt:2: skipped") {
					t.Errorf("the unreadable image is not reported by its list line:\n%s%s", stdout, stderr)
				}
				if !strings.Contains(stderr, "d.xml does not exist") {
					t.Errorf("the missing annotation file is not warned of:\n%s", stderr)
				}
			}
			keys, vals := readAll(t, out, backend)
			if len(keys) != len(tc.Records) {
				t.Fatalf("%d records %q, want %d", len(keys), keys, len(tc.Records))
			}
			for i, want := range tc.Records {
				if keys[i] != want.Key {
					t.Errorf("record %d: key %q, want %q", i, keys[i], want.Key)
				}
				var got caffepb.AnnotatedDatum
				if err := proto.Unmarshal(vals[i], &got); err != nil {
					t.Fatalf("%s: %v", want.Key, err)
				}
				d := got.GetDatum()
				if d == nil || d.Channels == nil || d.Height == nil || d.Width == nil || d.Label == nil || d.Encoded == nil {
					t.Fatalf("%s: datum fields missing: %v", want.Key, d)
				}
				if d.GetChannels() != want.Channels || d.GetHeight() != want.Height || d.GetWidth() != want.Width || d.GetLabel() != want.Label || d.GetEncoded() != want.Encoded {
					t.Errorf("%s: datum %dx%dx%d label %d encoded %v, want %dx%dx%d label %d encoded %v", want.Key,
						d.GetChannels(), d.GetHeight(), d.GetWidth(), d.GetLabel(), d.GetEncoded(),
						want.Channels, want.Height, want.Width, want.Label, want.Encoded)
				}
				if len(d.FloatData) != 0 {
					t.Errorf("%s: float_data set", want.Key)
				}
				switch {
				case want.Reencoded != "":
					pix, _ := hex.DecodeString(want.Pixels)
					magic := map[string]string{"jpg": "\xff\xd8", "png": "\x89PNG"}[want.Reencoded]
					if !bytes.HasPrefix(d.Data, []byte(magic)) {
						t.Errorf("%s: re-encoded data is not %s", want.Key, want.Reencoded)
					}
					dec, _, _, _, err := data.DecodeImage(d.Data, int(want.Channels), 0, 0)
					if err != nil {
						t.Fatalf("%s: %v", want.Key, err)
					}
					tol := 0
					if want.Reencoded == "jpg" {
						tol = 4 // JPEG's loss at quality 95 on these smooth images (3 seen)
					}
					if m := maxPixelDiff(dec, pix); m > tol {
						t.Errorf("%s: re-encoded pixels differ by up to %d from OpenCV's, want at most %d", want.Key, m, tol)
					}
				default:
					w, _ := hex.DecodeString(want.Data)
					tol := 0
					if want.Channels == 1 && strings.HasSuffix(want.Key, ".png") {
						// OpenCV reads a colour PNG as gray through
						// libpng's own weights; DecodeImage (as for
						// convert-imageset) takes BGR2GRAY's: 1 level
						// apart in places.
						tol = 1
					}
					if m := maxPixelDiff(d.Data, w); m > tol {
						t.Errorf("%s: data (%d bytes) differs by up to %d from the fork's (%d bytes; resized %v), want at most %d", want.Key, len(d.Data), m, len(w), want.Resized, tol)
					}
				}
				if (got.Type != nil) != (want.Type != nil) || (want.Type != nil && int32(got.GetType()) != *want.Type) {
					t.Errorf("%s: type %v, want %v", want.Key, got.Type, want.Type)
				}
				if len(got.AnnotationGroup) != len(want.Groups) {
					t.Fatalf("%s: %d groups, want %d", want.Key, len(got.AnnotationGroup), len(want.Groups))
				}
				for g, wg := range want.Groups {
					gg := got.AnnotationGroup[g]
					if gg.GetGroupLabel() != wg.Label || len(gg.Annotation) != len(wg.Annos) {
						t.Fatalf("%s: group %d label %d with %d boxes, want %d with %d", want.Key, g, gg.GetGroupLabel(), len(gg.Annotation), wg.Label, len(wg.Annos))
					}
					for a, wa := range wg.Annos {
						ga := gg.Annotation[a]
						b := ga.GetBbox()
						gotBox := [4]float32{b.GetXmin(), b.GetYmin(), b.GetXmax(), b.GetYmax()}
						wantBox := [4]float32{float32(wa.Box[0]), float32(wa.Box[1]), float32(wa.Box[2]), float32(wa.Box[3])}
						if ga.InstanceId == nil || ga.GetInstanceId() != wa.ID || gotBox != wantBox || b.Difficult == nil || b.GetDifficult() != wa.Difficult {
							t.Errorf("%s: group %d box %d: id %d %v difficult %v, want id %d %v difficult %v", want.Key, g, a, ga.GetInstanceId(), gotBox, b.GetDifficult(), wa.ID, wantBox, wa.Difficult)
						}
					}
				}
			}
		})
	}
}

// TestConvertAnnosetLoads reads create_data.sh's database back through
// dsgd's AnnotatedData loader: a batch of the four images, warped to 8×8,
// whose label rows are the fork's boxes (clipped to the image, as the
// fork's transform clips them) in record, group and instance order.
func TestConvertAnnosetLoads(t *testing.T) {
	root, err := filepath.Abs(annosetFixture)
	if err != nil {
		t.Fatal(err)
	}
	var tc annosetCase
	for _, c := range loadAnnosetCases(t) {
		if c.Name == "create_data" {
			tc = c
		}
	}
	out := filepath.Join(t.TempDir(), "VOC0712_trainval_lmdb")
	// Flags before and after the arguments, as Caffe's gflags take them.
	code, stdout, stderr := runCmd(t, "", "convert-annoset", "--anno_type=detection", "--label_map_file="+filepath.Join(root, "labelmap.prototxt"),
		root+"/", filepath.Join(root, "voc.txt"), out, "--check_label", "--encode_type=jpg", "--encoded")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	s, err := data.OpenAnnotated(data.AnnotatedConfig{
		Name: "data", Source: out, Backend: db.LMDB, BatchSize: len(tc.Records), Scale: 1,
		Resize: &data.ResizeConfig{Height: 8, Width: 8, InterpModes: []data.InterpMode{data.InterpLinear}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tops := []*tensor.Blob{tensor.NewBlob("data", s.Shape()...), tensor.NewBlob("label", s.LabelShape()...)}
	if err := s.Fill(context.Background(), tops); err != nil {
		t.Fatal(err)
	}
	if !tops[0].Shape.Equal(tensor.Shape{len(tc.Records), 3, 8, 8}) {
		t.Fatalf("data shape %v", tops[0].Shape)
	}
	clip := func(v float64) float32 { return float32(math.Min(math.Max(v, 0), 1)) }
	var want [][8]float32
	for item, r := range tc.Records {
		for _, g := range r.Groups {
			for _, a := range g.Annos {
				d := float32(0)
				if a.Difficult {
					d = 1
				}
				want = append(want, [8]float32{float32(item), float32(g.Label), float32(a.ID), clip(a.Box[0]), clip(a.Box[1]), clip(a.Box[2]), clip(a.Box[3]), d})
			}
		}
	}
	if !tops[1].Shape.Equal(tensor.Shape{1, 1, len(want), 8}) {
		t.Fatalf("label shape %v, want 1x1x%dx8", tops[1].Shape, len(want))
	}
	for r, row := range want {
		if got := [8]float32(tops[1].Data[r*8 : r*8+8]); got != row {
			t.Errorf("label row %d: %v, want %v", r, got, row)
		}
	}
}
