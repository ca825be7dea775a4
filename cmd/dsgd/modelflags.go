package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"dsgd/caffe/zoo"
	"dsgd/cmd/internal/enginebench"
	"dsgd/engine/cuda"
	"dsgd/training/job"
)

// modelFlags are the flags that choose a net, a solver and their data,
// shared by train, time and bench.
type modelFlags struct {
	model, net, solver, data string
	threads                  int
	seed                     int64
	// netOnly lets a net file be loaded without a solver (dsgd time).
	netOnly bool
	// testOnly: the command runs the TEST nets alone (dsgd test), so a
	// TRAIN phase that does not build is not refused on loading.
	testOnly bool
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
	// gpu is Caffe's -gpu IDS, checked against the GPUs into gpuIDs
	// (checkGPU); tf32 allows TF32 tensor cores there.
	gpu     string
	gpuIDs  []int
	tf32    bool
	fastest bool
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
	fs.StringVar(&m.gpu, "gpu", "", "Caffe's -gpu `IDS` (0, 0,1 or all): run the nets on these GPUs (worker i on the i-th, round robin; several workers may share one); refused where there is no GPU")
	fs.BoolVar(&m.fastest, "gpu-fastest", false, "with --gpu, take cuDNN's fastest convolution algorithms even where they are not deterministic (default: the fastest deterministic ones, so that a run repeats its bits)")
	fs.BoolVar(&m.tf32, "tf32", false, "with --gpu, let cuBLAS and cuDNN use TF32 tensor cores for float32 products (default: fp32 throughout)")
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

// options are the job's options the flags give.
func (m *modelFlags) options() job.Options {
	return job.Options{
		Model: m.model, Net: m.net, Solver: m.solver, Data: m.data, Seed: m.seed,
		NetOnly: m.netOnly, TestOnly: m.testOnly, Stages: m.stages, Level: m.level, LevelSet: m.levelSet,
		Shuffle: m.shuffle, ShuffleSet: m.shuffleSet, Batch: m.batch,
	}
}

// load parses the net and solver the flags name.
func (m *modelFlags) load() (*job.Job, error) { return job.Load(m.options()) }

// checkGPU reads Caffe's -gpu IDS into gpuIDs. Where there is no GPU
// (no driver, no device, an index past the last, a purego build) the
// command is refused with what is missing and how to go on, as Caffe
// built without CUDA refuses -gpu; where there is one, the GPUs are
// named with the driver's and the libraries' versions.
func (m *modelFlags) checkGPU(cmd string, stderr io.Writer) error {
	if m.gpu == "" {
		if m.tf32 || m.fastest {
			return errors.New("--tf32 and --gpu-fastest without --gpu: they set the GPU's math")
		}
		return nil
	}
	in, err := cuda.Probe()
	if err != nil {
		return fmt.Errorf("--gpu %s: %w; run without --gpu to train on the CPU", m.gpu, err)
	}
	ids, err := cuda.ParseIDs(m.gpu, len(in.Devices))
	if err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintf(stderr, "dsgd %s: %s; driver CUDA %s, cuBLAS %s, cuDNN %s\n", cmd, in.Devices[id], in.DriverVersion(), in.CUBLAS, in.CUDNN)
	}
	m.gpuIDs = ids
	return nil
}

// gpuSpec is the GPU the flags choose (after checkGPU), for
// enginebench.OnGPU.
func (m *modelFlags) gpuSpec() enginebench.GPU {
	return enginebench.GPU{Flag: m.gpu, ID: m.gpuIDs[0], TF32: m.tf32, Fastest: m.fastest, Seed: m.seed}
}
