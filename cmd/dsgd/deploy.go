package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"dsgd/caffe/caffedef"
)

// runUpgrade is `dsgd upgrade IN OUT`: a net or solver file in an old
// format (V1 net, legacy input fields, solver_type enum) rewritten in the
// current text format, as Caffe's upgrade_net_proto_text and
// upgrade_solver_proto_text do.
func runUpgrade(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dsgd upgrade IN.prototxt OUT.prototxt\n\nWrites IN (a Caffe net or solver in any format dsgd reads) to OUT in the current format.")
	}
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return errUsage
	}
	in, out := fs.Arg(0), fs.Arg(1)
	notes, err := caffedef.UpgradeFile(in, out)
	if err != nil {
		return err
	}
	if len(notes) == 0 {
		fmt.Fprintf(stdout, "dsgd upgrade: %s is already in the current format; wrote it to %s\n", in, out)
		return nil
	}
	fmt.Fprintf(stdout, "dsgd upgrade: wrote %s: %s\n", out, strings.Join(notes, "; "))
	return nil
}
