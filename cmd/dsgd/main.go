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
//	dsgd convert-imageset  a list of images to an LMDB/LevelDB of Datum records
//	dsgd compute-image-mean  a Datum database's mean image as a .binaryproto
//
// Run "dsgd COMMAND -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"dsgd/cmd/internal/cli"
	"dsgd/engine/tensor"
	"dsgd/internal/interrupt"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"train", "train a model (default: LeNet on Fashion-MNIST)", runTrain},
		{"test", "score a snapshot's weights on the test set, like caffe test", runTest},
		{"time", "per-layer forward/backward times, like caffe time", runTime},
		{"upgrade", "rewrite an old Caffe net or solver file (V1 layers, input_dim, solver_type) in the current format", runUpgrade},
		{"bench", "iteration time beside the PyTorch peer's, as a ratio", runBench},
		{"worker", "run one rank of a multi-process job (mpirun, srun, or by hand)", runWorker},
		{"ps", "run a parameter server: the last rank of sync-ps, or the center of an asynchronous scheme", runPS},
		{"smb", "run ShmCaffe's shared buffer server (seasgd), or measure its bandwidth", runSMB},
		{"elastic-coordinator", "serve an elastic group's membership (--elastic) for workers started by hand or on several hosts", runCoordinator},
		{"compare", "train several schemes for the same time; table and plot of test error vs time", runCompare},
		{"simulate", "simulate schemes in virtual time at any worker count, calibrated on this machine", runSimulate},
		{"bench-comm", "allreduce bandwidth beside gloo's; parameter server vs tree", runBenchComm},
		{"convert-mnist", "MNIST-style IDX files to an LMDB/LevelDB of Caffe Datum records, as convert_mnist_data", runConvertMNIST},
		{"convert-imageset", "a list of images to an LMDB/LevelDB of Caffe Datum records, as convert_imageset", runConvertImageset},
		{"compute-image-mean", "the mean image of a Datum database as a .binaryproto, as compute_image_mean", runComputeImageMean},
		{"completion", "a bash completion script: source <(dsgd completion bash)", runCompletion},
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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// A net too large for this machine is refused with the figure, not
	// killed by a fatal out-of-memory.
	tensor.SetMemoryLimit(machineMemory(stderr))
	helpOut = stdout
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help":
		usage(stdout) // asked for: it is the output
		return 0
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		// dsgd help CMD is CMD's own help.
		args = []string{args[1], "-h"}
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, cli.Version("dsgd"))
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "dsgd %s: %s\n", c.name, interrupt.ErrorText(ctx, asFlags(err, flagNamesFor(c.name))))
			return 1
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "dsgd: unknown command %q%s (run \"dsgd help\" for the commands)\n", args[0], cli.DidYouMean(args[0], names))
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dsgd COMMAND [flags]")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, `run "dsgd COMMAND -h" for a command's flags`)
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
