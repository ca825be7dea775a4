package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"dsgd/caffe/caffedef"
	"dsgd/engine/tensor"
)

// netFile reports whether a --model value names a net file rather than a
// built-in model: it has a path separator or a .prototxt suffix.
func netFile(model string) bool {
	return strings.ContainsRune(model, os.PathSeparator) || strings.HasSuffix(model, ".prototxt")
}

// zeroInput is the Source of an Input layer when dsgd itself runs the net
// (dsgd time): every top keeps the declared shape and holds zeros, which is
// what caffe time feeds a deploy net.
type zeroInput struct {
	// Shapes holds the shape of each top, the batch override applied.
	Shapes [][]int
}

// Fill zeroes the tops.
func (z zeroInput) Fill(_ context.Context, tops []*tensor.Blob) error {
	for _, t := range tops {
		clear(t.Data)
	}
	return nil
}

// inputFeed is the zero source of an Input layer's tops, with the first
// axis of each shape set to batch when batch > 0 (--batch).
func inputFeed(dl caffedef.DataLayer, batch int) (zeroInput, error) {
	if len(dl.Shapes) != len(dl.Tops) {
		return zeroInput{}, fmt.Errorf("%s: Input layer %q has %d shapes for %d tops", dl.Pos, dl.Name, len(dl.Shapes), len(dl.Tops))
	}
	z := zeroInput{}
	for _, s := range dl.Shapes {
		s = slices.Clone(s)
		if batch > 0 && len(s) > 0 {
			s[0] = batch
		}
		z.Shapes = append(z.Shapes, s)
	}
	return z, nil
}

// printNotes writes the job's upgrade notes to stderr, as Caffe logs its
// upgrades of old files.
func (j *job) printNotes(stderr io.Writer) {
	for _, n := range j.notes {
		fmt.Fprintf(stderr, "dsgd: note: %s\n", n)
	}
}

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
