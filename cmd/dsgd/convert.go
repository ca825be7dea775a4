package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"dsgd/caffe/caffedef"
	"dsgd/data"
	"dsgd/data/db"
)

// progressTo reports conversion progress on w, one line per report.
func progressTo(w io.Writer, what string) data.Progress {
	return func(done, total int) {
		fmt.Fprintf(w, "%s: %d/%d\n", what, done, total)
	}
}

func backendFlag(fs *flag.FlagSet) *string {
	return fs.String("backend", "lmdb", "database `KIND` to write: lmdb or leveldb")
}

// caffeForm reads Caffe's positional form of a data tool's command line
// (usage names its arguments) into dst, the flags of the same values
// (named by names, for the messages): at least need arguments and at
// most len(dst), given without those flags.
func caffeForm(fs *flag.FlagSet, cmd, usage string, dst []*string, names []string, need int, stderr io.Writer) error {
	pos := fs.Args()
	if len(pos) == 0 {
		return nil
	}
	if len(pos) < need || len(pos) > len(dst) {
		fmt.Fprintf(stderr, "dsgd %s: %d arguments %q: give %s, as Caffe's tool takes them, or %s\n", cmd, len(pos), pos, usage, strings.Join(names, ", "))
		return errUsage
	}
	for i, d := range dst {
		if *d != "" {
			fmt.Fprintf(stderr, "dsgd %s: %s given with %s: give one form\n", cmd, usage, names[i])
			return errUsage
		}
	}
	for i, p := range pos {
		*dst[i] = p
	}
	return nil
}

// runConvertMNIST is Caffe's convert_mnist_data: IDX images and labels to
// a database of Datum records.
func runConvertMNIST(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-mnist", flag.ContinueOnError)
	images := fs.String("images", "", "IDX images `FILE` (gzipped or not), e.g. train-images-idx3-ubyte.gz (required; or Caffe's form: dsgd convert-mnist IMAGES LABELS DB [--backend=lmdb])")
	labels := fs.String("labels", "", "IDX labels `FILE` (required)")
	out := fs.String("out", "", "database `DIR` to create (required; must not exist)")
	backend := backendFlag(fs)
	if err := parseFlagsArgs(fs, args, stderr); err != nil {
		return err
	}
	if err := caffeForm(fs, "convert-mnist", "input_image_file input_label_file output_db_file", []*string{images, labels, out}, []string{"--images", "--labels", "--out"}, 3, stderr); err != nil {
		return err
	}
	if *images == "" || *labels == "" || *out == "" {
		fmt.Fprintln(stderr, "dsgd convert-mnist: --images, --labels and --out are required (or IMAGES LABELS DB)")
		return errUsage
	}
	b, err := db.ParseBackend(*backend)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd convert-mnist: --backend: %v\n", err)
		return errUsage
	}
	start := time.Now()
	st, err := data.ConvertIDX(*images, *labels, *out, b, progressTo(stderr, "convert-mnist"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "convert-mnist: wrote %d records of %dx%dx%d to %s (%s, %.1f MB) in %.1fs\n",
		st.Records, st.C, st.H, st.W, *out, b, float64(st.Bytes)/1e6, time.Since(start).Seconds())
	return nil
}

// runConvertCIFAR is Caffe's examples/cifar10 convert_cifar_data: the
// CIFAR-10 binary batches to a training and a test database.
func runConvertCIFAR(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-cifar", flag.ContinueOnError)
	in := fs.String("data", "", "`DIR` of CIFAR-10's binary batches: data_batch_1.bin … data_batch_5.bin and test_batch.bin (required; or Caffe's form: dsgd convert-cifar INPUT_FOLDER OUTPUT_FOLDER DB_TYPE)")
	out := fs.String("out", "", "`DIR` to write cifar10_train_BACKEND and cifar10_test_BACKEND in (required; they must not exist)")
	backend := fs.String("backend", "", "database `KIND` to write: lmdb or leveldb (default lmdb)")
	if err := parseFlagsArgs(fs, args, stderr); err != nil {
		return err
	}
	if err := caffeForm(fs, "convert-cifar", "INPUT_FOLDER OUTPUT_FOLDER DB_TYPE", []*string{in, out, backend}, []string{"--data", "--out", "--backend"}, 3, stderr); err != nil {
		return err
	}
	*backend = cmp.Or(*backend, "lmdb")
	if *in == "" || *out == "" {
		fmt.Fprintln(stderr, "dsgd convert-cifar: --data and --out are required (or INPUT_FOLDER OUTPUT_FOLDER DB_TYPE)")
		return errUsage
	}
	b, err := db.ParseBackend(*backend)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd convert-cifar: --backend: %v\n", err)
		return errUsage
	}
	start := time.Now()
	train, test, err := data.ConvertCIFAR(*in, *out, b, progressTo(stderr, "convert-cifar"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "convert-cifar: wrote %d training and %d test records of 3x32x32 to %s (%s, %.1f MB) in %.1fs\n",
		train.Records, test.Records, *out, b, float64(train.Bytes+test.Bytes)/1e6, time.Since(start).Seconds())
	return nil
}

// runConvertImageset is Caffe's convert_imageset: a list file of images
// to a database of Datum records.
func runConvertImageset(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-imageset", flag.ContinueOnError)
	list := fs.String("list", "", "list `FILE` of \"path label\" lines (required; or Caffe's form: dsgd convert-imageset [flags] ROOTFOLDER/ LISTFILE DB_NAME)")
	root := fs.String("root", "", "`DIR` prefixed to every path of the list, as Caffe's ROOTFOLDER (give the trailing /)")
	out := fs.String("out", "", "database `DIR` to create (required; must not exist)")
	backend := backendFlag(fs)
	gray := fs.Bool("gray", false, "store images in grayscale")
	shuffle := fs.Bool("shuffle", false, "write the lines in a random order")
	seed := fs.Uint64("seed", 1, "random seed for --shuffle")
	rh := fs.Int("resize_height", 0, "resize images to this height (with --resize_width)")
	rw := fs.Int("resize_width", 0, "resize images to this width (with --resize_height)")
	encoded := fs.Bool("encoded", false, "store images encoded (JPEG/PNG) instead of raw pixels")
	if err := parseFlagsArgs(fs, args, stderr); err != nil {
		return err
	}
	if err := caffeForm(fs, "convert-imageset", "ROOTFOLDER/ LISTFILE DB_NAME", []*string{root, list, out}, []string{"--root", "--list", "--out"}, 3, stderr); err != nil {
		return err
	}
	switch {
	case *list == "" || *out == "":
		fmt.Fprintln(stderr, "dsgd convert-imageset: --list and --out are required (or ROOTFOLDER/ LISTFILE DB_NAME)")
		return errUsage
	case *rh < 0 || *rw < 0 || (*rh == 0) != (*rw == 0):
		fmt.Fprintf(stderr, "dsgd convert-imageset: --resize_height %d and --resize_width %d: give both, positive, or neither\n", *rh, *rw)
		return errUsage
	}
	b, err := db.ParseBackend(*backend)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd convert-imageset: --backend: %v\n", err)
		return errUsage
	}
	start := time.Now()
	st, err := data.ConvertImageset(*list, *out, data.ImagesetConfig{
		Root: *root, Backend: b, Gray: *gray, Shuffle: *shuffle, Seed: *seed,
		ResizeHeight: *rh, ResizeWidth: *rw, Encoded: *encoded,
		Warn: func(msg string) { fmt.Fprintf(stderr, "dsgd convert-imageset: warning: %s\n", msg) },
	}, progressTo(stderr, "convert-imageset"))
	if err != nil {
		return err
	}
	kind := "raw"
	if *encoded {
		kind = "encoded"
	}
	skipped := ""
	if st.Skipped > 0 {
		skipped = fmt.Sprintf("; skipped %d unreadable (named above)", st.Skipped)
	}
	fmt.Fprintf(stdout, "convert-imageset: wrote %d %s records (first %dx%dx%d) to %s (%s, %.1f MB) in %.1fs%s\n",
		st.Records, kind, st.C, st.H, st.W, *out, b, float64(st.Bytes)/1e6, time.Since(start).Seconds(), skipped)
	return nil
}

// runComputeImageMean is Caffe's compute_image_mean: the mean image of a
// database as a .binaryproto.
func runComputeImageMean(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compute-image-mean", flag.ContinueOnError)
	in := fs.String("db", "", "database `DIR` of Datum records (required; or Caffe's form: dsgd compute-image-mean [flags] INPUT_DB [OUTPUT_FILE])")
	out := fs.String("out", "", "mean `FILE` to write (.binaryproto; without it, as Caffe's compute_image_mean without OUTPUT_FILE, only the channel means are printed)")
	backend := fs.String("backend", "lmdb", "database `KIND` to read: lmdb or leveldb")
	if err := parseFlagsArgs(fs, args, stderr); err != nil {
		return err
	}
	if err := caffeForm(fs, "compute-image-mean", "INPUT_DB [OUTPUT_FILE]", []*string{in, out}, []string{"--db", "--out"}, 1, stderr); err != nil {
		return err
	}
	if *in == "" {
		fmt.Fprintln(stderr, "dsgd compute-image-mean: --db is required (or INPUT_DB [OUTPUT_FILE])")
		return errUsage
	}
	b, err := db.ParseBackend(*backend)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd compute-image-mean: --backend: %v\n", err)
		return errUsage
	}
	bp, chans, n, err := data.ComputeImageMean(*in, b, progressTo(stderr, "compute-image-mean"))
	if err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintf(stdout, "compute-image-mean: mean of %d images of %dx%dx%d (no OUTPUT_FILE: not written)\n", n, bp.GetChannels(), bp.GetHeight(), bp.GetWidth())
	} else {
		if err := data.WriteMean(*out, bp); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "compute-image-mean: mean of %d images of %dx%dx%d written to %s\n", n, bp.GetChannels(), bp.GetHeight(), bp.GetWidth(), *out)
	}
	for c, m := range chans {
		fmt.Fprintf(stdout, "  mean_value channel [%d]: %.4f\n", c, m)
	}
	return nil
}

// runConvertAnnoset is SSD's convert_annoset: a list file of images and
// their annotation files (or labels) to a database of AnnotatedDatum
// records, as the fork's create_data.sh makes them.
func runConvertAnnoset(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-annoset", flag.ContinueOnError)
	list := fs.String("list", "", "list `FILE` of \"image annotation\" lines, or \"image label\" for classification (required; or the fork's form: dsgd convert-annoset [flags] ROOTFOLDER/ LISTFILE DB_NAME)")
	root := fs.String("root", "", "`DIR` prefixed to every path of the list, images and annotations, as the fork's ROOTFOLDER (give the trailing /)")
	out := fs.String("out", "", "database `DIR` to create (required; must not exist)")
	backend := backendFlag(fs)
	annoType := fs.String("anno_type", "classification", "`TYPE` of annotation: classification (\"image label\" lines) or detection (\"image annotation-file\" lines, BBOX records)")
	labelType := fs.String("label_type", "xml", "annotation file `FORMAT` for detection: xml (PASCAL VOC), json (the fork's COCO form) or txt (\"label xmin ymin xmax ymax\" lines)")
	labelMap := fs.String("label_map_file", "", "LabelMap prototxt `FILE` mapping the XML files' object names (the JSON files' category ids) to labels (required for detection)")
	checkLabel := fs.Bool("check_label", false, "refuse a label map that gives a name twice")
	minDim := fs.Int("min_dim", 0, "the fork's aspect-keeping resize; refused unless 0")
	maxDim := fs.Int("max_dim", 0, "the fork's aspect-keeping resize; refused unless 0")
	rh := fs.Int("resize_height", 0, "resize images to this height (with --resize_width); boxes stay normalised")
	rw := fs.Int("resize_width", 0, "resize images to this width (with --resize_height)")
	checkSize := fs.Bool("check_size", false, "fail when a record's data is not as long as the first's channels×height×width")
	encoded := fs.Bool("encoded", false, "store images encoded instead of raw pixels")
	encodeType := fs.String("encode_type", "", "`FORMAT` to encode images as: jpg or png (implies --encoded); an unresized image of that format is stored as the file's own bytes")
	gray := fs.Bool("gray", false, "store images in grayscale")
	shuffle := fs.Bool("shuffle", false, "write the lines in a random order")
	seed := fs.Uint64("seed", 1, "random seed for --shuffle")
	if err := parseFlagsArgs(fs, args, stderr); err != nil {
		return err
	}
	if err := caffeForm(fs, "convert-annoset", "ROOTFOLDER/ LISTFILE DB_NAME", []*string{root, list, out}, []string{"--root", "--list", "--out"}, 3, stderr); err != nil {
		return err
	}
	usage := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "dsgd convert-annoset: "+format+"\n", a...)
		return errUsage
	}
	switch {
	case *list == "" || *out == "":
		return usage("--list and --out are required (or ROOTFOLDER/ LISTFILE DB_NAME)")
	case *annoType != "classification" && *annoType != "detection":
		return usage("--anno_type %q: give classification or detection", *annoType)
	case *annoType == "detection" && *labelType != "xml" && *labelType != "json" && *labelType != "txt":
		return usage("--label_type %q: give xml, json or txt", *labelType)
	case *annoType == "detection" && *labelMap == "":
		return usage("--label_map_file is required for --anno_type detection (the fork's labelmap_voc.prototxt)")
	case *minDim != 0 || *maxDim != 0:
		return usage("--min_dim %d --max_dim %d: not supported: the fork's aspect-keeping resize (cv::resize by a scale factor) is not reproduced; give 0 (as create_data.sh does) or --resize_height/--resize_width", *minDim, *maxDim)
	case *rh < 0 || *rw < 0 || (*rh == 0) != (*rw == 0):
		return usage("--resize_height %d and --resize_width %d: give both, positive, or neither", *rh, *rw)
	case *encodeType != "" && !slices.Contains([]string{"jpg", "jpeg", "png"}, strings.ToLower(*encodeType)):
		return usage("--encode_type %q: not supported: dsgd encodes jpg and png", *encodeType)
	}
	b, err := db.ParseBackend(*backend)
	if err != nil {
		return usage("--backend: %v", err)
	}
	cfg := data.AnnosetConfig{
		Root: *root, Backend: b, Detection: *annoType == "detection", LabelType: *labelType,
		Gray: *gray, Shuffle: *shuffle, Seed: *seed, ResizeHeight: *rh, ResizeWidth: *rw,
		CheckSize: *checkSize, Encoded: *encoded || *encodeType != "", EncodeType: *encodeType,
		Warn: func(msg string) { fmt.Fprintf(stderr, "dsgd convert-annoset: warning: %s\n", msg) },
	}
	if cfg.Detection {
		m, err := caffedef.ReadLabelMap(*labelMap)
		if err != nil {
			return err
		}
		if cfg.NameToLabel, err = m.NameToLabel(*checkLabel); err != nil {
			return err
		}
	}
	start := time.Now()
	st, err := data.ConvertAnnoset(*list, *out, cfg, progressTo(stderr, "convert-annoset"))
	if err != nil {
		return err
	}
	kind := "raw"
	if cfg.Encoded {
		kind = "encoded"
	}
	skipped := ""
	if st.Skipped > 0 {
		skipped = fmt.Sprintf("; skipped %d unreadable (named above)", st.Skipped)
	}
	fmt.Fprintf(stdout, "convert-annoset: wrote %d %s %s records (first %dx%dx%d) to %s (%s, %.1f MB) in %.1fs%s\n",
		st.Records, kind, *annoType, st.C, st.H, st.W, *out, b, float64(st.Bytes)/1e6, time.Since(start).Seconds(), skipped)
	return nil
}
