package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

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

// runConvertMNIST is Caffe's convert_mnist_data: IDX images and labels to
// a database of Datum records.
func runConvertMNIST(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-mnist", flag.ContinueOnError)
	images := fs.String("images", "", "IDX images `FILE` (gzipped or not), e.g. train-images-idx3-ubyte.gz (required)")
	labels := fs.String("labels", "", "IDX labels `FILE` (required)")
	out := fs.String("out", "", "database `DIR` to create (required; must not exist)")
	backend := backendFlag(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *images == "" || *labels == "" || *out == "" {
		fmt.Fprintln(stderr, "dsgd convert-mnist: --images, --labels and --out are required")
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
	if pos := fs.Args(); len(pos) > 0 {
		// Caffe's form: convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME.
		switch {
		case len(pos) != 3:
			fmt.Fprintf(stderr, "dsgd convert-imageset: %d arguments %q: give ROOTFOLDER/ LISTFILE DB_NAME, as Caffe's convert_imageset takes them (flags first), or --root, --list and --out\n", len(pos), pos)
			return errUsage
		case *list != "" || *out != "" || *root != "":
			fmt.Fprintln(stderr, "dsgd convert-imageset: ROOTFOLDER/ LISTFILE DB_NAME given with --root, --list or --out: give one form")
			return errUsage
		}
		*root, *list, *out = pos[0], pos[1], pos[2]
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
	in := fs.String("db", "", "database `DIR` of Datum records (required)")
	out := fs.String("out", "", "mean `FILE` to write (.binaryproto; required)")
	backend := backendFlag(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		fmt.Fprintln(stderr, "dsgd compute-image-mean: --db and --out are required")
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
	if err := data.WriteMean(*out, bp); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compute-image-mean: mean of %d images of %dx%dx%d written to %s\n", n, bp.GetChannels(), bp.GetHeight(), bp.GetWidth(), *out)
	for c, m := range chans {
		fmt.Fprintf(stdout, "  mean_value channel [%d]: %.4f\n", c, m)
	}
	return nil
}
