package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"

	"dsgd/data/db"
	"dsgd/training/job"
)

// extractUsage is Caffe's extract_features usage, which the positional
// form follows word for word.
const extractUsage = "pretrained_net_param feature_extraction_proto_file extract_feature_blob_name1[,name2,...] save_feature_dataset_name1[,name2,...] num_mini_batches db_type [CPU/GPU] [DEVICE_ID=0]"

// extractFlagNames name the job's Extract and Options fields by the
// flags of dsgd extract-features; extractArgNames by the arguments of
// Caffe's positional form.
var (
	extractFlagNames = strings.NewReplacer("Extract.Blobs", "--blobs", "Extract.DBs", "--out", "Extract.Batches", "--batches",
		"Config.Weights", "--weights", "Options.Net", "--net", "Config.GPUs", "--gpu")
	extractArgNames = strings.NewReplacer("Extract.Blobs", "extract_feature_blob_names", "Extract.DBs", "save_feature_dataset_names",
		"Extract.Batches", "num_mini_batches", "Config.Weights", "pretrained_net_param", "Options.Net", "feature_extraction_proto_file", "Config.GPUs", "GPU DEVICE_ID",
		"run without --gpu to train on the CPU", "give CPU after db_type to run on the CPU", "--gpu", "GPU DEVICE_ID")
)

// runExtractFeatures is Caffe's extract_features: a trained net's blobs,
// image by image, into new databases of Datum records (job.ExtractFeatures).
// It takes Caffe's positional arguments unchanged, or dsgd's flags.
func runExtractFeatures(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("extract-features", flag.ContinueOnError)
	weights := fs.String("weights", "", "trained `FILE`: a .caffemodel or .caffemodel.h5 (Caffe's pretrained_net_param; or Caffe's form, its arguments unchanged: dsgd extract-features [--threads N] "+extractUsage+")")
	net := fs.String("net", "", "net `FILE` in Caffe's prototxt format, built in its TEST phase, its data layers reading their sources (Caffe's feature_extraction_proto_file)")
	blobs := fs.String("blobs", "", "`NAMES` of the blobs to extract, comma-separated (Caffe's extract_feature_blob_name1[,name2,...])")
	out := fs.String("out", "", "`DIRS` of the databases to create, comma-separated, one per blob; none may exist (Caffe's save_feature_dataset_name1[,name2,...])")
	batches := fs.String("batches", "", "`N` forward passes of the net's batch size (Caffe's num_mini_batches)")
	backend := backendFlag(fs)
	gpu := fs.String("gpu", "", "run the net on GPU `ID` (Caffe's GPU DEVICE_ID); refused where there is no GPU")
	threads := fs.Int("threads", runtime.NumCPU(), "goroutines each layer computes with")
	if err := parseFlagsArgs(fs, args, stderr); err != nil {
		return err
	}
	names := extractFlagNames
	defer func() { err = asFlags(err, names) }()
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if pos := fs.Args(); len(pos) > 0 {
		names = extractArgNames
		note, err := extractPositional(pos, given, weights, net, blobs, out, batches, backend, gpu)
		if err != nil {
			fmt.Fprintf(stderr, "dsgd extract-features: %v\n", err)
			return errUsage
		}
		if note != "" {
			fmt.Fprintf(stderr, "dsgd extract-features: %s\n", note)
		}
	}
	usage := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "dsgd extract-features: "+format+"\n", a...)
		return errUsage
	}
	switch {
	case *weights == "" || *net == "" || *blobs == "" || *out == "" || *batches == "":
		return usage("--weights, --net, --blobs, --out and --batches are required (or Caffe's form: dsgd extract-features %s)", extractUsage)
	case *threads < 1:
		return usage("--threads %d: want at least 1", *threads)
	}
	n, err := strconv.Atoi(*batches)
	if err != nil || n < 1 {
		return usage("%s %q: want a positive integer, the forward passes to run", names.Replace("Extract.Batches"), *batches)
	}
	b, err := db.ParseBackend(*backend)
	if err != nil {
		return usage("%s: %v", map[bool]string{true: "db_type", false: "--backend"}[names == extractArgNames], err)
	}
	m := modelFlags{gpu: *gpu}
	if err := m.checkGPU("extract-features", stderr); err != nil {
		return err
	}
	if len(m.gpuIDs) > 1 {
		return usage("--gpu %s: one GPU runs the net, as Caffe's extract_features takes one DEVICE_ID", *gpu)
	}
	j, err := job.Load(job.Options{Net: *net, NetOnly: true, TestOnly: true, Seed: -1})
	if err != nil {
		return fmt.Errorf("Options.Net %s: %w", *net, err)
	}
	defer j.Close()
	j.WriteNotes(stderr)
	start := time.Now()
	res, err := j.ExtractFeatures(ctx, job.Extract{
		Weights: *weights, Blobs: strings.Split(*blobs, ","), DBs: strings.Split(*out, ","), Batches: n, Backend: b, Threads: *threads, GPUs: m.gpuIDs,
		Copied: copyReport(stderr, "extract-features", *weights),
		Progress: func(batch int, images []int) {
			if batch%100 == 0 || batch == n {
				fmt.Fprintf(stderr, "extract-features: batch %d/%d, %d images\n", batch, n, images[0])
			}
		},
	})
	if err != nil {
		return err
	}
	for _, r := range res.Blobs {
		fmt.Fprintf(stdout, "extract-features: %s: %d records of %dx%dx%d to %s (%s, %.1f MB)\n", r.Name, r.Images, r.C, r.H, r.W, r.DB, b, float64(r.Bytes)/1e6)
	}
	fmt.Fprintf(stdout, "extract-features: %d batches in %.1fs\n", n, time.Since(start).Seconds())
	return nil
}

// extractPositional reads Caffe's extract_features arguments pos into the
// flags' values, refusing a count outside 6 to 8, a mode other than CPU
// or GPU, a device that is not a non-negative integer, and a flag given
// beside them for the same value (given: the flags set). A DEVICE_ID
// after CPU is ignored, as Caffe ignores it, and note says so.
func extractPositional(pos []string, given map[string]bool, weights, net, blobs, out, batches, backend, gpu *string) (note string, err error) {
	for _, a := range pos {
		if len(a) > 1 && a[0] == '-' && (a[1] == '-' || unicode.IsLetter(rune(a[1]))) {
			return "", fmt.Errorf("flag %s after the arguments and \"--\": give it before \"--\" (dsgd extract-features [flags] %s)", a, extractUsage)
		}
	}
	if len(pos) < 6 || len(pos) > 8 {
		return "", fmt.Errorf("%d arguments %q: give %s, as Caffe's extract_features takes them, or --weights, --net, --blobs, --out, --batches and --backend", len(pos), pos, extractUsage)
	}
	for _, f := range []string{"weights", "net", "blobs", "out", "batches", "backend", "gpu"} {
		if given[f] {
			return "", fmt.Errorf("--%s given with Caffe's positional arguments, which set it too: give one form", f)
		}
	}
	*weights, *net, *blobs, *out, *batches, *backend = pos[0], pos[1], pos[2], pos[3], pos[4], pos[5]
	if len(pos) == 6 {
		return "", nil
	}
	switch pos[6] {
	case "CPU":
		if len(pos) == 8 {
			return fmt.Sprintf("DEVICE_ID %s after CPU is ignored, as Caffe ignores it: the net runs on the CPU", pos[7]), nil
		}
	case "GPU":
		*gpu = "0"
		if len(pos) == 8 {
			if id, err := strconv.Atoi(pos[7]); err != nil || id < 0 {
				return "", fmt.Errorf("DEVICE_ID %q: want a GPU's index, 0 or more", pos[7])
			}
			*gpu = pos[7]
		}
	default:
		return "", fmt.Errorf("%q where CPU or GPU goes (after db_type %s)", pos[6], pos[5])
	}
	return "", nil
}
