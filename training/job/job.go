package job

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/zoo"
	"dsgd/data"
	"dsgd/data/db"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// Options choose a net, a solver and their data: what train, test,
// time and bench parse from their model flags (cmd/dsgd's --model, --net,
// --solver, --data, --seed, --stage, --level, --shuffle and --batch).
type Options struct {
	// Model is a built-in model's name (package zoo), or with NetOnly a
	// net file; Net and Solver, when set, are prototxt files instead.
	Model, Net, Solver string
	// Data, when set, is the source every data layer reads instead of
	// its own (see data.OpenSource).
	Data string
	// Seed seeds the weights, shuffling and dropout; negative: the
	// solver's random_seed, else 1.
	Seed int64
	// NetOnly lets a net file be loaded without a solver (dsgd time, dsgd
	// test on a deploy net).
	NetOnly bool
	// TestOnly marks a load for testing alone (dsgd test --solver): a
	// TRAIN phase that does not build (a fork's data layer dsgd does not
	// know, which caffe test never builds) is kept in TrainErr, not refused, as without a
	// solver; TestWeights then tests a Caffe model on the TEST net alone.
	TestOnly bool
	// Stages and Level (when LevelSet) are the NetState the train net's
	// layers are selected with, as caffe's --stage and --level.
	Stages   string
	Level    int
	LevelSet bool
	// Shuffle is whether the TRAIN loaders reshuffle every epoch;
	// ShuffleSet says it was given, so a recurrent net's rows are
	// reshuffled too (else they keep file order).
	Shuffle    bool
	ShuffleSet bool
	// Batch, when positive, overrides the TRAIN data layers' batch_size
	// (and the first axis of Input layers).
	Batch int
}

// state is the NetState of the train net: the net's own state, then the
// solver's train_state, then --stage and --level, merged as Caffe merges
// them.
func (o Options) state(netState, solverState caffedef.NetState) caffedef.NetState {
	st := mergeState(netState, solverState)
	for _, s := range strings.Split(o.Stages, ",") {
		if s = strings.TrimSpace(s); s != "" {
			st.Stages = append(st.Stages, s)
		}
	}
	if o.LevelSet {
		st.Level = o.Level
	}
	return st
}

// mergeState is Caffe's NetState MergeFrom: stages appended, a set level
// replacing.
func mergeState(a, b caffedef.NetState) caffedef.NetState {
	st := caffedef.NetState{Level: a.Level, Stages: append(slices.Clone(a.Stages), b.Stages...)}
	if b.Level != 0 {
		st.Level = b.Level
	}
	return st
}

// loadTestNet loads the solver's test nets: the first, when it is another
// net than the train net, and the TEST phase of every later one.
func (j *Job) loadTestNet() error {
	tns := j.Solver.TestNets
	if len(tns) == 0 {
		return nil
	}
	load := func(src caffedef.NetSource) (*caffedef.NetDef, error) {
		if src.Field == j.Solver.TrainNet.Field && src.Pos == j.Solver.TrainNet.Pos {
			return j.Net, nil
		}
		n, err := src.Load()
		if err != nil {
			return nil, err
		}
		j.Warnings = append(j.Warnings, n.Warnings...)
		j.Notes = append(j.Notes, n.Notes...)
		return n, nil
	}
	for i, tn := range tns {
		n, err := load(tn.Source)
		if err != nil {
			return err
		}
		if i == 0 {
			if n != j.Net {
				j.testNet = n
			}
			continue
		}
		pn, err := n.PhaseState(layers.Test, mergeState(n.State, tn.State))
		if err != nil {
			return fmt.Errorf("test net %d: %w", i+1, err)
		}
		j.extraNets = append(j.extraNets, pn)
	}
	return nil
}

// Job is a resolved model: both phases, the solver and the data feeding
// them. Load makes one; OpenData or OpenShard open its data; Close closes
// it.
type Job struct {
	opts Options
	// Name is what the user asked for, for the header.
	Name string
	// Net and Solver are the parsed files; Train and Test the phases
	// the run builds (a net loaded without a solver may leave one empty:
	// TrainErr, TestErr).
	Net    *caffedef.NetDef
	Solver *caffedef.SolverDef
	Train  *caffedef.PhaseNet
	Test   *caffedef.PhaseNet
	// Seed is Options.Seed, else the solver's random_seed, else 1.
	Seed uint64
	// Warnings are for stderr, with the header.
	Warnings []string
	// Notes say what was upgraded from an old file format (stderr).
	Notes []string
	// orderNoted: the header says why the TRAIN rows keep file order.
	orderNoted bool
	// inputNoted: the header says why Options.Batch left the Input layers alone.
	inputNoted bool
	// reshapeNoted: the header said a data set's batches reshape the
	// net (by the sets' key).
	reshapeNoted map[string]bool
	// testNet is the solver's first test net when it is not the train
	// net's file (test_net, test_net_param, or an Options.Net override); nil
	// means the TEST phase of net.
	testNet *caffedef.NetDef
	// extraNets are the TEST phases of the solver's second and later
	// test nets; ExtraTests their nets and data for train, once opened.
	extraNets  []*caffedef.PhaseNet
	ExtraTests []train.TestNet
	// NoSolver marks a net loaded without a solver (dsgd time on a
	// deploy net); Solver then holds an empty SolverDef.
	NoSolver bool
	// TrainErr and TestErr are why the TRAIN or TEST phase of a net
	// loaded without a solver (or TrainErr, with Options.TestOnly) cannot
	// be built (Train or Test then holds an empty phase): only the
	// command that runs that phase fails.
	TrainErr, TestErr error
	// Start is the iteration a resumed run continues from: the TRAIN
	// loaders begin at that global batch.
	Start int
	// Atom, when set (exact sums), is the TRAIN loaders' batch: one
	// atom per pass; TrainPasses is the loader batches one iteration
	// reads (iter_size times the atoms per worker; 0 counts as 1).
	Atom, TrainPasses int

	// TrainSetSize is the images of the first TRAIN Data layer's set
	// (one epoch), 0 when unknown.
	TrainSetSize int

	// TrainShapes and TestShapes are the input blobs' shapes, and
	// TrainFeeds and TestFeeds the sources that fill them, once the data
	// are open; WorkerFeeds are workers 1..N-1's TRAIN feeds (OpenData).
	TrainShapes, TestShapes map[string]tensor.Shape
	TrainFeeds, TestFeeds   []train.Feed
	WorkerFeeds             [][]train.Feed
	loaders                 []*data.Loader
	annotated               []*data.AnnotatedSource // AnnotatedData layers' sources, closed with the job
	sets                    map[string]*data.Dataset
	labelSources            map[string]string // label blob -> the data layer and source feeding it
	labelMax                map[string]int    // label blob -> the largest label fed to it
	// DataDesc are the header's lines on the data.
	DataDesc    []string
	bufferBytes float64 // the loaders' batch buffers so far
	// trainLoaders are the TRAIN feeds' loaders and trainBytes their
	// buffers (an elastic generation replaces them); offset is where in
	// the data sequence the TRAIN loaders start (data.LoaderConfig.Offset).
	trainLoaders []*data.Loader
	trainBytes   float64
	offset       int64
}

// Load parses the net and solver o names.
func Load(o Options) (*Job, error) {
	j := &Job{opts: o, sets: map[string]*data.Dataset{}, labelSources: map[string]string{}, labelMax: map[string]int{}}
	var err error
	switch {
	case o.Solver != "":
		j.Solver, err = caffedef.LoadSolver(o.Solver)
		if err != nil {
			return nil, err
		}
		src := j.Solver.TrainNet
		if o.Net != "" {
			src = caffedef.NetSource{Field: "Options.Net", Path: o.Net}
		}
		if src.Field == "" {
			return nil, fmt.Errorf("Options.Solver %s names no train net (net, net_param, train_net or train_net_param); pass Options.Net FILE", o.Solver)
		}
		j.Net, err = src.Load()
		j.Name = src.String()
		if err == nil && o.Net == "" {
			err = j.loadTestNet()
		}
	case o.Net != "" && o.NetOnly, netFile(o.Model) && o.NetOnly:
		// dsgd time, like caffe time, needs only the net.
		path := o.Net
		if path == "" {
			path = o.Model
		}
		j.Solver = &caffedef.SolverDef{RandomSeed: -1}
		j.NoSolver = true
		j.Net, err = caffedef.LoadNet(path)
		j.Name = path
	case o.Net != "":
		return nil, errors.New("Options.Net needs Options.Solver FILE too (the solver says how to train); or use Options.Model NAME")
	case netFile(o.Model):
		return nil, fmt.Errorf("Options.Model %s: a net file needs Options.Solver FILE too (the solver says how to train); Options.Model FILE alone works for dsgd time", o.Model)
	default:
		netSrc, solverSrc, zerr := zoo.Get(o.Model)
		if zerr != nil {
			return nil, fmt.Errorf("Options.Model: %w", zerr)
		}
		j.Solver, err = caffedef.ParseSolver(o.Model+"_solver.prototxt", solverSrc)
		if err != nil {
			return nil, err
		}
		j.Net, err = caffedef.ParseNet(o.Model+".prototxt", netSrc)
		j.Name = o.Model + " (built-in)"
	}
	if err != nil {
		return nil, err
	}
	j.Warnings = append(append(j.Warnings, j.Solver.Warnings...), j.Net.Warnings...)
	j.Notes = append(append(j.Notes, j.Solver.Notes...), j.Net.Notes...)
	// A net file without a solver is run in one phase only, as caffe
	// time (TRAIN) and caffe test (TEST) build one: an error in the
	// other phase is kept for the command that needs that phase.
	if j.Train, err = j.Net.PhaseState(layers.Train, o.state(j.Net.State, j.Solver.TrainState)); err != nil {
		if !j.NoSolver && !o.TestOnly {
			return nil, err
		}
		j.Train, j.TrainErr = &caffedef.PhaseNet{Phase: layers.Train}, err
	}
	testDef := j.Net
	if j.testNet != nil {
		testDef = j.testNet
	}
	testState := testDef.State
	if tns := j.Solver.TestNets; len(tns) > 0 && o.Net == "" {
		testState = mergeState(testDef.State, tns[0].State)
	}
	if j.Test, err = testDef.PhaseState(layers.Test, testState); err != nil {
		// Caffe builds no test net for a solver without test nets or
		// test_iter: its TEST phase may then be incomplete (a TRAIN-only
		// data layer), and only --test-iter asks for it.
		if !j.NoSolver && len(j.Solver.TestNets) > 0 {
			return nil, err
		}
		j.Test, j.TestErr = &caffedef.PhaseNet{Phase: layers.Test}, err
	}
	j.Seed = 1
	switch {
	case o.Seed >= 0:
		j.Seed = uint64(o.Seed)
	case j.Solver.RandomSeed >= 0:
		j.Seed = uint64(j.Solver.RandomSeed)
	}
	return j, nil
}

// OpenData opens every Data layer's dataset and starts its loaders: one
// per worker for TRAIN, each reading its shard. With needTest false the
// TEST phase is left without feeds.
func (j *Job) OpenData(needTest bool, workers int) error {
	var err error
	j.TrainShapes, j.TrainFeeds, err = j.feeds(j.Train, data.Train, 0, workers)
	if err != nil {
		return err
	}
	for r := 1; r < workers; r++ {
		_, f, err := j.feeds(j.Train, data.Train, r, workers)
		if err != nil {
			return err
		}
		j.WorkerFeeds = append(j.WorkerFeeds, f)
	}
	if needTest && len(j.Test.Spec.Layers) > 0 {
		j.TestShapes, j.TestFeeds, err = j.feeds(j.Test, data.Test, 0, 1)
		if err != nil {
			return err
		}
		return j.openExtraTests()
	}
	return nil
}

// openExtraTests opens the data of the solver's second and later test
// nets.
func (j *Job) openExtraTests() error {
	j.ExtraTests = nil
	for i, pn := range j.extraNets {
		shapes, feeds, err := j.feeds(pn, data.Test, 0, 1)
		if err != nil {
			return fmt.Errorf("test net %d: %w", i+2, err)
		}
		j.ExtraTests = append(j.ExtraTests, train.TestNet{Spec: pn.Spec, Shapes: shapes, Feeds: feeds, Iter: j.Solver.TestNets[i+1].Iter})
	}
	return nil
}

// OpenShard opens the data of one rank of a multi-process group: its
// shard of the TRAIN set (of workers shards), and the TEST set if needed.
func (j *Job) OpenShard(needTest bool, rank, workers int) error {
	var err error
	n0, b0 := len(j.loaders), j.bufferBytes
	j.TrainShapes, j.TrainFeeds, err = j.feeds(j.Train, data.Train, rank, workers)
	if err != nil {
		return err
	}
	j.trainLoaders, j.trainBytes = slices.Clone(j.loaders[n0:]), j.bufferBytes-b0
	if needTest && len(j.Test.Spec.Layers) > 0 {
		j.TestShapes, j.TestFeeds, err = j.feeds(j.Test, data.Test, 0, 1)
		if err == nil {
			err = j.openExtraTests()
		}
	}
	return err
}

// ReopenTrain replaces the TRAIN feeds with those of rank of world in an
// elastic generation, reading on from position pos of the data sequence,
// and closes the loaders they replace.
func (j *Job) ReopenTrain(rank, world int, pos int64) ([]train.Feed, error) {
	for _, l := range j.trainLoaders {
		l.Close()
		j.loaders = slices.DeleteFunc(j.loaders, func(x *data.Loader) bool { return x == l })
	}
	j.bufferBytes -= j.trainBytes
	j.Start, j.offset = 0, pos
	n0, b0 := len(j.loaders), j.bufferBytes
	_, feeds, err := j.feeds(j.Train, data.Train, rank, world)
	j.trainLoaders, j.trainBytes = slices.Clone(j.loaders[n0:]), j.bufferBytes-b0
	if err != nil {
		return nil, err
	}
	j.TrainFeeds = feeds
	return feeds, nil
}

func (j *Job) feeds(pn *caffedef.PhaseNet, split data.Split, rank, world int) (map[string]tensor.Shape, []train.Feed, error) {
	shapes := map[string]tensor.Shape{}
	var feeds []train.Feed
	for i, dl := range pn.Data {
		if dl.Type == "DummyData" {
			for k, t := range dl.Tops {
				shapes[t] = tensor.Shape(dl.Shapes[k])
			}
			feeds = append(feeds, train.Feed{Tops: dl.Tops, Source: &data.Dummy{Name: dl.Name, Fillers: dummyFillers(dl.Fillers), Seed: j.Seed + uint64(i) + uint64(rank)<<32}})
			continue
		}
		if dl.Type == "Input" {
			// An Input layer's blobs are filled by whoever runs the net;
			// dsgd time leaves them at zero, as caffe time does.
			batch := j.opts.Batch
			if rec := pn.Spec.RecurrentLayers(); batch > 0 && len(rec) > 0 {
				// Time-major inputs (T×N) beside N×D ones: no one axis
				// is the batch, so the deploy shapes stand.
				batch = 0
				if !j.inputNoted {
					j.inputNoted = true
					j.DataDesc = append(j.DataDesc, fmt.Sprintf("Input layers keep their shapes under Options.Batch %d: the recurrent layers (%s) read the first axis as time steps", j.opts.Batch, strings.Join(rec, ", ")))
				}
			}
			in, err := inputFeed(dl, batch)
			if err != nil {
				return nil, nil, err
			}
			for i, t := range dl.Tops {
				shapes[t] = tensor.Shape(in.Shapes[i])
			}
			feeds = append(feeds, train.Feed{Tops: dl.Tops, Source: in})
			continue
		}
		src := dl.Source
		typ := dl.Type
		if j.opts.Data != "" {
			src, typ = j.opts.Data, "Data"
		} else if err := dl.SourceErr(); err != nil {
			// Caffe reads a net whose data layer leaves its source to the
			// tool (DIGITS) and fails where it opens it: here.
			return nil, nil, fmt.Errorf("%w (give one with Options.Data)", err)
		} else if typ == "WindowData" {
			feed, err := windowFeed(dl, j.opts.Batch, split, j.Seed+uint64(i)+uint64(rank)<<32, shapes)
			if err != nil {
				return nil, nil, err
			}
			feeds = append(feeds, feed)
			continue
		} else if typ == "AnnotatedData" {
			// The seed leaves the rank out: each record's draws come from its
			// position in the sequence of records, whichever rank reads it.
			feed, err := j.annotatedFeed(dl, split, j.Seed+uint64(i), rank, world, shapes)
			if err != nil {
				return nil, nil, err
			}
			feeds = append(feeds, feed)
			continue
		}
		key := typ + "\x00" + src + "\x00" + split.String()
		ds, ok := j.sets[key]
		if !ok {
			if err := readableDir(src); err != nil {
				if j.opts.Data == "" {
					return nil, nil, fmt.Errorf("%s: data layer %q: %w", dl.Pos, dl.Name, err)
				}
				return nil, nil, fmt.Errorf("Options.Data: %w", err)
			}
			backend, err := db.ParseBackend(orDefault(dl.Backend, "LEVELDB"))
			if err != nil {
				return nil, nil, err
			}
			ds, err = data.OpenSource(data.SourceConfig{
				Type: typ, Path: src, Split: split, Tops: dl.Tops,
				Backend: backend, AnyBackend: j.opts.Data != "",
				Channels: dl.Channels, RootFolder: dl.RootFolder,
				NewHeight: dl.NewHeight, NewWidth: dl.NewWidth,
			})
			if err != nil {
				if j.opts.Data == "" {
					return nil, nil, fmt.Errorf("%s: data layer %q: %w (override the source with Options.Data)", dl.Pos, dl.Name, err)
				}
				return nil, nil, fmt.Errorf("Options.Data: %w", err)
			}
			j.sets[key] = ds
			if _, isDB := db.Detect(src); isDB && j.opts.Data != "" && split == data.Test {
				j.Warnings = append(j.Warnings, fmt.Sprintf("Options.Data %s is one database (one split): the TEST phase reads it too; give each layer its own source to test on held-out data", src))
			}
			desc := fmt.Sprintf("%s %s: %d images %dx%dx%d", src, split, ds.N, ds.C, ds.H, ds.W)
			if ds.Stream != nil {
				desc += ", streamed from the database"
			}
			j.DataDesc = append(j.DataDesc, desc)
		}
		if split == data.Train && j.TrainSetSize == 0 {
			j.TrainSetSize = ds.N
		}
		batch := dl.BatchSize
		if j.opts.Batch > 0 && split == data.Train {
			batch = j.opts.Batch
		}
		configured, sizeNote := batch, ""
		if j.Atom > 0 && split == data.Train {
			// Exact sums (PlanSums): the loader reads one atom per pass.
			sizeNote = fmt.Sprintf(" (read in atoms of %d)", j.Atom)
			batch = j.Atom
		}
		// The loader's buffers (the batches in flight, and the one being
		// filled) must fit: refuse with the figure rather than die of a
		// fatal out-of-memory.
		if lim := tensor.MemoryLimit(); lim > 0 && batch > 0 {
			need := float64(batch) * float64(ds.ImageSize()+1) * 4 * float64(data.DefaultPrefetch+2)
			j.bufferBytes += need
			if j.bufferBytes > float64(lim) {
				return nil, nil, fmt.Errorf("%s: data layer %q: batch_size %d%s of %dx%dx%d images needs %s of batch buffers per loader (%s for all %d so far), more than the %s this machine has", dl.Pos, dl.Name, configured, sizeNote, ds.C, ds.H, ds.W, tensor.HumanBytes(need), tensor.HumanBytes(j.bufferBytes), len(j.loaders)+1, tensor.HumanBytes(float64(lim)))
			}
		}
		l, err := data.NewLoader(ds, data.LoaderConfig{
			BatchSize: batch,
			Train:     split == data.Train,
			Shuffle:   split == data.Train && (j.shuffle() || dl.Shuffle),
			RandSkip:  dl.RandSkip,
			Seed:      j.Seed + uint64(i),
			Rank:      rank,
			World:     world,
			// TRAIN: each worker takes its slice of every global batch,
			// so the images of iteration t do not depend on the worker
			// count, and a resumed run reads on from its iteration.
			Slice:     split == data.Train,
			Start:     int64(startOf(split, j.Start) * max(j.TrainPasses, 1)),
			Offset:    int64(startOf(split, int(j.offset))),
			Transform: dl.Transform,
			// At batch_size 1 (per worker, before any atoms) every
			// batch takes its record's shape and the net reshapes to
			// it, as Caffe's Data layer; a larger batch's records keep
			// the first record's shape.
			Reshape: configured == 1,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: data layer %q: %w", dl.Pos, dl.Name, err)
		}
		j.loaders = append(j.loaders, l)
		if l.Variable() && !j.reshapeNoted[key] {
			if j.reshapeNoted == nil {
				j.reshapeNoted = map[string]bool{}
			}
			j.reshapeNoted[key] = true
			j.DataDesc = append(j.DataDesc, fmt.Sprintf("%s %s at batch_size 1: each batch takes its record's shape and the net reshapes to it (a net per shape, sharing the weights), as Caffe's Data layer", src, split))
		}
		s := l.Shape()
		if len(dl.Tops) > 0 {
			shapes[dl.Tops[0]] = tensor.Shape{s[0], s[1], s[2], s[3]}
			if ds.DataItem != nil {
				shapes[dl.Tops[0]] = append(tensor.Shape{s[0]}, ds.DataItem...)
			}
		}
		if len(ds.Extra) > 0 {
			// HDF5Data's tops beyond the data: each its dataset's items.
			for i, c := range ds.Extra {
				shapes[dl.Tops[i+1]] = append(tensor.Shape{s[0]}, c.Item...)
			}
			feeds = append(feeds, train.Feed{Tops: dl.Tops, Source: train.Loader{L: l, Name: dl.Name, Source: src}})
			continue
		}
		if len(dl.Tops) > 1 {
			shapes[dl.Tops[1]] = tensor.Shape{s[0]}
		}
		if len(dl.Tops) > 2 {
			return nil, nil, fmt.Errorf("%s: data layer %q has %d tops; dsgd's Data layer has data and label", dl.Pos, dl.Name, len(dl.Tops))
		}
		if len(dl.Tops) > 1 {
			j.labelSources[dl.Tops[1]] = fmt.Sprintf("data layer %q (source %s)", dl.Name, src)
			// A streamed database's labels are checked batch by
			// batch as they are read (train.Loader).
			if ds.Labels != nil {
				j.labelMax[dl.Tops[1]] = max(j.labelMax[dl.Tops[1]], int(slices.Max(ds.Labels)))
			}
		}

		feeds = append(feeds, train.Feed{Tops: dl.Tops, Source: train.Loader{L: l, Name: dl.Name, Source: src}})
	}
	return shapes, feeds, nil
}

// readableDir returns the error of listing src when src is a directory
// this process may not read (permission denied), so that it is reported
// as such rather than as a directory without a data set.
func readableDir(src string) error {
	fi, err := os.Stat(src)
	if err != nil || !fi.IsDir() {
		return nil // not a directory: data.Open says what it is
	}
	f, err := os.Open(src)
	if err == nil {
		_, err = f.Readdirnames(1)
		f.Close()
		if err == io.EOF {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("cannot read the data directory %s: %w", src, err)
	}
	return nil
}

// Close stops the loaders and closes the data sets.
func (j *Job) Close() {
	for _, l := range j.loaders {
		l.Close()
	}
	for _, ds := range j.sets {
		ds.Close()
	}
	for _, s := range j.annotated {
		s.Close()
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func dummyFillers(fs []caffedef.Filler) []data.DummyFiller {
	out := make([]data.DummyFiller, len(fs))
	for i, f := range fs {
		out[i] = data.DummyFiller{Type: f.Type, Value: f.Value, Min: f.Min, Max: f.Max, Mean: f.Mean, Std: f.Std}
	}
	return out
}

// NewStart is the run's train.Start for cfg (train.NewStart), the
// weights a Trainer would start from, with its net's labels checked
// against the job's data (CheckLabels): what the server of a center
// scheme (dsgd ps) builds its center from, with no Trainer.
func (j *Job) NewStart(cfg train.Config) (*train.Start, error) {
	st, err := train.NewStart(cfg)
	if err != nil {
		return nil, err
	}
	if err := j.CheckLabels(st.Net(), j.Train.Spec, j.Test.Spec); err != nil {
		return nil, err
	}
	return st, nil
}

// CheckLabels refuses, before training, a data set whose labels reach
// past the classes of a loss or accuracy layer they feed (which would
// stop the run mid-way), naming the data layer, its source and the layer.
func (j *Job) CheckLabels(net *model.Net, specs ...model.Spec) error {
	for _, r := range net.LabelReaders(specs...) {
		l := r.Layer
		src, ok := j.labelSources[l.Bottom[1]]
		if !ok || r.Use.HasIgnore {
			continue
		}
		if classes := r.Use.Classes; j.labelMax[l.Bottom[1]] >= classes {
			return fmt.Errorf("%s: labels up to %d but layer %q (%s) scores %d classes in %q: a label must be below %d (raise num_output of the layer producing %q, or check the data)",
				src, j.labelMax[l.Bottom[1]], l.Name, l.Config.Type(), classes, l.Bottom[0], classes, l.Bottom[0])
		}
	}
	return nil
}

// startOf is the first global batch of a loader of split.
func startOf(split data.Split, start int) int {
	if split == data.Train {
		return start
	}
	return 0
}

// shuffle is whether the TRAIN loaders reshuffle every epoch:
// Options.Shuffle when given, else true except for a net with recurrent
// layers (LSTM, RNN), whose data rows are time steps in order (LRCN's
// captions, S2VT's frames): shuffled rows would be sequences no longer. The first call on
// such a net says so in the header.
func (j *Job) shuffle() bool {
	if j.opts.ShuffleSet {
		return j.opts.Shuffle
	}
	rec := j.Train.Spec.RecurrentLayers()
	if len(rec) == 0 {
		return j.opts.Shuffle
	}
	if !j.orderNoted {
		j.orderNoted = true
		j.DataDesc = append(j.DataDesc, fmt.Sprintf("in file order: the recurrent layers (%s) read each batch's rows as time steps (Options.Shuffle reshuffles them anyway)", strings.Join(rec, ", ")))
	}
	return false
}

// TrainBatch is each worker's TRAIN batch (the data layers' batch_size or
// Options.Batch), and why it cannot be cut into atoms ("" when it can: every
// TRAIN data layer reads through a loader, which slices the global batch
// by position).
func (j *Job) TrainBatch() (int, string) {
	b := 0
	for _, dl := range j.Train.Data {
		if dl.Type == "DummyData" || dl.Type == "Input" || ((dl.Type == "WindowData" || dl.Type == "AnnotatedData") && j.opts.Data == "") {
			return 0, fmt.Sprintf("data layer %q (%s) has no positions to slice", dl.Name, dl.Type)
		}
		n := dl.BatchSize
		if j.opts.Batch > 0 {
			n = j.opts.Batch
		}
		if b != 0 && n != b {
			return 0, fmt.Sprintf("the TRAIN data layers' batches differ (%d, %d)", b, n)
		}
		b = n
	}
	if b == 0 {
		return 0, "no TRAIN data layer"
	}
	return b, ""
}

// OpenTestFeeds opens the TEST phase's data alone (dsgd test on a net
// without a solver), into TestShapes and TestFeeds.
func (j *Job) OpenTestFeeds() error {
	var err error
	j.TestShapes, j.TestFeeds, err = j.feeds(j.Test, data.Test, 0, 1)
	return err
}
