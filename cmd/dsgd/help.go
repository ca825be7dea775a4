package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"

	"dsgd/caffe/zoo"
	"dsgd/cmd/internal/cli"
	"dsgd/protocol/scheme"
)

// flagGroups sorts the flags of the commands with many (train, worker,
// ps, compare, simulate) into the headings their help prints them under,
// in this order; a flag in no group is listed under "Other".
var flagGroups = []cli.Group{
	{Title: "Model, data and solver (Caffe's flags where Caffe has one)", Flags: []string{
		"model", "net", "solver", "weights", "data", "batch", "shuffle", "stage", "level", "seed", "gpu",
		"iters", "iterations", "test-interval", "test-iter", "display", "warmup", "lr-scale", "max-update-norm", "time-budget"}},
	{Title: "Engine", Flags: []string{"threads", "kernels"}},
	{Title: "Scheme (how the workers combine their work)", Flags: []string{
		"scheme", "workers", "staleness", "alpha", "rho", "momentum", "outer-momentum", "interval", "update-interval",
		"groups", "variant", "finish", "straggle", "round-deadline", "center", "reduce", "atom", "allreduce",
		"bucket", "pack", "fragments", "overlap", "mix", "outer-bits"}},
	{Title: "Transport and processes", Flags: []string{
		"transport", "comm-timeout", "compress", "compress-warmup", "shm", "job", "store", "shard", "rank", "world", "listen",
		"rendezvous", "token", "token-file", "elastic", "elastic-coordinator"}},
	{Title: "Snapshots", Flags: []string{"snapshot", "snapshot-prefix", "snapshot-format", "resume", "sigint-effect", "sigint_effect", "sighup-effect", "sighup_effect"}},
	{Title: "Output", Flags: []string{"log", "metrics", "metrics-listen", "timeline", "logs", "plot", "target", "repeats", "schemes"}},
}

// captureFlags, when set, receives a command's flag set instead of the
// command running: parseFlagsArgs hands it over and returns flag.ErrHelp.
// The completion command lists every command's flags this way.
var captureFlags func(*flag.FlagSet)

// commandFlags returns each command's flag names, sorted, by running it
// with captureFlags set.
func commandFlags(ctx context.Context) map[string][]string {
	out := map[string][]string{}
	for _, c := range commands() {
		var names []string
		captureFlags = func(fs *flag.FlagSet) {
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		}
		err := c.Run(ctx, []string{"-h"}, io.Discard, io.Discard)
		captureFlags = nil
		if err != nil && !errors.Is(err, flag.ErrHelp) && len(names) == 0 {
			continue
		}
		sort.Strings(names)
		out[c.Name] = slices.Compact(names)
	}
	return out
}

// runCompletion is `dsgd completion bash`: a bash completion script for
// the commands, each command's flags, the values of --scheme, --transport
// and the other flags with a fixed set, and file names for the flags that
// take files.
func runCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: dsgd completion bash\n\nPrints a bash completion script: source <(dsgd completion bash), or save it in /etc/bash_completion.d/dsgd.")
		return flag.ErrHelp
	}
	if len(args) != 1 || args[0] != "bash" {
		fmt.Fprintln(stderr, "dsgd completion: usage: dsgd completion bash (the one shell supported)")
		return errUsage
	}
	c := cli.Completion{Program: "dsgd", Commands: commands(), Flags: commandFlags(ctx), Extra: []string{"help", "version"},
		Values: completionValues(), Files: fileFlags}
	return c.WriteBash(stdout)
}

// fileFlags take a file or directory name: the completion offers files.
var fileFlags = []string{"net", "solver", "weights", "resume", "snapshot", "log", "metrics", "timeline",
	"token-file", "plot", "logs", "snapshot-prefix", "peer", "peer-nets", "python", "mpi-peer", "out"}

// completionValues are the flags whose values form a fixed set, with that
// set, for the completion script.
func completionValues() []cli.Values {
	return []cli.Values{
		{Flag: "scheme", Values: scheme.Names()},
		{Flag: "model", Values: zoo.Names()},
		{Flag: "transport", Values: []string{"inproc", "tcp", "mpi"}},
		{Flag: "reduce", Values: []string{"exact", "fast", "auto"}},
		{Flag: "allreduce", Values: []string{"auto", "tree", "ring", "rd", "mpi"}},
		{Flag: "kernels", Values: []string{"auto", "onednn", "own"}},
		{Flag: "snapshot-format", Values: []string{"dsgd", "caffe", "hdf5"}},
		{Flag: "sigint-effect", Values: []string{"stop", "snapshot", "none"}},
		{Flag: "sighup-effect", Values: []string{"stop", "snapshot", "none"}},
		{Flag: "finish", Values: []string{"own", "master", "first", "average"}},
		{Flag: "shm", Values: []string{"on", "off"}},
		{Flag: "lr-scale", Values: []string{"none", "linear", "inverse"}},
		{Flag: "compress", Values: []string{"none", "fp16", "bf16", "powersgd:2", "topk:0.01", "sign"}},
		{Flag: "data", Values: []string{"fashion-mnist", "mnist", "cifar10", "synthetic"}},
		{Flag: "outer-bits", Values: []string{"32", "16", "8", "4"}},
		{Flag: "backend", Values: []string{"lmdb", "leveldb"}},
	}
}
