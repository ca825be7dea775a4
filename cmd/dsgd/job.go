package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/zoo"
	"dsgd/data"
	"dsgd/data/db"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// modelFlags are the flags that choose a net, a solver and their data,
// shared by train, time and bench.
type modelFlags struct {
	model, net, solver, data string
	threads                  int
	seed                     int64
	// netOnly lets a net file be loaded without a solver (dsgd time).
	netOnly bool
	// stages and level (when levelSet) are --stage and --level: the
	// NetState the train net's layers are selected with, as caffe's flags.
	stages   string
	level    int
	levelSet bool
	shuffle  bool
	// shuffleSet: --shuffle was given, so a recurrent net's rows are
	// reshuffled too.
	shuffleSet bool
	batch      int
	// gpu is Caffe's -gpu IDS: dsgd has no GPU engine yet, so it is noted
	// and the run is on the CPU.
	gpu string
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "lenet", "built-in model: "+strings.Join(zoo.Names(), ", ")+" (ignored when --net or --solver is given)")
	fs.StringVar(&m.net, "net", "", "net `FILE` in Caffe's prototxt format (default: the solver's net field)")
	fs.StringVar(&m.solver, "solver", "", "solver `FILE` in Caffe's prototxt format")
	fs.StringVar(&m.data, "data", "", "data `SOURCE` for every data layer: a Caffe LMDB or LevelDB of Datum records (its backend detected), fashion-mnist, mnist, cifar10, synthetic[:N=..,C=..,H=..,W=..,classes=..,seed=..], or a directory of IDX / CIFAR-10 binary files (default: each layer's source)")
	fs.IntVar(&m.threads, "threads", runtime.NumCPU(), "goroutines each layer computes with")
	fs.Int64Var(&m.seed, "seed", -1, "random seed for weights, shuffling and dropout (default: the solver's random_seed, else 1)")
	m.shuffle = true
	fs.BoolFunc("shuffle", "reshuffle the training set every epoch (default true, but false for a net with LSTM or RNN layers, whose rows are time steps; Caffe reads in file order)", func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}
		m.shuffle, m.shuffleSet = b, true
		return nil
	})
	fs.IntVar(&m.batch, "batch", 0, "override the TRAIN Data layers' batch_size (and the first axis of Input layers in dsgd time)")
	registerKernels(fs)
	fs.StringVar(&m.gpu, "gpu", "", "Caffe's -gpu `IDS` (0, 0,1 or all): dsgd has no GPU engine yet, so the run is on the CPU, with a note")
	fs.StringVar(&m.stages, "stage", "", "`STAGES` (comma-separated) of the net's state, selecting layers by include/exclude { stage }, as caffe's --stage")
	fs.Func("level", "the net state's `LEVEL`, selecting layers by min_level/max_level, as caffe's --level", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer")
		}
		m.level, m.levelSet = n, true
		return nil
	})
}

// state is the NetState of the train net: the net's own state, then the
// solver's train_state, then --stage and --level, merged as Caffe merges
// them.
func (m *modelFlags) state(netState, solverState caffedef.NetState) caffedef.NetState {
	st := mergeState(netState, solverState)
	for _, s := range strings.Split(m.stages, ",") {
		if s = strings.TrimSpace(s); s != "" {
			st.Stages = append(st.Stages, s)
		}
	}
	if m.levelSet {
		st.Level = m.level
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
func (j *job) loadTestNet() error {
	tns := j.solver.TestNets
	if len(tns) == 0 {
		return nil
	}
	load := func(src caffedef.NetSource) (*caffedef.NetDef, error) {
		if src.Field == j.solver.TrainNet.Field && src.Pos == j.solver.TrainNet.Pos {
			return j.net, nil
		}
		n, err := src.Load()
		if err != nil {
			return nil, err
		}
		j.warnings = append(j.warnings, n.Warnings...)
		j.notes = append(j.notes, n.Notes...)
		return n, nil
	}
	for i, tn := range tns {
		n, err := load(tn.Source)
		if err != nil {
			return err
		}
		if i == 0 {
			if n != j.net {
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

// job is a resolved model: both phases, the solver and the data feeding
// them.
type job struct {
	name     string // what the user asked for, for the header
	net      *caffedef.NetDef
	solver   *caffedef.SolverDef
	train    *caffedef.PhaseNet
	test     *caffedef.PhaseNet
	seed     uint64
	warnings []string
	// notes say what was upgraded from an old file format (stderr).
	notes []string
	// orderNoted: the header says why the TRAIN rows keep file order.
	orderNoted bool
	// inputNoted: the header says why --batch left the Input layers alone.
	inputNoted bool
	// testNet is the solver's first test net when it is not the train
	// net's file (test_net, test_net_param, or a --net override); nil
	// means the TEST phase of net.
	testNet *caffedef.NetDef
	// extraNets are the TEST phases of the solver's second and later
	// test nets; extraTests their nets and data for train, once opened.
	extraNets  []*caffedef.PhaseNet
	extraTests []train.TestNet
	// noSolver marks a net loaded without a solver (dsgd time on a
	// deploy net); solver then holds an empty SolverDef.
	noSolver bool
	// trainErr and testErr are why the TRAIN or TEST phase of a net
	// loaded without a solver cannot be built (train or test then holds
	// an empty phase): only the command that runs that phase fails.
	trainErr, testErr error
	// start is the iteration a resumed run continues from: the TRAIN
	// loaders begin at that global batch.
	start int
	// atom, when set (--reduce exact), is the TRAIN loaders' batch: one
	// atom per pass; trainPasses is the loader batches one iteration
	// reads (iter_size times the atoms per worker; 0 counts as 1).
	atom, trainPasses int

	// trainSetSize is the images of the first TRAIN Data layer's set
	// (one epoch), 0 when unknown.
	trainSetSize int

	trainShapes, testShapes map[string]tensor.Shape
	trainFeeds, testFeeds   []train.Feed
	workerFeeds             [][]train.Feed // workers 1..N-1
	loaders                 []*data.Loader
	sets                    map[string]*data.Dataset
	labelSources            map[string]string // label blob -> the data layer and source feeding it
	labelMax                map[string]int    // label blob -> the largest label fed to it
	dataDesc                []string
	bufferBytes             float64 // the loaders' batch buffers so far
	// trainLoaders are the TRAIN feeds' loaders and trainBytes their
	// buffers (an elastic generation replaces them); offset is where in
	// the data sequence the TRAIN loaders start (data.LoaderConfig.Offset).
	trainLoaders []*data.Loader
	trainBytes   float64
	offset       int64
}

// load parses the net and solver the flags name.
func (m *modelFlags) load() (*job, error) {
	j := &job{sets: map[string]*data.Dataset{}, labelSources: map[string]string{}, labelMax: map[string]int{}}
	var err error
	switch {
	case m.solver != "":
		j.solver, err = caffedef.LoadSolver(m.solver)
		if err != nil {
			return nil, err
		}
		src := j.solver.TrainNet
		if m.net != "" {
			src = caffedef.NetSource{Field: "--net", Path: m.net}
		}
		if src.Field == "" {
			return nil, fmt.Errorf("--solver %s names no train net (net, net_param, train_net or train_net_param); pass --net FILE", m.solver)
		}
		j.net, err = src.Load()
		j.name = src.String()
		if err == nil && m.net == "" {
			err = j.loadTestNet()
		}
	case m.net != "" && m.netOnly, netFile(m.model) && m.netOnly:
		// dsgd time, like caffe time, needs only the net.
		path := m.net
		if path == "" {
			path = m.model
		}
		j.solver = &caffedef.SolverDef{RandomSeed: -1}
		j.noSolver = true
		j.net, err = caffedef.LoadNet(path)
		j.name = path
	case m.net != "":
		return nil, errors.New("--net needs --solver FILE too (the solver says how to train); or use --model NAME")
	case netFile(m.model):
		return nil, fmt.Errorf("--model %s: a net file needs --solver FILE too (the solver says how to train); --model FILE alone works for dsgd time", m.model)
	default:
		netSrc, solverSrc, zerr := zoo.Get(m.model)
		if zerr != nil {
			return nil, fmt.Errorf("--model: %w", zerr)
		}
		j.solver, err = caffedef.ParseSolver(m.model+"_solver.prototxt", solverSrc)
		if err != nil {
			return nil, err
		}
		j.net, err = caffedef.ParseNet(m.model+".prototxt", netSrc)
		j.name = m.model + " (built-in)"
	}
	if err != nil {
		return nil, err
	}
	j.warnings = append(append(j.warnings, j.solver.Warnings...), j.net.Warnings...)
	j.notes = append(append(j.notes, j.solver.Notes...), j.net.Notes...)
	// A net file without a solver is run in one phase only, as caffe
	// time (TRAIN) and caffe test (TEST) build one: an error in the
	// other phase is kept for the command that needs that phase.
	if j.train, err = j.net.PhaseState(layers.Train, m.state(j.net.State, j.solver.TrainState)); err != nil {
		if !j.noSolver {
			return nil, err
		}
		j.train, j.trainErr = &caffedef.PhaseNet{Phase: layers.Train}, err
	}
	testDef := j.net
	if j.testNet != nil {
		testDef = j.testNet
	}
	testState := testDef.State
	if tns := j.solver.TestNets; len(tns) > 0 && m.net == "" {
		testState = mergeState(testDef.State, tns[0].State)
	}
	if j.test, err = testDef.PhaseState(layers.Test, testState); err != nil {
		// Caffe builds no test net for a solver without test nets or
		// test_iter: its TEST phase may then be incomplete (a TRAIN-only
		// data layer), and only --test-iter asks for it.
		if !j.noSolver && len(j.solver.TestNets) > 0 {
			return nil, err
		}
		j.test, j.testErr = &caffedef.PhaseNet{Phase: layers.Test}, err
	}
	j.seed = 1
	switch {
	case m.seed >= 0:
		j.seed = uint64(m.seed)
	case j.solver.RandomSeed >= 0:
		j.seed = uint64(j.solver.RandomSeed)
	}
	return j, nil
}

// openData opens every Data layer's dataset and starts its loaders: one
// per worker for TRAIN, each reading its shard. With needTest false the
// TEST phase is left without feeds.
func (j *job) openData(m *modelFlags, needTest bool, workers int) error {
	var err error
	j.trainShapes, j.trainFeeds, err = j.feeds(m, j.train, data.Train, 0, workers)
	if err != nil {
		return err
	}
	for r := 1; r < workers; r++ {
		_, f, err := j.feeds(m, j.train, data.Train, r, workers)
		if err != nil {
			return err
		}
		j.workerFeeds = append(j.workerFeeds, f)
	}
	if needTest && len(j.test.Spec.Layers) > 0 {
		j.testShapes, j.testFeeds, err = j.feeds(m, j.test, data.Test, 0, 1)
		if err != nil {
			return err
		}
		return j.openExtraTests(m)
	}
	return nil
}

// openExtraTests opens the data of the solver's second and later test
// nets.
func (j *job) openExtraTests(m *modelFlags) error {
	j.extraTests = nil
	for i, pn := range j.extraNets {
		shapes, feeds, err := j.feeds(m, pn, data.Test, 0, 1)
		if err != nil {
			return fmt.Errorf("test net %d: %w", i+2, err)
		}
		j.extraTests = append(j.extraTests, train.TestNet{Spec: pn.Spec, Shapes: shapes, Feeds: feeds, Iter: j.solver.TestNets[i+1].Iter})
	}
	return nil
}

// openShard opens the data of one rank of a multi-process group: its
// shard of the TRAIN set (of workers shards), and the TEST set if needed.
func (j *job) openShard(m *modelFlags, needTest bool, rank, workers int) error {
	var err error
	n0, b0 := len(j.loaders), j.bufferBytes
	j.trainShapes, j.trainFeeds, err = j.feeds(m, j.train, data.Train, rank, workers)
	if err != nil {
		return err
	}
	j.trainLoaders, j.trainBytes = slices.Clone(j.loaders[n0:]), j.bufferBytes-b0
	if needTest && len(j.test.Spec.Layers) > 0 {
		j.testShapes, j.testFeeds, err = j.feeds(m, j.test, data.Test, 0, 1)
		if err == nil {
			err = j.openExtraTests(m)
		}
	}
	return err
}

// reopenTrain replaces the TRAIN feeds with those of rank of world in an
// elastic generation, reading on from position pos of the data sequence,
// and closes the loaders they replace.
func (j *job) reopenTrain(m *modelFlags, rank, world int, pos int64) ([]train.Feed, error) {
	for _, l := range j.trainLoaders {
		l.Close()
		j.loaders = slices.DeleteFunc(j.loaders, func(x *data.Loader) bool { return x == l })
	}
	j.bufferBytes -= j.trainBytes
	j.start, j.offset = 0, pos
	n0, b0 := len(j.loaders), j.bufferBytes
	_, feeds, err := j.feeds(m, j.train, data.Train, rank, world)
	j.trainLoaders, j.trainBytes = slices.Clone(j.loaders[n0:]), j.bufferBytes-b0
	if err != nil {
		return nil, err
	}
	j.trainFeeds = feeds
	return feeds, nil
}

func (j *job) feeds(m *modelFlags, pn *caffedef.PhaseNet, split data.Split, rank, world int) (map[string]tensor.Shape, []train.Feed, error) {
	shapes := map[string]tensor.Shape{}
	var feeds []train.Feed
	for i, dl := range pn.Data {
		if dl.Type == "DummyData" {
			for k, t := range dl.Tops {
				shapes[t] = tensor.Shape(dl.Shapes[k])
			}
			feeds = append(feeds, train.Feed{Tops: dl.Tops, Source: &data.Dummy{Name: dl.Name, Fillers: dummyFillers(dl.Fillers), Seed: j.seed + uint64(i) + uint64(rank)<<32}})
			continue
		}
		if dl.Type == "Input" {
			// An Input layer's blobs are filled by whoever runs the net;
			// dsgd time leaves them at zero, as caffe time does.
			batch := m.batch
			if rec := pn.Spec.RecurrentLayers(); batch > 0 && len(rec) > 0 {
				// Time-major inputs (T×N) beside N×D ones: no one axis
				// is the batch, so the deploy shapes stand.
				batch = 0
				if !j.inputNoted {
					j.inputNoted = true
					j.dataDesc = append(j.dataDesc, fmt.Sprintf("Input layers keep their shapes under --batch %d: the recurrent layers (%s) read the first axis as time steps", m.batch, strings.Join(rec, ", ")))
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
		if m.data != "" {
			src, typ = m.data, "Data"
		} else if typ == "WindowData" {
			feed, err := windowFeed(dl, m.batch, split, j.seed+uint64(i)+uint64(rank)<<32, shapes)
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
				if m.data == "" {
					return nil, nil, fmt.Errorf("%s: data layer %q: %w", dl.Pos, dl.Name, err)
				}
				return nil, nil, fmt.Errorf("--data: %w", err)
			}
			backend, err := db.ParseBackend(orDefault(dl.Backend, "LEVELDB"))
			if err != nil {
				return nil, nil, err
			}
			ds, err = data.OpenSource(data.SourceConfig{
				Type: typ, Path: src, Split: split, Tops: dl.Tops,
				Backend: backend, AnyBackend: m.data != "",
				Channels: dl.Channels, RootFolder: dl.RootFolder,
				NewHeight: dl.NewHeight, NewWidth: dl.NewWidth,
			})
			if err != nil {
				if m.data == "" {
					return nil, nil, fmt.Errorf("%s: data layer %q: %w (override the source with --data)", dl.Pos, dl.Name, err)
				}
				return nil, nil, fmt.Errorf("--data: %w", err)
			}
			j.sets[key] = ds
			if _, isDB := db.Detect(src); isDB && m.data != "" && split == data.Test {
				j.warnings = append(j.warnings, fmt.Sprintf("--data %s is one database (one split): the TEST phase reads it too; give each layer its own source to test on held-out data", src))
			}
			desc := fmt.Sprintf("%s %s: %d images %dx%dx%d", src, split, ds.N, ds.C, ds.H, ds.W)
			if ds.Stream != nil {
				desc += ", streamed from the database"
			}
			j.dataDesc = append(j.dataDesc, desc)
		}
		if split == data.Train && j.trainSetSize == 0 {
			j.trainSetSize = ds.N
		}
		batch := dl.BatchSize
		if m.batch > 0 && split == data.Train {
			batch = m.batch
		}
		configured, sizeNote := batch, ""
		if j.atom > 0 && split == data.Train {
			// --reduce exact: the loader reads one atom per pass.
			sizeNote = fmt.Sprintf(" (read in atoms of %d)", j.atom)
			batch = j.atom
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
			Shuffle:   split == data.Train && (j.shuffle(m) || dl.Shuffle),
			RandSkip:  dl.RandSkip,
			Seed:      j.seed + uint64(i),
			Rank:      rank,
			World:     world,
			// TRAIN: each worker takes its slice of every global batch,
			// so the images of iteration t do not depend on the worker
			// count, and a resumed run reads on from its iteration.
			Slice:     split == data.Train,
			Start:     int64(startOf(split, j.start) * max(j.trainPasses, 1)),
			Offset:    int64(startOf(split, int(j.offset))),
			Transform: dl.Transform,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: data layer %q: %w", dl.Pos, dl.Name, err)
		}
		j.loaders = append(j.loaders, l)
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

func (j *job) close() {
	for _, l := range j.loaders {
		l.Close()
	}
	for _, ds := range j.sets {
		ds.Close()
	}
}

func (j *job) printHeader(w, ew io.Writer, net *model.Net, threads, maxIter int, sc solver.Config) {
	fmt.Fprintf(w, "dsgd: net %s, %d parameters in %d blobs\n", j.name, len(net.Params()), len(net.Blocks()))
	for _, d := range j.dataDesc {
		fmt.Fprintf(w, "dsgd: data %s\n", d)
	}
	if !j.noSolver {
		fmt.Fprintf(w, "dsgd: solver %s, base_lr %.6g, lr_policy %s, momentum %g, weight_decay %g, max_iter %d\n", orDefault(sc.Type, "SGD"), sc.BaseLR, sc.LRPolicy, sc.Momentum, sc.WeightDecay, maxIter)
	}
	fmt.Fprintf(w, "dsgd: %d threads, seed %d\n", threads, j.seed)
	printEngine(w, ew)
	printLayerKernels(w, net)
	for _, wn := range j.warnings {
		fmt.Fprintf(ew, "dsgd: warning: %s\n", wn)
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

// checkLabels refuses, before training, a data set whose labels reach
// past the classes of a loss or accuracy layer they feed (which would
// stop the run mid-way), naming the data layer, its source and the layer.
func (j *job) checkLabels(net *model.Net, specs ...model.Spec) error {
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

// shuffle is whether the TRAIN loaders reshuffle every epoch: --shuffle
// when given, else true except for a net with recurrent layers (LSTM,
// RNN), whose data rows are time steps in order (LRCN's captions, S2VT's
// frames): shuffled rows would be sequences no longer. The first call on
// such a net says so in the header.
func (j *job) shuffle(m *modelFlags) bool {
	if m.shuffleSet {
		return m.shuffle
	}
	rec := j.train.Spec.RecurrentLayers()
	if len(rec) == 0 {
		return m.shuffle
	}
	if !j.orderNoted {
		j.orderNoted = true
		j.dataDesc = append(j.dataDesc, fmt.Sprintf("in file order: the recurrent layers (%s) read each batch's rows as time steps (--shuffle reshuffles them anyway)", strings.Join(rec, ", ")))
	}
	return false
}

// noteGPU says on stderr that Caffe's -gpu was read and the run is on the
// CPU.
func (m *modelFlags) noteGPU(cmd string, stderr io.Writer) {
	if m.gpu != "" {
		fmt.Fprintf(stderr, "dsgd %s: note: --gpu %s: dsgd has no GPU engine yet; running on the CPU\n", cmd, m.gpu)
	}
}
