package data

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
)

// px is a list of pixel values in the fixture (JSON numbers; a []uint8
// would be read as base64).
type px []uint8

// UnmarshalJSON reads a list of numbers in 0..255.
func (p *px) UnmarshalJSON(b []byte) error {
	var v []int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = make(px, len(v))
	for i, x := range v {
		if x < 0 || x > 255 {
			return fmt.Errorf("pixel %d is %d", i, x)
		}
		(*p)[i] = uint8(x)
	}
	return nil
}

// annoOps is data/testdata/annotated/ops.json, written by
// scripts/ssd_annotated_fixture.py with OpenCV and numpy float32.
type annoOps struct {
	Resize []struct {
		H, W, C  int
		OH       int `json:"oh"`
		OW       int `json:"ow"`
		Pix, Out px
		Mode     string
	}
	HSV []struct {
		H, W     int
		Pix, HSV px
		Sat, Hue float32
		SatOut   px `json:"sat_out"`
		HueOut   px `json:"hue_out"`
	}
	HSV2BGR []struct {
		H, W     int
		HSV, Out px
	}
	Convert []struct {
		Pix, Out    px
		Alpha, Beta float32
	}
	Crop []struct {
		H, W     int
		Pix, Out px
		Box      [4]float32
		OH       int `json:"out_h"`
		OW       int `json:"out_w"`
	}
	Expand []struct {
		H, W     int
		Pix, Out px
		Ratio    float32
		HOff     float32 `json:"hoff"`
		WOff     float32 `json:"woff"`
		Fill     []float32
		OH       int `json:"out_h"`
		OW       int `json:"out_w"`
		Box      [4]float32
	}
	Boxes []struct {
		Crop, Box  [4]float32
		Jaccard    float32
		Coverage   float32
		Center     bool
		Overlap    float32
		MinOverlap bool `json:"min_overlap"`
		Proj       *[4]float32
	}
	Warp []struct {
		Box                    [4]float32
		OldW, OldH, NewW, NewH int
		Out                    [4]float32
	}
}

func readAnnoOps(t *testing.T) *annoOps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "annotated", "ops.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ops annoOps
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatal(err)
	}
	return &ops
}

func diffPixels(got, want []uint8) (int, int) {
	n, worst := 0, 0
	for i := range want {
		d := int(got[i]) - int(want[i])
		if d < 0 {
			d = -d
		}
		if d != 0 {
			n++
			worst = max(worst, d)
		}
	}
	return n, worst
}

// TestAnnotatedResizeOpenCV holds resize's LINEAR, NEAREST, CUBIC,
// LANCZOS4 and AREA (its 2×2 and 3×3 blocks, other shrinks, enlargements)
// to cv2.resize, pixel for pixel, for colour and gray images.
func TestAnnotatedResizeOpenCV(t *testing.T) {
	ops := readAnnoOps(t)
	if len(ops.Resize) == 0 {
		t.Fatal("no resize cases")
	}
	for i, c := range ops.Resize {
		t.Run(fmt.Sprintf("%d_%s_%dx%dx%d_to_%dx%d", i, c.Mode, c.C, c.H, c.W, c.OH, c.OW), func(t *testing.T) {
			mode := map[string]InterpMode{"LINEAR": InterpLinear, "NEAREST": InterpNearest, "CUBIC": InterpCubic, "LANCZOS4": InterpLanczos4, "AREA": InterpArea}[c.Mode]
			if mode == 0 || c.C < 1 {
				t.Fatalf("mode %q, %d channels", c.Mode, c.C)
			}
			got := resizeCV(planeImage{c.Pix, c.C, c.H, c.W}, c.OH, c.OW, mode)
			if len(got.pix) != len(c.Out) {
				t.Fatalf("%d pixels, want %d", len(got.pix), len(c.Out))
			}
			if n, worst := diffPixels(got.pix, c.Out); n > 0 {
				t.Errorf("%d of %d pixels differ from cv2.resize, by up to %d", n, len(c.Out), worst)
			}
		})
	}
}

// TestAnnotatedHSVOpenCV holds BGR->HSV and the fork's saturation and hue
// adjustments (HSV and back) to cv2.cvtColor.
func TestAnnotatedHSVOpenCV(t *testing.T) {
	ops := readAnnoOps(t)
	for i, c := range ops.HSV {
		img := planeImage{append([]uint8(nil), c.Pix...), 3, c.H, c.W}
		bgrToHSV(img)
		if n, worst := diffPixels(img.pix, c.HSV); n > 0 {
			t.Errorf("case %d: BGR2HSV: %d pixels differ from cv2, by up to %d", i, n, worst)
		}
		n := c.H * c.W
		s := planeImage{append([]uint8(nil), img.pix...), 3, c.H, c.W}
		convertTo(s.pix[n:2*n], c.Sat, 0)
		hsvToBGR(s)
		if k, worst := diffPixels(s.pix, c.SatOut); k > 0 {
			t.Errorf("case %d: saturation %g: %d values differ from cv2, by up to %d", i, c.Sat, k, worst)
		}
		u := planeImage{append([]uint8(nil), img.pix...), 3, c.H, c.W}
		convertTo(u.pix[:n], 1, c.Hue)
		hsvToBGR(u)
		if k, worst := diffPixels(u.pix, c.HueOut); k > 0 {
			t.Errorf("case %d: hue %g: %d values differ from cv2, by up to %d", i, c.Hue, k, worst)
		}
	}
}

// TestAnnotatedHSV2BGROpenCV holds HSV2BGR of arbitrary triples to
// cv2.cvtColor: rows with and without whole vector blocks.
func TestAnnotatedHSV2BGROpenCV(t *testing.T) {
	ops := readAnnoOps(t)
	if len(ops.HSV2BGR) == 0 {
		t.Fatal("no HSV2BGR cases")
	}
	for i, c := range ops.HSV2BGR {
		img := planeImage{append([]uint8(nil), c.HSV...), 3, c.H, c.W}
		hsvToBGR(img)
		if n, worst := diffPixels(img.pix, c.Out); n > 0 {
			t.Errorf("case %d (%dx%d): %d values differ from cv2, by up to %d", i, c.H, c.W, n, worst)
		}
	}
}

// TestAnnotatedConvertTo holds brightness's and contrast's convertTo to
// numpy's float32 rounding.
func TestAnnotatedConvertTo(t *testing.T) {
	for i, c := range readAnnoOps(t).Convert {
		p := append([]uint8(nil), c.Pix...)
		convertTo(p, c.Alpha, c.Beta)
		if n, worst := diffPixels(p, c.Out); n > 0 {
			t.Errorf("case %d (alpha %g, beta %g): %d values differ, by up to %d", i, c.Alpha, c.Beta, n, worst)
		}
	}
}

// TestAnnotatedCropByBox crops by given boxes as the fork's CropImage.
func TestAnnotatedCropByBox(t *testing.T) {
	for i, c := range readAnnoOps(t).Crop {
		b := BBox{XMin: c.Box[0], YMin: c.Box[1], XMax: c.Box[2], YMax: c.Box[3]}
		got := cropImage(planeImage{c.Pix, 3, c.H, c.W}, b)
		if got.h != c.OH || got.w != c.OW {
			t.Fatalf("case %d: crop %dx%d, want %dx%d", i, got.h, got.w, c.OH, c.OW)
		}
		if n, _ := diffPixels(got.pix, c.Out); n > 0 {
			t.Errorf("case %d: %d pixels differ", i, n)
		}
	}
}

// TestAnnotatedExpandByRatio expands by given ratios and offsets as the
// fork's ExpandImage, the canvas filled with the mean.
func TestAnnotatedExpandByRatio(t *testing.T) {
	for i, c := range readAnnoOps(t).Expand {
		got, box := expandImage(planeImage{c.Pix, 3, c.H, c.W}, c.Ratio, c.HOff, c.WOff, c.Fill)
		if got.h != c.OH || got.w != c.OW {
			t.Fatalf("case %d: canvas %dx%d, want %dx%d", i, got.h, got.w, c.OH, c.OW)
		}
		if n, _ := diffPixels(got.pix, c.Out); n > 0 {
			t.Errorf("case %d: %d pixels differ", i, n)
		}
		if g := [4]float32{box.XMin, box.YMin, box.XMax, box.YMax}; g != c.Box {
			t.Errorf("case %d: expand box %v, want %v", i, g, c.Box)
		}
	}
}

// TestAnnotatedBoxHelpers holds jaccard, coverage, the emit constraints
// and the projection to the fixture's float32 numpy twin of bbox_util.cpp.
func TestAnnotatedBoxHelpers(t *testing.T) {
	ops := readAnnoOps(t)
	if len(ops.Boxes) < 10 {
		t.Fatalf("%d box cases", len(ops.Boxes))
	}
	box := func(v [4]float32) BBox { return BBox{XMin: v[0], YMin: v[1], XMax: v[2], YMax: v[3]} }
	var projected, dropped int
	for i, c := range ops.Boxes {
		crop, b := box(c.Crop), box(c.Box)
		if g := jaccard(crop, b); g != c.Jaccard {
			t.Errorf("case %d: jaccard %v, want %v", i, g, c.Jaccard)
		}
		if g := coverage(b, crop); g != c.Coverage {
			t.Errorf("case %d: coverage %v, want %v", i, g, c.Coverage)
		}
		if g := (EmitConstraint{Type: EmitCenter}).meets(crop, b); g != c.Center {
			t.Errorf("case %d: CENTER %v, want %v", i, g, c.Center)
		}
		if g := (EmitConstraint{Type: EmitMinOverlap, Overlap: c.Overlap}).meets(crop, b); g != c.MinOverlap {
			t.Errorf("case %d: MIN_OVERLAP %g: %v, want %v", i, c.Overlap, g, c.MinOverlap)
		}
		p, ok := project(crop, b)
		switch {
		case ok != (c.Proj != nil):
			t.Errorf("case %d: project ok %v, want %v", i, ok, c.Proj != nil)
		case ok:
			projected++
			if g := [4]float32{p.XMin, p.YMin, p.XMax, p.YMax}; g != *c.Proj {
				t.Errorf("case %d: projected %v, want %v", i, g, *c.Proj)
			}
		default:
			dropped++
		}
	}
	if projected == 0 || dropped == 0 {
		t.Errorf("the cases project %d boxes and drop %d; want both kinds", projected, dropped)
	}
	for i, c := range ops.Warp {
		g := warpBox(box(c.Box), c.OldW, c.OldH, c.NewW, c.NewH)
		if got := [4]float32{g.XMin, g.YMin, g.XMax, g.YMax}; got != c.Out {
			t.Errorf("warp case %d: %v, want %v", i, got, c.Out)
		}
	}
}

// TestAnnotatedMirrorBoxes: a mirrored transform flips the pixels and the
// boxes' x (1 - xmax, 1 - xmin), keeping y.
func TestAnnotatedMirrorBoxes(t *testing.T) {
	s := &AnnotatedSource{cfg: AnnotatedConfig{Mirror: true, Scale: 1}}
	img := planeImage{[]uint8{1, 2, 3, 4, 5, 6}, 1, 2, 3}
	groups := []AnnoGroup{{Label: 5, IDs: []int32{7}, Boxes: []BBox{{XMin: 0.1, YMin: 0.2, XMax: 0.4, YMax: 0.9}}}}
	for _, tc := range []struct {
		mirror bool
		pix    []float32
		box    [4]float32
	}{
		{false, []float32{1, 2, 3, 4, 5, 6}, [4]float32{0.1, 0.2, 0.4, 0.9}},
		{true, []float32{3, 2, 1, 6, 5, 4}, [4]float32{1 - float32(0.4), 0.2, 1 - float32(0.1), 0.9}},
	} {
		dst := make([]float32, 6)
		writePlanes(dst, img, tc.mirror, nil, 1)
		out := s.annotate(groups, BBox{XMax: 1, YMax: 1}, 0, 0, tc.mirror)
		if fmt.Sprint(dst) != fmt.Sprint(tc.pix) {
			t.Errorf("mirror %v: pixels %v, want %v", tc.mirror, dst, tc.pix)
		}
		b := out[0].Boxes[0]
		if g := [4]float32{b.XMin, b.YMin, b.XMax, b.YMax}; g != tc.box {
			t.Errorf("mirror %v: box %v, want %v", tc.mirror, g, tc.box)
		}
	}
}

// TestAnnotatedSamplerConstraints: every crop a batch sampler accepts
// meets its constraint and its scale and aspect bounds, lies in the unit
// square, and the same seed draws the same crops.
func TestAnnotatedSamplerConstraints(t *testing.T) {
	objects := []BBox{{XMin: 0.1, YMin: 0.1, XMax: 0.4, YMax: 0.5}, {XMin: 0.5, YMin: 0.4, XMax: 0.95, YMax: 0.9}}
	cases := []struct {
		name string
		s    BatchSampler
		ok   func(b BBox) bool
	}{
		{"min_jaccard 0.5", BatchSampler{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxTrials: 50, MinJaccard: 0.5, HasMinJaccard: true}, func(b BBox) bool {
			return jaccard(b, objects[0]) >= 0.5 || jaccard(b, objects[1]) >= 0.5
		}},
		{"max_jaccard 0.2", BatchSampler{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxTrials: 50, MaxJaccard: 0.2, HasMaxJaccard: true}, func(b BBox) bool {
			return jaccard(b, objects[0]) <= 0.2 || jaccard(b, objects[1]) <= 0.2
		}},
		{"sample coverage >= 0.6", BatchSampler{MinScale: 0.1, MaxScale: 0.5, MinAspect: 0.5, MaxAspect: 2, MaxTrials: 200, MinSampleCov: 0.6, HasMinSampleCov: true}, func(b BBox) bool {
			return coverage(b, objects[0]) >= 0.6 || coverage(b, objects[1]) >= 0.6
		}},
		{"object coverage in [0.9, 1]", BatchSampler{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxTrials: 200, MinObjectCov: 0.9, MaxObjectCov: 1, HasMinObjectCov: true, HasMaxObjectCov: true}, func(b BBox) bool {
			c0, c1 := coverage(objects[0], b), coverage(objects[1], b)
			return c0 >= 0.9 && c0 <= 1 || c1 >= 0.9 && c1 <= 1
		}},
		{"no constraint, max_sample 1", BatchSampler{MinScale: 1, MaxScale: 1, MinAspect: 1, MaxAspect: 1, MaxTrials: 1, MaxSample: 1, HasMaxSample: true}, func(b BBox) bool {
			return b == BBox{XMax: 1, YMax: 1}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var all []BBox
			for range 40 {
				all = tc.s.generate(rng, objects, all)
			}
			if len(all) == 0 {
				t.Fatal("the sampler accepted no crop in 40 rounds")
			}
			for _, b := range all {
				w, h := b.XMax-b.XMin, b.YMax-b.YMin
				scale := float32(math.Sqrt(float64(w * h)))
				switch {
				case !tc.ok(b):
					t.Fatalf("crop %+v breaks the constraint", b)
				case b.XMin < -1e-6 || b.YMin < -1e-6 || b.XMax > 1+1e-6 || b.YMax > 1+1e-6:
					// float32 rounding lets a full-size crop (scale 1) start a hair
					// below 0, as in the fork; the crop clips it.
					t.Fatalf("crop %+v leaves the unit square", b)
				case scale < tc.s.MinScale*0.999 || scale > tc.s.MaxScale*1.001:
					t.Fatalf("crop %+v has scale %g outside [%g, %g]", b, scale, tc.s.MinScale, tc.s.MaxScale)
				case w/h < tc.s.MinAspect*0.999 && w/h < scale*scale*0.999 || w/h > tc.s.MaxAspect*1.001:
					t.Fatalf("crop %+v has aspect %g outside [%g, %g]", b, w/h, tc.s.MinAspect, tc.s.MaxAspect)
				}
			}
			if tc.s.HasMaxSample {
				if len(all) != 40 {
					t.Fatalf("max_sample 1 over 40 rounds gave %d crops", len(all))
				}
			}
			again := tc.s.generate(rand.New(rand.NewPCG(1, 2)), objects, nil)
			first := tc.s.generate(rand.New(rand.NewPCG(1, 2)), objects, nil)
			if fmt.Sprint(again) != fmt.Sprint(first) {
				t.Fatal("the same seed drew different crops")
			}
		})
	}
}

// FuzzAnnotatedAugment runs an accepted AnnotatedDatum (a raw image) through
// the augmentation and the transform with ssd_pascal.py's samplers and
// fuzzed distortion, expansion, resize mode and seed: nothing panics, and
// every box that comes out lies in [0, 1] and is not inverted.
func FuzzAnnotatedAugment(f *testing.F) {
	seed := func(h, w int, boxes ...float32) []byte {
		ad := &caffepb.AnnotatedDatum{
			Datum: &caffepb.Datum{Channels: proto.Int32(3), Height: proto.Int32(int32(h)), Width: proto.Int32(int32(w)), Data: make([]byte, 3*h*w)},
			Type:  caffepb.AnnotatedDatum_BBOX.Enum(),
		}
		g := &caffepb.AnnotationGroup{GroupLabel: proto.Int32(1)}
		for i := 0; i+3 < len(boxes); i += 4 {
			g.Annotation = append(g.Annotation, &caffepb.Annotation{Bbox: &caffepb.NormalizedBBox{
				Xmin: proto.Float32(boxes[i]), Ymin: proto.Float32(boxes[i+1]), Xmax: proto.Float32(boxes[i+2]), Ymax: proto.Float32(boxes[i+3])}})
		}
		ad.AnnotationGroup = []*caffepb.AnnotationGroup{g}
		b, err := proto.Marshal(ad)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(seed(9, 12, 0.1, 0.2, 0.5, 0.9, -0.2, 0.5, 1.3, 0.7), uint64(1), uint8(3), uint8(7))
	f.Add(seed(40, 3, 0.5, 0.5, 0.5, 0.5), uint64(2), uint8(255), uint8(0))
	f.Add(seed(4, 4, 0.9, 0.9, 0.1, 0.1), uint64(3), uint8(128), uint8(200))
	f.Fuzz(func(t *testing.T, b []byte, sd uint64, mode, knobs uint8) {
		ad, err := DecodeAnnotatedDatum(b)
		if err != nil || ad.Datum.GetEncoded() || ad.Datum.GetChannels() != 3 || ad.Datum.GetHeight()*ad.Datum.GetWidth() > 4096 {
			return
		}
		img := planeImage{append([]uint8(nil), ad.Datum.Data...), 3, int(ad.Datum.GetHeight()), int(ad.Datum.GetWidth())}
		samplers := []BatchSampler{{MinScale: 1, MaxScale: 1, MinAspect: 1, MaxAspect: 1, MaxSample: 1, HasMaxSample: true, MaxTrials: 1}}
		for _, j := range []float32{0.1, 0.5, 0.9} {
			samplers = append(samplers, BatchSampler{MinScale: 0.3, MaxScale: 1, MinAspect: 0.5, MaxAspect: 2, MaxSample: 1, HasMaxSample: true, MaxTrials: 50, MinJaccard: j, HasMinJaccard: true})
		}
		s := &AnnotatedSource{cfg: AnnotatedConfig{
			Scale: 1, Mirror: knobs&1 != 0, Samplers: samplers,
			Resize:  &ResizeConfig{Height: 1 + int(knobs%13), Width: 1 + int(mode%17), InterpModes: []InterpMode{InterpMode(1 + mode%5)}},
			Distort: &DistortConfig{BrightnessProb: 0.5, BrightnessDelta: 32, ContrastProb: 0.5, ContrastLower: 0.5, ContrastUpper: 1.5, HueProb: 0.5, HueDelta: 18, SaturationProb: 0.5, SaturationLower: 0.5, SaturationUpper: 1.5, RandomOrderProb: float32(knobs>>4) / 15},
			Expand:  &ExpandConfig{Prob: 0.5, MaxRatio: 1 + float32(knobs%8)},
			Emit:    &EmitConstraint{Type: EmitType(knobs >> 7), Overlap: 0.3},
		}}
		rng := rand.New(rand.NewPCG(sd, 7))
		img2, groups, err := s.augment(rng, img, annoGroups(ad))
		if err != nil {
			return // an empty sampled crop of a tiny image, refused
		}
		dst := make([]float32, 3*s.cfg.Resize.Height*s.cfg.Resize.Width)
		groups, err = s.transform(rng, dst, img2, groups, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			if len(g.IDs) != len(g.Boxes) {
				t.Fatalf("%d ids, %d boxes", len(g.IDs), len(g.Boxes))
			}
			for _, bb := range g.Boxes {
				if !(bb.XMin >= 0 && bb.YMin >= 0 && bb.XMax <= 1 && bb.YMax <= 1 && bb.XMin <= bb.XMax && bb.YMin <= bb.YMax) {
					t.Fatalf("box %+v", bb)
				}
			}
		}
	})
}
