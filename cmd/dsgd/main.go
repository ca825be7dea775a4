// Command dsgd trains deep neural networks written in Caffe's prototxt
// format under every well-known parallel SGD scheme, and simulates those
// schemes past one machine.
//
// Usage:
//
//	dsgd train [flags]   train a model (default: LeNet on Fashion-MNIST)
//	dsgd test [flags]    a snapshot's test accuracy and loss, like caffe test
//	dsgd time [flags]    per-layer forward and backward times, like caffe time
//	dsgd upgrade IN OUT  an old Caffe net or solver file in the current format
//	dsgd bench [flags]   our iteration time beside the PyTorch peer's
//	dsgd worker [flags]  one rank of a multi-process job
//	dsgd ps [flags]      a parameter server: sync-ps's last rank, or an asynchronous scheme's center
//	dsgd smb [flags]     ShmCaffe's shared buffer server (seasgd), or its bandwidth
//	dsgd elastic-coordinator  an elastic group's membership, for workers started by hand
//	dsgd compare         every scheme for the same time: table and plot of test error
//	dsgd simulate        the schemes in virtual time at any worker count
//	dsgd bench-comm      allreduce bandwidth beside gloo's; parameter server vs tree
//	dsgd convert-mnist   IDX files to an LMDB/LevelDB of Caffe Datum records
//	dsgd convert-cifar   CIFAR-10's binary batches to two LMDB/LevelDB databases
//	dsgd convert-imageset  a list of images to an LMDB/LevelDB of Datum records
//	dsgd convert-annoset  images and VOC annotations to SSD AnnotatedDatum records
//	dsgd compute-image-mean  a Datum database's mean image as a .binaryproto
//	dsgd extract-features  a trained net's blobs, image by image, to LMDB/LevelDB
//	dsgd device-query    the GPUs --gpu names, as caffe device_query
//
// Run "dsgd COMMAND -h" for a command's flags.
package main

import (
	"context"
	"flag"
	"io"
	"os"

	"dsgd/cmd/internal/cli"
	"dsgd/engine/tensor"
	"dsgd/internal/interrupt"
)

// commands are dsgd's commands, in the order its usage lists them.
func commands() []cli.Command {
	return []cli.Command{
		{Name: "train", Summary: "train a model (default: LeNet on Fashion-MNIST)", Run: runTrain},
		{Name: "test", Summary: "score a snapshot's weights on the test set, like caffe test", Run: runTest},
		{Name: "time", Summary: "per-layer forward/backward times, like caffe time", Run: runTime},
		{Name: "upgrade", Summary: "rewrite an old Caffe net or solver file (V1 layers, input_dim, solver_type) in the current format", Run: runUpgrade},
		{Name: "bench", Summary: "iteration time beside the PyTorch peer's, as a ratio", Run: runBench},
		{Name: "worker", Summary: "run one rank of a multi-process job (mpirun, srun, or by hand)", Run: runWorker},
		{Name: "ps", Summary: "run a parameter server: the last rank of sync-ps, or the center of an asynchronous scheme", Run: runPS},
		{Name: "smb", Summary: "run ShmCaffe's shared buffer server (seasgd), or measure its bandwidth", Run: runSMB},
		{Name: "elastic-coordinator", Summary: "serve an elastic group's membership (--elastic) for workers started by hand or on several hosts", Run: runCoordinator},
		{Name: "compare", Summary: "train several schemes for the same time; table and plot of test error vs time", Run: runCompare},
		{Name: "simulate", Summary: "simulate schemes in virtual time at any worker count, calibrated on this machine", Run: runSimulate},
		{Name: "bench-comm", Summary: "allreduce bandwidth beside gloo's; parameter server vs tree", Run: runBenchComm},
		{Name: "convert-mnist", Summary: "MNIST-style IDX files to an LMDB/LevelDB of Caffe Datum records, as convert_mnist_data", Run: runConvertMNIST, Aliases: []string{"convert_mnist_data"}},
		{Name: "convert-cifar", Summary: "CIFAR-10's binary batches to an LMDB/LevelDB of Datum records, as convert_cifar_data", Run: runConvertCIFAR, Aliases: []string{"convert_cifar_data"}},
		{Name: "convert-imageset", Summary: "a list of images to an LMDB/LevelDB of Caffe Datum records, as convert_imageset", Run: runConvertImageset},
		{Name: "convert-annoset", Summary: "images and PASCAL VOC annotations to an LMDB/LevelDB of SSD AnnotatedDatum records, as convert_annoset", Run: runConvertAnnoset, Aliases: []string{"convert_annoset"}},
		{Name: "compute-image-mean", Summary: "the mean image of a Datum database as a .binaryproto, as compute_image_mean", Run: runComputeImageMean},
		{Name: "device-query", Summary: "describe the GPUs that --gpu names, as caffe device_query", Run: runDeviceQuery},
		{Name: "extract-features", Summary: "a trained net's blobs, image by image, to LMDB/LevelDB Datum records, as extract_features", Run: runExtractFeatures},
		{Name: "completion", Summary: "a bash completion script: source <(dsgd completion bash)", Run: runCompletion},
	}
}

// errUsage marks errors that are the user's invocation (exit status 2).
var errUsage = cli.ErrUsage

func main() {
	var stdout, stderr io.Writer = os.Stdout, os.Stderr
	flush := func() {}
	if !asksHelp(os.Args[1:]) { // help is text to read, not a log
		stdout, stderr, flush = logStreams(os.Stdout, os.Stderr, os.Getenv)
	}
	stop := cli.StartCPUProfile(os.Getenv("DSGD_CPUPROFILE"), "dsgd", "DSGD_CPUPROFILE", stderr) // read it with go tool pprof
	code := mainStatus(os.Args[1:], stdout, stderr)
	stop()
	flush()
	os.Exit(code)
}

// run runs the command line args (cli.Program.Run) and returns the exit
// status; a failure's message names the flags, or says "interrupted".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// A net too large for this machine is refused with the figure, not
	// killed by a fatal out-of-memory.
	tensor.SetMemoryLimit(machineMemory(stderr))
	helpOut = stdout
	p := cli.Program{Name: "dsgd", Commands: commands(), Failed: func(ctx context.Context, name string, err error) string {
		return interrupt.ErrorText(ctx, asFlags(err, flagNamesFor(name)))
	}}
	return p.Run(ctx, args, stdout, stderr)
}

// helpOut is where -h prints a command's flags: the standard output of
// the run in progress (help asked for is the output, not an error).
var helpOut io.Writer = os.Stdout

// parseFlags parses args (cli.ParseFlags): -h prints the flags to the
// standard output; a bad flag prints one line, and how to get help, to
// stderr and becomes errUsage. It rejects positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	return parseFlagsOf(fs, args, false, stderr)
}

// parseFlagsArgs is parseFlags for a command that also takes arguments
// after its flags (fs.Args()).
func parseFlagsArgs(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	return parseFlagsOf(fs, args, true, stderr)
}

// parseFlagsOf hands fs to captureFlags when it is set, else parses.
func parseFlagsOf(fs *flag.FlagSet, args []string, positional bool, stderr io.Writer) error {
	if captureFlags != nil {
		captureFlags(fs)
		return flag.ErrHelp
	}
	return cli.ParseFlags("dsgd", fs, args, positional, helpOut, stderr, flagGroups)
}

// isTerminal reports whether w is a terminal, for the redrawn progress
// bar (cli.IsTerminal).
var isTerminal = cli.IsTerminal
