package train

import (
	"context"
	"errors"
	"io"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/compress"
	"dsgd/comm/transport"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/solver"
	"dsgd/engine/tensor"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/metrics"
	"dsgd/training/timeline"
)

// Source fills the blobs of one data layer with the next batch. Fill must
// write every element of every blob it is given.
type Source interface {
	Fill(ctx context.Context, tops []*tensor.Blob) error
}

// Feed binds a Source to the input blobs it fills (a Data layer's tops).
type Feed struct {
	Tops   []string
	Source Source
}

// Phase timer indices, in report order.
const (
	PhaseData = iota
	PhaseForward
	PhaseBackward
	PhaseUpdate
)

const numPhases = PhaseUpdate + 1

// PhaseNames names the phases of a training iteration, in report order.
var PhaseNames = []string{"data", "forward", "backward", "update"}

// Config is one single-worker training run: Caffe's Solver::Solve.
type Config struct {
	// Train and Test are the nets of each phase; Test may have no layers,
	// which disables testing.
	Train, Test model.Spec
	// TrainShapes and TestShapes give the shape of every input blob.
	TrainShapes, TestShapes map[string]tensor.Shape
	// TrainFeeds and TestFeeds fill the inputs every iteration.
	TrainFeeds, TestFeeds []Feed

	Solver solver.Config
	// IterSize is Caffe's iter_size: each iteration's compute step runs
	// forward and backward on IterSize batches and contributes the mean
	// of their gradients (and of their losses), so one update sees
	// IterSize×batch samples per worker (1 when zero).
	IterSize int
	// Exact makes a synchronous scheme reproduce seq bit for bit at any
	// worker count (issue 27, package engine/tensor/exact): each of the IterSize
	// passes is one atom of the global batch, its gradients are rounded
	// onto a fixed grid and summed as integers, and the schemes reduce
	// those sums' digits, which no order or partition changes. The
	// caller makes each feed's batch one atom, and IterSize the atoms per
	// worker, so that IterSize×Workers atoms make the global batch.
	Exact bool
	// TestInterval runs the test net every TestInterval iterations (0:
	// only at the end), over TestIter batches.
	TestInterval, TestIter int
	// TestInitialization tests before the first iteration, as Caffe does.
	TestInitialization bool
	// Detection, when set, is SSD's eval_type "detection": every output of
	// every test net is read as DetectionEvaluate rows, accumulated over
	// the test batches, and reported as its mean average precision (the
	// fork's Solver::TestDetection) instead of averaged. Nil is Caffe's
	// classification: each scalar output averaged.
	Detection *DetectionEval
	// ExtraTests are further test nets (Caffe's second and later test_net
	// with their test_iter), tested after Test at every test pass; their
	// outputs are reported as "netK/NAME", K counting from 1.
	ExtraTests []TestNet
	// Display prints progress every Display iterations (0: never).
	Display int
	// AverageLoss makes the displayed loss the mean of the last
	// AverageLoss iterations' losses (Caffe's average_loss); 0 or 1
	// displays the last iteration's, as Caffe does by default.
	AverageLoss int
	// NoFinalSnapshot skips the snapshot at the end of training (Caffe's
	// snapshot_after_train: false); interval snapshots are still written.
	NoFinalSnapshot bool
	// Snapshot writes a snapshot every Snapshot iterations (0: only at the
	// end) to SnapshotPrefix + "_iter_N.dsgdsnap". An empty prefix disables
	// snapshots.
	Snapshot       int
	SnapshotPrefix string
	// SnapshotFormat is FormatDsgd ("" too), FormatCaffe or FormatHDF5.
	SnapshotFormat string
	// Weights lists .caffemodel files whose layers are copied into the
	// initial weights by name, in order (caffe train --weights).
	Weights []string
	// Resume, when set, is a snapshot to continue from.
	Resume string
	// Run is the run's configuration, recorded in every snapshot for a
	// resume to restore (opaque here; dsgd writes its flags as JSON).
	Run []byte
	// Seed seeds the parameter fillers and every random layer.
	Seed uint64
	// Threads is how many goroutines the layers use.
	Threads int
	// GPUs, when set, runs the nets on these GPUs (engine/gpunet): this
	// process's local rank i on GPUs[i mod len(GPUs)], its TEST nets on
	// GPUs[0]; the solver and the schemes work on the host's copies.
	// TF32 lets cuBLAS and cuDNN use TF32 tensor cores (off: fp32).
	GPUs []int
	TF32 bool
	// GPUFastest takes cuDNN's fastest convolution algorithms even where
	// they are not deterministic (default: the fastest deterministic ones,
	// so that a run repeats its bits).
	GPUFastest bool
	// Out receives progress and reports; TTY redraws the progress bar in
	// place.
	Out io.Writer
	TTY bool

	// Config is the parallel scheme and its settings: Name (one of
	// scheme.Names; "" means seq), Workers (1 when zero), MaxIter (the
	// iteration to stop at; a run starting there runs no iteration, and
	// snapshots and tests its starting weights, as Caffe's max_iter: 0),
	// Pack (all layers as one message; the command's default), overlap's
	// Bucket, and the asynchronous, elastic and outer schemes' Interval,
	// Staleness, Alpha, OuterMomentum, Variant, Groups, and
	// streaming-diloco's Fragments, Overlap, Mix and OuterBits. What the
	// run decides itself (StartIter, Layout, GradWidth, AverageGrads,
	// Accumulate, Aligned, Broadcast) is set by the Trainer; values given
	// there are not used.
	scheme.Config
	// WorkerFeeds are the TRAIN feeds of workers 1 and up: worker r > 0
	// reads WorkerFeeds[r-1]; worker 0 reads TrainFeeds.
	WorkerFeeds [][]Feed
	// Algo overrides the allreduce algorithm for every allreduce
	// (collective.Auto: the scheme's choice).
	Algo collective.Algorithm
	// CommTimeout bounds a wait for a peer (0: none).
	CommTimeout time.Duration
	// Compress is the synchronous schemes' gradient compressor (package
	// compress; only its Gradient kinds act here: fp16 is the tcp
	// transport's wire). It needs float32 sums (not Exact) and a scheme
	// that allreduces gradients: sync-ring, sync-tree, overlap (whose
	// in-process accumulator it then bypasses) and local-sgd averaging
	// gradients every iteration.
	Compress compress.Spec
	// CompressWarmup is how many iterations from the run's start reduce
	// plain gradients before the compressor starts.
	CompressWarmup int
	// Group, when set, makes this process one rank of a multi-process
	// group (TCP): it runs only rank Group.Rank, fed by TrainFeeds
	// (WorkerFeeds is unused), over Deps.Endpoint. Without it every rank
	// runs in this process over in-process endpoints.
	Group *Group
	// Elastic makes the group elastic (ElasticRefusal says when it may
	// be): Run takes each generation's place, endpoint and TRAIN feeds
	// from Deps.Elastic, which replace Group's, and Workers and TrainFeeds
	// follow each generation.
	Elastic bool
	// Metrics, when set, receives the run's records: one per iteration
	// per worker (IterMetrics, kind "train") and one per test net per
	// test pass (TestMetrics, kind "test"), written as MetricsFormat says.
	Metrics io.Writer
	// MetricsFormat is how Metrics is written: JSON lines (the default)
	// or CSV.
	MetricsFormat MetricsFormat
	// MetricsNoHeader, with MetricsCSV, writes no header line: the
	// records are appended to a file that has one (a resumed run's).
	MetricsNoHeader bool
	// TrainSetSize is the number of images in the training set (one
	// epoch), for the records' epoch; 0 when unknown.
	TrainSetSize int
	// CaffeLog, when set, receives a training log shaped like Caffe's
	// (glog lines from solver.cpp: "Iteration N, loss = L", "Test net
	// output #0: accuracy = A", ...), which Caffe's
	// tools/extra/parse_log.py reads. Only rank 0 writes it.
	CaffeLog io.Writer
	// Timeline, when set, receives a trace of every local rank's work
	// (see traceRank): per-layer forward and backward, communication,
	// updates and waits. The caller closes it after Run.
	Timeline *timeline.Writer

	// Finish is the asynchronous schemes' aligned-termination rule.
	Finish center.Finish
	// RoundDeadline is how long a weed-out round waits after its first
	// gradients (0: for every worker).
	RoundDeadline time.Duration
	// MaxUpdateNorm, when > 0, makes the center refuse an update whose L2
	// norm exceeds it (center.Config.MaxUpdateNorm); non-finite updates
	// are refused always.
	MaxUpdateNorm float64
	// Straggle slows workers down for experiments (nil: none).
	Straggle *Straggler
	// TimeBudget, when positive, ends training at the first iteration
	// after this much training time (testing excluded), as a normal end
	// with the final test and snapshot.
	TimeBudget time.Duration
}

// errBudget ends a run whose time budget is spent.
var errBudget = errors.New("time budget spent")

// ErrDiverged is wrapped by the error of a run whose loss or weights
// became non-finite or exploded: no snapshot is written of such a state.
var ErrDiverged = errors.New("training diverged")

// MaxSnapshotWeight is the largest weight magnitude a snapshot may hold:
// beyond it the run has exploded (a learning rate schedule that grows, a
// gradient blow-up) and the weights are worth nothing to resume from.
const MaxSnapshotWeight = 1e8

// Straggler delays a worker's computation: rank Rank every iteration, or,
// with Rank < 0, any worker with probability Prob per iteration.
type Straggler struct {
	Rank  int
	Prob  float64
	Delay time.Duration
}

// Group places a trainer in a multi-process group: its rank and the
// group's size. The endpoint that connects it is a dependency of the run
// (Deps.Endpoint), connected once the trainer is built, since the
// connection checks every rank's LayoutHash.
type Group struct {
	Rank, Size int
}

// Deps are what a run uses that a Config cannot hold: the connections
// and callbacks that exist only once the trainer is built (connecting
// checks its LayoutHash, a parameter server's client joins with its
// JoinFields, a hook may read its GlobalBatch). Run takes them; the zero
// Deps runs every rank in this process with an in-process center and no
// hooks.
type Deps struct {
	// Endpoint is this process's rank's connection to its group
	// (Config.Group), connected with LayoutHash; a center scheme whose
	// workers talk only to the center needs none. Without Config.Group it
	// is unused, and an elastic run (Config.Elastic) takes each
	// generation's from Elastic.Membership instead. The caller closes it
	// after Run.
	Endpoint transport.Endpoint
	// Center, when set, is the center the asynchronous schemes' workers
	// talk to (a parameter server's client); otherwise the trainer makes
	// an in-process one, which Result.Center then reports on.
	Center center.Center
	// Elastic is an elastic group's link to its coordinator and the
	// worker's feeds for each generation; required with Config.Elastic,
	// unused without it. Its Membership connects each generation's
	// endpoint with LayoutHash.
	Elastic *Elastic
	// OnIter, when set, is called after every training iteration with
	// rank 0's loss and the iteration's wall time on rank 0.
	OnIter func(iter int, loss float64, d time.Duration)
	// OnTest, when set, is called after every test pass with its
	// outputs, on rank 0.
	OnTest func(TestResult)
	// SnapshotRequested, when set, is asked by the updating rank after
	// each iteration whether a snapshot was asked for since (a signal
	// whose effect is Caffe's "snapshot"): then it snapshots there, and
	// training goes on.
	SnapshotRequested func() bool
	// OnIterMetrics, when set, receives the same per-iteration figures
	// as Config.Metrics, for every worker this process runs, on that
	// worker's goroutine (a caller with several workers must be safe for
	// concurrent calls).
	OnIterMetrics func(IterMetrics)
}

// IterMetrics is one record of the --metrics file: what one worker did
// in one iteration (metrics.IterMetrics, the records' own package).
type IterMetrics = metrics.IterMetrics

// TestMetrics is the record of one test net's pass in the --metrics
// file.
type TestMetrics struct {
	// Kind is "test".
	Kind string `json:"kind"`
	// Time is when the pass ended, in UTC.
	Time time.Time `json:"time"`
	// Iter is the number of iterations done when the test ran (Caffe's
	// "Iteration N, Testing net").
	Iter int `json:"iter"`
	// Net is the test net's index: 0 the first (Caffe's "#0").
	Net int `json:"net"`
	// Epoch and Images are as in IterMetrics, after Iter iterations.
	Epoch  float64 `json:"epoch,omitempty"`
	Images int64   `json:"images"`
	// LR is the learning rate of the last update before the test.
	LR float64 `json:"lr"`
	// Outputs are the mean of each scalar output of the net over the
	// pass (accuracy, loss), by output name.
	Outputs map[string]float64 `json:"outputs"`
}

// MetricsFormat is how Config.Metrics is written.
type MetricsFormat int

const (
	// MetricsJSON writes JSON Lines: one JSON object a record.
	MetricsJSON MetricsFormat = iota
	// MetricsCSV writes CSV: a header line, then one row a record, in
	// the columns Trainer.MetricsColumns names.
	MetricsCSV
)

// DetectionEval is how a test pass evaluates detections (SSD's solver
// fields, weiliu89/caffe branch ssd).
type DetectionEval struct {
	// APVersion is ap_version: "11point", "MaxIntegral" or "Integral".
	APVersion layers.APVersion
	// PerClass is show_per_class_result: each class's AP is reported
	// too, as "OUTPUT/classL".
	PerClass bool
}

// TestNet is one further test net of Config.ExtraTests.
type TestNet struct {
	Spec   model.Spec
	Shapes map[string]tensor.Shape
	Feeds  []Feed
	// Iter is its test_iter: batches per test pass.
	Iter int
}

// TestResult is the mean of each scalar net output over a test pass
// (metrics.TestResult).
type TestResult = metrics.TestResult

// NamedValue is one reported figure (metrics.NamedValue).
type NamedValue = metrics.NamedValue

// Result summarises a finished run.
type Result struct {
	// Iters is the number of iterations run in this invocation; Start is
	// the iteration it started from (non-zero after Resume).
	Iters, Start int
	Wall         time.Duration
	// ImagesPerSec counts training images per second of wall time spent
	// in training iterations (testing excluded).
	ImagesPerSec float64
	// Images is the training images of the run since iteration 0 (its
	// global batch times its iterations, a resumed run's earlier ones
	// included), and Epochs those over Config.TrainSetSize (0 when that
	// is unknown), as the metrics records count them.
	Images int64
	Epochs float64
	// TrainTime is the time ImagesPerSec divides by: the iterations' own,
	// without the tests and snapshots between them.
	TrainTime time.Duration
	Phases    *metrics.Phases
	// Tests holds every test pass, the last one at the end of training.
	Tests []TestResult
	// Snapshots lists the snapshot files written.
	Snapshots []string
	// Params are the final weights (a view of the net's buffer).
	Params []float32
	// Traffic is what this process's first rank sent and received through
	// its group's endpoint (zero without one: a center scheme's workers
	// in process, or a rank of one; see Center for their traffic).
	// Shared memory and MPI's own collectives pass beside it.
	Traffic transport.Stats
	// Compress is what rank 0's gradient compressor sent (zero without
	// one), and CompressIters how many of Iters it compressed.
	Compress      compress.Stats
	CompressIters int
	// Comm is rank 0's communication account: busy time (hidden or not)
	// and exposed time, over Iters iterations; zero for one worker.
	CommBusy, CommExposed time.Duration
	// Workers and Scheme say how the run was parallelised.
	Workers int
	Scheme  string
	// Identical reports whether every worker ended with bitwise the same
	// weights; IdenticalKnown whether that could be checked (all ranks in
	// this process).
	Identical, IdenticalKnown bool
	// Center counts what the in-process center did (asynchronous schemes).
	Center center.Stats
	// Straggled counts the iterations a straggler delay was injected.
	Straggled int64
	// Failed lists the in-process workers of an asynchronous scheme that
	// failed while the others trained on, each error naming its worker;
	// the run's weights are the center's, as the others left them.
	Failed []error
	// Generations is the number of generations an elastic run went
	// through (Config.Elastic; 0 otherwise).
	Generations int
}

// Final is the last test pass, or the zero TestResult.
func (r *Result) Final() TestResult {
	if len(r.Tests) == 0 {
		return TestResult{}
	}
	return r.Tests[len(r.Tests)-1]
}
