package data

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// Progress is told how many records are done of how many (total 0 when
// unknown); nil means no reports.
type Progress func(done, total int)

// ConvertStats summarises a conversion.
type ConvertStats struct {
	// Records is the number of records written.
	Records int
	// C, H and W are the shape of the first record (for encoded records,
	// of the decoded image).
	C, H, W int
	// Bytes is the total size of the record values.
	Bytes int64
	// Skipped is the number of list lines whose image could not be read
	// or decoded (ConvertImageset skips them, as Caffe does).
	Skipped int
}

// ConvertIDX writes an MNIST-style pair of IDX files as a database of
// raw Datum records, as Caffe's convert_mnist_data does: keys %08d in file
// order, one channel, the label as is.
func ConvertIDX(imagesPath, labelsPath, out string, b db.Backend, progress Progress) (ConvertStats, error) {
	ds, err := ReadIDXFiles(imagesPath, labelsPath)
	if err != nil {
		return ConvertStats{}, err
	}
	return writeRaw(ds, out, b, 8, progress)
}

// ConvertCIFAR is Caffe's convert_cifar_data (examples/cifar10): the
// CIFAR-10 binary batches in dir (data_batch_1.bin … data_batch_5.bin
// and test_batch.bin, gzipped or not) to two new databases in out,
// cifar10_train_BACKEND and cifar10_test_BACKEND, of raw 3×32×32 Datum
// records keyed by their index as %05d, as create_cifar10.sh makes them
// (out is made if missing). A failure leaves neither database behind.
func ConvertCIFAR(dir, out string, b db.Backend, progress Progress) (train, test ConvertStats, err error) {
	var names []string
	for i := range cifarTrainFiles {
		names = append(names, filepath.Join(dir, fmt.Sprintf("data_batch_%d.bin", i+1)))
	}
	trainDS, err := ReadCIFARFiles(names...)
	if err != nil {
		return train, test, fmt.Errorf("CIFAR-10 training batches: %w", err)
	}
	testDS, err := ReadCIFARFiles(filepath.Join(dir, "test_batch.bin"))
	if err != nil {
		return train, test, fmt.Errorf("CIFAR-10 test batch: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return train, test, err
	}
	trainOut := filepath.Join(out, "cifar10_train_"+b.String())
	testOut := filepath.Join(out, "cifar10_test_"+b.String())
	if _, err := os.Stat(testOut); err == nil {
		return train, test, fmt.Errorf("database %s already exists", testOut)
	}
	if train, err = writeRaw(trainDS, trainOut, b, 5, progress); err != nil {
		return train, test, err
	}
	if test, err = writeRaw(testDS, testOut, b, 5, progress); err != nil {
		os.RemoveAll(trainOut)
		return train, test, err
	}
	return train, test, nil
}

// writeRaw writes ds to a new database at out as raw Datum records keyed
// by their index in digits decimal digits (Caffe's format_int), in
// order, staged beside out and renamed when whole (db.CreateStaged): a
// failure, or a kill, leaves no database at out.
func writeRaw(ds *Dataset, out string, b db.Backend, digits int, progress Progress) (st ConvertStats, err error) {
	w, err := db.CreateStaged(out, b)
	if err != nil {
		return st, err
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	st = ConvertStats{C: ds.C, H: ds.H, W: ds.W}
	c, h, wd := int32(ds.C), int32(ds.H), int32(ds.W)
	for i := range ds.N {
		l := ds.Labels[i]
		v, err := proto.Marshal(&caffepb.Datum{Channels: &c, Height: &h, Width: &wd, Data: ds.Image(i), Label: &l})
		if err != nil {
			return st, err
		}
		if err := w.Put(fmt.Appendf(nil, "%0*d", digits, i), v); err != nil {
			return st, err
		}
		st.Records++
		st.Bytes += int64(len(v))
		if progress != nil && (i+1)%1000 == 0 {
			progress(i+1, ds.N)
		}
	}
	if err := w.Commit(); err != nil {
		return st, err
	}
	if progress != nil && ds.N%1000 != 0 {
		progress(ds.N, ds.N)
	}
	return st, nil
}

// ImagesetConfig is how ConvertImageset makes records, as the flags of
// Caffe's convert_imageset.
type ImagesetConfig struct {
	// Root is prefixed to every path of the list (Caffe's ROOTFOLDER).
	Root string
	// Backend is the database kind to write.
	Backend db.Backend
	// Gray decodes images to one channel; otherwise three (BGR).
	Gray bool
	// Shuffle writes the lines in a random order drawn from Seed.
	Shuffle bool
	Seed    uint64
	// ResizeHeight and ResizeWidth, when both positive, resize every
	// image.
	ResizeHeight, ResizeWidth int
	// Encoded stores images encoded: the file's own bytes when no
	// decoding is needed (no resize, colour kept), else re-encoded in the
	// file's format (PNG for .png, JPEG otherwise). Without it, records
	// hold raw C×H×W pixels, and every image must come out the same size.
	Encoded bool
	// Warn, when set, is told of each image skipped: one that cannot be
	// read or decoded is left out with a warning naming its list line, as
	// Caffe's convert_imageset logs and skips it (a list with no readable
	// image is an error).
	Warn func(msg string)
}

// ConvertImageset writes the images of a Caffe list file ("path label"
// lines) as a database of Datum records, as Caffe's convert_imageset
// does: keys %08d_PATH, the number being the line's place in the list as
// written (after --shuffle), so a skipped image leaves a gap as in Caffe.
// Errors and warnings name the list line.
func ConvertImageset(list, out string, cfg ImagesetConfig, progress Progress) (ConvertStats, error) {
	f, err := os.Open(list)
	if err != nil {
		return ConvertStats{}, fmt.Errorf("image list: %w", err)
	}
	entries, err := ParseImageList(list, bufio.NewReader(f))
	f.Close()
	if err != nil {
		return ConvertStats{}, err
	}
	if len(entries) == 0 {
		return ConvertStats{}, fmt.Errorf("image list %s names no images", list)
	}
	if cfg.Shuffle {
		r := rand.New(rand.NewPCG(cfg.Seed, tagShard))
		r.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	}
	w, err := db.CreateStaged(out, cfg.Backend)
	if err != nil {
		return ConvertStats{}, err
	}
	fail := func(err error) (ConvertStats, error) {
		w.Abort()
		return ConvertStats{}, err
	}
	var st ConvertStats
	rw := recordWriter{w: w, st: &st, progress: progress, total: len(entries)}
	ch := 3
	if cfg.Gray {
		ch = 1
	}
	for i, e := range entries {
		if e.Label > 1<<31-1 {
			return fail(fmt.Errorf("%s:%d: label %d does not fit Caffe's int32", list, e.Line, e.Label))
		}
		p := cfg.Root + e.Path
		raw, err := os.ReadFile(p)
		var pix []uint8
		var c, h, wd int
		if err == nil {
			pix, c, h, wd, err = DecodeImage(raw, ch, cfg.ResizeHeight, cfg.ResizeWidth)
			if err != nil {
				err = fmt.Errorf("(%s): %v", p, err)
			}
		}
		if err != nil {
			st.Skipped++
			if cfg.Warn != nil {
				cfg.Warn(fmt.Sprintf("%s:%d: skipped: %v", list, e.Line, err))
			}
			continue
		}
		if st.Records == 0 {
			st.C, st.H, st.W = c, h, wd
		} else if !cfg.Encoded && (c != st.C || h != st.H || wd != st.W) {
			return fail(fmt.Errorf("%s:%d (%s): image is %dx%dx%d (CxHxW) but the first is %dx%dx%d; a raw database needs one size: pass --resize_height and --resize_width, or --encoded", list, e.Line, p, c, h, wd, st.C, st.H, st.W))
		}
		label := int32(e.Label)
		d := &caffepb.Datum{Label: &label}
		if cfg.Encoded {
			enc := raw
			own := 3
			if ic, _, err := image.DecodeConfig(bytes.NewReader(raw)); err == nil && (ic.ColorModel == color.GrayModel || ic.ColorModel == color.Gray16Model) {
				own = 1
			}
			if cfg.ResizeHeight > 0 || own != ch {
				if enc, err = encodeLike(p, pix, c, h, wd); err != nil {
					return fail(fmt.Errorf("%s:%d (%s): %v", list, e.Line, p, err))
				}
			}
			t := true
			d.Data, d.Encoded = enc, &t
		} else {
			ci, hi, wi := int32(c), int32(h), int32(wd)
			d.Channels, d.Height, d.Width, d.Data = &ci, &hi, &wi, pix
		}
		if err := rw.put(i, e.Path, d); err != nil {
			return fail(err)
		}
	}
	if err := rw.commit(fmt.Errorf("image list %s: none of its %d images could be read (the first: line %d, %s)", list, len(entries), entries[0].Line, cfg.Root+entries[0].Path)); err != nil {
		return ConvertStats{}, err
	}
	return st, nil
}

// recordWriter writes a list conversion's records (convert-imageset,
// convert-annoset) into a staged database, keyed as Caffe's tools key
// them, counting them into st and reporting progress every 1000 of
// total lines.
type recordWriter struct {
	w        *db.Staged
	st       *ConvertStats
	progress Progress
	total    int
}

// put writes m as the record of list line i (from 0), keyed %08d_NAME.
func (r *recordWriter) put(i int, name string, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if err := r.w.Put(fmt.Appendf(nil, "%08d_%s", i, name), v); err != nil {
		return err
	}
	r.st.Records++
	r.st.Bytes += int64(len(v))
	if r.progress != nil && (i+1)%1000 == 0 {
		r.progress(i+1, r.total)
	}
	return nil
}

// commit renames the database into place, or, when no line gave a
// record, removes it and returns none (the caller's error naming the
// list).
func (r *recordWriter) commit(none error) error {
	if r.st.Records == 0 {
		r.w.Abort()
		return none
	}
	if err := r.w.Commit(); err != nil {
		return err
	}
	if r.progress != nil && r.total%1000 != 0 {
		r.progress(r.total, r.total)
	}
	return nil
}

// encodeLike encodes C×H×W planes (BGR or gray) as PNG when name ends in
// .png, else as JPEG of quality 95 (OpenCV's default).
func encodeLike(name string, pix []uint8, c, h, w int) ([]byte, error) {
	var img image.Image
	if c == 1 {
		g := image.NewGray(image.Rect(0, 0, w, h))
		copy(g.Pix, pix)
		img = g
	} else {
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		n := h * w
		for i := range n {
			m.Pix[4*i], m.Pix[4*i+1], m.Pix[4*i+2], m.Pix[4*i+3] = pix[2*n+i], pix[n+i], pix[i], 255
		}
		img = m
	}
	var buf bytes.Buffer
	var err error
	if strings.EqualFold(filepath.Ext(name), ".png") {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95})
	}
	return buf.Bytes(), err
}

// ComputeImageMean averages every image of a Datum database, as Caffe's
// compute_image_mean does, and returns it as a 1×C×H×W BlobProto ready to
// be written as a .binaryproto mean file, with the per-channel means. It
// reads the database record by record (float_data records too), so a
// database larger than memory works.
func ComputeImageMean(path string, b db.Backend, progress Progress) (*caffepb.BlobProto, []float64, int, error) {
	ds, err := OpenDB(path, DBConfig{Backend: b})
	if err != nil {
		return nil, nil, 0, err
	}
	defer ds.Close()
	rd, err := newStreamReader(ds.Stream)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rd.close()
	sz := ds.ImageSize()
	sum := make([]float64, sz)
	img := make([]uint8, sz)
	for i := range ds.N {
		v, err := rd.read(i)
		if err != nil {
			return nil, nil, 0, err
		}
		if !v.Encoded && (int(v.Channels) != ds.C || int(v.Height) != ds.H || int(v.Width) != ds.W) {
			// Caffe's compute_image_mean CHECKs the same: one mean
			// image needs one shape.
			return nil, nil, 0, ds.Stream.errAt(i, ds.Stream.key(i), fmt.Errorf("the Datum's shape %dx%dx%d (CxHxW) differs from the first record's %dx%dx%d; a mean image needs every record to have one shape", v.Channels, v.Height, v.Width, ds.C, ds.H, ds.W))
		}
		switch {
		case v.Encoded:
			if err := ds.decodeBytes(v.Data, ds.ItemName(i), img); err != nil {
				return nil, nil, 0, err
			}
			for j, p := range img {
				sum[j] += float64(p)
			}
		case len(v.Floats) > 0:
			for j, p := range v.Floats {
				sum[j] += float64(p)
			}
		default:
			for j, p := range v.Data {
				sum[j] += float64(p)
			}
		}
		if progress != nil && (i+1)%10000 == 0 {
			progress(i+1, ds.N)
		}
	}
	if progress != nil && ds.N%10000 != 0 {
		progress(ds.N, ds.N)
	}
	one, c, h, w := int32(1), int32(ds.C), int32(ds.H), int32(ds.W)
	bp := &caffepb.BlobProto{Num: &one, Channels: &c, Height: &h, Width: &w, Data: make([]float32, sz)}
	chans := make([]float64, ds.C)
	for j, s := range sum {
		m := s / float64(ds.N)
		bp.Data[j] = float32(m)
		chans[j/(ds.H*ds.W)] += m / float64(ds.H*ds.W)
	}
	return bp, chans, ds.N, nil
}
