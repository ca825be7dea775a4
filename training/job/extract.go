package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"dsgd/caffe/caffemodel"
	"dsgd/data"
	"dsgd/data/db"
	"dsgd/engine/cuda"
	"dsgd/engine/gpunet"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// Extract is what ExtractFeatures extracts, as Caffe's extract_features
// takes it: the trained weights, the blobs and a new database for each,
// the forward passes to run. Its errors name these fields (Extract.Blobs,
// ...), which a command maps to its arguments.
type Extract struct {
	// Weights is a Caffe model file (.caffemodel or .caffemodel.h5),
	// copied into the TEST net by layer name (its errors name it
	// Config.Weights, as TestNet's).
	Weights string
	// Blobs names the blobs to extract; DBs the database each is written
	// to (the same number; none may exist).
	Blobs, DBs []string
	// Batches is the forward passes (Caffe's num_mini_batches), each of
	// the net's batch size: its data layers wrap round their sources as
	// in a test pass.
	Batches int
	// Backend is the databases' kind.
	Backend db.Backend
	// Threads is the goroutines each layer computes with.
	Threads int
	// GPUs, when not empty, runs the net on the first of these GPUs (in
	// fp32), as Caffe's GPU DEVICE_ID; the caller has checked it
	// exists.
	GPUs []int
	// Copied, when not nil, is told what was copied from Weights before
	// the passes run.
	Copied func(caffemodel.Report)
	// Progress, when not nil, is told after each pass how many images
	// each blob's database holds (in the order of Blobs).
	Progress func(batch int, images []int)
}

// Extracted says what ExtractFeatures wrote: one entry per blob.
type Extracted struct {
	Blobs []ExtractedBlob
}

// ExtractedBlob is one blob's database.
type ExtractedBlob struct {
	Name, DB string
	// Images is the records written; C, H and W each one's shape, as
	// extract_features sets it (Caffe's legacy channels, height, width).
	Images  int
	C, H, W int
	// Bytes is the records' total size.
	Bytes int64
}

// check refuses what extract_features would refuse, before any file is
// read: the counts, the names, the passes.
func (x *Extract) check() error {
	switch {
	case x.Batches < 1:
		return fmt.Errorf("Extract.Batches %d: want a positive number of mini-batches", x.Batches)
	case len(x.Blobs) == 0:
		return errors.New("Extract.Blobs: no blob to extract")
	case len(x.Blobs) != len(x.DBs):
		return fmt.Errorf("Extract.Blobs names %d blobs (%s) but Extract.DBs %d databases (%s): the numbers must be equal, one database per blob",
			len(x.Blobs), strings.Join(x.Blobs, ","), len(x.DBs), strings.Join(x.DBs, ","))
	}
	for i, b := range x.Blobs {
		if b == "" {
			return fmt.Errorf("Extract.Blobs %s: name %d is empty", strings.Join(x.Blobs, ","), i+1)
		}
	}
	for i, d := range x.DBs {
		if d == "" {
			return fmt.Errorf("Extract.DBs %s: name %d is empty", strings.Join(x.DBs, ","), i+1)
		}
		if j := slices.Index(x.DBs[:i], d); j >= 0 {
			return fmt.Errorf("Extract.DBs: %s is named twice (for blobs %s and %s): each blob needs a database of its own", d, x.Blobs[j], x.Blobs[i])
		}
	}
	if !caffemodel.IsModel(x.Weights) {
		return fmt.Errorf("Config.Weights %s: want a Caffe model file, .caffemodel or .caffemodel.h5, as extract_features reads; a dsgd snapshot holds its TRAIN net's weights without layer names, so train with --snapshot-format caffe (or hdf5) to extract from the run's weights", x.Weights)
	}
	return nil
}

// BlobNames are the blobs of the job's TEST net, as Caffe's Net names
// them: the data layers' tops, then every layer's tops, in order, each
// once (a blob written in place keeps its name).
func (j *Job) BlobNames() []string {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range j.Test.Spec.Inputs {
		add(n)
	}
	for _, l := range j.Test.Spec.Layers {
		for _, n := range l.Top {
			add(n)
		}
	}
	return names
}

// legacyShape is Caffe's Blob num, channels, height and width of shape
// (LegacyShape: a missing axis counts 1); more than four axes have none.
func legacyShape(s tensor.Shape) (n, c, h, w int, ok bool) {
	if len(s) > 4 {
		return 0, 0, 0, 0, false
	}
	d := [4]int{1, 1, 1, 1}
	copy(d[:], s)
	return d[0], d[1], d[2], d[3], true
}

// ExtractFeatures is Caffe's extract_features: it builds the job's TEST
// net, fed by its own data layers (as TestNet), copies x.Weights into it,
// runs x.Batches forward passes and writes, for each of x.Blobs, one
// Datum per image (data.FeatureDB: the blob's legacy channels, height
// and width, the image's slice of the blob as float_data) under the
// image's index, to a new database. The databases appear whole, on
// success only: an error in the passes leaves none of them (one in the
// final renames leaves those renamed before it, each whole). The blobs
// are checked
// against the net (an unknown name lists its blobs) and the databases
// against the file system before any pass runs.
func (j *Job) ExtractFeatures(ctx context.Context, x Extract) (_ *Extracted, err error) {
	if err := x.check(); err != nil {
		return nil, err
	}
	if j.TestErr != nil {
		return nil, j.TestErr
	}
	if len(j.Test.Spec.Layers) == 0 && len(j.Test.Spec.Inputs) == 0 {
		return nil, fmt.Errorf("%s has no layer in the TEST phase to extract features from", j.Name)
	}
	for _, b := range x.Blobs {
		if !slices.Contains(j.BlobNames(), b) {
			return nil, fmt.Errorf("Extract.Blobs: unknown blob %q in the TEST net of %s; its blobs are %s", b, j.Name, strings.Join(j.BlobNames(), ", "))
		}
	}
	for _, path := range x.DBs {
		if _, err := os.Lstat(path); err == nil {
			return nil, fmt.Errorf("Extract.DBs: %s already exists: Caffe's extract_features refuses to write over a database, and so does dsgd; remove it or choose another name", path)
		}
	}
	net, err := j.weightedTestNet(x.Weights, x.Threads, x.Copied)
	if err != nil {
		return nil, err
	}
	// A TEST data layer at batch_size 1 over records of differing shapes
	// reshapes the net to each record, as Caffe's does; each record's
	// features are written in its own shape.
	shapes := train.NewNetShapes(net, j.Test.Spec, j.TestShapes, model.Options{Phase: layers.Test, Threads: x.Threads, Seed: j.Seed}, j.TestFeeds, "TEST")
	if shapes != nil && len(x.GPUs) > 0 {
		return nil, errors.New("Config.GPUs: the TEST data layers reshape the net to each record (batch_size 1 over records of differing shapes), and a net on the GPU has one shape: run without --gpu")
	}
	download := func(*tensor.Blob) error { return nil }
	if len(x.GPUs) > 0 {
		g, err := cuda.Open(x.GPUs[0], false)
		if err != nil {
			return nil, fmt.Errorf("Config.GPUs: %w", err)
		}
		defer g.Close()
		ex, err := gpunet.New(g, net, gpunet.Options{Seed: uint64(max(j.Seed, 1))})
		if err != nil {
			return nil, fmt.Errorf("Config.GPUs: TEST net on GPU %d: %w", x.GPUs[0], err)
		}
		defer ex.Close()
		download = ex.Download
	}
	res := &Extracted{Blobs: make([]ExtractedBlob, len(x.Blobs))}
	blobs := make([]*tensor.Blob, len(x.Blobs))
	for i, name := range x.Blobs {
		b := net.Blob(name)
		if b == nil {
			return nil, fmt.Errorf("Extract.Blobs: blob %q is not in the built TEST net of %s", name, j.Name)
		}
		n, c, h, w, ok := legacyShape(b.Shape)
		switch {
		case !ok:
			return nil, fmt.Errorf("Extract.Blobs: blob %q has %d axes %v; a Datum holds at most 4 (num, channels, height, width), as extract_features reads them", name, len(b.Shape), b.Shape)
		case n < 1 || c*h*w < 1:
			return nil, fmt.Errorf("Extract.Blobs: blob %q has shape %v: no image's features to write", name, b.Shape)
		}
		blobs[i] = b
		res.Blobs[i] = ExtractedBlob{Name: name, DB: x.DBs[i], C: c, H: h, W: w}
	}
	dbs := make([]*data.FeatureDB, 0, len(x.DBs))
	defer func() {
		if err != nil {
			for _, f := range dbs {
				f.Abort()
			}
		}
	}()
	for _, path := range x.DBs {
		f, err := data.CreateFeatureDB(path, x.Backend)
		if err != nil {
			return nil, fmt.Errorf("Extract.DBs: %w", err)
		}
		dbs = append(dbs, f)
	}
	counts := make([]int, len(dbs))
	for batch := range x.Batches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cur := net
		if shapes != nil {
			if cur, err = shapes.Pick(ctx); err != nil {
				return nil, err
			}
			for i, name := range x.Blobs {
				blobs[i] = cur.Blob(name)
			}
		}
		if err := Fill(ctx, cur, j.TestFeeds); err != nil {
			return nil, err
		}
		cur.Forward()
		if err := cur.Err(); err != nil {
			return nil, err
		}
		for i, b := range blobs {
			if err := download(b); err != nil {
				return nil, fmt.Errorf("Config.GPUs: blob %q: %w", b.Name, err)
			}
			// A layer may reshape its tops as the net runs (Caffe's
			// Reshape before each Forward): the shape is read each pass.
			n, c, h, w, ok := legacyShape(b.Shape)
			if !ok || n < 1 || c*h*w < 1 {
				return nil, fmt.Errorf("Extract.Blobs: blob %q took shape %v at pass %d; want at most 4 axes and a feature per image", b.Name, b.Shape, batch+1)
			}
			dim := c * h * w
			for k := range n {
				if err := dbs[i].Put(c, h, w, b.Data[k*dim:(k+1)*dim]); err != nil {
					return nil, err
				}
			}
			counts[i] = dbs[i].Count()
			res.Blobs[i].C, res.Blobs[i].H, res.Blobs[i].W = c, h, w
		}
		if x.Progress != nil {
			x.Progress(batch+1, slices.Clone(counts))
		}
	}
	for i, f := range dbs {
		if err := f.Commit(); err != nil {
			// The ones committed stay: each is whole.
			for _, g := range dbs[i+1:] {
				g.Abort()
			}
			dbs = nil
			return nil, fmt.Errorf("Extract.DBs: %w", err)
		}
		res.Blobs[i].Images, res.Blobs[i].Bytes = f.Count(), f.Bytes
	}
	return res, nil
}

// weightedTestNet builds the job's TEST net, opens its data (TestFeeds)
// and copies the Caffe model file weights into it by layer name, as
// `caffe test -model -weights` and extract_features do; copied, when not
// nil, is told what was copied.
func (j *Job) weightedTestNet(weights string, threads int, copied func(caffemodel.Report)) (*model.Net, error) {
	if err := j.OpenTestFeeds(); err != nil {
		return nil, err
	}
	net, err := model.Build(j.Test.Spec, j.TestShapes, model.Options{Phase: layers.Test, Threads: threads, Seed: j.Seed})
	if err != nil {
		return nil, err
	}
	src, err := caffemodel.ReadModel(weights)
	if err != nil {
		return nil, fmt.Errorf("Config.Weights: %w", err)
	}
	netLayers, err := caffemodel.Resolve(caffemodel.SpecLayers(j.Test.Spec), net.Blocks())
	if err != nil {
		return nil, fmt.Errorf("Config.Weights %s: %w", weights, err)
	}
	rep, err := caffemodel.CopyTrainedNet(src, weights, netLayers, net.Params())
	if err != nil {
		return nil, fmt.Errorf("Config.Weights: %w", err)
	}
	if copied != nil {
		copied(rep)
	}
	if err := j.CheckLabels(net, j.Test.Spec); err != nil {
		return nil, err
	}
	return net, nil
}
