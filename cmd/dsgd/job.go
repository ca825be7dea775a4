package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"dsgd/config"
	"dsgd/data"
	"dsgd/model"
	"dsgd/nn/layers"
	"dsgd/tensor"
	"dsgd/train"
	"dsgd/zoo"
)

// modelFlags are the flags that choose a net, a solver and their data,
// shared by train, time and bench.
type modelFlags struct {
	model, net, solver, data string
	threads                  int
	seed                     int64
	shuffle                  bool
	batch                    int
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "lenet", "built-in model: "+strings.Join(zoo.Names(), ", ")+" (ignored when --net or --solver is given)")
	fs.StringVar(&m.net, "net", "", "net `FILE` in Caffe's prototxt format (default: the solver's net field)")
	fs.StringVar(&m.solver, "solver", "", "solver `FILE` in Caffe's prototxt format")
	fs.StringVar(&m.data, "data", "", "data `SOURCE` for every Data layer: fashion-mnist, mnist, cifar10, synthetic[:N=..,C=..,H=..,W=..,classes=..,seed=..], or a directory of IDX / CIFAR-10 binary files (default: each layer's source)")
	fs.IntVar(&m.threads, "threads", runtime.NumCPU(), "goroutines each layer computes with")
	fs.Int64Var(&m.seed, "seed", -1, "random seed for weights, shuffling and dropout (default: the solver's random_seed, else 1)")
	fs.BoolVar(&m.shuffle, "shuffle", true, "reshuffle the training set every epoch (Caffe reads it in file order)")
	fs.IntVar(&m.batch, "batch", 0, "override the TRAIN Data layers' batch_size")
}

// job is a resolved model: both phases, the solver and the data feeding
// them.
type job struct {
	name     string // what the user asked for, for the header
	net      *config.NetDef
	solver   *config.SolverDef
	train    *config.PhaseNet
	test     *config.PhaseNet
	seed     uint64
	warnings []string
	// start is the iteration a resumed run continues from: the TRAIN
	// loaders begin at that global batch.
	start int

	trainShapes, testShapes map[string]tensor.Shape
	trainFeeds, testFeeds   []train.Feed
	workerFeeds             [][]train.Feed // workers 1..N-1
	loaders                 []*data.Loader
	sets                    map[string]*data.Dataset
	dataDesc                []string
}

// load parses the net and solver the flags name.
func (m *modelFlags) load() (*job, error) {
	j := &job{sets: map[string]*data.Dataset{}}
	var err error
	switch {
	case m.solver != "":
		j.solver, err = config.LoadSolver(m.solver)
		if err != nil {
			return nil, err
		}
		netPath := m.net
		if netPath == "" {
			netPath = j.solver.Net
		}
		if netPath == "" {
			return nil, fmt.Errorf("--solver %s has no net field; pass --net FILE", m.solver)
		}
		j.net, err = config.LoadNet(netPath)
		j.name = netPath
	case m.net != "":
		return nil, errors.New("--net needs --solver FILE too (the solver says how to train); or use --model NAME")
	default:
		netSrc, solverSrc, zerr := zoo.Get(m.model)
		if zerr != nil {
			return nil, fmt.Errorf("--model: %w", zerr)
		}
		j.solver, err = config.ParseSolver(m.model+"_solver.prototxt", solverSrc)
		if err != nil {
			return nil, err
		}
		j.net, err = config.ParseNet(m.model+".prototxt", netSrc)
		j.name = m.model + " (built-in)"
	}
	if err != nil {
		return nil, err
	}
	j.warnings = append(append(j.warnings, j.solver.Warnings...), j.net.Warnings...)
	if j.train, err = j.net.Phase(layers.Train); err != nil {
		return nil, err
	}
	if j.test, err = j.net.Phase(layers.Test); err != nil {
		return nil, err
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
	}
	return nil
}

// trainBatch is the batch size every TRAIN Data layer shares (--batch
// applied), or 0 when they differ or there are none.
func (j *job) trainBatch(m *modelFlags) int {
	b := 0
	for _, dl := range j.train.Data {
		bs := dl.BatchSize
		if m.batch > 0 {
			bs = m.batch
		}
		if b != 0 && bs != b {
			return 0
		}
		b = bs
	}
	return b
}

// openShard opens the data of one rank of a multi-process group: its
// shard of the TRAIN set (of workers shards), and the TEST set if needed.
func (j *job) openShard(m *modelFlags, needTest bool, rank, workers int) error {
	var err error
	j.trainShapes, j.trainFeeds, err = j.feeds(m, j.train, data.Train, rank, workers)
	if err != nil {
		return err
	}
	if needTest && len(j.test.Spec.Layers) > 0 {
		j.testShapes, j.testFeeds, err = j.feeds(m, j.test, data.Test, 0, 1)
	}
	return err
}

func (j *job) feeds(m *modelFlags, pn *config.PhaseNet, split data.Split, rank, world int) (map[string]tensor.Shape, []train.Feed, error) {
	shapes := map[string]tensor.Shape{}
	var feeds []train.Feed
	for i, dl := range pn.Data {
		if dl.Type != "Data" {
			return nil, nil, fmt.Errorf("%s: %s layer %q has no data source: dsgd trains from Data layers (data_param { source batch_size })", dl.Pos, dl.Type, dl.Name)
		}
		src := dl.Source
		if m.data != "" {
			src = m.data
		}
		key := src + "\x00" + split.String()
		ds, ok := j.sets[key]
		if !ok {
			var err error
			ds, err = data.Open(src, split)
			if err != nil {
				if m.data == "" {
					return nil, nil, fmt.Errorf("%s: data layer %q: %w (override the source with --data)", dl.Pos, dl.Name, err)
				}
				return nil, nil, fmt.Errorf("--data: %w", err)
			}
			j.sets[key] = ds
			j.dataDesc = append(j.dataDesc, fmt.Sprintf("%s %s: %d images %dx%dx%d", src, split, ds.N, ds.C, ds.H, ds.W))
		}
		batch := dl.BatchSize
		if m.batch > 0 && split == data.Train {
			batch = m.batch
		}
		l, err := data.NewLoader(ds, data.LoaderConfig{
			BatchSize: batch,
			Train:     split == data.Train,
			Shuffle:   split == data.Train && m.shuffle,
			Seed:      j.seed + uint64(i),
			Rank:      rank,
			World:     world,
			// TRAIN: each worker takes its slice of every global batch,
			// so the images of iteration t do not depend on the worker
			// count, and a resumed run reads on from its iteration.
			Slice:     split == data.Train,
			Start:     int64(startOf(split, j.start)),
			Transform: dl.Transform,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: data layer %q: %w", dl.Pos, dl.Name, err)
		}
		j.loaders = append(j.loaders, l)
		s := l.Shape()
		if len(dl.Tops) > 0 {
			shapes[dl.Tops[0]] = tensor.Shape{s[0], s[1], s[2], s[3]}
		}
		if len(dl.Tops) > 1 {
			shapes[dl.Tops[1]] = tensor.Shape{s[0]}
		}
		if len(dl.Tops) > 2 {
			return nil, nil, fmt.Errorf("%s: data layer %q has %d tops; dsgd's Data layer has data and label", dl.Pos, dl.Name, len(dl.Tops))
		}

		feeds = append(feeds, train.Feed{Tops: dl.Tops, Source: train.Loader{L: l, Name: dl.Name}})
	}
	return shapes, feeds, nil
}

func (j *job) close() {
	for _, l := range j.loaders {
		l.Close()
	}
}

func (j *job) printHeader(w io.Writer, net *model.Net, threads, maxIter int) {
	fmt.Fprintf(w, "dsgd: net %s, %d parameters in %d blobs\n", j.name, len(net.Params()), len(net.Blocks()))
	for _, d := range j.dataDesc {
		fmt.Fprintf(w, "dsgd: data %s\n", d)
	}
	sc := j.solver.Solver
	fmt.Fprintf(w, "dsgd: solver %s, base_lr %g, lr_policy %s, momentum %g, weight_decay %g, max_iter %d\n", orDefault(sc.Type, "SGD"), sc.BaseLR, sc.LRPolicy, sc.Momentum, sc.WeightDecay, maxIter)
	fmt.Fprintf(w, "dsgd: %d threads, GEMM %s, seed %d\n", threads, tensor.Backend, j.seed)
	for _, wn := range j.warnings {
		fmt.Fprintf(w, "dsgd: warning: %s\n", wn)
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// startOf is the first global batch of a loader of split.
func startOf(split data.Split, start int) int {
	if split == data.Train {
		return start
	}
	return 0
}
