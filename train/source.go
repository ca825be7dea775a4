package train

import (
	"context"
	"fmt"

	"dsgd/data"
	"dsgd/tensor"
)

// Loader adapts a data.Loader to a Source: top 0 receives the images, top
// 1 (if present) the labels, as a Caffe Data layer's tops.
type Loader struct {
	L *data.Loader
	// Name is the data layer's name, for error messages.
	Name string
}

// Fill copies the loader's next batch into the tops.
func (s Loader) Fill(ctx context.Context, tops []*tensor.Blob) error {
	b, err := s.L.Next(ctx)
	if err != nil {
		return fmt.Errorf("data layer %q: %w", s.Name, err)
	}
	defer s.L.Release(b)
	if len(tops) == 0 || len(tops) > 2 {
		return fmt.Errorf("data layer %q: has %d tops; a Data layer has 1 (data) or 2 (data, label)", s.Name, len(tops))
	}
	if len(tops[0].Data) != len(b.Data) {
		return fmt.Errorf("data layer %q: batch has shape %v but blob %q has shape %v", s.Name, b.Shape, tops[0].Name, tops[0].Shape)
	}
	copy(tops[0].Data, b.Data)
	if len(tops) == 2 {
		if len(tops[1].Data) != len(b.Labels) {
			return fmt.Errorf("data layer %q: %d labels but blob %q has shape %v", s.Name, len(b.Labels), tops[1].Name, tops[1].Shape)
		}
		copy(tops[1].Data, b.Labels)
	}
	return nil
}
