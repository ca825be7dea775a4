package job

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"dsgd/caffe/caffedef"
	"dsgd/engine/tensor"
)

// netFile reports whether an Options.Model value names a net file rather than a
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
// axis of each shape set to batch when batch > 0 (Options.Batch).
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
