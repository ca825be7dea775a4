package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"dsgd/caffe/zoo"
	"dsgd/protocol/scheme"
)

// flagGroups sorts the flags of the commands with many (train, worker,
// ps, compare, simulate) into the headings their help prints them under,
// in this order; a flag in no group is listed under "Other".
var flagGroups = []struct {
	title string
	flags []string
}{
	{"Model, data and solver (Caffe's flags where Caffe has one)", []string{
		"model", "net", "solver", "weights", "data", "batch", "shuffle", "stage", "level", "seed", "gpu",
		"iters", "iterations", "test-interval", "test-iter", "display", "warmup", "lr-scale", "max-update-norm", "time-budget"}},
	{"Engine", []string{"threads", "kernels"}},
	{"Scheme (how the workers combine their work)", []string{
		"scheme", "workers", "staleness", "alpha", "rho", "momentum", "outer-momentum", "interval", "update-interval",
		"groups", "variant", "finish", "straggle", "round-deadline", "center", "reduce", "atom", "allreduce",
		"bucket", "pack", "fragments", "overlap", "mix", "outer-bits"}},
	{"Transport and processes", []string{
		"transport", "comm-timeout", "compress", "compress-warmup", "shm", "job", "store", "shard", "rank", "world", "listen",
		"rendezvous", "token", "token-file", "elastic", "elastic-coordinator"}},
	{"Snapshots", []string{"snapshot", "snapshot-prefix", "snapshot-format", "resume"}},
	{"Output", []string{"log", "metrics", "metrics-listen", "timeline", "logs", "plot", "target", "repeats", "schemes"}},
}

// groupedMin is the number of flags from which help prints them grouped.
const groupedMin = 20

// printFlags writes fs's flags as flag.PrintDefaults does (spelt --name):
// grouped under flagGroups' headings when fs has groupedMin flags or more.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) < groupedMin {
		for _, f := range all {
			printFlag(w, f)
		}
		return
	}
	group := map[string]int{}
	for i, g := range flagGroups {
		for _, name := range g.flags {
			group[name] = i
		}
	}
	byGroup := make([][]*flag.Flag, len(flagGroups)+1)
	for _, f := range all {
		i, ok := group[f.Name]
		if !ok {
			i = len(flagGroups)
		}
		byGroup[i] = append(byGroup[i], f)
	}
	for i, fl := range byGroup {
		if len(fl) == 0 {
			continue
		}
		title := "Other"
		if i < len(flagGroups) {
			title = flagGroups[i].title
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range fl {
			printFlag(w, f)
		}
	}
}

// printFlag writes one flag in flag.PrintDefaults' form, but spelt
// --name as the README and the messages write it (the flag package reads
// -name and --name alike, so Caffe's single dash works too).
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if name != "" {
		line += " " + name
	}
	if len(line) <= 5 {
		line += "\t"
	} else {
		line += "\n    \t"
	}
	line += strings.ReplaceAll(usage, "\n", "\n    \t")
	if d := f.DefValue; d != "" && d != "0" && d != "false" && !strings.Contains(usage, "default") { // a usage that names its default says it better
		if quoted(f) {
			line += fmt.Sprintf(" (default %q)", d)
		} else {
			line += fmt.Sprintf(" (default %v)", d)
		}
	}
	fmt.Fprintln(w, line)
}

// quoted reports whether f is a string flag, whose default
// flag.PrintDefaults quotes.
func quoted(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, s := g.Get().(string)
	return s
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
		err := c.run(ctx, []string{"-h"}, io.Discard, io.Discard)
		captureFlags = nil
		if err != nil && !errors.Is(err, flag.ErrHelp) && len(names) == 0 {
			continue
		}
		sort.Strings(names)
		out[c.name] = slices.Compact(names)
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
	flags := commandFlags(ctx)
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "# bash completion for dsgd: source <(dsgd completion bash)")
	fmt.Fprintln(&b, "_dsgd() {")
	fmt.Fprintln(&b, `	local cur prev cmd`)
	fmt.Fprintln(&b, `	cur=${COMP_WORDS[COMP_CWORD]}`)
	fmt.Fprintln(&b, `	prev=${COMP_WORDS[COMP_CWORD-1]}`)
	fmt.Fprintln(&b, `	if [ "$COMP_CWORD" -eq 1 ]; then`)
	fmt.Fprintf(&b, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n", strings.Join(append(names, "help", "version"), " "))
	fmt.Fprintln(&b, `		return`)
	fmt.Fprintln(&b, `	fi`)
	fmt.Fprintln(&b, `	cmd=${COMP_WORDS[1]}`)
	fmt.Fprintln(&b, `	case "$prev" in`)
	// -flag and --flag alike, as Go's flag package reads both.
	pattern := func(names ...string) string {
		var p []string
		for _, n := range names {
			p = append(p, "-"+n, "--"+n)
		}
		return strings.Join(p, "|")
	}
	for _, v := range completionValues() {
		fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", pattern(v.flag), strings.Join(v.values, " "))
	}
	fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", pattern(fileFlags...))
	fmt.Fprintln(&b, `	esac`)
	fmt.Fprintln(&b, `	case "$cmd" in`)
	for _, c := range commands() {
		fl := flags[c.name]
		if len(fl) == 0 {
			continue
		}
		words := make([]string, len(fl))
		for i, f := range fl {
			words[i] = "--" + f
		}
		fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, strings.Join(words, " "))
	}
	fmt.Fprintln(&b, `	esac`)
	fmt.Fprintln(&b, "}")
	fmt.Fprintln(&b, "complete -o default -F _dsgd dsgd")
	_, err := io.WriteString(stdout, b.String())
	return err
}

// fileFlags take a file or directory name: the completion offers files.
var fileFlags = []string{"net", "solver", "weights", "resume", "snapshot", "log", "metrics", "timeline",
	"token-file", "plot", "logs", "snapshot-prefix", "peer", "peer-nets", "python", "mpi-peer"}

// completionValues are the flags whose values form a fixed set, with that
// set, for the completion script.
func completionValues() []struct {
	flag   string
	values []string
} {
	return []struct {
		flag   string
		values []string
	}{
		{"scheme", scheme.Names()},
		{"model", zoo.Names()},
		{"transport", []string{"inproc", "tcp", "mpi"}},
		{"reduce", []string{"exact", "fast", "auto"}},
		{"allreduce", []string{"auto", "tree", "ring", "rd", "mpi"}},
		{"kernels", []string{"auto", "onednn", "own"}},
		{"snapshot-format", []string{"dsgd", "caffe", "hdf5"}},
		{"finish", []string{"own", "master", "first", "average"}},
		{"shm", []string{"on", "off"}},
		{"lr-scale", []string{"none", "linear", "inverse"}},
		{"compress", []string{"none", "fp16", "bf16", "powersgd:2", "topk:0.01", "sign"}},
		{"data", []string{"fashion-mnist", "mnist", "cifar10", "synthetic"}},
		{"outer-bits", []string{"32", "16", "8", "4"}},
	}
}
