package data

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
	"dsgd/engine/tensor"
)

// tagAnno keeps AnnotatedData's augmentation stream apart from the others.
const tagAnno = 0x414e4e4f // "ANNO"

// AnnoGroup is one AnnotationGroup of an AnnotatedDatum: the boxes of one
// class (Label, the fork's group_label).
type AnnoGroup struct {
	Label int32
	// IDs are the boxes' instance_id, one per box.
	IDs   []int32
	Boxes []BBox
}

// DecodeAnnotatedDatum decodes one record of SSD's convert_annoset
// database (an AnnotatedDatum) and checks what dsgd relies on: a Datum
// that DecodeDatum accepts (byte data, encoded or raw), annotation type
// BBOX, and finite box corners.
func DecodeAnnotatedDatum(b []byte) (*caffepb.AnnotatedDatum, error) {
	var ad caffepb.AnnotatedDatum
	if err := proto.Unmarshal(b, &ad); err != nil {
		return nil, fmt.Errorf("not an AnnotatedDatum: %v", err)
	}
	if ad.Datum == nil {
		return nil, errors.New("the AnnotatedDatum has no datum")
	}
	if err := checkDatum(ad.Datum); err != nil {
		return nil, fmt.Errorf("its datum: %w", err)
	}
	if len(ad.Datum.FloatData) > 0 {
		return nil, errors.New("its datum holds float_data; SSD's AnnotatedData transforms images (byte data, raw or encoded)")
	}
	if ad.Type != nil && ad.GetType() != caffepb.AnnotatedDatum_BBOX {
		return nil, fmt.Errorf("annotation type %d; SSD's fork knows only BBOX (0)", ad.GetType())
	}
	for g, grp := range ad.AnnotationGroup {
		for a, an := range grp.Annotation {
			bb := an.GetBbox()
			for _, v := range []float32{bb.GetXmin(), bb.GetYmin(), bb.GetXmax(), bb.GetYmax()} {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("annotation_group %d (group_label %d), annotation %d: box corner %v is not finite", g, grp.GetGroupLabel(), a, v)
				}
			}
		}
	}
	return &ad, nil
}

// annoGroups turns the AnnotatedDatum's groups into AnnoGroups.
func annoGroups(ad *caffepb.AnnotatedDatum) []AnnoGroup {
	out := make([]AnnoGroup, 0, len(ad.AnnotationGroup))
	for _, g := range ad.AnnotationGroup {
		ag := AnnoGroup{Label: g.GetGroupLabel()}
		for _, a := range g.Annotation {
			bb := a.GetBbox() // an annotation without a box has the zero box, as in C++
			ag.IDs = append(ag.IDs, a.GetInstanceId())
			ag.Boxes = append(ag.Boxes, BBox{
				XMin: bb.GetXmin(), YMin: bb.GetYmin(), XMax: bb.GetXmax(), YMax: bb.GetYmax(),
				Difficult: bb.GetDifficult(), Size: bb.GetSize(), HasSize: bb != nil && bb.Size != nil,
			})
		}
		out = append(out, ag)
	}
	return out
}

// ResizeConfig is SSD's transform_param.resize_param, as far as dsgd runs
// it: WARP to Height×Width with one of InterpModes drawn per image (all
// equally likely; LINEAR when none is given).
type ResizeConfig struct {
	Height, Width int
	InterpModes   []InterpMode
}

// DistortConfig is SSD's transform_param.distort_param.
type DistortConfig struct {
	BrightnessProb, BrightnessDelta                  float32
	ContrastProb, ContrastLower, ContrastUpper       float32
	HueProb, HueDelta                                float32
	SaturationProb, SaturationLower, SaturationUpper float32
	RandomOrderProb                                  float32
}

// ExpandConfig is SSD's transform_param.expand_param.
type ExpandConfig struct {
	Prob, MaxRatio float32
}

// AnnotatedConfig configures SSD's AnnotatedData layer.
type AnnotatedConfig struct {
	// Name is the layer's name, for errors.
	Name string
	// Source is the database (data_param.source) and Backend its kind.
	Source  string
	Backend db.Backend
	// BatchSize is data_param.batch_size.
	BatchSize int
	// Train is the phase: random crop offsets in TRAIN, centred ones
	// otherwise (mirroring and the other draws are random in both, as in
	// the fork).
	Train bool
	// Channels decodes encoded images to 1 (force_gray) or 3
	// (force_color); 0 keeps each image's own.
	Channels int
	// Mirror, MeanValue, CropSize and Scale are transform_param's (Scale
	// 0 means 1). The caller refuses mean_file.
	Mirror    bool
	MeanValue []float32
	CropSize  int
	Scale     float32
	// Resize, Distort, Expand and Emit are the fork's transform_param
	// fields; nil when absent.
	Resize  *ResizeConfig
	Distort *DistortConfig
	Expand  *ExpandConfig
	Emit    *EmitConstraint
	// Samplers are annotated_data_param.batch_sampler, in order.
	Samplers []BatchSampler
	// AnnoType is annotated_data_param.anno_type given (BBOX, the only
	// type): the records' boxes are the label even where a record does
	// not say its type.
	AnnoType bool
	// Rank and World read every World-th record from Rank (a worker's
	// share); World 0 means 1.
	Rank, World int
	// Seed, with each record's position in the sequence of records
	// (rank + k·world for this rank's k-th), draws every random choice of
	// that record's augmentation.
	Seed uint64
}

// AnnotatedSource is SSD's AnnotatedDataLayer (weiliu89/caffe, branch
// ssd): it reads AnnotatedDatum records in database order (wrapping at
// the end) and per image, in the fork's order, distorts it, expands it,
// crops it to one box drawn from the batch samplers, resizes it, crops
// crop_size, mirrors it and subtracts the mean, moving the boxes with the
// image. With annotations (the first record says its type, or anno_type
// is set) its label top is 1×1×G×8: a row [item, group_label,
// instance_id, xmin, ymin, xmax, ymax, difficult] per box of the batch,
// or one row of -1 when no box survived; without, it is each datum's
// label, as a Data layer's.
//
// Where the fork re-encodes an encoded image as JPEG after each of
// distort, expand and crop (lossy), dsgd keeps the decoded pixels.
type AnnotatedSource struct {
	cfg   AnnotatedConfig
	name  string
	d     *db.DB
	cur   db.Cursor
	pos   int64 // records this rank has read
	rich  bool
	shape tensor.Shape // the data top's, from the first record
	label tensor.Shape // the label top's before the first batch
	mu    sync.Mutex
	means []float32
	rows  []float32
	recs  []annoRecord
}

// annoRecord is one record read: its image, boxes, whether it says its
// annotation type, its Datum label and its key (for errors).
type annoRecord struct {
	img     planeImage
	groups  []AnnoGroup
	hasType bool
	label   int32
	key     string
}

// OpenAnnotated opens cfg's database, checks cfg against its first
// record and returns the source.
func OpenAnnotated(cfg AnnotatedConfig) (*AnnotatedSource, error) {
	s := &AnnotatedSource{cfg: cfg, name: fmt.Sprintf("AnnotatedData layer %q", cfg.Name)}
	if s.cfg.Scale == 0 {
		s.cfg.Scale = 1
	}
	if s.cfg.World == 0 {
		s.cfg.World = 1
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	d, err := db.Open(cfg.Source, cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	s.d = d
	fail := func(err error) (*AnnotatedSource, error) {
		s.Close()
		return nil, err
	}
	rec, err := s.next()
	if err != nil {
		return fail(err)
	}
	s.cur.Close()
	s.cur = nil
	s.rich = rec.hasType || cfg.AnnoType
	c, h, w, err := s.infer(rec)
	if err != nil {
		return fail(err)
	}
	s.shape = tensor.Shape{cfg.BatchSize, c, h, w}
	if s.rich {
		n := 0
		for _, g := range rec.groups {
			n += len(g.Boxes)
		}
		s.label = tensor.Shape{1, 1, max(n, 1), 8}
	} else {
		s.label = tensor.Shape{cfg.BatchSize}
	}
	switch len(cfg.MeanValue) {
	case 0:
	case 1:
		s.means = make([]float32, c)
		for i := range s.means {
			s.means[i] = cfg.MeanValue[0]
		}
	case c:
		s.means = cfg.MeanValue
	default:
		return fail(fmt.Errorf("%s: transform_param: %d mean_value entries for %d-channel images; want 1 or %d", s.name, len(cfg.MeanValue), c, c))
	}
	if s.cfg.Distort != nil && c != 3 {
		return fail(fmt.Errorf("%s: transform_param: distort_param needs 3-channel (BGR) images; %s holds %d-channel ones", s.name, cfg.Source, c))
	}
	return s, nil
}

// infer is the fork's InferBlobShape of a record: the resize's size (or
// the image's), then crop_size.
func (s *AnnotatedSource) infer(rec annoRecord) (c, h, w int, err error) {
	c, h, w = rec.img.c, rec.img.h, rec.img.w
	if r := s.cfg.Resize; r != nil {
		h, w = r.Height, r.Width
	}
	if cs := s.cfg.CropSize; cs > 0 {
		if h < cs || w < cs {
			return 0, 0, 0, fmt.Errorf("%s: %s database %s: key %s: crop_size %d is larger than the %dx%d image", s.name, s.cfg.Backend, s.cfg.Source, rec.key, cs, h, w)
		}
		h, w = cs, cs
	}
	return c, h, w, nil
}

// check refuses settings the layer cannot honour.
func (s *AnnotatedSource) check() error {
	cfg := s.cfg
	switch {
	case cfg.BatchSize < 1:
		return fmt.Errorf("batch_size %d; want at least 1", cfg.BatchSize)
	case cfg.CropSize < 0:
		return fmt.Errorf("transform_param: crop_size %d is negative", cfg.CropSize)
	case math.IsNaN(float64(s.cfg.Scale)) || math.IsInf(float64(s.cfg.Scale), 0):
		return fmt.Errorf("transform_param: scale %v is not finite", cfg.Scale)
	case cfg.Rank < 0 || cfg.Rank >= s.cfg.World:
		return fmt.Errorf("rank %d of %d", cfg.Rank, s.cfg.World)
	case cfg.Resize == nil && (cfg.Expand != nil || len(cfg.Samplers) > 0):
		return errors.New("expand_param or batch_sampler without transform_param.resize_param: they change each image's size, and without a resize the fork's load_batch fails its check that every image of a batch has the first one's shape; add resize_param { resize_mode: WARP height: H width: W }")
	}
	if r := cfg.Resize; r != nil {
		if r.Height < 1 || r.Width < 1 {
			return fmt.Errorf("transform_param: resize_param needs a positive height and width (the fork checks both > 0); got %dx%d", r.Height, r.Width)
		}
		if n, ok := mulInts(r.Height, r.Width); !ok || r.Height > maxImageSide || r.Width > maxImageSide || n > maxImagePixels {
			return fmt.Errorf("transform_param: resize_param: %dx%d; dsgd makes images of at most %d pixels, %d a side", r.Height, r.Width, maxImagePixels, maxImageSide)
		}
		for _, m := range r.InterpModes {
			if !m.Supported() {
				return fmt.Errorf("transform_param: resize_param: interp_mode %d is not one of the fork's (LINEAR 1, AREA 2, NEAREST 3, CUBIC 4, LANCZOS4 5)", int(m))
			}
		}
	}
	if e := cfg.Expand; e != nil && !(e.MaxRatio > 1) {
		return fmt.Errorf("transform_param: expand_param: max_expand_ratio %g; the fork needs it above 1", e.MaxRatio)
	}
	if d := cfg.Distort; d != nil {
		switch {
		case d.BrightnessDelta < 0:
			return fmt.Errorf("transform_param: distort_param: brightness_delta %g is negative", d.BrightnessDelta)
		case d.HueDelta < 0:
			return fmt.Errorf("transform_param: distort_param: hue_delta %g is negative", d.HueDelta)
		case d.ContrastProb > 0 && (d.ContrastUpper < d.ContrastLower || d.ContrastLower < 0):
			return fmt.Errorf("transform_param: distort_param: contrast range [%g, %g]; want 0 <= contrast_lower <= contrast_upper", d.ContrastLower, d.ContrastUpper)
		case d.SaturationProb > 0 && (d.SaturationUpper < d.SaturationLower || d.SaturationLower < 0):
			return fmt.Errorf("transform_param: distort_param: saturation range [%g, %g]; want 0 <= saturation_lower <= saturation_upper", d.SaturationLower, d.SaturationUpper)
		}
	}
	for i, b := range cfg.Samplers {
		at := fmt.Sprintf("annotated_data_param: batch_sampler %d", i)
		switch {
		case !(b.MinScale > 0) || b.MaxScale < b.MinScale || b.MaxScale > 1:
			return fmt.Errorf("%s: scale range [%g, %g]; the fork needs 0 < min_scale <= max_scale <= 1", at, b.MinScale, b.MaxScale)
		case !(b.MinAspect > 0) || b.MaxAspect < b.MinAspect || math.IsInf(float64(b.MaxAspect), 0):
			return fmt.Errorf("%s: aspect ratio range [%g, %g]; the fork needs 0 < min_aspect_ratio <= max_aspect_ratio, finite", at, b.MinAspect, b.MaxAspect)
		}
	}
	return nil
}

// Close releases the database.
func (s *AnnotatedSource) Close() error {
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
	if s.d != nil {
		err := s.d.Close()
		s.d = nil
		return err
	}
	return nil
}

// Shape returns the data top's shape: batch × C × H × W (the resize's
// size, or the first image's, then crop_size).
func (s *AnnotatedSource) Shape() tensor.Shape { return s.shape.Clone() }

// LabelShape is the label top's shape before the first batch, as the
// fork's DataLayerSetUp leaves it: 1×1×B×8 for the first record's B boxes
// (at least 1), or batch for plain labels.
func (s *AnnotatedSource) LabelShape() tensor.Shape { return s.label.Clone() }

// Rich says whether the label top holds boxes (1×1×G×8) rather than one
// label per image.
func (s *AnnotatedSource) Rich() bool { return s.rich }

// decode reads one record; errors name the database and the key.
func (s *AnnotatedSource) decode(key, val []byte) (annoRecord, error) {
	rec := annoRecord{key: strconv.Quote(string(key))}
	at := func(err error) error {
		return fmt.Errorf("%s: %s database %s: key %s: %w", s.name, s.cfg.Backend, s.cfg.Source, rec.key, err)
	}
	ad, err := DecodeAnnotatedDatum(val)
	if err != nil {
		return rec, at(err)
	}
	dt := ad.Datum
	if dt.GetEncoded() {
		pix, c, h, w, err := DecodeImage(dt.Data, s.cfg.Channels, 0, 0)
		if err != nil {
			return rec, at(err)
		}
		rec.img = planeImage{pix, c, h, w}
	} else {
		if s.cfg.Distort != nil {
			return rec, at(errors.New("a raw (not encoded) datum with distort_param: the fork's DistortImage distorts only encoded datums (it logs \"Only support encoded datum now\" and passes the image through); encode the database (convert_annoset --encoded) or remove distort_param"))
		}
		rec.img = planeImage{append([]uint8(nil), dt.Data...), int(dt.GetChannels()), int(dt.GetHeight()), int(dt.GetWidth())}
	}
	if s.shape != nil && rec.img.c != s.shape[1] {
		return rec, at(fmt.Errorf("a %d-channel image; the first record's has %d", rec.img.c, s.shape[1]))
	}
	if s.shape != nil && s.rich && ad.Type == nil && !s.cfg.AnnoType {
		return rec, at(errors.New("the record does not say its annotation type, but the first one does (the fork: \"Some datum misses AnnotationType\"); set annotated_data_param.anno_type: BBOX to read every record's boxes"))
	}
	rec.hasType = ad.Type != nil
	rec.label = dt.GetLabel()
	rec.groups = annoGroups(ad)
	return rec, nil
}

// next reads this worker's next record: the Rank-th first, then every
// World-th, wrapping at the database's end as Caffe's DataReader does.
func (s *AnnotatedSource) next() (annoRecord, error) {
	var key, val []byte
	var err error
	steps := s.cfg.World
	if s.cur == nil {
		if s.cur, err = s.d.Cursor(); err != nil {
			return annoRecord{}, fmt.Errorf("%s: %w", s.name, err)
		}
		var ok bool
		key, val, ok, err = s.cur.First()
		if err == nil && !ok {
			err = fmt.Errorf("%s database %s is empty", s.cfg.Backend, s.cfg.Source)
		}
		steps = s.cfg.Rank
	}
	for i := 0; i < steps && err == nil; i++ {
		var ok bool
		if key, val, ok, err = s.cur.Next(); err == nil && !ok {
			key, val, _, err = s.cur.First()
		}
	}
	if err != nil {
		return annoRecord{}, fmt.Errorf("%s: %w", s.name, err)
	}
	return s.decode(key, val)
}

// Fill writes the next batch: the transformed images into tops[0] and,
// with a second top, the labels into tops[1]. As the fork's load_batch,
// it reshapes the data top to the batch's first image (its shape without
// resize_param; every image of a batch must share it) and the label top
// to 1×1×G×8 boxes (or batch labels without annotations).
func (s *AnnotatedSource) Fill(ctx context.Context, tops []*tensor.Blob) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.cfg.BatchSize
	if len(tops) < 1 || len(tops) > 2 {
		return fmt.Errorf("%s: has %d tops; it fills 1 (data) or 2 (data, label)", s.name, len(tops))
	}
	recs := s.recs[:0]
	for range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := s.next()
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	s.recs = recs
	c, h, w, err := s.infer(recs[0])
	if err != nil {
		return err
	}
	per := c * h * w
	setShape(tops[0], tensor.Shape{n, c, h, w})
	groups := make([][]AnnoGroup, n)
	errs := make([]error, n)
	todo := make(chan int, n)
	for i := range n {
		todo <- i
	}
	close(todo)
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pcg := rand.NewPCG(0, 0)
			rng := rand.New(pcg)
			for item := range todo {
				rec := recs[item]
				// Each image's draws come from its position in the
				// sequence of records alone (this rank's pos-th record
				// is record rank + pos·world), so a run repeats, at any
				// thread count and worker count.
				pcg.Seed(mix(s.cfg.Seed, tagAnno), uint64(int64(s.cfg.Rank)+(s.pos+int64(item))*int64(s.cfg.World)))
				groups[item], errs[item] = s.item(rng, tops[0].Data[item*per:(item+1)*per], rec, recs[0])
			}
		}()
	}
	wg.Wait()
	s.pos += int64(n)
	rows := s.rows[:0]
	for item, rec := range recs {
		if errs[item] != nil {
			return errs[item]
		}
		if !s.rich {
			rows = append(rows, float32(rec.label))
			continue
		}
		for _, g := range groups[item] {
			for k, b := range g.Boxes {
				var diff float32
				if b.Difficult {
					diff = 1
				}
				rows = append(rows, float32(item), float32(g.Label), float32(g.IDs[k]), b.XMin, b.YMin, b.XMax, b.YMax, diff)
			}
		}
	}
	if s.rich && len(rows) == 0 {
		rows = append(rows, -1, -1, -1, -1, -1, -1, -1, -1)
	}
	s.rows = rows
	if len(tops) == 2 {
		if s.rich {
			setShape(tops[1], tensor.Shape{1, 1, len(rows) / 8, 8})
		} else {
			setShape(tops[1], tensor.Shape{n})
		}
		copy(tops[1].Data, rows)
	}
	return nil
}

// item augments and transforms one record into dst (its slot of the data
// top) and returns its boxes; first is the batch's first record, whose
// shape the others share without resize_param.
func (s *AnnotatedSource) item(rng *rand.Rand, dst []float32, rec, first annoRecord) ([]AnnoGroup, error) {
	img, groups, err := s.augment(rng, rec.img, rec.groups)
	if err != nil {
		return nil, fmt.Errorf("%s: %s database %s: key %s: %w", s.name, s.cfg.Backend, s.cfg.Source, rec.key, err)
	}
	if s.cfg.Resize == nil && (img.h != first.img.h || img.w != first.img.w) {
		return nil, fmt.Errorf("%s: %s database %s: key %s: a %dx%d image in a batch whose first is %dx%d; without resize_param a batch's images share one shape (batch_size 1 reads any)", s.name, s.cfg.Backend, s.cfg.Source, rec.key, img.h, img.w, first.img.h, first.img.w)
	}
	return s.transform(rng, dst, img, groups, rec.key)
}

// setShape gives t shape sh, growing its Data (and Diff, when it has one)
// to fit.
func setShape(t *tensor.Blob, sh tensor.Shape) {
	if slices.Equal(t.Shape, sh) {
		return
	}
	t.Shape = append(t.Shape[:0], sh...)
	n := sh.Count()
	if cap(t.Data) < n {
		t.Data = make([]float32, n)
	}
	t.Data = t.Data[:n]
	if t.Diff != nil {
		if cap(t.Diff) < n {
			t.Diff = make([]float32, n)
		}
		t.Diff = t.Diff[:n]
	}
}

// augment runs the fork's steps before the transform: distort, expand,
// then one crop drawn from the batch samplers.
func (s *AnnotatedSource) augment(rng *rand.Rand, img planeImage, groups []AnnoGroup) (planeImage, []AnnoGroup, error) {
	if s.cfg.Distort != nil {
		s.distort(rng, img)
	}
	if e := s.cfg.Expand; e != nil {
		prob := uniform(rng, 0, 1)
		if !(prob > e.Prob) && !(math.Abs(float64(e.MaxRatio)-1) < 1e-2) {
			ratio := uniform(rng, 1, e.MaxRatio)
			eh, ew := float64(img.h)*float64(ratio), float64(img.w)*float64(ratio)
			if eh > maxImageSide || ew > maxImageSide || eh*ew > maxImagePixels {
				return img, nil, fmt.Errorf("expand_param: a %dx%d image expanded %gx is %.0fx%.0f; dsgd makes images of at most %d pixels, %d a side (lower max_expand_ratio)", img.w, img.h, ratio, ew, eh, maxImagePixels, maxImageSide)
			}
			hOff := float32(math.Floor(float64(uniform(rng, 0, float32(int(float32(img.h)*ratio)-img.h)))))
			wOff := float32(math.Floor(float64(uniform(rng, 0, float32(int(float32(img.w)*ratio)-img.w)))))
			var box BBox
			img, box = expandImage(img, ratio, hOff, wOff, s.means)
			groups = s.annotate(groups, box, 0, 0, false)
		}
	}
	if len(s.cfg.Samplers) > 0 {
		var objects []BBox
		for _, g := range groups {
			objects = append(objects, g.Boxes...)
		}
		var samples []BBox
		for i := range s.cfg.Samplers {
			samples = s.cfg.Samplers[i].generate(rng, objects, samples)
		}
		if len(samples) > 0 {
			b := samples[rng.IntN(len(samples))]
			c := cropImage(img, b)
			if c.h == 0 || c.w == 0 {
				// The fork's OpenCV fails on the empty crop.
				return img, nil, fmt.Errorf("the sampled crop (%g, %g)-(%g, %g) of the %dx%d image holds no pixel; the image is too small for the batch samplers' min_scale", b.XMin, b.YMin, b.XMax, b.YMax, img.w, img.h)
			}
			img = c
			groups = s.annotate(groups, b.clip(), 0, 0, false)
		}
	}
	return img, groups, nil
}

// distort is the fork's ApplyDistort, in place: brightness, then
// contrast, saturation and hue in one of two orders, then the channels
// shuffled, each with its probability.
func (s *AnnotatedSource) distort(rng *rand.Rand, img planeImage) {
	d := s.cfg.Distort
	brightness := func() {
		if uniform(rng, 0, 1) < d.BrightnessProb {
			if delta := uniform(rng, -d.BrightnessDelta, d.BrightnessDelta); delta != 0 {
				convertTo(img.pix, 1, delta)
			}
		}
	}
	contrast := func() {
		if uniform(rng, 0, 1) < d.ContrastProb {
			if delta := uniform(rng, d.ContrastLower, d.ContrastUpper); math.Abs(float64(delta-1)) > 1e-3 {
				convertTo(img.pix, delta, 0)
			}
		}
	}
	n := img.h * img.w
	saturation := func() {
		if uniform(rng, 0, 1) < d.SaturationProb {
			// The fork tests fabs(delta - 1) != 1e-3: it always converts.
			delta := uniform(rng, d.SaturationLower, d.SaturationUpper)
			bgrToHSV(img)
			convertTo(img.pix[n:2*n], delta, 0)
			hsvToBGR(img)
		}
	}
	hue := func() {
		if uniform(rng, 0, 1) < d.HueProb {
			if delta := uniform(rng, -d.HueDelta, d.HueDelta); delta != 0 {
				bgrToHSV(img)
				convertTo(img.pix[:n], 1, delta)
				hsvToBGR(img)
			}
		}
	}
	if uniform(rng, 0, 1) > 0.5 {
		brightness()
		contrast()
		saturation()
		hue()
	} else {
		brightness()
		saturation()
		hue()
		contrast()
	}
	if uniform(rng, 0, 1) < d.RandomOrderProb {
		planes := [][]uint8{img.pix[:n], img.pix[n : 2*n], img.pix[2*n : 3*n]}
		perm := rng.Perm(3)
		shuffled := make([]uint8, 3*n)
		for i, p := range perm {
			copy(shuffled[i*n:(i+1)*n], planes[p])
		}
		copy(img.pix, shuffled)
	}
}

// annotate is the fork's TransformAnnotation: each box (first moved by
// the resize policy when resizing an oldW×oldH image, oldW > 0) that
// meets the emit constraint for crop and overlaps it, projected into
// crop's frame and mirrored; a group keeps its label when a box survives.
func (s *AnnotatedSource) annotate(groups []AnnoGroup, crop BBox, oldW, oldH int, mirror bool) []AnnoGroup {
	out := groups[:0:0]
	for _, g := range groups {
		ng := AnnoGroup{Label: g.Label}
		for k, b := range g.Boxes {
			if oldW > 0 && s.cfg.Resize != nil {
				b = warpBox(b, oldW, oldH, s.cfg.Resize.Width, s.cfg.Resize.Height)
			}
			if s.cfg.Emit != nil && !s.cfg.Emit.meets(crop, b) {
				continue
			}
			p, ok := project(crop, b)
			if !ok {
				continue
			}
			if mirror {
				p.XMin, p.XMax = 1-p.XMax, 1-p.XMin
			}
			ng.IDs = append(ng.IDs, g.IDs[k])
			ng.Boxes = append(ng.Boxes, p)
		}
		if len(ng.Boxes) > 0 {
			out = append(out, ng)
		}
	}
	return out
}

// warpBox is the fork's UpdateBBoxByResizePolicy for WARP: the box in
// pixels of the new size, clamped to it, normalised again.
func warpBox(b BBox, oldW, oldH, newW, newH int) BBox {
	nw, nh, ow, oh := float32(newW), float32(newH), float32(oldW), float32(oldH)
	x0, y0 := b.XMin*ow, b.YMin*oh
	x1, y1 := b.XMax*ow, b.YMax*oh
	x0 = max(0, x0*nw/ow)
	x1 = min(nw, x1*nw/ow)
	y0 = max(0, y0*nh/oh)
	y1 = min(nh, y1*nh/oh)
	b.XMin, b.YMin, b.XMax, b.YMax = x0/nw, y0/nh, x1/nw, y1/nh
	return b
}

// transform is the fork's DataTransformer::Transform of an annotated
// image into dst (C×H×W floats): resize (one interp mode drawn), crop
// crop_size (at random in TRAIN, centred otherwise), mirror at random,
// mean and scale; it returns the boxes moved with the image.
func (s *AnnotatedSource) transform(rng *rand.Rand, dst []float32, img planeImage, groups []AnnoGroup, key string) ([]AnnoGroup, error) {
	mirror := s.cfg.Mirror && rng.IntN(2) == 1
	oldW, oldH := img.w, img.h
	if r := s.cfg.Resize; r != nil {
		mode := InterpLinear
		if len(r.InterpModes) > 0 {
			mode = r.InterpModes[rollDie(rng, len(r.InterpModes))]
		}
		img = resizeCV(img, r.Height, r.Width, mode)
	}
	crop := BBox{XMax: 1, YMax: 1}
	if cs := s.cfg.CropSize; cs > 0 {
		if img.h < cs || img.w < cs {
			return nil, fmt.Errorf("%s: %s database %s: key %s: crop_size %d is larger than the %dx%d image", s.name, s.cfg.Backend, s.cfg.Source, key, cs, img.h, img.w)
		}
		hOff, wOff := (img.h-cs)/2, (img.w-cs)/2
		if s.cfg.Train {
			hOff, wOff = rng.IntN(img.h-cs+1), rng.IntN(img.w-cs+1)
		}
		crop = BBox{
			XMin: float32(wOff) / float32(img.w), YMin: float32(hOff) / float32(img.h),
			XMax: float32(wOff+cs) / float32(img.w), YMax: float32(hOff+cs) / float32(img.h),
		}
		img = cropPixels(img, hOff, wOff, cs, cs)
	}
	if len(dst) != img.c*img.h*img.w {
		return nil, fmt.Errorf("%s: %s database %s: key %s: a %dx%dx%d result for a %d-value slot", s.name, s.cfg.Backend, s.cfg.Source, key, img.c, img.h, img.w, len(dst))
	}
	writePlanes(dst, img, mirror, s.means, s.cfg.Scale)
	return s.annotate(groups, crop, oldW, oldH, mirror), nil
}

// cropPixels is the h×w window of img at (hOff, wOff).
func cropPixels(img planeImage, hOff, wOff, h, w int) planeImage {
	out := planeImage{make([]uint8, img.c*h*w), img.c, h, w}
	for ch := range img.c {
		for y := range h {
			src := img.pix[(ch*img.h+hOff+y)*img.w+wOff:]
			copy(out.pix[(ch*h+y)*w:(ch*h+y+1)*w], src[:w])
		}
	}
	return out
}

// rollDie is the fork's roll_weighted_die over n equal weights: the first
// cumulative weight at or above a uniform draw.
func rollDie(rng *rand.Rand, n int) int {
	p := float32(1) / float32(n)
	var cum []float32
	var sum float32
	for range n {
		sum += p
		cum = append(cum, sum)
	}
	v := uniform(rng, 0, sum)
	for i, c := range cum {
		if c >= v {
			return i
		}
	}
	return n - 1
}

// writePlanes writes img into dst as floats: mirrored left-right when
// mirror is set, the channel's mean subtracted (means may be nil), then
// scaled.
func writePlanes(dst []float32, img planeImage, mirror bool, means []float32, scale float32) {
	for c := range img.c {
		var m float32
		if means != nil {
			m = means[c]
		}
		for y := range img.h {
			row := img.pix[(c*img.h+y)*img.w : (c*img.h+y+1)*img.w]
			out := dst[(c*img.h+y)*img.w:]
			for x := range img.w {
				v := row[x]
				if mirror {
					v = row[img.w-1-x]
				}
				out[x] = (float32(v) - m) * scale
			}
		}
	}
}
