package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"dsgd/cmd/internal/cli"
	"dsgd/cmd/internal/commbench"
	"dsgd/comm/collective"
)

// runBenchComm is `dsgd bench-comm`: it parses the flags and runs
// package commbench, which measures communication in one invocation
// (memory bandwidth for scale; allreduce over every path beside gloo's
// and Open MPI's; the parameter-server pattern against the reduction tree,
// FireCaffe Fig. 4, beside the α-β prediction) and writes the tables.
//
// The ranks of a group are child processes of this executable running the
// hidden "bench-comm --child SPEC" (commbench.ChildArgs), routed here to
// commbench.RunChild.
func runBenchComm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "--child" || args[0] == "-child") {
		if len(args) != 2 {
			fmt.Fprintln(stderr, "dsgd bench-comm: --child takes exactly one argument (internal: the spec the parent passes)")
			return errUsage
		}
		return commbench.RunChild(ctx, args[1], stdout)
	}
	o, err := parseBenchCommFlags(args, stderr)
	if err != nil {
		return err
	}
	return commbench.Run(ctx, o, stderr, func(s commbench.Section) { s.WriteText(stdout) })
}

// parseIntList and parseByteSize are commbench's parsers, which dsgd
// smb's --clients and --bytes and DSGD_MEMORY read too.
var (
	parseIntList  = commbench.ParseIntList
	parseByteSize = commbench.ParseByteSize
)

// benchCommFlagNames names commbench.Options' fields as the flags that
// set them.
var benchCommFlagNames = strings.NewReplacer(
	"Options.Reps", "--reps", "Options.PSReps", "--ps-reps",
	"Options.Warmup", "--warmup", "Options.PSWarmup", "--ps-warmup",
	"Options.PSFloats", "--ps-floats",
	"Options.Timeout", "--timeout", "Options.CommWait", "--comm-timeout")

func parseBenchCommFlags(args []string, stderr io.Writer) (*commbench.Options, error) {
	fs := flag.NewFlagSet("bench-comm", flag.ContinueOnError)
	parts := fs.String("parts", "mem,allreduce,ps", "comma-separated parts to run: mem (memcpy and add bandwidth), allreduce, ps (parameter server vs tree)")
	worlds := fs.String("worlds", "2,4", "comma-separated group sizes for the allreduce part")
	sizes := fs.String("sizes", "1,4,16,64,240", "comma-separated allreduce sizes; a bare number is MiB, or give a unit: 64KiB, 1.5MiB, 1GiB, 4096B")
	algName := fs.String("alg", "auto", "allreduce algorithm: auto, ring, tree, rd")
	reps := fs.Int("reps", 10, "timed allreduce repetitions per size (the peer gets the same)")
	warmup := fs.Int("warmup", 2, "untimed allreduce repetitions before them")
	inprocMax := fs.String("inproc-max", "64MiB", "largest size run in-process (every rank's buffer lives in this one process)")
	mem := fs.String("mem", "64MiB", "buffer size for the memcpy and add bandwidth")
	psWorkers := fs.String("ps-workers", "2,4,8,16", "comma-separated worker counts p for the parameter server vs tree part")
	psFloats := fs.Int("ps-floats", 7_500_000, "model size in float32 for the parameter server vs tree part (7.5M = FireCaffe's 30 MB)")
	psReps := fs.Int("ps-reps", 10, "timed iterations per point of the parameter server vs tree part")
	psWarmup := fs.Int("ps-warmup", 1, "untimed iterations before them")
	tcpMax := fs.Int("tcp-max-workers", 8, "largest p run over TCP in the parameter server vs tree part (the PS adds one process: the server)")
	peer := fs.String("peer", "../shared/peer/torch_allreduce.py", "the peer's gloo allreduce script (\"none\" to run ours only)")
	python := fs.String("python", "/usr/bin/python3", "the Python that has torch")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit for each group of processes (and for the peer): past it they are killed")
	commWait := fs.Duration("comm-timeout", 60*time.Second, "a TCP rank that makes no progress on a message, or on joining, for this long fails")
	paths := fs.String("paths", commbench.PathNames(), "comma-separated columns of the allreduce table: tcp, shm (shared memory, buffers from the executor as train's gradients), shm-own (shared memory, buffers of the ranks' own), inproc, mpi (dsgd's schedules over MPI, mpirun), mpi-own (MPI_Allreduce through dsgd's MPI transport), ompi (Open MPI's peer), gloo (PyTorch's peer)")
	mpiPeer := fs.String("mpi-peer", "../shared/peer/mpi_allreduce.py", "the Open MPI peer's allreduce script, run under mpirun with --python (\"none\" to skip)")
	quick := fs.Bool("quick", false, "tiny run for tests: "+commbench.QuickSummary())
	if err := parseFlags(fs, args, stderr); err != nil {
		return nil, err
	}
	if *quick {
		cli.SetUnset(fs, commbench.Quick)
	}
	bad := func(format string, a ...any) (*commbench.Options, error) {
		fmt.Fprintf(stderr, "dsgd bench-comm: "+format+"\n", a...)
		return nil, errUsage
	}
	o := &commbench.Options{Reps: *reps, Warmup: *warmup, PSFloats: *psFloats,
		PSReps: *psReps, PSWarmup: *psWarmup, TCPMaxWorkers: *tcpMax, Peer: *peer, Python: *python,
		Timeout: *timeout, CommWait: *commWait, MPIPeer: *mpiPeer}
	var err error
	if o.Parts, err = commbench.ParseParts(*parts); err != nil {
		return bad("--parts: %v", err)
	}
	if o.Paths, err = commbench.ParsePaths(*paths); err != nil {
		return bad("--paths: %v", err)
	}
	if o.Worlds, err = commbench.ParseIntList(*worlds, 2); err != nil {
		return bad("--worlds: %v", err)
	}
	if o.PSWorkers, err = commbench.ParseIntList(*psWorkers, 2); err != nil {
		return bad("--ps-workers: %v", err)
	}
	if o.Sizes, err = commbench.ParseByteSizes(*sizes); err != nil {
		return bad("--sizes: %v", err)
	}
	if o.Alg, err = collective.ParseAlgorithm(*algName); err != nil {
		return bad("--alg: %v", err)
	}
	if o.InprocMax, err = commbench.ParseByteSize(*inprocMax); err != nil {
		return bad("--inproc-max: %v", err)
	}
	if o.MemBytes, err = commbench.ParseByteSize(*mem); err != nil {
		return bad("--mem: %v", err)
	}
	if err := o.Check(); err != nil {
		return bad("%s", benchCommFlagNames.Replace(err.Error()))
	}
	if o.MPIPeer != "none" && o.Parts["allreduce"] && o.Paths["ompi"] {
		if _, err := os.Stat(o.MPIPeer); err != nil {
			return nil, fmt.Errorf("--mpi-peer: %w (run from the repository root, or pass --mpi-peer PATH, or --mpi-peer none)", err)
		}
	}
	if o.Peer != "none" && o.Parts["allreduce"] && o.Paths["gloo"] {
		if _, err := os.Stat(o.Peer); err != nil {
			return nil, fmt.Errorf("--peer: %w (run from the repository root, or pass --peer PATH, or --peer none)", err)
		}
	}
	return o, nil
}
