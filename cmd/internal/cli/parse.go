package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrUsage marks errors that are the user's invocation (exit status 2):
// ParseFlags has said what was wrong.
var ErrUsage = errors.New("usage")

// ParseFlags parses args into fs, the flag set of command fs.Name() of
// program prog, as dsgd's commands do. -h writes the usage line and the
// flags (PrintFlags, under groups) to help and returns flag.ErrHelp. A
// bad flag writes one line to stderr, with the nearest flag when one is
// near and how to get help, and returns ErrUsage; so does an argument
// after the flags unless positional is true (then fs.Args() holds them). After
// parsing, fs writes to stderr.
func ParseFlags(prog string, fs *flag.FlagSet, args []string, positional bool, help, stderr io.Writer, groups []Group) error {
	fs.SetOutput(io.Discard)
	if err := parseInterleaved(fs, args, positional); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(help, "usage: %s %s [flags]\n", prog, fs.Name())
			PrintFlags(help, fs, groups)
			return err
		}
		hint := ""
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			var flags []string
			fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
			if h := DidYouMean(name, flags); h != "" {
				hint = strings.Replace(h, `did you mean "`, `did you mean "--`, 1)
			}
		}
		fmt.Fprintf(stderr, "%s %s: %v%s (run \"%s %s -h\" for the flags)\n", prog, fs.Name(), err, hint, prog, fs.Name())
		return ErrUsage
	}
	fs.SetOutput(stderr)
	if !positional && fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s %s: unexpected argument %q (flags start with -)\n", prog, fs.Name(), fs.Arg(0))
		return ErrUsage
	}
	return nil
}

// SetUnset sets each flag named in values that the command line did not
// set (a preset such as bench-comm's --quick: flags given explicitly
// win). A value fs refuses is a bug of the preset: it panics.
func SetUnset(fs *flag.FlagSet, values map[string]string) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range values {
		if !set[name] {
			if err := fs.Set(name, v); err != nil {
				panic(fs.Name() + ": bad preset value for " + name + ": " + err.Error())
			}
		}
	}
}

// IsTerminal reports whether w is a terminal (a character device), for
// output redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// parseInterleaved parses args into fs. With positional, flags may also
// follow the arguments, as Caffe's tools (gflags) take them
// (convert_mnist_data IMAGES LABELS DB --backend=lmdb): fs.Args() is then
// every argument in order. "--" ends the flags; everything after it is an
// argument, and so is a negative number.
func parseInterleaved(fs *flag.FlagSet, args []string, positional bool) error {
	if !positional {
		return fs.Parse(args)
	}
	var rest []string
	for len(args) > 0 {
		if args[0] == "--" {
			rest = append(rest, args[1:]...)
			break
		}
		if err := fs.Parse(args); err != nil {
			// A negative number is an argument, not a flag
			// (extract_features' num_mini_batches -2 is refused by the
			// command, naming it).
			name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
			if _, nerr := strconv.ParseFloat(name, 64); !ok || nerr != nil {
				return err
			}
			rest = append(rest, "-"+name)
			args = fs.Args()
			continue
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		if len(left) < len(args) && args[len(args)-len(left)-1] == "--" {
			// Parse stopped at "--", which it consumed.
			rest = append(rest, left...)
			break
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
	return fs.Parse(append([]string{"--"}, rest...))
}
