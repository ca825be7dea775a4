package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Command is one command of a program: the first word after the
// program's name, a one-line summary for the usage, and what runs it
// (its arguments after the command's name). Run's error is ErrUsage when
// it has said what was wrong with the invocation, flag.ErrHelp when it
// printed its help.
type Command struct {
	Name, Summary string
	Run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// Aliases are other names that run it (a Caffe tool's:
	// convert_mnist_data), not listed in the usage.
	Aliases []string
}

// Program is a command-line program of several commands.
type Program struct {
	Name     string
	Commands []Command
	// Failed is the message for a command's failure, written after
	// "NAME COMMAND: " (nil: the error's text).
	Failed func(ctx context.Context, command string, err error) string
}

// Run runs the command args name and returns the process's exit status:
// 0 when it succeeded or printed its help, 2 for a usage error (no
// command, an unknown one with the nearest offered, ErrUsage), 1 for a
// failure, written to stderr. "-h", "--help" and "help" write the usage
// to stdout; "help CMD" is "CMD -h"; "version" writes Version.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.Usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help":
		p.Usage(stdout) // asked for: it is the output
		return 0
	case "help":
		if len(args) == 1 {
			p.Usage(stdout)
			return 0
		}
		// PROG help CMD is CMD's own help.
		args = []string{args[1], "-h"}
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, Version(p.Name))
		return 0
	}
	var names []string
	// Caffe's tools are spelled with underscores (device_query,
	// convert_imageset, compute_image_mean): each names the command
	// spelled with hyphens.
	want := strings.ReplaceAll(args[0], "_", "-")
	for _, c := range p.Commands {
		names = append(names, c.Name)
		if c.Name != want && !slices.Contains(c.Aliases, args[0]) {
			continue
		}
		err := c.Run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, ErrUsage):
			return 2
		}
		msg := err.Error()
		if p.Failed != nil {
			msg = p.Failed(ctx, c.Name, err)
		}
		fmt.Fprintf(stderr, "%s %s: %s\n", p.Name, c.Name, msg)
		return 1
	}
	fmt.Fprintf(stderr, "%s: unknown command %q%s (run \"%s help\" for the commands)\n", p.Name, args[0], DidYouMean(args[0], names), p.Name)
	return 2
}

// Usage writes the program's usage: its commands with their summaries.
func (p Program) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags]\n", p.Name)
	fmt.Fprintln(w, "commands:")
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "run \"%s COMMAND -h\" for a command's flags\n", p.Name)
}
