//go:build !purego

package data

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
	"dsgd/engine/tensor"
)

// annoFixtureDB copies data/testdata/annotated/anno_lmdb to a temporary
// folder (LMDB writes a lock file beside the data it reads) and returns
// the copy's path.
func annoFixtureDB(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "annotated", "anno_lmdb", "data.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "anno_lmdb")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.mdb"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// annoTops are a data and a label blob of the source's initial shapes.
func annoTops(s *AnnotatedSource) []*tensor.Blob {
	return []*tensor.Blob{tensor.NewBlob("data", s.Shape()...), tensor.NewBlob("label", s.LabelShape()...)}
}

// TestAnnotatedBatchesOpenCV reads data/testdata/annotated/anno_lmdb (PNG
// AnnotatedDatums written with the fork's messages) through the layer
// with resize WARP LINEAR, mean_value and scale, and holds the data and
// the label rows of two batches to the fixture's cv2.resize and float32
// box arithmetic: the second batch wraps to the first record.
func TestAnnotatedBatchesOpenCV(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "annotated", "batches.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Height, Width, Batch int
		Mean                 []float32
		Scale                float32
		Batches              []struct {
			Data []float32
			Rows [][8]float32
		}
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	s, err := OpenAnnotated(AnnotatedConfig{
		Name: "data", Source: annoFixtureDB(t), Backend: db.LMDB,
		BatchSize: fx.Batch, MeanValue: fx.Mean, Scale: fx.Scale,
		Resize: &ResizeConfig{Height: fx.Height, Width: fx.Width, InterpModes: []InterpMode{InterpLinear}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Shape(); !got.Equal(tensor.Shape{fx.Batch, 3, fx.Height, fx.Width}) {
		t.Fatalf("data shape %v", got)
	}
	if got := s.LabelShape(); !got.Equal(tensor.Shape{1, 1, 3, 8}) {
		t.Fatalf("label shape before the first batch %v; the fork's setup counts the first record's 3 boxes", got)
	}
	tops := annoTops(s)
	for i, want := range fx.Batches {
		if err := s.Fill(context.Background(), tops); err != nil {
			t.Fatal(err)
		}
		if len(tops[0].Data) != len(want.Data) {
			t.Fatalf("batch %d: %d values, want %d", i, len(tops[0].Data), len(want.Data))
		}
		bad := 0
		for k, v := range want.Data {
			if tops[0].Data[k] != v {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("batch %d: %d of %d values differ from cv2.resize's", i, bad, len(want.Data))
		}
		if !tops[1].Shape.Equal(tensor.Shape{1, 1, len(want.Rows), 8}) {
			t.Fatalf("batch %d: label shape %v, want 1x1x%dx8", i, tops[1].Shape, len(want.Rows))
		}
		for r, row := range want.Rows {
			if got := [8]float32(tops[1].Data[r*8 : r*8+8]); got != row {
				t.Errorf("batch %d row %d: %v, want %v", i, r, got, row)
			}
		}
	}
}

// writeAnnoDB is the fork's test fixture (AnnotatedDataLayerTest::Fill):
// num raw datums of channels×height×width, record i holding i groups,
// group g holding g boxes.
func writeAnnoDB(t *testing.T, backend db.Backend, num, channels, height, width int, uniquePixel, uniqueAnno, rich bool, shapeOf func(i int) (int, int)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	w, err := db.Create(path, backend)
	if err != nil {
		t.Fatal(err)
	}
	for i := range num {
		h, wd := height, width
		if shapeOf != nil {
			h, wd = shapeOf(i)
		}
		size := channels * h * wd
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(i)
			if uniquePixel || shapeOf != nil {
				data[j] = byte(j)
			}
		}
		ad := &caffepb.AnnotatedDatum{Datum: &caffepb.Datum{Channels: proto.Int32(int32(channels)), Height: proto.Int32(int32(h)), Width: proto.Int32(int32(wd)), Data: data}}
		if rich {
			ad.Type = caffepb.AnnotatedDatum_BBOX.Enum()
			for g := range i {
				grp := &caffepb.AnnotationGroup{GroupLabel: proto.Int32(int32(g))}
				for a := range g {
					b := g
					if uniqueAnno {
						b = a
					}
					grp.Annotation = append(grp.Annotation, &caffepb.Annotation{InstanceId: proto.Int32(int32(a)), Bbox: &caffepb.NormalizedBBox{
						Xmin: proto.Float32(float32(float64(b) * 0.1)), Ymin: proto.Float32(float32(float64(b) * 0.1)),
						Xmax: proto.Float32(float32(math.Min(float64(b)*0.1+0.2, 1))), Ymax: proto.Float32(float32(math.Min(float64(b)*0.1+0.2, 1))),
						Difficult: proto.Bool(a%2 == 1),
					}})
				}
				ad.AnnotationGroup = append(ad.AnnotationGroup, grp)
			}
		} else {
			ad.Datum.Label = proto.Int32(int32(i))
		}
		v, err := proto.Marshal(ad)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Put([]byte(strconv.Itoa(i)), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// bboxNum is the fork's BBoxNum: the boxes of records 0..n-1.
func bboxNum(n int) int {
	s := 0
	for i := range n {
		s += i * (i - 1) / 2
	}
	return s
}

const annoEps = 1e-6

// checkAnnoRow checks the label row of box a of group g of item i as the
// fork's tests do.
func checkAnnoRow(t *testing.T, row []float32, item, g, a int, uniqueAnno bool) {
	t.Helper()
	b := g
	if uniqueAnno {
		b = a
	}
	want := [8]float64{float64(item), float64(g), float64(a), float64(b) * 0.1, float64(b) * 0.1, math.Min(float64(b)*0.1+0.2, 1), math.Min(float64(b)*0.1+0.2, 1), float64(a % 2)}
	for p, w := range want {
		if math.Abs(float64(row[p])-w) > annoEps {
			t.Fatalf("item %d group %d box %d: row %v, want %v", item, g, a, row, want)
		}
	}
}

// annoBackends are the fork's two database kinds, its tests' LevelDB and
// LMDB variants.
var annoBackends = []struct {
	name    string
	backend db.Backend
}{{"LevelDB", db.LevelDB}, {"LMDB", db.LMDB}}

// TestAnnotatedDataLayerTestRead ports the fork's TestReadLevelDB and
// TestReadLMDB: six 2×10×10 raw records with rich annotations, scale 3;
// five batches of all six, every box's row and every pixel.
func TestAnnotatedDataLayerTestRead(t *testing.T) {
	const num, channels, size = 6, 2, 2 * 10 * 10
	for _, be := range annoBackends {
		for _, uniquePixel := range []bool{false, true} {
			for _, uniqueAnno := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/pixel%v/anno%v", be.name, uniquePixel, uniqueAnno), func(t *testing.T) {
					path := writeAnnoDB(t, be.backend, num, channels, 10, 10, uniquePixel, uniqueAnno, true, nil)
					s, err := OpenAnnotated(AnnotatedConfig{Name: "data", Source: path, Backend: be.backend, BatchSize: num, Train: true, Scale: 3})
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					if !s.Shape().Equal(tensor.Shape{num, channels, 10, 10}) || !s.LabelShape().Equal(tensor.Shape{1, 1, 1, 8}) {
						t.Fatalf("shapes %v %v", s.Shape(), s.LabelShape())
					}
					tops := annoTops(s)
					for iter := range 5 {
						if err := s.Fill(context.Background(), tops); err != nil {
							t.Fatal(err)
						}
						if !tops[1].Shape.Equal(tensor.Shape{1, 1, bboxNum(num), 8}) {
							t.Fatalf("iter %d: label shape %v, want 1x1x%dx8", iter, tops[1].Shape, bboxNum(num))
						}
						cur := 0
						for i := range num {
							for g := range i {
								for a := range g {
									checkAnnoRow(t, tops[1].Data[cur*8:cur*8+8], i, g, a, uniqueAnno)
									cur++
								}
							}
						}
						for i := 1; i < num; i++ {
							for j := range size {
								want := float32(3 * i)
								if uniquePixel {
									want = float32(3 * j)
								}
								if got := tops[0].Data[i*size+j]; got != want {
									t.Fatalf("iter %d item %d value %d: %g, want %g", iter, i, j, got, want)
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestAnnotatedDataLayerTestReshape ports the fork's TestReshapeLevelDB
// and TestReshapeLMDB: records of varying shape (i%2+1)×(i%4+1), batch 1;
// the data top takes each record's shape, and a batch without a box gets
// one row of -1.
func TestAnnotatedDataLayerTestReshape(t *testing.T) {
	for _, be := range annoBackends {
		for _, uniqueAnno := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/anno%v", be.name, uniqueAnno), func(t *testing.T) {
				path := writeAnnoDB(t, be.backend, 6, 2, 0, 0, true, uniqueAnno, true, func(i int) (int, int) { return i%2 + 1, i%4 + 1 })
				s, err := OpenAnnotated(AnnotatedConfig{Name: "data", Source: path, Backend: be.backend, BatchSize: 1, Scale: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if !s.LabelShape().Equal(tensor.Shape{1, 1, 1, 8}) {
					t.Fatalf("label shape %v", s.LabelShape())
				}
				tops := annoTops(s)
				for iter := range 3 {
					if err := s.Fill(context.Background(), tops); err != nil {
						t.Fatal(err)
					}
					h, w := iter%2+1, iter%4+1
					if !tops[0].Shape.Equal(tensor.Shape{1, 2, h, w}) {
						t.Fatalf("iter %d: data shape %v, want 1x2x%dx%d", iter, tops[0].Shape, h, w)
					}
					if iter <= 1 {
						if !tops[1].Shape.Equal(tensor.Shape{1, 1, 1, 8}) {
							t.Fatalf("iter %d: label shape %v", iter, tops[1].Shape)
						}
						for _, v := range tops[1].Data {
							if v != -1 {
								t.Fatalf("iter %d: a batch without boxes gives %v, want eight -1", iter, tops[1].Data)
							}
						}
					} else {
						n := iter * (iter - 1) / 2
						if !tops[1].Shape.Equal(tensor.Shape{1, 1, n, 8}) {
							t.Fatalf("iter %d: label shape %v, want 1x1x%dx8", iter, tops[1].Shape, n)
						}
						cur := 0
						for g := range iter {
							for a := range g {
								checkAnnoRow(t, tops[1].Data[cur*8:cur*8+8], 0, g, a, uniqueAnno)
								cur++
							}
						}
					}
					for idx, v := range tops[0].Data {
						if v != float32(idx) {
							t.Fatalf("iter %d: value %d is %g", iter, idx, v)
						}
					}
				}
			})
		}
	}
}

// cropValues is what the fork's TestReadCrop* read: item i's channel j
// value of a 1×1 crop.
func cropValues(tops []*tensor.Blob, num, channels int) []float32 {
	return append([]float32(nil), tops[0].Data[:num*channels]...)
}

// TestAnnotatedDataLayerTestReadCrop ports the fork's TestReadCropTrain,
// TestReadCropTest (both backends): plain labels (no annotation type),
// crop_size 1 of unique-pixel 2×10×10 images, scale 3; TEST crops the
// centre, TRAIN rarely does.
func TestAnnotatedDataLayerTestReadCrop(t *testing.T) {
	const num, channels, height, width = 6, 2, 10, 10
	for _, be := range annoBackends {
		for _, train := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/train%v", be.name, train), func(t *testing.T) {
				path := writeAnnoDB(t, be.backend, num, channels, height, width, true, false, false, nil)
				s, err := OpenAnnotated(AnnotatedConfig{Name: "data", Source: path, Backend: be.backend, BatchSize: num, Train: train, Scale: 3, CropSize: 1, Seed: 1701})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if !s.Shape().Equal(tensor.Shape{num, channels, 1, 1}) || !s.LabelShape().Equal(tensor.Shape{num}) || s.Rich() {
					t.Fatalf("shapes %v %v (rich %v)", s.Shape(), s.LabelShape(), s.Rich())
				}
				tops := annoTops(s)
				for iter := range 5 {
					if err := s.Fill(context.Background(), tops); err != nil {
						t.Fatal(err)
					}
					centre := 0
					for i := range num {
						if tops[1].Data[i] != float32(i) {
							t.Fatalf("label %d is %g", i, tops[1].Data[i])
						}
						for j := range channels {
							want := float32(3 * ((math.Ceil(height/2.0)-1)*width + math.Ceil(width/2.0) - 1 + float64(j*height*width)))
							got := tops[0].Data[i*channels+j]
							if got == want {
								centre++
							} else if !train {
								t.Fatalf("iter %d item %d channel %d: %g, want the centre %g", iter, i, j, got, want)
							}
						}
					}
					if train && centre >= 10 {
						t.Fatalf("iter %d: %d crops at the centre in TRAIN", iter, centre)
					}
				}
			})
		}
	}
}

// TestAnnotatedDataLayerTestReadCropTrainSequence ports the fork's
// TestReadCropTrainSequenceSeeded and ...Unseeded: with crop_size 1 and
// mirror, the same seed repeats two batches' crops and another seed does
// not.
func TestAnnotatedDataLayerTestReadCropTrainSequence(t *testing.T) {
	const num, channels = 6, 2
	for _, be := range annoBackends {
		t.Run(be.name, func(t *testing.T) {
			path := writeAnnoDB(t, be.backend, num, channels, 10, 10, true, false, false, nil)
			run := func(seed uint64) [][]float32 {
				s, err := OpenAnnotated(AnnotatedConfig{Name: "data", Source: path, Backend: be.backend, BatchSize: num, Train: true, Mirror: true, CropSize: 1, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				tops := annoTops(s)
				var seq [][]float32
				for range 2 {
					if err := s.Fill(context.Background(), tops); err != nil {
						t.Fatal(err)
					}
					for i := range num {
						if tops[1].Data[i] != float32(i) {
							t.Fatalf("label %d is %g", i, tops[1].Data[i])
						}
					}
					seq = append(seq, cropValues(tops, num, channels))
				}
				return seq
			}
			a, b, c := run(1701), run(1701), run(1702)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("seed 1701 twice: %v then %v", a, b)
			}
			for iter := range a {
				same := 0
				for k := range a[iter] {
					if a[iter][k] == c[iter][k] {
						same++
					}
				}
				if same == len(a[iter]) {
					t.Fatalf("iter %d: seeds 1701 and 1702 cropped alike: %v", iter, a[iter])
				}
			}
		})
	}
}

// ssdPascalConfig is ssd_pascal.py's TRAIN transform and samplers on the
// fixture database.
func ssdPascalConfig(src string, seed uint64, batch int) AnnotatedConfig {
	samplers := []BatchSampler{{MinScale: 1, MaxScale: 1, MinAspect: 1, MaxAspect: 1, MaxSample: 1, HasMaxSample: true, MaxTrials: 1}}
	for _, j := range []float32{0.1, 0.3, 0.5, 0.7, 0.9} {
		samplers = append(samplers, BatchSampler{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxSample: 1, HasMaxSample: true, MaxTrials: 50, MinJaccard: j, HasMinJaccard: true})
	}
	samplers = append(samplers, BatchSampler{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxSample: 1, HasMaxSample: true, MaxTrials: 50, MaxJaccard: 1, HasMaxJaccard: true})
	return AnnotatedConfig{
		Name: "data", Source: src, Backend: db.LMDB,
		BatchSize: batch, Train: true, Mirror: true, MeanValue: []float32{104, 117, 123}, Scale: 1,
		Resize: &ResizeConfig{Height: 30, Width: 30, InterpModes: []InterpMode{InterpLinear, InterpArea, InterpNearest, InterpCubic, InterpLanczos4}},
		Distort: &DistortConfig{BrightnessProb: 0.5, BrightnessDelta: 32, ContrastProb: 0.5, ContrastLower: 0.5, ContrastUpper: 1.5,
			HueProb: 0.5, HueDelta: 18, SaturationProb: 0.5, SaturationLower: 0.5, SaturationUpper: 1.5, RandomOrderProb: 0},
		Expand:   &ExpandConfig{Prob: 0.5, MaxRatio: 4},
		Emit:     &EmitConstraint{Type: EmitCenter},
		Samplers: samplers,
		Seed:     seed,
	}
}

// TestAnnotatedAugmentProperties runs ssd_pascal.py's augmentation over
// the fixture database: rows are well formed (item in the batch, a
// group label the database holds, boxes inside [0, 1], difficult 0 or
// 1), a seed repeats its batches, another seed differs, and the
// augmentation does move boxes.
func TestAnnotatedAugmentProperties(t *testing.T) {
	src := annoFixtureDB(t)
	run := func(seed uint64) [][]float32 {
		s, err := OpenAnnotated(ssdPascalConfig(src, seed, 4))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tops := annoTops(s)
		var out [][]float32
		for range 12 {
			if err := s.Fill(context.Background(), tops); err != nil {
				t.Fatal(err)
			}
			rows := tops[1].Data
			if len(rows)%8 != 0 || len(rows) == 0 {
				t.Fatalf("%d label values", len(rows))
			}
			for r := 0; r < len(rows); r += 8 {
				row := rows[r : r+8]
				if row[0] == -1 {
					if len(rows) != 8 {
						t.Fatalf("a -1 row among others: %v", rows)
					}
					continue
				}
				switch {
				case row[0] < 0 || row[0] >= 4 || row[0] != float32(int(row[0])):
					t.Fatalf("row %v: item outside the batch", row)
				case row[1] != 1 && row[1] != 2 && row[1] != 4:
					t.Fatalf("row %v: group label the database does not hold", row)
				case row[3] < 0 || row[4] < 0 || row[5] > 1 || row[6] > 1 || row[3] > row[5] || row[4] > row[6]:
					t.Fatalf("row %v: box leaves [0, 1] or is inverted", row)
				case row[7] != 0 && row[7] != 1:
					t.Fatalf("row %v: difficult is not 0 or 1", row)
				}
			}
			for _, v := range tops[0].Data {
				if math.IsNaN(float64(v)) || v < -123 || v > 255-104 {
					t.Fatalf("pixel %g outside (0..255) - mean", v)
				}
			}
			out = append(out, append(append([]float32(nil), tops[1].Data...), tops[0].Data[:64]...))
		}
		return out
	}
	a, b, c := run(3), run(3), run(4)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("seed 3 twice gave different batches")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("seeds 3 and 4 gave the same batches")
	}
	plain := fmt.Sprint([]float32{0, 1, 0, 0.1, 0.2, 0.5, 0.6, 0})
	moved := false
	for _, batch := range a {
		if !strings.Contains(fmt.Sprint(batch), plain[1:len(plain)-1]) {
			moved = true
		}
	}
	if !moved {
		t.Fatal("no batch moved the first record's first box")
	}
}

// TestAnnotatedRefusals: settings the layer cannot honour are refused,
// naming the field.
func TestAnnotatedRefusals(t *testing.T) {
	src := annoFixtureDB(t)
	base := func() AnnotatedConfig {
		return AnnotatedConfig{Name: "d", Source: src, Backend: db.LMDB, BatchSize: 2, Resize: &ResizeConfig{Height: 8, Width: 8}}
	}
	cases := []struct {
		name string
		edit func(c *AnnotatedConfig)
		want string
	}{
		{"interp mode", func(c *AnnotatedConfig) { c.Resize.InterpModes = []InterpMode{InterpLinear, 9} }, "interp_mode 9"},
		{"expand ratio", func(c *AnnotatedConfig) { c.Expand = &ExpandConfig{Prob: 1, MaxRatio: 1} }, "max_expand_ratio"},
		{"sampler scale", func(c *AnnotatedConfig) {
			c.Samplers = []BatchSampler{{MinScale: 0, MaxScale: 1, MinAspect: 1, MaxAspect: 1}}
		}, "batch_sampler 0: scale"},
		{"expand without resize", func(c *AnnotatedConfig) { c.Resize = nil; c.Expand = &ExpandConfig{Prob: 1, MaxRatio: 2} }, "without transform_param.resize_param"},
		{"mean values", func(c *AnnotatedConfig) { c.MeanValue = []float32{1, 2} }, "2 mean_value entries"},
		{"crop", func(c *AnnotatedConfig) { c.CropSize = 9 }, "crop_size 9"},
		{"resize size", func(c *AnnotatedConfig) { c.Resize.Height, c.Resize.Width = 1<<20, 1<<20 }, "resize_param: 1048576x1048576"},
		{"missing", func(c *AnnotatedConfig) { c.Source = filepath.Join(t.TempDir(), "none") }, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.edit(&cfg)
			s, err := OpenAnnotated(cfg)
			if err == nil {
				s.Close()
				t.Fatalf("accepted; want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `AnnotatedData layer "d"`) {
				t.Fatalf("error %q; want it to name %q and the layer", err, tc.want)
			}
		})
	}
}

// TestAnnotatedHugeExpand: an expansion past the pixels dsgd makes is an
// error naming the record and the field, not an allocation that fails.
func TestAnnotatedHugeExpand(t *testing.T) {
	path := writeAnnoDB(t, db.LMDB, 1, 3, 20, 20, true, false, true, nil)
	s, err := OpenAnnotated(AnnotatedConfig{Name: "d", Source: path, Backend: db.LMDB, BatchSize: 1,
		Resize: &ResizeConfig{Height: 4, Width: 4}, Expand: &ExpandConfig{Prob: 1, MaxRatio: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Fill(context.Background(), annoTops(s))
	if err == nil || !strings.Contains(err.Error(), `key "0"`) || !strings.Contains(err.Error(), "expand_param") {
		t.Fatalf("error %v; want expand_param's refusal for key \"0\"", err)
	}
}

// TestAnnotatedTinyImageCrop: a sampled crop that holds no pixel (the
// fork's OpenCV fails on it) is an error naming the record.
func TestAnnotatedTinyImageCrop(t *testing.T) {
	path := writeAnnoDB(t, db.LMDB, 2, 3, 2, 2, true, false, true, nil)
	s, err := OpenAnnotated(AnnotatedConfig{Name: "d", Source: path, Backend: db.LMDB, BatchSize: 1,
		Resize:   &ResizeConfig{Height: 4, Width: 4},
		Samplers: []BatchSampler{{MinScale: 0.3, MaxScale: 0.3, MinAspect: 1, MaxAspect: 1, MaxTrials: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Fill(context.Background(), annoTops(s))
	if err == nil || !strings.Contains(err.Error(), `key "0"`) || !strings.Contains(err.Error(), "holds no pixel") {
		t.Fatalf("error %v; want the empty crop of key \"0\"", err)
	}
}

// TestAnnotatedPositionStreams: each record's augmentation is drawn from
// its position in the sequence of records alone, so two workers (each
// every other record, batch 1) make the images one worker makes in
// batches of 2, and one thread makes what several make.
func TestAnnotatedPositionStreams(t *testing.T) {
	src := annoFixtureDB(t)
	run := func(rank, world, batch, iters int) [][]float32 {
		cfg := ssdPascalConfig(src, 5, batch)
		cfg.Rank, cfg.World = rank, world
		s, err := OpenAnnotated(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tops := annoTops(s)
		per := s.Shape().CountFrom(1)
		var imgs [][]float32
		for range iters {
			if err := s.Fill(context.Background(), tops); err != nil {
				t.Fatal(err)
			}
			for i := range batch {
				imgs = append(imgs, append([]float32(nil), tops[0].Data[i*per:(i+1)*per]...))
			}
		}
		return imgs
	}
	one := run(0, 1, 2, 4)
	r0, r1 := run(0, 2, 1, 4), run(1, 2, 1, 4)
	for k := range r0 {
		if fmt.Sprint(one[2*k]) != fmt.Sprint(r0[k]) || fmt.Sprint(one[2*k+1]) != fmt.Sprint(r1[k]) {
			t.Fatalf("position %d/%d: two workers' images differ from one worker's", 2*k, 2*k+1)
		}
	}
	prev := runtime.GOMAXPROCS(1)
	single := run(0, 1, 2, 4)
	runtime.GOMAXPROCS(prev)
	if fmt.Sprint(single) != fmt.Sprint(one) {
		t.Fatal("one thread made other images than several")
	}
}
