package data

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// AnnoListEntry is one line of convert_annoset's list file: an image and
// its annotation file (detection) or integer label (classification), as
// written.
type AnnoListEntry struct {
	// Image is the image's path as written (before any root folder).
	Image string
	// Anno is the second field: the annotation file's path, or the label.
	Anno string
	// Line is the line number, from 1.
	Line int
}

// ParseAnnoList reads convert_annoset's list file ("image annotation"
// lines, as SSD's create_list.sh writes them); name names it in errors.
// Blank lines are skipped; any other line must hold exactly two fields
// (the fork reads the file as a stream of whitespace-separated pairs, so
// a path with a space in it is not possible there either).
func ParseAnnoList(name string, r *bufio.Reader) ([]AnnoListEntry, error) {
	var out []AnnoListEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: %d fields %q: want \"IMAGE ANNOTATION\" (two fields, no spaces in paths)", name, line, len(f), f)
		}
		out = append(out, AnnoListEntry{Image: f[0], Anno: f[1], Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	return out, nil
}

// AnnosetConfig is how ConvertAnnoset makes records, as the flags of SSD's
// convert_annoset.
type AnnosetConfig struct {
	// Root is prefixed to every path of the list, images and annotation
	// files alike (the fork's ROOTFOLDER).
	Root string
	// Backend is the database kind to write.
	Backend db.Backend
	// Detection reads the list's second field as an annotation file
	// (--anno_type detection) and writes BBOX records; otherwise it is an
	// integer label (classification) and records hold only the Datum.
	Detection bool
	// LabelType is the annotation files' format: "xml" (PASCAL VOC),
	// "json" (the fork's COCO form) or "txt".
	LabelType string
	// NameToLabel maps the XML files' object names (the JSON files'
	// category ids) to labels: the label map's items.
	NameToLabel map[string]int32
	// Gray decodes images to one channel; otherwise three (BGR).
	Gray bool
	// Shuffle writes the lines in a random order drawn from Seed.
	Shuffle bool
	Seed    uint64
	// ResizeHeight and ResizeWidth, when both positive, resize every
	// image (boxes stay normalised by the original size).
	ResizeHeight, ResizeWidth int
	// CheckSize fails when a record's data is not as long as the first
	// record's channels×height×width, as the fork's --check_size does.
	CheckSize bool
	// Encoded stores images encoded. With EncodeType empty the fork
	// re-encodes every image in its file's format (its guess of the
	// encoding keeps the dot, so the file's own bytes never match it), and
	// so does ConvertAnnoset.
	Encoded bool
	// EncodeType is the encoding ("jpg", "jpeg" or "png"; giving it
	// implies Encoded): an image whose file has that extension and is not
	// resized is stored as the file's own bytes, any other is re-encoded.
	EncodeType string
	// Warn, when set, is told of each image skipped (one that cannot be
	// read or decoded is left out with a warning naming its list line, as
	// the fork does) and of the fork's warnings about annotations.
	Warn func(msg string)
}

// matchExt is the fork's test of whether a file's extension is the
// encoding asked for (jpeg counts as jpg).
func matchExt(name, enc string) bool {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
	enc = strings.ToLower(enc)
	return ext == enc || (enc == "jpg" && ext == "jpeg")
}

// reencodable reports whether dsgd can encode images as enc.
func reencodable(enc string) bool {
	switch strings.ToLower(enc) {
	case "jpg", "jpeg", "png":
		return true
	}
	return false
}

// ConvertAnnoset writes the images of convert_annoset's list file, with
// their annotations, as a database of AnnotatedDatum records, as SSD's
// fork's convert_annoset does: keys %08d_IMAGE, the number being the
// line's place in the list as written (after Shuffle), so a skipped image
// leaves a gap; the Datum as its ReadImageToDatum makes it (label -1 for
// detection); for detection, type BBOX and the annotation file's boxes
// (ParseVOCXML, ParseCOCOJSON, ParseTxtAnno), none when the file does not exist. The
// database is staged and renamed when whole: a failure leaves none.
// Errors and warnings name the list line, and the annotation file's line
// where there is one.
func ConvertAnnoset(list, out string, cfg AnnosetConfig, progress Progress) (ConvertStats, error) {
	if cfg.Detection && cfg.LabelType != "xml" && cfg.LabelType != "json" && cfg.LabelType != "txt" {
		return ConvertStats{}, fmt.Errorf("label type %q: dsgd reads xml, json and txt annotation files", cfg.LabelType)
	}
	if cfg.EncodeType != "" && !reencodable(cfg.EncodeType) {
		return ConvertStats{}, fmt.Errorf("encode type %q: dsgd encodes jpg and png", cfg.EncodeType)
	}
	if (cfg.ResizeHeight > 0) != (cfg.ResizeWidth > 0) || cfg.ResizeHeight < 0 || cfg.ResizeWidth < 0 {
		return ConvertStats{}, fmt.Errorf("resize %dx%d (HxW): give both, positive, or neither", cfg.ResizeHeight, cfg.ResizeWidth)
	}
	f, err := os.Open(list)
	if err != nil {
		return ConvertStats{}, fmt.Errorf("list file: %w", err)
	}
	entries, err := ParseAnnoList(list, bufio.NewReader(f))
	f.Close()
	if err != nil {
		return ConvertStats{}, err
	}
	if len(entries) == 0 {
		return ConvertStats{}, fmt.Errorf("list file %s names no images", list)
	}
	// The fork's ReadRichImageToAnnotatedDatum gives a detection record's
	// Datum the label -1.
	labels := make([]int32, len(entries))
	for i := range labels {
		labels[i] = -1
	}
	if !cfg.Detection {
		for i, e := range entries {
			l, err := strconv.ParseInt(e.Anno, 10, 32)
			if err != nil {
				return ConvertStats{}, fmt.Errorf("%s:%d: label %q is not an int32 (classification takes \"IMAGE LABEL\" lines)", list, e.Line, e.Anno)
			}
			labels[i] = int32(l)
		}
	}
	if cfg.Shuffle {
		r := rand.New(rand.NewPCG(cfg.Seed, tagShard))
		r.Shuffle(len(entries), func(i, j int) {
			entries[i], entries[j] = entries[j], entries[i]
			labels[i], labels[j] = labels[j], labels[i]
		})
	}
	w, err := db.CreateStaged(out, cfg.Backend)
	if err != nil {
		return ConvertStats{}, err
	}
	fail := func(err error) (ConvertStats, error) {
		w.Abort()
		return ConvertStats{}, err
	}
	warn := func(msg string) {
		if cfg.Warn != nil {
			cfg.Warn(msg)
		}
	}
	var st ConvertStats
	rw := recordWriter{w: w, st: &st, progress: progress, total: len(entries)}
	dataSize := -1
	for i, e := range entries {
		at := fmt.Sprintf("%s:%d", list, e.Line)
		rec, c, h, wd, err := annosetRecord(cfg, e, labels[i], at, warn)
		if errors.Is(err, errSkip) {
			st.Skipped++
			continue
		}
		if err != nil {
			return fail(err)
		}
		if cfg.CheckSize {
			d := rec.GetDatum()
			if dataSize < 0 {
				dataSize = int(d.GetChannels() * d.GetHeight() * d.GetWidth())
			} else if len(d.Data) != dataSize {
				return fail(fmt.Errorf("%s (%s): --check_size: the record's data is %d bytes, not the first record's %d (channels×height×width; encoded records fail this as in the fork)", at, cfg.Root+e.Image, len(d.Data), dataSize))
			}
		}
		if st.Records == 0 {
			st.C, st.H, st.W = c, h, wd
		}
		if err := rw.put(i, e.Image, rec); err != nil {
			return fail(err)
		}
	}
	if err := rw.commit(fmt.Errorf("list file %s: none of its %d images could be read (the first: line %d, %s)", list, len(entries), entries[0].Line, cfg.Root+entries[0].Image)); err != nil {
		return ConvertStats{}, err
	}
	return st, nil
}

// errSkip marks an image left out with a warning.
var errSkip = errors.New("skipped")

// annosetRecord makes the record of one list entry, and the shape of its
// image as stored.
func annosetRecord(cfg AnnosetConfig, e AnnoListEntry, label int32, at string, warn func(string)) (*caffepb.AnnotatedDatum, int, int, int, error) {
	p := cfg.Root + e.Image
	ch := 3
	if cfg.Gray {
		ch = 1
	}
	raw, err := os.ReadFile(p)
	var pix []uint8
	var c, oh, ow int
	if err == nil {
		pix, c, oh, ow, err = DecodeImage(raw, ch, 0, 0)
	}
	if err != nil {
		warn(fmt.Sprintf("%s: skipped (%s): %v", at, p, err))
		return nil, 0, 0, 0, errSkip
	}
	h, w := oh, ow
	resized := cfg.ResizeHeight > 0 && (cfg.ResizeHeight != oh || cfg.ResizeWidth != ow)
	if resized {
		// cv::resize's INTER_LINEAR, as the fork's ReadImageToCVMat.
		pix = resizeCV(planeImage{pix, c, oh, ow}, cfg.ResizeHeight, cfg.ResizeWidth, InterpLinear).pix
		h, w = cfg.ResizeHeight, cfg.ResizeWidth
	}
	ci, hi, wi := int32(c), int32(h), int32(w)
	d := &caffepb.Datum{Channels: &ci, Height: &hi, Width: &wi, Label: &label}
	enc := cfg.EncodeType
	always := false
	if cfg.Encoded && enc == "" {
		ext := filepath.Ext(e.Image)
		if ext == "" || !reencodable(ext[1:]) {
			return nil, 0, 0, 0, fmt.Errorf("%s (%s): --encoded without --encode_type encodes in the file's format, and dsgd encodes jpg and png: give --encode_type", at, p)
		}
		enc, always = ext[1:], true
	}
	encoded := enc != ""
	switch {
	case encoded && !always && cfg.ResizeHeight == 0 && matchExt(e.Image, enc):
		d.Data = raw
	case encoded:
		like := "x.jpg"
		if strings.EqualFold(enc, "png") {
			like = "x.png"
		}
		if d.Data, err = encodeLike(like, pix, c, h, w); err != nil {
			return nil, 0, 0, 0, fmt.Errorf("%s (%s): %v", at, p, err)
		}
	default:
		d.Data = pix
	}
	d.Encoded = &encoded
	rec := &caffepb.AnnotatedDatum{Datum: d}
	if !cfg.Detection {
		return rec, c, h, w, nil
	}
	rec.Type = caffepb.AnnotatedDatum_BBOX.Enum()
	ap := cfg.Root + e.Anno
	src, err := os.ReadFile(ap)
	if errors.Is(err, fs.ErrNotExist) {
		warn(fmt.Sprintf("%s: annotation file %s does not exist: the image is stored without boxes, as the fork does", at, ap))
		return rec, c, h, w, nil
	}
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("%s: %v", at, err)
	}
	aw := func(msg string) { warn(at + ": " + msg) }
	switch cfg.LabelType {
	case "xml":
		rec.AnnotationGroup, err = ParseVOCXML(ap, src, oh, ow, cfg.NameToLabel, aw)
	case "json":
		rec.AnnotationGroup, err = ParseCOCOJSON(ap, src, oh, ow, cfg.NameToLabel, aw)
	default:
		rec.AnnotationGroup, err = ParseTxtAnno(ap, src, oh, ow, aw)
	}
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("%s: %w", at, err)
	}
	return rec, c, h, w, nil
}
