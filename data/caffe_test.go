//go:build !purego

package data

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// The fixtures of testdata/caffe were written by scripts/caffe_fixtures.py
// with Python's lmdb, plyvel, h5py and protobuf: the same images as IDX
// files, Datum databases and HDF5.
const fixtures = "testdata/caffe"

func fixtureIDX(t *testing.T, split Split) *Dataset {
	t.Helper()
	img, lab := idxNames(split)
	ds, err := ReadIDXFiles(filepath.Join(fixtures, "idx", img), filepath.Join(fixtures, "idx", lab))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// copyDir copies a fixture database, so that opening it leaves no lock
// file in the tree.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestReadDBMatchesIDX(t *testing.T) {
	for _, c := range []struct {
		dir     string
		backend db.Backend
		split   Split
	}{
		{"train_lmdb", db.LMDB, Train},
		{"test_lmdb", db.LMDB, Test},
		{"train_leveldb", db.LevelDB, Train},
		{"test_leveldb", db.LevelDB, Test},
		{"train_png_lmdb", db.LMDB, Train},
		{"train_float_lmdb", db.LMDB, Train},
		{"test_float_lmdb", db.LMDB, Test},
	} {
		t.Run(c.dir, func(t *testing.T) {
			want := fixtureIDX(t, c.split)
			got, err := ReadDB(copyDir(t, filepath.Join(fixtures, c.dir)), DBConfig{Backend: c.backend})
			if err != nil {
				t.Fatal(err)
			}
			if got.N != want.N || got.C != want.C || got.H != want.H || got.W != want.W {
				t.Fatalf("shape %dx%dx%dx%d, want %dx%dx%dx%d", got.N, got.C, got.H, got.W, want.N, want.C, want.H, want.W)
			}
			if !slices.Equal(got.Labels, want.Labels) {
				t.Fatal("labels differ from the IDX file's")
			}
			if got.Encoded != nil {
				img := make([]uint8, got.ImageSize())
				for i := range got.N {
					if err := got.decodeInto(i, img); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(img, want.Image(i)) {
						t.Fatalf("image %d decodes differently from the IDX file's", i)
					}
				}
				return
			}
			if got.Floats != nil {
				// Python wrote float_data = pixels / 256.
				for i, v := range got.Floats {
					if v != float32(want.Pixels[i])*0.00390625 {
						t.Fatalf("float %d = %v, want %v", i, v, float32(want.Pixels[i])/256)
					}
				}
				return
			}
			if !bytes.Equal(got.Pixels, want.Pixels) {
				t.Fatal("pixels differ from the IDX file's")
			}
		})
	}
}

func TestReadHDF5MatchesIDX(t *testing.T) {
	want := fixtureIDX(t, Train)
	abs, err := filepath.Abs(filepath.Join(fixtures, "train.h5"))
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "train_h5.txt")
	// Two files in the list: the items of both, in order.
	if err := os.WriteFile(list, []byte(abs+"\n"+abs+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHDF5List(list, "data", "label")
	if err != nil {
		t.Fatal(err)
	}
	if got.N != 2*want.N || got.C != 1 || got.H != want.H || got.W != want.W {
		t.Fatalf("shape %dx%dx%dx%d", got.N, got.C, got.H, got.W)
	}
	for i, v := range got.Floats {
		j := i % len(want.Pixels)
		if v != float32(want.Pixels[j])*0.00390625 {
			t.Fatalf("value %d = %v, want %v", i, v, float32(want.Pixels[j])/256)
		}
	}
	for i, l := range got.Labels {
		if l != want.Labels[i%want.N] {
			t.Fatalf("label %d = %d, want %d", i, l, want.Labels[i%want.N])
		}
	}
	// The loader hands the floats on unchanged.
	l, err := NewLoader(got, LoaderConfig{BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b.Data[0] != got.Floats[0] || b.Labels[1] != float32(got.Labels[1]) {
		t.Fatalf("batch starts %v, %v", b.Data[0], b.Labels[1])
	}
	l.Release(b)
}

func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []db.Backend{db.LMDB, db.LevelDB} {
		out := filepath.Join(dir, "mnist_"+b.String())
		img, lab := idxNames(Train)
		st, err := ConvertIDX(filepath.Join(fixtures, "idx", img), filepath.Join(fixtures, "idx", lab), out, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := fixtureIDX(t, Train)
		if st.Records != want.N {
			t.Fatalf("%v: %d records, want %d", b, st.Records, want.N)
		}
		got, err := ReadDB(out, DBConfig{Backend: b})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Pixels, want.Pixels) || !slices.Equal(got.Labels, want.Labels) {
			t.Fatalf("%v: convert-mnist output reads back differently", b)
		}
	}
}

func TestConvertImageset(t *testing.T) {
	dir := t.TempDir()
	src := fixtureIDX(t, Train).Subset(20)
	var list strings.Builder
	for i := range src.N {
		name := fmt.Sprintf("img%02d.png", i)
		if err := os.WriteFile(filepath.Join(dir, name), pngOf(t, src.Image(i), src.H, src.W), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&list, "%s %d\n", name, src.Labels[i])
	}
	listPath := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  ImagesetConfig
		c    int
		h    int
	}{
		{"gray raw", ImagesetConfig{Gray: true}, 1, 12},
		{"colour raw", ImagesetConfig{}, 3, 12},
		{"gray encoded", ImagesetConfig{Gray: true, Encoded: true}, 1, 12},
		{"resized", ImagesetConfig{Gray: true, ResizeHeight: 6, ResizeWidth: 6}, 1, 6},
		{"shuffled leveldb", ImagesetConfig{Gray: true, Shuffle: true, Seed: 3, Backend: db.LevelDB}, 1, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Root = dir + "/"
			out := filepath.Join(t.TempDir(), "db")
			st, err := ConvertImageset(listPath, out, c.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Records != src.N {
				t.Fatalf("%d records", st.Records)
			}
			ds, err := ReadDB(out, DBConfig{Backend: c.cfg.Backend})
			if err != nil {
				t.Fatal(err)
			}
			if ds.C != c.c || ds.H != c.h || ds.W != c.h {
				t.Fatalf("shape %dx%dx%d, want %dx%dx%d", ds.C, ds.H, ds.W, c.c, c.h, c.h)
			}
			if c.cfg.ResizeHeight > 0 || c.cfg.Shuffle {
				return
			}
			img := make([]uint8, ds.ImageSize())
			for i := range ds.N {
				p := img
				if ds.Encoded != nil {
					if err := ds.decodeInto(i, img); err != nil {
						t.Fatal(err)
					}
				} else {
					p = ds.Image(i)
				}
				// Gray PNGs come out as they were; colour is the gray
				// value in each of B, G and R.
				for ch := range ds.C {
					if !bytes.Equal(p[ch*144:(ch+1)*144], src.Image(i)) {
						t.Fatalf("image %d channel %d differs from its source", i, ch)
					}
				}
				if ds.Labels[i] != src.Labels[i] {
					t.Fatalf("label %d = %d, want %d", i, ds.Labels[i], src.Labels[i])
				}
			}
		})
	}
	// A missing or undecodable image is skipped with a warning naming its
	// line, as Caffe does; the others are written, keyed by their line's
	// place (a gap where the skipped one was).
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(filepath.Join(dir, "junk.png"), []byte("not a png"), 0o644)
	os.WriteFile(bad, []byte("img00.png 1\nnope.png 2\njunk.png 3\nimg01.png 4\n"), 0o644)
	out := filepath.Join(dir, "bad_db")
	var warns []string
	st, err := ConvertImageset(bad, out, ImagesetConfig{Root: dir + "/", Warn: func(m string) { warns = append(warns, m) }}, nil)
	if err != nil || st.Records != 2 || st.Skipped != 2 {
		t.Fatalf("two bad images of four: %+v, %v; want 2 written, 2 skipped", st, err)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "bad.txt:2: skipped") || !strings.Contains(warns[1], "bad.txt:3: skipped") || !strings.Contains(warns[1], "junk.png") {
		t.Fatalf("warnings %q, want lines 2 and 3 named", warns)
	}
	r, err := db.Open(out, db.LMDB)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	cur, err := r.Cursor()
	if err != nil {
		t.Fatal(err)
	}
	for k, _, ok, err := cur.First(); ok || err != nil; k, _, ok, err = cur.Next() {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, string(k))
	}
	cur.Close()
	r.Close()
	if want := []string{"00000000_img00.png", "00000003_img01.png"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	// A list with no readable image is an error; nothing is left behind.
	none := filepath.Join(dir, "none.txt")
	os.WriteFile(none, []byte("nope.png 2\n"), 0o644)
	out = filepath.Join(dir, "none_db")
	if _, err := ConvertImageset(none, out, ImagesetConfig{Root: dir + "/"}, nil); err == nil || !strings.Contains(err.Error(), "none of its 1 images") {
		t.Fatalf("no readable image: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatal("a failed conversion left its database behind")
	}
}

func TestComputeImageMean(t *testing.T) {
	out := filepath.Join(t.TempDir(), "db")
	img, lab := idxNames(Test)
	if _, err := ConvertIDX(filepath.Join(fixtures, "idx", img), filepath.Join(fixtures, "idx", lab), out, db.LMDB, nil); err != nil {
		t.Fatal(err)
	}
	bp, chans, n, err := ComputeImageMean(out, db.LMDB, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := fixtureIDX(t, Test)
	total := 0.0
	for j := range src.ImageSize() {
		s := 0.0
		for i := range src.N {
			s += float64(src.Image(i)[j])
		}
		if got, want := bp.Data[j], float32(s/float64(src.N)); got != want {
			t.Fatalf("mean[%d] = %v, want %v", j, got, want)
		}
		total += s
	}
	if n != src.N || len(chans) != 1 || abs64(chans[0]-total/float64(src.N*src.ImageSize())) > 1e-9 {
		t.Fatalf("n %d, channel means %v", n, chans)
	}
	// The mean file reads back with the existing decoder, 1x1x12x12.
	raw, _ := proto.Marshal(bp)
	blob, err := DecodeBlobProto("mean", raw)
	if err != nil || ShapeString(blob.Shape) != "1x1x12x12" {
		t.Fatalf("mean file reads back as %v, %v", blob, err)
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestReadDBErrors(t *testing.T) {
	dir := t.TempDir()
	put := func(name string, vals ...[]byte) string {
		p := filepath.Join(dir, name)
		w, err := db.Create(p, db.LMDB)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if err := w.Put(fmt.Appendf(nil, "%08d", i), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw := func(c, h, w int32, label int32) []byte {
		b, _ := proto.Marshal(&caffepb.Datum{Channels: &c, Height: &h, Width: &w, Data: make([]byte, c*h*w), Label: &label})
		return b
	}
	flt := func(c, h, w int32, n int, data []byte) []byte {
		b, _ := proto.Marshal(&caffepb.Datum{Channels: &c, Height: &h, Width: &w, FloatData: make([]float32, n), Data: data})
		return b
	}
	enc := func(b []byte) []byte {
		t := true
		out, _ := proto.Marshal(&caffepb.Datum{Data: b, Encoded: &t})
		return out
	}
	for _, c := range []struct {
		name string
		path string
		want string
	}{
		{"not datum", put("junk", []byte("\xff\xff\xff")), `(key "00000000"): not a Caffe Datum`},
		{"float count", put("fltcount", flt(1, 2, 2, 3, nil)), "needs 4 float_data values but it holds 3"},
		{"float and bytes", put("fltbytes", flt(1, 2, 2, 4, []byte{1, 2, 3, 4})), "holds 4 float_data values and 4 bytes of data"},
		{"float then bytes", put("fltkind", flt(1, 2, 2, 4, nil), raw(1, 2, 2, 0)), `record 1 (key "00000001"): it holds byte data but the first record holds float_data`},
		{"shape change", put("shapes", raw(1, 2, 2, 0), raw(1, 3, 3, 0)), `record 1 (key "00000001"): Datum shape 1x3x3 (CxHxW) differs from the first record's 1x2x2`},
		{"no shape", put("noshape", raw(0, 0, 0, 0)), "want all positive"},
		{"negative label", put("neglabel", raw(1, 2, 2, -1)), "label -1 is outside 0..16777215"},
		{"big label", put("label", raw(1, 2, 2, 1<<24)), "label 16777216 is outside 0..16777215"},
		{"bad image", put("badimg", enc([]byte("not a png"))), `(key "00000000"): cannot decode image`},
		{"empty", put("empty"), "is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadDB(c.path, DBConfig{Backend: db.LMDB})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("ReadDB: %v\nwant an error naming %s with %q", err, c.path, c.want)
			}
		})
	}
	// A later encoded image that does not decode stops the loader with an
	// error naming its key.
	good := pngOf(t, make([]uint8, 4), 2, 2)
	p := put("lateimg", enc(good), enc(good), enc([]byte("garbage")))
	ds, err := ReadDB(p, DBConfig{Backend: db.LMDB})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Next(context.Background()); err == nil || !strings.Contains(err.Error(), `key "00000002"`) {
		t.Fatalf("Next: %v, want the bad key named", err)
	}
}

func TestBadHDF5(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(fixtures, "train.h5"))
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.h5")
	os.WriteFile(trunc, good[:len(good)/2], 0o644)
	junk := filepath.Join(dir, "junk.h5")
	os.WriteFile(junk, []byte("not hdf5 at all"), 0o644)
	for _, c := range []struct{ name, file, want string }{
		{"truncated", trunc, "trunc.h5"},
		{"not hdf5", junk, "junk.h5 is not a readable HDF5 file"},
		{"missing", filepath.Join(dir, "nope.h5"), "nope.h5: no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := filepath.Join(dir, c.name+".txt")
			os.WriteFile(list, []byte(c.file+"\n"), 0o644)
			_, err := ReadHDF5List(list, "data", "label")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), list) {
				t.Fatalf("ReadHDF5List: %v; want an error naming %s with %q", err, list, c.want)
			}
		})
	}
}

func TestHDF5DatasetsNamedByTops(t *testing.T) {
	abs, _ := filepath.Abs(filepath.Join(fixtures, "test.h5"))
	list := filepath.Join(t.TempDir(), "l.txt")
	os.WriteFile(list, []byte(abs+"\n"), 0o644)
	if _, err := ReadHDF5List(list, "pixels", "label"); err == nil || !strings.Contains(err.Error(), `has no dataset "pixels" (HDF5Data reads the datasets named by its tops)`) {
		t.Fatalf("a top naming no dataset: %v", err)
	}
	ds, err := ReadHDF5List(list, "data", "")
	if err != nil || ds.N != 200 || slices.Max(ds.Labels) != 0 {
		t.Fatalf("data without labels: %v", err)
	}
}

func TestLockedLevelDB(t *testing.T) {
	p := filepath.Join(t.TempDir(), "db")
	w, err := db.Create(p, db.LevelDB)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Put([]byte("k"), []byte("v"))
	// The writer holds LevelDB's lock and has flushed nothing: a reader
	// is refused, not hung, and told why.
	_, err = ReadDB(p, DBConfig{Backend: db.LevelDB})
	if err == nil || !strings.Contains(err.Error(), "another process holds the database") || !strings.Contains(err.Error(), p) {
		t.Fatalf("ReadDB of a locked LevelDB: %v", err)
	}
}

// TestFloatDatumTransform: a float_data database goes through
// transform_param as Caffe's DataTransformer applies it to float data:
// the same batches as the byte database with the scale folded in, mean
// and crop included.
func TestFloatDatumTransform(t *testing.T) {
	floats, err := ReadDB(copyDir(t, filepath.Join(fixtures, "train_float_lmdb")), DBConfig{Backend: db.LMDB})
	if err != nil {
		t.Fatal(err)
	}
	bytesDS := fixtureIDX(t, Train)
	// (p/256 - m/256) * 256 == p - m exactly for whole p and m.
	fcfg := LoaderConfig{BatchSize: 16, Train: true, Shuffle: true, Seed: 3,
		Transform: TransformConfig{Scale: 256, MeanValue: []float32{0.5}, CropSize: 10, Mirror: true}}
	bcfg := fcfg
	bcfg.Transform.Scale, bcfg.Transform.MeanValue = 1, []float32{128}
	fl, err := NewLoader(floats, fcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	bl, err := NewLoader(bytesDS, bcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	for range 30 {
		fb, err := fl.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		bb, err := bl.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fb.Data, bb.Data) || !slices.Equal(fb.Labels, bb.Labels) {
			t.Fatalf("batch %d: float_data batch differs from the byte one", fb.Seq)
		}
		fl.Release(fb)
		bl.Release(bb)
	}
	// HDF5 data still takes no transform_param.
	h5 := *floats
	h5.Untransformed = true
	if _, err := NewLoader(&h5, fcfg); err == nil || !strings.Contains(err.Error(), "takes no transform_param") {
		t.Fatalf("HDF5-like data with a transform: %v", err)
	}
}
