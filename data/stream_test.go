//go:build !purego

package data

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// writeDatums makes a database of the given Datum records, keys %08d.
func writeDatums(t testing.TB, path string, b db.Backend, recs ...*caffepb.Datum) string {
	t.Helper()
	w, err := db.Create(path, b)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		v, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Put(fmt.Appendf(nil, "%08d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func rawDatum(c, h, w, label int32, fill byte) *caffepb.Datum {
	d := make([]byte, c*h*w)
	for i := range d {
		d[i] = fill + byte(i)
	}
	return &caffepb.Datum{Channels: &c, Height: &h, Width: &w, Data: d, Label: &label}
}

// batches reads n batches of a fresh loader over ds.
func batches(t *testing.T, ds *Dataset, cfg LoaderConfig, n int) (data [][]float32, labels [][]float32, index [][]int) {
	t.Helper()
	l, err := NewLoader(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range n {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, slices.Clone(b.Data))
		labels = append(labels, slices.Clone(b.Labels))
		index = append(index, slices.Clone(b.Index))
		l.Release(b)
	}
	return data, labels, index
}

// TestStreamMatchesMemory: a streamed database gives, batch for batch,
// what the same database read into memory gives, under every sampling
// mode the trainer uses: so streaming keeps the data order (and the
// worker-count-independent contract of Slice) as it was.
func TestStreamMatchesMemory(t *testing.T) {
	crop := TransformConfig{Scale: 0.00390625, CropSize: 10, Mirror: true, MeanValue: []float32{100}}
	cfgs := []LoaderConfig{
		{BatchSize: 7},
		{BatchSize: 16, Train: true, Shuffle: true, Seed: 4, Rank: 1, World: 3, Transform: crop, RandSkip: 50},
		{BatchSize: 8, Train: true, Shuffle: true, Seed: 9, Rank: 0, World: 2, Slice: true, Start: 3, Transform: crop},
		{BatchSize: 8, Train: true, Shuffle: true, Seed: 9, Rank: 1, World: 2, Slice: true, Start: 3, Transform: crop},
		{BatchSize: 32, Train: true, Slice: true, Transform: crop, DecodeThreads: 3},
	}
	for _, c := range []struct {
		dir string
		b   db.Backend
	}{
		{"train_lmdb", db.LMDB},
		{"train_leveldb", db.LevelDB},
		{"train_png_lmdb", db.LMDB},
		{"train_float_lmdb", db.LMDB},
	} {
		t.Run(c.dir, func(t *testing.T) {
			path := copyDir(t, filepath.Join(fixtures, c.dir))
			mem, err := ReadDB(path, DBConfig{Backend: c.b})
			if err != nil {
				t.Fatal(err)
			}
			st, err := OpenDB(path, DBConfig{Backend: c.b})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Stream == nil || st.Labels != nil || st.N != mem.N || st.C != mem.C || st.H != mem.H || st.W != mem.W {
				t.Fatalf("streamed %dx%dx%dx%d, in memory %dx%dx%dx%d", st.N, st.C, st.H, st.W, mem.N, mem.C, mem.H, mem.W)
			}
			for k, cfg := range cfgs {
				if mem.Floats != nil {
					cfg.Transform.Scale, cfg.Transform.MeanValue = 256, []float32{0.25}
				}
				md, ml, mi := batches(t, mem, cfg, 60)
				sd, sl, si := batches(t, st, cfg, 60)
				for i := range md {
					if !slices.Equal(md[i], sd[i]) || !slices.Equal(ml[i], sl[i]) || !slices.Equal(mi[i], si[i]) {
						t.Fatalf("config %d batch %d: streamed %v %v, in memory %v %v", k, i, si[i], sl[i], mi[i], ml[i])
					}
				}
			}
		})
	}
}

// TestStreamHoldsKeysOnly: opening and reading a database through a
// Loader keeps only its keys (and the loader's buffers) in memory, not its
// records: what makes a database larger than memory trainable.
func TestStreamHoldsKeysOnly(t *testing.T) {
	const n, side = 256, 128 // 256 records of 3x128x128: 12.6 MB
	recs := make([]*caffepb.Datum, n)
	for i := range recs {
		recs[i] = rawDatum(3, side, side, int32(i%1000), byte(i))
	}
	path := writeDatums(t, filepath.Join(t.TempDir(), "big_lmdb"), db.LMDB, recs...)
	recs = nil
	dbBytes := int64(n * 3 * side * side)
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	ds, err := OpenDB(path, DBConfig{Backend: db.LMDB})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	opened := heap()
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 4, Prefetch: 1, Train: true, Shuffle: true, Seed: 1, Transform: TransformConfig{CropSize: 64}})
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	for range 2 * n / 4 { // two epochs
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Labels...)
		l.Release(b)
	}
	read := heap()
	l.Close()
	if opened-before > dbBytes/100 {
		t.Errorf("OpenDB holds %d bytes of heap for a %d-byte database; want its keys only", opened-before, dbBytes)
	}
	// The loader's buffers: 3 batches of 4 float32 3x64x64 crops (590 KB).
	if read-before > dbBytes/8 {
		t.Errorf("after two epochs %d bytes of heap are held for a %d-byte database", read-before, dbBytes)
	}
	seen := map[float32]int{}
	for _, v := range got {
		seen[v]++
	}
	if len(seen) != n || seen[0] != 2 {
		t.Errorf("two epochs gave %d distinct labels, label 0 %d times; want %d, twice", len(seen), seen[0], n)
	}
	t.Logf("heap: +%d bytes after OpenDB, +%d after two epochs, database %d bytes", opened-before, read-before, dbBytes)
}

// TestStreamErrors: a record that cannot be used stops the loader with an
// error naming the database, the record and its key; one database open
// twice in a process (train and test phases) works, for both backends.
func TestStreamErrors(t *testing.T) {
	dir := t.TempDir()
	neg := rawDatum(1, 2, 2, -1, 0)
	big := rawDatum(1, 2, 2, 1<<24, 0)
	one := int32(1)
	floats := &caffepb.Datum{Channels: &one, Height: &one, Width: &one, FloatData: []float32{1}}
	enc := true
	for _, c := range []struct {
		name string
		recs []*caffepb.Datum
		want string
		// batch is the batch size (0: 1), tf the transform, reshape
		// LoaderConfig.Reshape.
		batch   int
		tf      TransformConfig
		reshape bool
	}{
		{"shape", []*caffepb.Datum{rawDatum(1, 2, 2, 0, 0), rawDatum(1, 2, 2, 1, 0), rawDatum(1, 2, 2, 0, 0), rawDatum(1, 3, 2, 1, 0)}, `record 3 (key "00000003"): the Datum's shape 1x3x2 (CxHxW) differs from the first record's 1x2x2: Caffe's Data layer shapes each batch by its first record, so records of differing shapes need batch_size 1`, 2, TransformConfig{}, false},
		{"shape in a reshaping batch", []*caffepb.Datum{rawDatum(1, 2, 2, 0, 0), rawDatum(1, 2, 2, 1, 0), rawDatum(1, 3, 3, 0, 0), rawDatum(1, 3, 2, 1, 0)}, `record 3 (key "00000003"): the Datum's shape 1x3x2 (CxHxW) differs from its batch's first record's 1x3x3`, 2, TransformConfig{}, true},
		{"shape at batch 1 without Reshape", []*caffepb.Datum{rawDatum(1, 2, 2, 0, 0), rawDatum(1, 3, 2, 1, 0)}, `record 1 (key "00000001"): the Datum's shape 1x3x2 (CxHxW) differs from the first record's 1x2x2`, 1, TransformConfig{}, false},
		{"channels under a crop", []*caffepb.Datum{rawDatum(1, 2, 2, 0, 0), rawDatum(3, 2, 2, 1, 0)}, `record 1 (key "00000001"): the Datum's shape 3x2x2 (CxHxW) differs from the first record's 1x2x2`, 2, TransformConfig{CropSize: 1}, false},
		{"crop larger than a later record", []*caffepb.Datum{rawDatum(1, 3, 3, 0, 0), rawDatum(1, 3, 2, 1, 0)}, `record 1 (key "00000001"): transform_param: crop_size 3 is larger than the record's 3x2 (HxW)`, 1, TransformConfig{CropSize: 3}, true},
		{"negative", []*caffepb.Datum{rawDatum(1, 2, 2, 0, 0), neg}, `record 1 (key "00000001"): label -1 is outside 0..16777215`, 0, TransformConfig{}, false},
		{"big", []*caffepb.Datum{rawDatum(1, 2, 2, 0, 0), big}, `record 1 (key "00000001"): label 16777216 is outside`, 0, TransformConfig{}, false},
		{"kind", []*caffepb.Datum{rawDatum(1, 1, 1, 0, 0), floats}, `record 1 (key "00000001"): it holds float_data but the first record holds byte data`, 0, TransformConfig{}, false},
		{"image", []*caffepb.Datum{{Data: pngOf(t, []uint8{1, 2, 3, 4}, 2, 2), Encoded: &enc}, {Data: []byte("garbage"), Encoded: &enc}}, `record 1 (key "00000001"): cannot decode image`, 0, TransformConfig{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeDatums(t, filepath.Join(dir, c.name), db.LMDB, c.recs...)
			ds, err := OpenDB(path, DBConfig{Backend: db.LMDB})
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			l, err := NewLoader(ds, LoaderConfig{BatchSize: max(c.batch, 1), Transform: c.tf, Reshape: c.reshape})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for range len(c.recs) {
				b, err := l.Next(context.Background())
				if err != nil {
					if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
						t.Fatalf("error %q; want one naming %s with %q", err, path, c.want)
					}
					return
				}
				l.Release(b)
			}
			t.Fatalf("no error; want %q", c.want)
		})
	}
	// Garbage as the first record, and an empty database, fail at open.
	for name, recs := range map[string][]*caffepb.Datum{"empty": nil, "noshape": {rawDatum(0, 0, 0, 0, 0)}} {
		path := writeDatums(t, filepath.Join(dir, name), db.LevelDB, recs...)
		if _, err := OpenDB(path, DBConfig{Backend: db.LevelDB}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: OpenDB: %v; want an error naming %s", name, err, path)
		}
	}
	for _, b := range []db.Backend{db.LMDB, db.LevelDB} {
		path := writeDatums(t, filepath.Join(dir, "twice_"+b.String()), b, rawDatum(1, 1, 1, 3, 0), rawDatum(1, 1, 1, 4, 0))
		a, err := OpenDB(path, DBConfig{Backend: b})
		if err != nil {
			t.Fatal(err)
		}
		c, err := OpenDB(path, DBConfig{Backend: b})
		if err != nil {
			t.Fatalf("%s opened a second time: %v", b, err)
		}
		_, la, _ := batches(t, a, LoaderConfig{BatchSize: 2}, 1)
		c.Close()
		_, lc, _ := batches(t, a, LoaderConfig{BatchSize: 2}, 1)
		if !slices.Equal(la[0], []float32{3, 4}) || !slices.Equal(lc[0], la[0]) {
			t.Errorf("%s: labels %v then %v, want [3 4]", b, la, lc)
		}
		a.Close()
		if _, err := NewLoader(a, LoaderConfig{BatchSize: 1}); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("%s: a loader over a closed database: %v", b, err)
		}
	}
}

// streamBench writes ds as an LMDB of Datum records (raw, or encoded
// when ds is) and opens it streamed.
func streamBench(b *testing.B, ds *Dataset) *Dataset {
	recs := make([]*caffepb.Datum, ds.N)
	for i := range recs {
		c, h, w, l := int32(ds.C), int32(ds.H), int32(ds.W), ds.Labels[i]
		if ds.Encoded != nil {
			enc := true
			recs[i] = &caffepb.Datum{Data: ds.Encoded[i], Encoded: &enc, Label: &l}
		} else {
			recs[i] = &caffepb.Datum{Channels: &c, Height: &h, Width: &w, Data: ds.Image(i), Label: &l}
		}
	}
	path := writeDatums(b, filepath.Join(b.TempDir(), "bench_lmdb"), db.LMDB, recs...)
	st, err := OpenDB(path, DBConfig{Backend: db.LMDB})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkStreamRaw is BenchmarkLoaderRaw from a streamed LMDB: each
// record is read through the cursor (a seek per image, the order being
// shuffled) and parsed in place.
func BenchmarkStreamRaw(b *testing.B) {
	ds, err := Synthetic(SyntheticConfig{N: 6400, C: 1, H: 28, W: 28})
	if err != nil {
		b.Fatal(err)
	}
	benchLoader(b, streamBench(b, ds), TransformConfig{Scale: 1.0 / 256}, 64, 1)
}

// BenchmarkStreamRawSeq is BenchmarkStreamRaw in file order, as Caffe's
// Data layer reads (the cursor steps, never seeks).
func BenchmarkStreamRawSeq(b *testing.B) {
	ds, err := Synthetic(SyntheticConfig{N: 6400, C: 1, H: 28, W: 28})
	if err != nil {
		b.Fatal(err)
	}
	st := streamBench(b, ds)
	l, err := NewLoader(st, LoaderConfig{BatchSize: 64, Train: true, Seed: 1, Transform: TransformConfig{Scale: 1.0 / 256}, Prefetch: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	for n := 0; n < b.N; n += 64 {
		bt, err := l.Next(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		l.Release(bt)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkStreamJPEG is BenchmarkLoaderJPEG from a streamed LMDB of
// encoded Datums.
func BenchmarkStreamJPEG(b *testing.B) {
	ds := jpegSet(b, 64)
	mf, _ := meanFile(b)
	benchLoader(b, streamBench(b, ds), TransformConfig{MeanFile: mf, CropSize: 227, Mirror: true}, 32, 1)
}

// BenchmarkDatumProto and BenchmarkDatumView compare proto.Unmarshal
// (DecodeDatum) with the in-place parser the stream uses, on a LeNet-sized
// raw Datum and an ImageNet-sized one (3x256x256).
func BenchmarkDatumProto(b *testing.B) {
	for _, side := range []int32{28, 256} {
		v, _ := proto.Marshal(rawDatum(3, side, side, 7, 0))
		b.Run(fmt.Sprint(side), func(b *testing.B) {
			b.SetBytes(int64(len(v)))
			for range b.N {
				if _, err := DecodeDatum(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDatumView(b *testing.B) {
	var d datumView
	for _, side := range []int32{28, 256} {
		v, _ := proto.Marshal(rawDatum(3, side, side, 7, 0))
		b.Run(fmt.Sprint(side), func(b *testing.B) {
			b.SetBytes(int64(len(v)))
			for range b.N {
				if err := parseDatum(v, &d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStreamVariableShapes: records of differing shapes streamed at
// batch size 1 each make a batch of their own shape, transformed as
// Caffe's DataTransformer would (computed here element by element from
// its formula: (pixel - mean) × scale at the crop's offset, flipped when
// mirrored); a crop that fits every record makes batches of any size
// from records of differing sizes; a mean file, of one shape, refuses a
// record of another naming it.
func TestStreamVariableShapes(t *testing.T) {
	dir := t.TempDir()
	floatDatum := func(c, h, w int32) *caffepb.Datum {
		f := make([]float32, c*h*w)
		for i := range f {
			f[i] = float32(i) / 4
		}
		l := int32(0)
		return &caffepb.Datum{Channels: &c, Height: &h, Width: &w, FloatData: f, Label: &l}
	}
	// want is Caffe's Transform of record r (pixel j of a raw record is
	// fill+j, of a float one j/4) at offsets (ho, wo) into oh×ow.
	want := func(r *caffepb.Datum, tf TransformConfig, ho, wo, oh, ow int, mirror bool) []float32 {
		c, h, w := int(r.GetChannels()), int(r.GetHeight()), int(r.GetWidth())
		scale := tf.Scale
		if scale == 0 {
			scale = 1
		}
		out := make([]float32, c*oh*ow)
		for ch := range c {
			var mean float32
			if len(tf.MeanValue) == 1 {
				mean = tf.MeanValue[0]
			} else if len(tf.MeanValue) > 0 {
				mean = tf.MeanValue[ch]
			}
			for y := range oh {
				for x := range ow {
					src := (ch*h+ho+y)*w + wo + x
					var v float32
					if len(r.FloatData) > 0 {
						v = r.FloatData[src]
					} else {
						v = float32(r.Data[src])
					}
					dx := x
					if mirror {
						dx = ow - 1 - x
					}
					out[(ch*oh+y)*ow+dx] = (v - mean) * scale
				}
			}
		}
		return out
	}
	recs := []*caffepb.Datum{rawDatum(2, 1, 1, 0, 0), rawDatum(2, 2, 3, 1, 7), rawDatum(2, 3, 2, 2, 50), rawDatum(2, 4, 5, 3, 9)}
	grays := []*caffepb.Datum{rawDatum(1, 2, 3, 0, 5), rawDatum(1, 4, 1, 1, 60), rawDatum(1, 3, 3, 2, 200)}
	encoded := func(raws []*caffepb.Datum) []*caffepb.Datum {
		var out []*caffepb.Datum
		for _, r := range raws {
			e, l := true, r.GetLabel()
			out = append(out, &caffepb.Datum{Data: pngOf(t, r.Data, int(r.GetHeight()), int(r.GetWidth())), Encoded: &e, Label: &l})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		recs   []*caffepb.Datum
		batch  int
		tf     TransformConfig
		shapes [][4]int // each batch's, in file order
		// crop places record i's oh×ow window centred; mirror checks
		// that each batch is the straight or the flipped transform, and
		// that both occur.
		crop, mirror bool
		// pixels, when set, are the records' pixels as raw Datums (the
		// records are encoded).
		pixels []*caffepb.Datum
	}{
		{"scale and mean_value", recs, 1, TransformConfig{Scale: 0.5, MeanValue: []float32{10, 20}}, [][4]int{{1, 2, 1, 1}, {1, 2, 2, 3}, {1, 2, 3, 2}, {1, 2, 4, 5}}, false, false, nil},
		{"one mean_value", recs, 1, TransformConfig{MeanValue: []float32{3}}, [][4]int{{1, 2, 1, 1}, {1, 2, 2, 3}, {1, 2, 3, 2}, {1, 2, 4, 5}}, false, false, nil},
		{"float_data", []*caffepb.Datum{floatDatum(1, 2, 2), floatDatum(3, 1, 4)}, 1, TransformConfig{Scale: 2}, [][4]int{{1, 1, 2, 2}, {1, 3, 1, 4}}, false, false, nil},
		{"crop at batch 2", recs[1:], 3, TransformConfig{CropSize: 2, Scale: 3}, [][4]int{{3, 2, 2, 2}}, true, false, nil},
		{"mirror", recs, 1, TransformConfig{Mirror: true}, [][4]int{{1, 2, 1, 1}, {1, 2, 2, 3}, {1, 2, 3, 2}, {1, 2, 4, 5}}, false, true, nil},
		{"encoded", encoded(grays), 1, TransformConfig{Scale: 2, MeanValue: []float32{1}}, [][4]int{{1, 1, 2, 3}, {1, 1, 4, 1}, {1, 1, 3, 3}}, false, false, grays},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeDatums(t, filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")), db.LMDB, c.recs...)
			ds, err := OpenDB(path, DBConfig{Backend: db.LMDB})
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			l, err := NewLoader(ds, LoaderConfig{BatchSize: c.batch, Transform: c.tf, Seed: 5, Reshape: c.batch == 1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if v := l.Variable(); v != (c.batch == 1) {
				t.Errorf("Variable() = %v at batch size %d", v, c.batch)
			}
			flips := map[bool]int{}
			epochs := 1
			if c.mirror {
				epochs = 8
			}
			for n := range epochs * len(c.shapes) {
				bt, err := l.Next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				ws := c.shapes[n%len(c.shapes)]
				if bt.Shape != ws {
					t.Fatalf("batch %d: shape %v, want %v", n, bt.Shape, ws)
				}
				var exp, flipped []float32
				for i := range c.batch {
					r := c.recs[(n*c.batch+i)%len(c.recs)]
					if c.pixels != nil {
						r = c.pixels[(n*c.batch+i)%len(c.recs)]
					}
					ho, wo := 0, 0
					if c.crop {
						ho, wo = (int(r.GetHeight())-ws[2])/2, (int(r.GetWidth())-ws[3])/2
					}
					exp = append(exp, want(r, c.tf, ho, wo, ws[2], ws[3], false)...)
					flipped = append(flipped, want(r, c.tf, ho, wo, ws[2], ws[3], true)...)
				}
				straight := slices.Equal(bt.Data, exp)
				switch {
				case straight:
					flips[false]++
				case c.mirror && slices.Equal(bt.Data, flipped):
					flips[true]++
				default:
					t.Fatalf("batch %d: %v, want %v", n, bt.Data, exp)
				}
				l.Release(bt)
			}
			if c.mirror && (flips[true] == 0 || flips[false] < len(c.shapes)) {
				// Record 0 is 1×1: flipped or not, the same values.
				t.Errorf("mirror: %d flipped and %d straight batches; want both", flips[true], flips[false])
			}
		})
	}
	t.Run("mean_file", func(t *testing.T) {
		mean := filepath.Join(dir, "mean.binaryproto")
		one, c, h, w := int32(1), int32(2), int32(1), int32(1)
		if err := WriteMean(mean, &caffepb.BlobProto{Num: &one, Channels: &c, Height: &h, Width: &w, Data: []float32{1, 2}}); err != nil {
			t.Fatal(err)
		}
		path := writeDatums(t, filepath.Join(dir, "meanfile"), db.LMDB, recs...)
		ds, err := OpenDB(path, DBConfig{Backend: db.LMDB})
		if err != nil {
			t.Fatal(err)
		}
		defer ds.Close()
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 1, Transform: TransformConfig{MeanFile: mean}, Reshape: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		bt, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(bt.Data, []float32{-1, -1}) {
			t.Errorf("record 0 less the mean: %v, want [-1 -1]", bt.Data)
		}
		l.Release(bt)
		_, err = l.Next(context.Background())
		for _, s := range []string{path, `record 1 (key "00000001")`, "mean_file " + mean + " is 1x2x1x1 but the record is 2x2x3"} {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Fatalf("record 1: error %v; want one with %q", err, s)
			}
		}
	})
}
